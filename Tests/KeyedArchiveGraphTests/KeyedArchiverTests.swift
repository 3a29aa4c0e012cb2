import Foundation
import KeyedArchive
import KeyedArchiveGraph
import KeyedArchiveTestSupport
import XCTest

/// The NSCoding-role API on its own: primitives, identity, cycles, conditional objects,
/// class names and secure decoding. The wire format is checked by reading the archive back as
/// a plain property list (our bytes are checked against Foundation in FoundationPeerTests).
final class KeyedArchiverTests: XCTestCase {
    private func plist(_ data: Data) throws -> PropertyListValue { try PropertyList.decode(data) }

    private func objects(_ data: Data) throws -> [PropertyListValue] {
        try XCTUnwrap(plist(data)["$objects"]?.arrayValue)
    }

    func testPrimitivesAreStoredInlineAndRoundTrip() throws {
        let original = Primitives()
        original.flag = true
        original.int = -42
        original.int32 = Int32.min
        original.int64 = Int64.max
        original.float = 1.5
        original.double = -0.0
        original.bytes = Data([0, 1, 2, 255])
        original.name = "$null"  // a real "$null" string must survive (only UID 0 means nil)
        original.dollarKey = 7
        let data = try KeyedArchiver.archivedData(withRootObject: original, format: .binary)

        let envelope = try plist(data)
        XCTAssertEqual(envelope["$archiver"], "NSKeyedArchiver")
        XCTAssertEqual(envelope["$version"], 100000)
        let objects = try self.objects(data)
        XCTAssertEqual(objects.first, "$null")
        let rootUID = try XCTUnwrap(envelope["$top"]?["root"]?.uidValue)
        let object = objects[Int(rootUID)]
        XCTAssertEqual(object["flag"], .bool(true))
        XCTAssertEqual(object["int"], -42)
        XCTAssertEqual(object["int32"], PropertyListValue(Int64(Int32.min)))
        XCTAssertEqual(object["int64"], PropertyListValue(Int64.max))
        guard case .real(let float)? = object["float"] else { return XCTFail("float not a real") }
        XCTAssertTrue(float.isSinglePrecision)
        XCTAssertEqual(object["double"], .real(PropertyListReal(-0.0)))
        XCTAssertEqual(object["bytes"], .data(Data([0, 1, 2, 255])))
        XCTAssertEqual(object["$$dollar"], 7, "keys starting with $ get another $")
        XCTAssertNil(object["$dollar"])
        let classUID = try XCTUnwrap(object["$class"]?.uidValue)
        XCTAssertEqual(objects[Int(classUID)]["$classname"]?.stringValue, Primitives.archivedClassName)

        let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Primitives.self, from: data))
        XCTAssertEqual(decoded.flag, true)
        XCTAssertEqual(decoded.int, -42)
        XCTAssertEqual(decoded.int32, Int32.min)
        XCTAssertEqual(decoded.int64, Int64.max)
        XCTAssertEqual(decoded.float, 1.5)
        XCTAssertEqual(decoded.double.bitPattern, (-0.0 as Double).bitPattern)
        XCTAssertEqual(decoded.bytes, Data([0, 1, 2, 255]))
        XCTAssertEqual(decoded.name, "$null")
        XCTAssertEqual(decoded.dollarKey, 7)
    }

    func testMissingKeysGiveDefaultsAndWrongTypesGiveTypedErrors() throws {
        // An object with only an out-of-range int32 and a string where a number is expected.
        let archive: PropertyListValue = [
            "$archiver": "NSKeyedArchiver", "$version": 100000, "$top": ["root": .uid(1)],
            "$objects": [
                "$null",
                ["$class": .uid(2), "int32": PropertyListValue(Int64(Int32.max) + 1), "flag": "yes"],
                ["$classname": PropertyListValue(Primitives.archivedClassName), "$classes": [PropertyListValue(Primitives.archivedClassName), "NSObject"]],
            ],
        ]
        final class Probe: KeyedArchiving {
            var results: [String] = []
            init() {}
            func encode(with coder: KeyedArchiver) throws {}
            init(coder: KeyedUnarchiver) throws {
                XCTAssertEqual(try coder.decodeInt(forKey: "missing"), 0)
                XCTAssertEqual(try coder.decodeDouble(forKey: "missing"), 0)
                XCTAssertFalse(try coder.decodeBool(forKey: "missing"))
                XCTAssertNil(try coder.decodeBytes(forKey: "missing"))
                XCTAssertNil(try coder.decodeObject(of: String.self, forKey: "missing"))
                XCTAssertFalse(coder.containsValue(forKey: "missing"))
                XCTAssertTrue(coder.containsValue(forKey: "int32"))
                XCTAssertEqual(try coder.decodeInt64(forKey: "int32"), Int64(Int32.max) + 1)
                XCTAssertThrowsError(try coder.decodeInt32(forKey: "int32")) { error in
                    XCTAssertEqual((error as? KeyedArchiveError)?.code, .valueOutOfRange)
                    XCTAssertTrue((error as? KeyedArchiveError)?.path.contains("int32") ?? false, "\(error)")
                }
                XCTAssertThrowsError(try coder.decodeBool(forKey: "flag")) { error in
                    XCTAssertEqual((error as? KeyedArchiveError)?.code, .typeMismatch)
                }
                XCTAssertThrowsError(try coder.decodeObject(of: String.self, forKey: "int32")) { error in
                    XCTAssertEqual((error as? KeyedArchiveError)?.code, .invalidReference, "\(error)")
                }
            }
        }
        let unarchiver = try KeyedUnarchiver(propertyList: archive)
        unarchiver.setClass(Probe.self, forClassName: Primitives.archivedClassName)
        XCTAssertNotNil(try unarchiver.decodeTopLevelObject(of: [.type(Probe.self)]))
    }

    func testSharedObjectsAreStoredOnceAndDecodeToOneInstance() throws {
        let shared = Node(label: 1)
        let a = Node(label: 2)
        let b = Node(label: 3)
        a.links = [shared, shared]
        b.links = [shared]
        let root = Node(label: 0)
        root.links = [a, b, shared]
        let data = try KeyedArchiver.archivedData(withRootObject: root, format: .xml)
        // Four Node objects: the shared one is stored once.
        let nodeObjects = try objects(data).filter { $0["label"] != nil }
        XCTAssertEqual(nodeObjects.count, 4)

        let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Node.self, from: data))
        XCTAssertEqual(decoded.links.map(\.label), [2, 3, 1])
        XCTAssertTrue(decoded.links[0].links[0] === decoded.links[0].links[1])
        XCTAssertTrue(decoded.links[0].links[0] === decoded.links[1].links[0])
        XCTAssertTrue(decoded.links[2] === decoded.links[1].links[0])
    }

    /// Values of an `[Any]` take the right path whatever their mix: instances of a class and of
    /// its subclass in turn (the archiver remembers the last class it found to be
    /// `KeyedArchiving` and casts to it directly), optionals hidden in `Any` (some, none, nested,
    /// holding a class instance; none is the archive's NSNull), strings, and a class it cannot
    /// store.
    func testMixedClassesAndHiddenOptionalsInAnArray() throws {
        final class NotArchivable {}
        let rex = Dog(name: "Rex", goodBoy: true)
        let tom = Animal(name: "Tom")
        let node = Node(label: 7)
        let hiddenDog: Dog? = rex
        let noDog: Dog? = nil
        let nested: String?? = .some(nil)
        let items: [Any] = [
            tom, rex, tom, Dog(name: "Fido", goodBoy: false), node, hiddenDog as Any, noDog as Any, "text",
            Optional("opt") as Any, nested as Any, Animal(name: "Kitty"),
        ]
        let data = try KeyedArchiver.archivedData(withRootObject: items, format: .binary)
        let objects = try objects(data)
        let rootUID = try XCTUnwrap(plist(data)["$top"]?["root"]?.uidValue)
        let members = try XCTUnwrap(objects[Int(rootUID)]["NS.objects"]?.arrayValue).map { $0.uidValue ?? .max }
        func describe(_ uid: UInt32) -> String {
            guard uid != 0 else { return "nil" }
            let object = objects[Int(uid)]
            if let text = object.stringValue { return "string " + text }
            guard let classUID = object["$class"]?.uidValue, let name = objects[Int(classUID)]["$classname"]?.stringValue else {
                return "?"
            }
            return name + (object["name"]?.uidValue.flatMap { objects[Int($0)].stringValue }.map { " " + $0 } ?? "")
        }
        XCTAssertEqual(members.map(describe), [
            "Animal Tom", "Dog Rex", "Animal Tom", "Dog Fido", Node.archivedClassName, "Dog Rex", "NSNull", "string text",
            "string opt", "NSNull", "Animal Kitty",
        ])
        XCTAssertEqual(members[6], members[9], "one NSNull object for every nil (an NSArray cannot hold nil)")
        XCTAssertEqual(members[0], members[2], "one instance, one UID")
        XCTAssertEqual(members[1], members[5], "the instance inside the optional is the same one")
        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: [rex, NotArchivable(), rex] as [Any], format: .binary))
    }

    /// An array whose element type is a `KeyedArchiving` class (`[Animal]`, `[Node]`) has its
    /// elements taken as they are, without the `[Any]` path's conversion and casts: the archive
    /// is byte for byte the one of the same elements in an `[Any]`, at the top, inside an object
    /// (a node's links), hidden in an optional, empty, and with a subclass and shared instances
    /// among the elements.
    func testArraysOfArchivingClassesArchiveAsTheirAnyArrays() throws {
        let rex = Dog(name: "Rex", goodBoy: true)
        let tom = Animal(name: "Tom")
        let animals: [Animal] = [tom, rex, tom, Dog(name: "Fido", goodBoy: false), rex]
        let nodes = (0..<6).map { Node(label: $0) }
        for (index, node) in nodes.enumerated() { node.links = [nodes[(index + 1) % 6], nodes[(index * 5) % 6], node] }
        defer { for node in nodes { node.links = [] } }
        let hidden: [Animal]? = animals
        let cases: [(String, Any, Any)] = [
            ("[Animal]", animals, animals.map { $0 as Any }),
            ("[Node] with links", nodes, nodes.map { $0 as Any }),
            ("[Animal]? in Any", hidden as Any, animals.map { $0 as Any }),
            ("[Dog]", [rex, rex], [rex as Any, rex as Any]),
            ("empty [Node]", [Node](), [Any]()),
            ("[[Animal]]", [animals, [tom]], [animals.map { $0 as Any } as Any, [tom as Any] as Any]),
        ]
        for (name, typed, untyped) in cases {
            for format in [PropertyListFormat.binary, .xml] {
                let typedData = try KeyedArchiver.archivedData(withRootObject: typed, format: format)
                let untypedData = try KeyedArchiver.archivedData(withRootObject: untyped, format: format)
                XCTAssertEqual(typedData, untypedData, "\(name), \(format)")
            }
        }
        let decoded = try XCTUnwrap(
            KeyedUnarchiver.unarchivedObject(
                ofClasses: [.array, .type(Animal.self), .type(Dog.self)], from: KeyedArchiver.archivedData(withRootObject: animals, format: .binary))
                as? [Animal])
        XCTAssertEqual(decoded.map(\.name), ["Tom", "Rex", "Tom", "Fido", "Rex"])
        XCTAssertEqual(decoded.map { $0 is Dog }, [false, true, false, true, true])
        XCTAssertTrue(decoded[0] === decoded[2] && decoded[1] === decoded[4])
    }

    func testCyclesRoundTripWithIdentity() throws {
        let a = Node(label: 1)
        let b = Node(label: 2)
        a.links = [b, a]  // self-reference and A -> B -> A
        b.links = [a]
        let data = try KeyedArchiver.archivedData(withRootObject: a, format: .binary)
        let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Node.self, from: data))
        XCTAssertEqual(decoded.label, 1)
        XCTAssertTrue(decoded.links[1] === decoded)
        XCTAssertTrue(decoded.links[0].links[0] === decoded)
        XCTAssertEqual(decoded.links[0].label, 2)
    }

    /// The archiver lays objects out as it goes and keeps no tree: the property list asked for
    /// (before or after the bytes) is the finished archive read back, and an XML archive is made
    /// from the binary one. Both must still be the whole archive, and Foundation must read the
    /// XML one with the same objects.
    func testFinishedPropertyListAndXMLAreTheWholeArchive() throws {
        func archiver(_ format: PropertyListFormat) throws -> KeyedArchiver {
            let shared = Node(label: 7)
            let root = Node(label: 0)
            root.links = [Node(label: 1), shared, shared]
            let archiver = KeyedArchiver(outputFormat: format)
            try archiver.encode(root, forKey: "root")
            try archiver.encode("a string", forKey: "title")
            archiver.encode(3, forKey: "count")
            return archiver
        }
        let written = try archiver(.binary)
        let value = try written.finishedPropertyList()
        let data = try written.finishEncoding()
        XCTAssertEqual(try archiver(.binary).finishEncoding(), data)
        XCTAssertEqual(try written.finishedPropertyList(), value)
        let objects = try XCTUnwrap(value["$objects"]?.arrayValue)
        XCTAssertEqual(objects.filter { $0["label"] != nil }.count, 3)
        XCTAssertEqual(value["$top"]?["count"], 3)
        let title = try XCTUnwrap(value["$top"]?["title"]?.uidValue)
        XCTAssertEqual(objects[Int(title)], "a string")
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofClass: Node.self, from: data)?.links.map(\.label), [1, 7, 7])

        let xml = try archiver(.xml).finishEncoding()
        XCTAssertTrue(xml.starts(with: Data("<?xml".utf8)))
        var format = PropertyListSerialization.PropertyListFormat.binary
        let foundation = try XCTUnwrap(PropertyListSerialization.propertyList(from: xml, format: &format) as? [String: Any])
        XCTAssertEqual(format, .xml)
        XCTAssertEqual((foundation["$objects"] as? [Any])?.count, objects.count)
        XCTAssertEqual(try PropertyList.decode(xml), value)
    }

    /// The UID objects of a binary archive are written by the list after everything else, and
    /// references to them are resolved only then: past 65,535 objects they take four bytes and
    /// references get wider. Python's plistlib, reading on its own, must find every link of
    /// the root (an inline array of UIDs) at a node with the right label.
    func testManyObjectsKeepEveryReferenceForPlistlib() throws {
        guard Python.executable != nil else { throw XCTSkip("python3 is not installed") }
        let root = Node(label: -1)
        root.links = (0..<70_000).map { Node(label: $0) }
        // A conditional reference whose target is first met after its holder is encoded (it
        // is only in the last node's links): patched when the archive is written.
        let late = Node(label: 70_000)
        root.links[5].weak = late
        root.links[69_999].links = [late]
        let data = try KeyedArchiver.archivedData(withRootObject: root, format: .binary)
        let script = """
            import plistlib, sys
            archive = plistlib.loads(sys.stdin.buffer.read())
            objects = archive['$objects']
            root = objects[archive['$top']['root'].data]
            links = objects[root['links'].data]['NS.objects']
            labels = [objects[uid.data]['label'] for uid in links]
            weak = objects[objects[links[5].data]['weak'].data]['label']
            print(len(objects), len(labels), labels == list(range(70000)), weak)
            """
        let output = String(decoding: try Python.run(script, input: data), as: UTF8.self)
        let fields = output.split(whereSeparator: \.isWhitespace)
        XCTAssertEqual(fields.count, 4, output)
        XCTAssertGreaterThan(Int(fields.first ?? "") ?? 0, 70_000, output)
        XCTAssertEqual(fields.dropFirst().map(String.init), ["70000", "True", "70000"], output)
    }

    /// An object laid out as it is set can only fail when the archive is written (here a date a
    /// binary property list cannot hold, year 33,000): the error is typed, thrown again by later
    /// calls, and encoding more afterwards throws it too.
    func testAFailedWriteKeepsFailing() throws {
        let late = Date(timeIntervalSinceReferenceDate: 1e12)
        let object = ArchivedObject(className: "Odd", fields: [("when", .inline(.date(late)))])
        let archiver = KeyedArchiver()
        try archiver.encode(object, forKey: "root")
        var first: KeyedArchiveError?
        XCTAssertThrowsError(try archiver.finishEncoding()) { first = $0 as? KeyedArchiveError }
        XCTAssertEqual(first?.code, .propertyList, "\(String(describing: first))")
        XCTAssertThrowsError(try archiver.finishEncoding()) { XCTAssertEqual(($0 as? KeyedArchiveError)?.message, first?.message) }
        XCTAssertThrowsError(try archiver.encode("more", forKey: "more")) {
            XCTAssertEqual(($0 as? KeyedArchiveError)?.message, first?.message)
        }
    }

    func testCycleThroughInitializerIsATypedError() throws {
        let a = EagerNode()
        a.next = a
        let data = try KeyedArchiver.archivedData(withRootObject: a, format: .binary)
        XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofClass: EagerNode.self, from: data)) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .unsupportedCycle, "\(error)")
        }
        // Without a cycle the same class decodes fine.
        let b = EagerNode()
        b.next = EagerNode()
        let fine = try KeyedArchiver.archivedData(withRootObject: b, format: .binary)
        XCTAssertNotNil(try KeyedUnarchiver.unarchivedObject(ofClass: EagerNode.self, from: fine)?.next)
    }

    func testLongChainsEncodeAndDecodeWithoutRecursion() throws {
        let count = 30_000  // Linux NSKeyedUnarchiver overflows its stack near 10,000
        let head = ListNode(value: 0)
        var tail = head
        for index in 1..<count {
            let node = ListNode(value: index)
            tail.next = node
            tail = node
        }
        let data = try KeyedArchiver.archivedData(withRootObject: head, format: .binary)
        var node = try KeyedUnarchiver.unarchivedObject(ofClass: ListNode.self, from: data)
        var seen = 0
        var inOrder = true
        while let current = node {
            inOrder = inOrder && current.value == seen
            seen += 1
            node = current.next
        }
        XCTAssertTrue(inOrder)
        XCTAssertEqual(seen, count)
        // Break the chain iteratively so deinit does not recurse either.
        var breaker: ListNode? = head
        while let current = breaker { breaker = current.next; current.next = nil }
    }

    func testConditionalObjectsAreBackPatchedOrNil() throws {
        // weak -> target encoded unconditionally only LATER in the graph (forward reference).
        let root = Node(label: 0)
        let first = Node(label: 1)
        let target = Node(label: 2)
        first.weak = target
        root.links = [first, target]
        // weak -> an object nobody encodes unconditionally.
        let orphan = Node(label: 3)
        let second = Node(label: 4)
        second.weak = orphan
        root.links.append(second)
        let data = try KeyedArchiver.archivedData(withRootObject: root, format: .binary)
        XCTAssertFalse(try objects(data).contains { $0["label"] == 3 }, "a conditional-only object is not stored")
        let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Node.self, from: data))
        XCTAssertTrue(decoded.links[0].weak === decoded.links[1])
        XCTAssertNil(decoded.links[2].weak)

        // A target first met only after the object holding the conditional reference has been
        // encoded in full (the archiver encodes breadth first: `late` gets its UID while
        // `holder`'s sibling is encoded), so the holder's entry must wait to be patched.
        let top = Node(label: 10)
        let holder = Node(label: 11)
        let sibling = Node(label: 12)
        let late = Node(label: 13)
        holder.weak = late
        sibling.links = [late]
        top.links = [holder, sibling]
        let patched = try KeyedArchiver.archivedData(withRootObject: top, format: .binary)
        let again = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Node.self, from: patched))
        XCTAssertEqual(again.links[0].weak?.label, 13)
        XCTAssertTrue(again.links[0].weak === again.links[1].links.first)
    }

    /// The binary layout reuses a key's object reference from the previous object of the same
    /// class at the same position. Objects of 20 classes (more than the layout keeps lists for)
    /// laid out in turn, with the same key names at swapped positions and keys of their own,
    /// must still store every value under its own key; read back by Foundation.
    func testInterleavedClassesKeepTheirKeysInTheBinaryLayout() throws {
        let table = ArchiveObjectTable()
        let names = ["alpha", "beta", "gamma", "delta"]
        var expected: [UInt32: [String: Int]] = [:]
        var roots: [PropertyListValue] = []
        for round in 0..<3 {
            for kind in 0..<20 {
                let classUID = table.classUID(chain: ["Kind\(kind)", "NSObject"])
                var fields = ArchiveObjectFields(classUID: classUID)
                // Rotated per class: the key at a position differs from class to class.
                var values: [String: Int] = [:]
                for offset in 0..<names.count {
                    let name = names[(offset + kind) % names.count]
                    values[name] = kind * 1000 + round * 10 + offset
                    fields.set(.integer(PropertyListInteger(values[name] ?? 0)), forKey: name)
                }
                let own = "only\(kind)"
                values[own] = -kind - 1
                fields.set(.integer(PropertyListInteger(values[own] ?? 0)), forKey: own)
                let uid = table.reserveUID()
                table.setObject(fields.value, at: uid)
                expected[uid] = values
                roots.append(.uid(uid))
            }
        }
        let rootUID = table.reserveUID()
        let arrayClass = table.classUID(chain: ["NSArray", "NSObject"])
        table.setObject(.dictionary(PropertyListDictionary([("$class", .uid(arrayClass)), ("NS.objects", .array(roots))])), at: rootUID)
        let data = try table.encodedData(top: PropertyListDictionary([("root", .uid(rootUID))]), format: .binary)

        let archive = try XCTUnwrap(PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        let objects = try XCTUnwrap(archive["$objects"] as? [Any])
        XCTAssertEqual(expected.count, 60)
        for (uid, values) in expected {
            let object = try XCTUnwrap(objects[Int(uid)] as? [String: Any], "$objects[\(uid)]")
            XCTAssertEqual(Set(object.keys), Set(values.keys).union(["$class"]), "$objects[\(uid)]")
            for (key, value) in values {
                XCTAssertEqual((object[key] as? NSNumber)?.intValue, value, "$objects[\(uid)].\(key)")
            }
        }
    }

    /// Keys that are equal but separate `String` objects (long keys built per object, so their
    /// bits differ) still find the cached reference by their text, and each object's values stay
    /// under their own keys; read back by Foundation.
    func testLongKeysBuiltPerObjectKeepTheirValuesInTheBinaryLayout() throws {
        let table = ArchiveObjectTable()
        let classUID = table.classUID(chain: ["LongKeys", "NSObject"])
        var expected: [UInt32: [String: Int]] = [:]
        for number in 0..<40 {
            var fields = ArchiveObjectFields(classUID: classUID)
            var values: [String: Int] = [:]
            // Built at run time and longer than 15 UTF-8 bytes: a new heap string every time.
            // Every fourth object swaps two keys, so a cached reference must be checked by text.
            let names = (0..<3).map { String(repeating: "field", count: 4) + "-\($0)-é" }
            let order = number % 4 == 3 ? [names[1], names[0], names[2]] : names
            for (offset, name) in order.enumerated() {
                values[name] = number * 10 + offset
                fields.set(.integer(PropertyListInteger(number * 10 + offset)), forKey: name)
            }
            let uid = table.reserveUID()
            table.setObject(fields.value, at: uid)
            expected[uid] = values
        }
        let data = try table.encodedData(top: PropertyListDictionary([("root", .uid(1))]), format: .binary)
        let archive = try XCTUnwrap(PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        let objects = try XCTUnwrap(archive["$objects"] as? [Any])
        for (uid, values) in expected {
            let object = try XCTUnwrap(objects[Int(uid)] as? [String: Any], "$objects[\(uid)]")
            XCTAssertEqual(Set(object.keys), Set(values.keys).union(["$class"]), "$objects[\(uid)]")
            for (key, value) in values {
                XCTAssertEqual((object[key] as? NSNumber)?.intValue, value, "$objects[\(uid)].\(key)")
            }
        }
        // Each key text is stored once (as UTF-16, for its "é"): the cache and the flattener
        // both unique by text.
        let bytes = [UInt8](data)
        for suffix in 0..<3 {
            let utf16 = (String(repeating: "field", count: 4) + "-\(suffix)-é").utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
            let occurrences = (0...(bytes.count - utf16.count)).filter { bytes[$0..<($0 + utf16.count)].elementsEqual(utf16) }.count
            XCTAssertEqual(occurrences, 1, "key \(suffix) stored \(occurrences) times")
        }
    }

    /// A cached key reference is reused only for a key stored the same way: the same text with
    /// a UTF-16 storage hint is another string object in a binary property list.
    func testTheKeyCacheKeepsAUTF16KeyApartFromTheSameASCIIKey() throws {
        let table = ArchiveObjectTable()
        let classUID = table.classUID(chain: ["Hinted", "NSObject"])
        let hints: [PropertyListString.Storage?] = [nil, .utf16, nil, .utf16]
        var uids: [UInt32] = []
        for (number, hint) in hints.enumerated() {
            let uid = table.reserveUID()
            table.setObject(.dictionary(PropertyListDictionary([
                ("$class", .uid(classUID)), (.string(PropertyListString("beta", storage: hint)), .integer(PropertyListInteger(number))),
            ])), at: uid)
            uids.append(uid)
        }
        let data = try table.encodedData(top: PropertyListDictionary([("root", .uid(uids[0]))]), format: .binary)
        let objects = try self.objects(data)
        for (uid, hint) in zip(uids, hints) {
            let entries = try XCTUnwrap(objects[Int(uid)].dictionaryValue?.entries)
            guard entries.count == 2, case .string(let key) = entries[1].key else { return XCTFail("$objects[\(uid)]: \(entries)") }
            XCTAssertEqual(key.value, "beta")
            XCTAssertEqual(key.storage, hint ?? .ascii, "$objects[\(uid)]")
        }
    }

    func testLeafUniquingKeepsTypesApart() throws {
        let values: [Any] = [1, true, 2, 2.0, Float(2), "a", "a", Data([1]), Data([1]), 1]
        let data = try KeyedArchiver.archivedData(withRootObject: values, format: .binary)
        let objects = try self.objects(data)
        XCTAssertEqual(objects.filter { $0 == "a" }.count, 1)
        XCTAssertEqual(objects.filter { $0 == .data(Data([1])) }.count, 1)
        XCTAssertEqual(objects.filter { $0 == 1 }.count, 1)
        XCTAssertEqual(objects.filter { $0 == .bool(true) }.count, 1)
        XCTAssertEqual(objects.filter { $0.doubleValue == 2.0 }.count, 2, "Float and Double 2.0 stay apart")
        let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .number, .string, .data], from: data) as? [Any])
        XCTAssertEqual(decoded.count, values.count)
        XCTAssertTrue(decoded[0] is Int && decoded[1] is Bool && decoded[3] is Double && decoded[4] is Float)
    }

    func testClassNameMappingAndFallbacks() throws {
        let dog = Dog(name: "Rex", goodBoy: true)
        let archiver = KeyedArchiver()
        archiver.setClassName("Hund", for: Dog.self)
        try archiver.encode(dog, forKey: "root")
        let data = try archiver.finishEncoding()
        let classDescription = try objects(data).first { $0["$classname"] != nil }
        XCTAssertEqual(classDescription?["$classname"], "Hund")
        XCTAssertEqual(classDescription?["$classes"], ["Hund", "Animal", "NSObject"])

        // Nobody knows "Hund": it falls back along $classes to Animal.
        let animal = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Animal.self, from: data))
        XCTAssertFalse(animal is Dog)
        XCTAssertEqual(animal.name, "Rex")

        // Mapped on the unarchiver: decodes as Dog, allowed as a kind of Animal.
        let unarchiver = try KeyedUnarchiver(data: data)
        unarchiver.setClass(Dog.self, forClassName: "Hund")
        let dogAgain = try unarchiver.decodeTopLevelObject(of: Animal.self)
        XCTAssertTrue(dogAgain is Dog)

        // Global mapping.
        KeyedUnarchiver.setClass(Dog.self, forClassName: "Hund")
        defer { KeyedUnarchiver.setClass(nil, forClassName: "Hund") }
        XCTAssertTrue(try KeyedUnarchiver.unarchivedObject(ofClass: Dog.self, from: data) != nil)
    }

    /// A mapping set while the queue runs (from an object's `encode(with:)`, here for its own
    /// class) applies to the objects encoded after it: the archiver keeps the description of
    /// the class it has just encoded at hand for the next object, and must not keep the one
    /// it found before the mapping changed.
    func testAClassMappingSetWhileEncodingAppliesToTheObjectsAfterIt() throws {
        final class SelfRenaming: KeyedArchiving {
            static var archivedClassName: String { "SelfRenaming" }
            let label: String
            init(label: String) { self.label = label }
            func encode(with coder: KeyedArchiver) throws {
                try coder.encode(label, forKey: "label")
                coder.setClassName("Renamed", for: SelfRenaming.self)
            }
            init(coder: KeyedUnarchiver) throws { label = "" }
        }
        let data = try KeyedArchiver.archivedData(
            withRootObject: [SelfRenaming(label: "first"), SelfRenaming(label: "second"), SelfRenaming(label: "third")], format: .binary)
        let objects = try objects(data)
        func className(ofLabel label: String) throws -> String? {
            let labelUID = try XCTUnwrap(objects.firstIndex(of: .string(PropertyListString(label))))
            let object = try XCTUnwrap(objects.first { $0["label"] == .uid(UInt32(labelUID)) })
            let classUID = try XCTUnwrap(object["$class"]?.uidValue)
            return objects[Int(classUID)]["$classname"]?.stringValue
        }
        XCTAssertEqual(try className(ofLabel: "first"), "SelfRenaming", "described before its own encode(with:) set the mapping")
        XCTAssertEqual(try className(ofLabel: "second"), "Renamed")
        XCTAssertEqual(try className(ofLabel: "third"), "Renamed")
    }

    func testSecureDecodingRejectsClassesNotAllowed() throws {
        let data = try KeyedArchiver.archivedData(withRootObject: ["a": [Node(label: 1)]], format: .binary)
        XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofClasses: [.dictionary, .string, .array], from: data)) { error in
            let error = error as? KeyedArchiveError
            XCTAssertEqual(error?.code, .classNotAllowed)
            XCTAssertTrue(error?.message.contains(Node.archivedClassName) ?? false, "\(String(describing: error))")
            XCTAssertTrue(error?.path.contains("NS.objects[0]") ?? false, "\(String(describing: error))")
        }
        // With archivedObject allowed, Node (allowed by nobody, registered nowhere) decodes inertly:
        // a $classname never selects code the caller did not allow.
        let generic = try KeyedUnarchiver.unarchivedObject(ofClasses: [.dictionary, .string, .array, .archivedObject, .number], from: data)
        let dictionary = try XCTUnwrap(generic as? [AnyHashable: Any])
        let node = try XCTUnwrap((dictionary["a"] as? [Any])?.first as? ArchivedObject)
        XCTAssertEqual(node.className, Node.archivedClassName)
        XCTAssertEqual(node["label"]?.inlineValue, 1)
        // And it re-archives to the same fields.
        let again = try KeyedArchiver.archivedData(withRootObject: generic, format: .binary)
        let back = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Node.self, from: try KeyedArchiver.archivedData(withRootObject: node, format: .binary)))
        XCTAssertEqual(back.label, 1)
        XCTAssertEqual(try ArchiveResolver(data: again).resolve(), try ArchiveResolver(data: data).resolve())
    }

    func testFoundationValuesRoundTrip() throws {
        let date = Date(timeIntervalSinceReferenceDate: 12345.678)
        let uuid = UUID()
        let url = try XCTUnwrap(URL(string: "https://example.com/a/b?c=d"))
        let relative = try XCTUnwrap(URL(string: "c/d.txt", relativeTo: URL(string: "https://example.com/a/")))
        let root: [String: Any] = [
            "string": "héllo wörld 🎉", "int": 42, "big": UInt64.max, "double": 3.25, "bool": false,
            "data": Data([9, 8, 7]), "date": date, "uuid": uuid, "url": url, "relative": relative,
            "null": ArchivedNull.null, "set": Set<AnyHashable>(["x", "y"]),
            "ordered": ArchivedOrderedSet(["b", "a"]), "nested": [["k": [1, 2]]],
        ]
        let data = try KeyedArchiver.archivedData(withRootObject: root, format: .xml)
        let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClasses: KeyedArchiveClass.foundationClasses, from: data) as? [AnyHashable: Any])
        XCTAssertEqual(decoded["string"] as? String, "héllo wörld 🎉")
        XCTAssertEqual(decoded["int"] as? Int, 42)
        XCTAssertEqual(decoded["big"] as? UInt64, UInt64.max)
        XCTAssertEqual(decoded["double"] as? Double, 3.25)
        XCTAssertEqual(decoded["bool"] as? Bool, false)
        XCTAssertEqual(decoded["data"] as? Data, Data([9, 8, 7]))
        XCTAssertEqual(decoded["date"] as? Date, date)
        XCTAssertEqual(decoded["uuid"] as? UUID, uuid)
        XCTAssertEqual(decoded["url"] as? URL, url)
        XCTAssertEqual((decoded["relative"] as? URL)?.absoluteString, "https://example.com/a/c/d.txt")
        XCTAssertTrue(decoded["null"] is ArchivedNull)
        XCTAssertEqual(decoded["set"] as? Set<AnyHashable>, ["x", "y"])
        XCTAssertEqual((decoded["ordered"] as? ArchivedOrderedSet)?.elements as? [String], ["b", "a"])
        XCTAssertEqual(((decoded["nested"] as? [Any])?.first as? [AnyHashable: Any])?["k"] as? [Int], [1, 2])
    }

    func testResolverRules() throws {
        let a = Node(label: 1)
        a.links = [a]
        let root: [String: Any] = [
            "node": a, "uuid": UUID(uuidString: "0ad863ba-7584-40cf-8896-bd87b3280c34") as Any, "null": ArchivedNull.null,
            "set": Set<AnyHashable>([5]), "url": URL(string: "x/y", relativeTo: URL(string: "http://h/p/")) as Any,
        ]
        let data = try KeyedArchiver.archivedData(withRootObject: root, format: .binary)
        let resolved = try ArchiveResolver(data: data).resolve()
        XCTAssertEqual(resolved["uuid"], "0AD863BA-7584-40CF-8896-BD87B3280C34")
        XCTAssertEqual(resolved["null"], "$null")
        XCTAssertEqual(resolved["set"], [5])
        XCTAssertEqual(resolved["url"], "http://h/p/x/y")
        let node = try XCTUnwrap(resolved["node"])
        XCTAssertEqual(node["$class"]?.stringValue, Node.archivedClassName)
        XCTAssertEqual(node["label"], 1)
        XCTAssertEqual(node["weak"], "$null")
        let uid = try XCTUnwrap(try objects(data).firstIndex { $0["label"] == 1 })
        XCTAssertEqual(node["links"], [["$ref": PropertyListValue(uid)]])
    }

    /// Setting a key again replaces its value in place, whether the key is short (found by its
    /// bits) or long (found by its text), a literal or built at run time, before and after the
    /// object switches to a hash index; every key is stored once.
    func testObjectFieldsReplaceAKeySetAgain() throws {
        let keys = ["a", "name", "$dollar", "日本", "fourteen-bytes", "fifteen-bytes!!", "a much longer key é"]
        for extra in [0, 20] {
            var fields = ArchiveObjectFields(classUID: 1)
            var expected: [String: Int] = [:]
            for (offset, key) in keys.enumerated() {
                fields.set(.integer(PropertyListInteger(offset)), forKey: key)
                expected[key] = offset
            }
            for number in 0..<extra {
                fields.set(.integer(PropertyListInteger(number)), forKey: "extra\(number)")
                expected["extra\(number)"] = number
            }
            for (offset, key) in keys.enumerated() {
                // The same text in a new `String`, not the literal's storage.
                let again = String(decoding: Array(key.utf8), as: UTF8.self)
                XCTAssertTrue(fields.contains(key: again), key)
                fields.set(.integer(PropertyListInteger(100 + offset)), forKey: again)
                expected[key] = 100 + offset
            }
            XCTAssertFalse(fields.contains(key: "nam"))
            XCTAssertFalse(fields.contains(key: "fourteen-bytez"))
            XCTAssertEqual(fields.count, 1 + keys.count + extra, "extra \(extra)")
            guard case .dictionary(let dictionary) = fields.value else { return XCTFail("not a dictionary") }
            let (found, repeated) = ArchiveFixtures.integerFields(of: dictionary)
            XCTAssertEqual(repeated, [], "keys stored twice")
            XCTAssertEqual(found, expected, "extra \(extra)")
        }
    }

    /// The archivers' key cache hands out each key's own stored form: keys met again (the same
    /// storage, or the text rebuilt at run time), `$`-escaped keys, long keys, more keys than the
    /// cache has slots, and keys that are equal as Swift strings but not byte for byte.
    func testStoredKeyCacheGivesEachKeyItsOwnStoredForm() throws {
        var keys = ["", "name", "$class", "$$x", "fourteen-bytes", "fifteen-bytes!!", "a much longer key é",
                    KeySpellings.precomposed, KeySpellings.decomposed, "日本"]
        keys += (0..<300).map { "key\($0 * 7919)" }
        let cache = StoredKeyCache()
        for round in 0..<3 {
            for key in keys {
                let probe = round == 1 ? String(decoding: Array(key.utf8), as: UTF8.self) : key
                let expected = key.utf8.first == UInt8(ascii: "$") ? Array("$".utf8) + Array(key.utf8) : Array(key.utf8)
                XCTAssertEqual(cache.value(for: probe).stringValue.map { Array($0.utf8) }, expected, "round \(round): \(key.debugDescription)")
            }
        }
    }

    /// Two spellings of "é" (equal as Swift strings, not as bytes) are two keys in an archive, as
    /// in Apple's, whose NSString keys compare UTF-16 units: in a small object (keys scanned) and
    /// a big one (keys indexed). Read back by our unarchiver and by plistlib.
    func testKeysEqualOnlyCanonicallyStayTwoKeys() throws {
        for padding in [0, 20] {
            let data = try KeyedArchiver.archivedData(withRootObject: KeySpellings(padding: padding), format: .binary)
            let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: KeySpellings.self, from: data))
            XCTAssertEqual([decoded.first, decoded.second], [1, 2], "padding \(padding)")
            guard Python.executable != nil else {
                print("skipped the plistlib part of testKeysEqualOnlyCanonicallyStayTwoKeys: python3 not found")
                continue
            }
            let script = """
                import plistlib, sys
                archive = plistlib.loads(sys.stdin.buffer.read())
                root = archive['$objects'][archive['$top']['root'].data]
                print(len(root), root['caf\\u00e9'], root['cafe\\u0301'])
                """
            let output = String(decoding: try Python.run(script, input: data), as: UTF8.self)
            // $class, padding, the padding keys and the two spellings.
            XCTAssertEqual(output.split(whereSeparator: \.isWhitespace), ["\(4 + padding)", "1", "2"], output)
        }
    }

    /// Swift prints private and local types with an address that moves from run to run
    /// (`Module.(unknown context at $55bb98cdb868).Node`); their archive names leave it out, so
    /// an archive from one process names the same class in the next.
    func testPrivateAndLocalClassesHaveNamesThatDoNotChangeBetweenRuns() throws {
        final class LocalNode: KeyedArchiving {
            let label: Int
            init(label: Int) { self.label = label }
            func encode(with coder: KeyedArchiver) throws { coder.encode(label, forKey: "label") }
            init(coder: KeyedUnarchiver) throws { label = try coder.decodeInt(forKey: "label") }
        }
        XCTAssertTrue(String(reflecting: PrivateNode.self).contains("unknown context"), "the premise")
        XCTAssertEqual(PrivateNode.archivedClassName, "KeyedArchiveGraphTests.PrivateNode")
        XCTAssertEqual(LocalNode.archivedClassName, "KeyedArchiveGraphTests.KeyedArchiverTests.LocalNode")

        let data = try KeyedArchiver.archivedData(withRootObject: [PrivateNode(label: 7), LocalNode(label: 8)] as [Any], format: .binary)
        let plist = try PropertyList.decode(data)
        guard case .array(let objects)? = plist["$objects"] else { return XCTFail("not an archive") }
        XCTAssertEqual(
            Set(objects.compactMap { $0["$classname"]?.stringValue }),
            ["NSArray", "KeyedArchiveGraphTests.PrivateNode", "KeyedArchiveGraphTests.KeyedArchiverTests.LocalNode"])
        let unarchiver = try KeyedUnarchiver(data: data)
        let back = try XCTUnwrap(try unarchiver.decodeTopLevelObject(of: [.array, .type(PrivateNode.self), .type(LocalNode.self)]) as? [Any])
        XCTAssertEqual((back.first as? PrivateNode)?.label, 7)
        XCTAssertEqual((back.last as? LocalNode)?.label, 8)
    }
}

private final class PrivateNode: KeyedArchiving {
    let label: Int
    init(label: Int) { self.label = label }
    func encode(with coder: KeyedArchiver) throws { coder.encode(label, forKey: "label") }
    init(coder: KeyedUnarchiver) throws { label = try coder.decodeInt(forKey: "label") }
}
