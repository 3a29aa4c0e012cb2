import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The resolver behind `karchive print` / `unarchive`, read as a forensic analyst reads it
/// (found by an exploratory review): no entry lost to keys that print alike, the depth limit
/// counted per object, a reference bomb with a back reference stopped at once, and errors that
/// name the step before the broken object.
final class ResolverFidelityTests: XCTestCase {
    /// An archive of hand-made `$objects` entries (index 0 is `$null`, added here).
    private func archive(_ objects: [PropertyListValue], root: UInt32 = 1) throws -> Data {
        let envelope: PropertyListValue = [
            "$archiver": "NSKeyedArchiver", "$version": 100_000,
            "$top": ["root": .uid(root)], "$objects": .array(["$null"] + objects),
        ]
        return try PropertyList.encode(envelope, format: .binary)
    }

    private func classDescription(_ names: String...) -> PropertyListValue {
        ["$classname": .string(PropertyListString(names[0])), "$classes": .array(names.map { .string(PropertyListString($0)) })]
    }

    private func keys(of value: PropertyListValue) -> [String] {
        (value.dictionaryValue?.entries ?? []).compactMap { $0.key.stringValue }
    }

    /// An NSDictionary keyed by 1 and "1", two data keys and two objects printed every pair as
    /// one key (`1`, `<data>`, `<dictionary>`), and JSON, XML and plistlib keep one value per
    /// key: 3 of 6 entries came back. A user field `$class` (stored `$$class`) collided with
    /// the class name.
    func testNoEntryIsLostToKeysThatPrintAlike() throws {
        // 1 NSDictionary, 2 its class, 3-8 keys, 9-14 values, 15 MyKey class, 16-17 key values.
        var objects: [PropertyListValue] = [
            ["$class": .uid(2), "NS.keys": .array((3...8).map { .uid($0) }), "NS.objects": .array((9...14).map { .uid($0) })],
            classDescription("NSDictionary", "NSObject"),
            1, "1", .data(Data([1])), .data(Data([2])),
            ["$class": .uid(15), "v": .uid(16)], ["$class": .uid(15), "v": .uid(17)],
        ]
        objects += (0..<6).map { .string(PropertyListString("value \($0)")) }
        objects += [classDescription("MyKey", "NSObject"), "A", "B"]
        let resolved = try ArchiveResolver.resolve(try archive(objects))
        let names = keys(of: resolved)
        XCTAssertEqual(names.count, 6)
        XCTAssertEqual(Set(names).count, 6, "\(names)")
        XCTAssertEqual(Set((resolved.dictionaryValue?.values ?? []).compactMap(\.stringValue)), Set((0..<6).map { "value \($0)" }))
        XCTAssertTrue(names.contains("<01>") && names.contains("<02>"), "\(names)")

        // plistlib reads the XML the tool writes with all six entries.
        let xml = try PropertyList.encode(resolved, format: .xml)
        let count = try Python.run("import plistlib, sys; print(len(plistlib.loads(sys.stdin.buffer.read())))", input: xml)
        XCTAssertEqual(String(decoding: count, as: UTF8.self), "6\n")

        let thing = try archive([
            ["$class": .uid(2), "$$class": .uid(3), "name": .uid(4)], classDescription("MyApp.Thing", "NSObject"), "secret", "n",
        ])
        let fields = try ArchiveResolver.resolve(thing)
        XCTAssertEqual(fields["$class"], "MyApp.Thing")
        XCTAssertEqual(fields["$$class"], "secret")
        XCTAssertEqual(Set(keys(of: fields)).count, 3)
    }

    /// Each NSArray counted two levels of `maximumDepth`, so 256 nested arrays were refused
    /// ("nesting deeper than 512") where the unarchiver reads 511.
    func testTheDepthLimitCountsOneLevelPerObject() throws {
        func nested(_ depth: Int) throws -> Data {
            var value: [Any] = ["leaf"]
            for _ in 1..<depth { value = [value] }
            return try KeyedArchiver.archivedData(withRootObject: value, format: .binary)
        }
        let deep = try nested(400)
        // The unarchiver reads it; so does the resolver now (both on a large stack).
        let results = SmallStackThread.run(stackSize: 64 << 20) { () -> [String] in
            [
                (try? KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .string], from: deep)) != nil ? "read" : "refused",
                (try? ArchiveResolver.resolve(deep)) != nil ? "read" : "refused",
            ]
        }
        XCTAssertEqual(results, ["read", "read"])
        XCTAssertThrowsError(try ArchiveResolver.resolve(try nested(600))) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .depthLimitExceeded)
        }
    }

    /// `$objects` 1...`length`: each object refers to the next twice (`l`, `r`), the last back
    /// to the first (`back`); then their class.
    private func chain(_ length: Int) -> [PropertyListValue] {
        let classUID = PropertyListValue.uid(UInt32(length + 1))
        var objects: [PropertyListValue] = []
        for index in 1...length {
            var fields = PropertyListDictionary()
            fields["$class"] = classUID
            if index < length {
                let next = PropertyListValue.uid(UInt32(index + 1))
                fields["l"] = next
                fields["r"] = next
            } else {
                fields["back"] = .uid(1)
            }
            objects.append(.dictionary(fields))
        }
        objects.append(classDescription("B", "NSObject"))
        return objects
    }

    /// A doubling chain whose last object refers back to the root: nothing was reused (a
    /// result with a back reference was made anew at every use), so 30 levels (643 bytes) ran
    /// for 20 s and 1.85 GB before the expansion limit. A result is now reused while what it
    /// refers back to is being emitted, and the limit stops the file at once.
    func testABackReferenceDoesNotTurnOffReuse() throws {
        // 1...30 the chain (each refers to the next twice), 31 the class.
        // Work linear in the chain's length (8 times the levels: about 8 times the time; with
        // nothing reused it was 2^14 times), checked first: the file below would run for minutes.
        let ratio = try LinearTime.ratio(n: 2, { try self.archive(self.chain($0)) }) { _ = try ArchiveResolver.resolve($0) }
        guard ratio < 30 else { return XCTFail("resolving 8 times the levels took \(ratio) times as long") }
        let bomb = try archive(chain(30))
        XCTAssertThrowsError(try ArchiveResolver(data: bomb).resolve()) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .objectLimitExceeded)
        }
        // With a small expansion limit the same file fails too; 12 levels resolve, to 2^11
        // copies of the last object, each with its reference back to the root.
        var limits = DecodingLimits.default
        limits.maximumExpandedNodeCount = 1 << 16
        XCTAssertThrowsError(try ArchiveResolver(data: bomb, limits: limits).resolve())
        let resolved = try ArchiveResolver.resolve(try archive(chain(12)))
        func leaves(_ value: PropertyListValue) -> Int {
            if let back = value["back"] { return back["$ref"] == 1 ? 1 : 0 }
            return leaves(value["l"] ?? .null) + leaves(value["r"] ?? .null)
        }
        XCTAssertEqual(leaves(resolved), 1 << 11)
    }

    /// The resolver's errors named only the broken object; they name the step that led to it
    /// too, as the unarchiver's do.
    func testErrorsNameTheStepBeforeTheBrokenObject() throws {
        let broken = try archive([
            ["$class": .uid(2), "child": .uid(3)], classDescription("Holder", "NSObject"),
            // A reference out of range (a relative string of the wrong kind is shown as the
            // object's fields since session 66, not an error).
            ["$class": .uid(4), "NS.relative": .uid(99), "NS.base": .uid(0)], classDescription("NSURL", "NSObject"),
        ])
        XCTAssertThrowsError(try ArchiveResolver.resolve(broken)) { error in
            let path = (error as? KeyedArchiveError)?.path ?? ""
            XCTAssertTrue(path.contains("(Holder) child > $objects[3] (NSURL)"), path)
        }
    }

    /// One object of a mapped class without that class's shape made `print` and `unarchive`
    /// refuse the whole archive: Apple's private subclasses that store other fields
    /// (NSSharedKeyDictionary's `NS.keys` by reference, NSLocalizableString's `NSKey`), an
    /// NSDate outside years 0...9999 (which Foundation reads), `NS.object.N` with a gap, an
    /// NSDictionary with more objects than keys, an empty URL, `NS.bytes` that is not UTF-8, a
    /// 15-byte UUID, an integer field key. Each is now shown as its fields and class, and the
    /// rest of the archive as before (found by session 66's forensic review).
    func testObjectsWithoutTheirClasssShapeAreShownAsTheirFields() throws {
        let cases: [(name: String, object: PropertyListValue, chain: [String], check: (PropertyListDictionary) -> Bool)] = [
            ("NSSharedKeyDictionary", ["NS.keys": .uid(5), "NS.values": .uid(6), "NS.count": 1], ["NSSharedKeyDictionary", "NSMutableDictionary", "NSDictionary", "NSObject"],
             { $0["NS.keys"] == ["x"] && $0["NS.values"] == [1] && $0["NS.count"] == 1 }),
            ("NSLocalizableString", ["NSKey": "OK_BUTTON", "NSDev": "OK"], ["NSLocalizableString", "NSString", "NSObject"],
             { $0["NSKey"] == "OK_BUTTON" && $0["NSDev"] == "OK" }),
            ("NSDate", ["NS.time": 1e12], ["NSDate", "NSObject"], { $0["NS.time"] == 1e12 }),
            ("NSArray", ["NS.object.0": .uid(7), "NS.object.2": .uid(7)], ["NSArray", "NSObject"],
             { $0["NS.object.0"] == "x" && $0["NS.object.2"] == "x" }),
            ("NSDictionary", ["NS.keys": [.uid(7)], "NS.objects": [.uid(7), .uid(7)]], ["NSDictionary", "NSObject"], { $0["NS.objects"] == ["x", "x"] }),
            ("NSURL", ["NS.relative": "", "NS.base": .uid(0)], ["NSURL", "NSObject"], { $0["NS.relative"] == "" && $0["NS.base"] == "$null" }),
            ("NSMutableString", ["NS.bytes": .data(Data([0xFF, 0xFE]))], ["NSMutableString", "NSString", "NSObject"], { $0["NS.bytes"] == .data(Data([0xFF, 0xFE])) }),
            ("NSUUID", ["NS.uuidbytes": .data(Data(count: 15))], ["NSUUID", "NSObject"], { $0["NS.uuidbytes"] == .data(Data(count: 15)) }),
        ]
        for (name, object, chain, check) in cases {
            guard case .dictionary(var fields) = object else { continue }
            fields.entries.append(("$class", .uid(4)))
            let data = try archive([
                ["$class": .uid(2), "keep": "kept text", "odd": .uid(3)], classDescription("Holder", "NSObject"),
                .dictionary(fields), .dictionary(PropertyListDictionary([("$classname", .string(PropertyListString(chain[0]))), ("$classes", .array(chain.map { .string(PropertyListString($0)) }))])),
                // 5 and 6: the NSArrays NSSharedKeyDictionary's fields refer to; 7: "x"; 9: 1.
                ["$class": .uid(8), "NS.objects": [.uid(7)]], ["$class": .uid(8), "NS.objects": [.uid(9)]], "x",
                classDescription("NSArray", "NSObject"), 1,
            ])
            let resolved = try ArchiveResolver.resolve(data)
            XCTAssertEqual(resolved["keep"], "kept text", name)
            let shown = try XCTUnwrap(resolved["odd"]?.dictionaryValue, "\(name): \(resolved)")
            XCTAssertEqual(shown["$class"], .string(PropertyListString(chain[0])), name)
            XCTAssertTrue(check(shown), "\(name): \(shown)")
        }
        // A field key that is not a string is shown as its text, as an NSDictionary's key is.
        let integerKey = try archive([
            .dictionary(PropertyListDictionary([("$class", .uid(2)), (7, "v")])), classDescription("Odd", "NSObject"),
        ])
        XCTAssertEqual(try ArchiveResolver.resolve(integerKey)["7"], "v")
    }

    // MARK: From a second reader

    /// `$objects` made one at a time, for the shapes below.
    private struct Objects {
        var list: [PropertyListValue] = []
        private var classes: [String: UInt32] = [:]

        mutating func add(_ value: PropertyListValue) -> PropertyListValue {
            list.append(value)
            return .uid(UInt32(list.count))  // index 0 is `$null`
        }

        mutating func classUID(_ name: String) -> PropertyListValue {
            if let known = classes[name] { return .uid(known) }
            let uid = add(["$classname": .string(PropertyListString(name)), "$classes": [.string(PropertyListString(name)), "NSObject"]])
            if case .uid(let number) = uid { classes[name] = number }
            return uid
        }

        mutating func array(_ items: [PropertyListValue]) -> PropertyListValue {
            let classUID = classUID("NSArray")
            return add(["$class": classUID, "NS.objects": .array(items)])
        }

        mutating func dictionary(_ keys: [PropertyListValue], _ values: [PropertyListValue]) -> PropertyListValue {
            let classUID = classUID("NSDictionary")
            return add(["$class": classUID, "NS.keys": .array(keys), "NS.objects": .array(values)])
        }
    }

    private func archive(_ objects: Objects, root: PropertyListValue) throws -> Data {
        // A test built wrong fails here rather than skipping: every root `add` makes is a reference.
        struct RootIsNotAReference: Error {}
        guard case .uid(let uid) = root else { throw RootIsNotAReference() }
        return try archive(objects.list, root: uid)
    }

    /// Keys were counted toward neither limit, so a dictionary reused through shared
    /// references cost nothing for its keys: a 100 KB key reached 2^20 times (100 GB of
    /// output) resolved in an instant; now the byte limit stops it.
    func testKeysCountTowardTheExpansionLimits() throws {
        var objects = Objects()
        let key = objects.add(.string(PropertyListString(String(repeating: "K", count: 100_000))))
        let one = objects.add(1)
        var current = objects.dictionary([key], [one])
        for _ in 0..<20 { current = objects.array([current, current]) }
        XCTAssertThrowsError(try ArchiveResolver.resolve(try archive(objects, root: current))) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .objectLimitExceeded)
        }
    }

    /// More than 8 objects referred back to turned reuse off again (9: 24 s and 1.6 GB).
    func testManyBackReferencesKeepReuse() throws {
        func shape(_ levels: Int) throws -> Data {
            var objects = Objects()
            let firstGroup = objects.list.count + 1
            let groups = (0..<9).map { _ in objects.add(.null) }  // reserved, set below
            var previous = objects.array(groups)
            for _ in 0..<levels { previous = objects.array([previous, previous] + groups) }
            let classUID = objects.classUID("G")
            for index in 0..<9 {
                objects.list[firstGroup - 1 + index] = ["$class": classUID, "next": index < 8 ? groups[index + 1] : previous]
            }
            return try archive(objects, root: groups[0])
        }
        let ratio = try LinearTime.ratio(n: 2, { try shape($0) }) { _ = try ArchiveResolver.resolve($0) }
        XCTAssertLessThan(ratio, 30, "resolving 8 times the levels took \(ratio) times as long")
    }

    /// A reused result skipped the depth check: ten chains of 100 arrays, each ending in the one
    /// before, resolved 1,000 levels deep past `maximumDepth` (100,000 levels overflowed the
    /// stack when the value was freed).
    func testReusedResultsCountTheirHeight() throws {
        var objects = Objects()
        var current = objects.add("leaf")
        var tops: [PropertyListValue] = []
        for _ in 0..<10 {
            for _ in 0..<100 { current = objects.array([current]) }
            tops.append(current)
        }
        let root = objects.array(tops)
        XCTAssertThrowsError(try ArchiveResolver.resolve(try archive(objects, root: root))) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .depthLimitExceeded)
        }
    }

    /// A suffix took the name of a real key: `a`, `a`, `a (2)` gave `a`, `a (2)` (the second
    /// `a`) and `a (2) (2)` (the real `a (2)`).
    func testRenamedKeysNeverTakeARealKeysName() throws {
        var objects = Objects()
        let a = objects.add("a"), a2 = objects.add("a (2)")
        let values = ["first a", "second a", "real a (2)"].map { objects.add(.string(PropertyListString($0))) }
        let root = objects.dictionary([a, a, a2], values)
        let resolved = try ArchiveResolver.resolve(try archive(objects, root: root))
        XCTAssertEqual(resolved["a"], "first a")
        XCTAssertEqual(resolved["a (2)"], "real a (2)")
        XCTAssertEqual(resolved["a (3)"], "second a")
    }

    /// Each repeat of a key counted its suffix up from ` (2)`: 20,000 copies of one key took
    /// 40 s (quadratic). 8 times the copies now take about 8 times as long.
    func testRenamingManyRepeatsIsLinear() throws {
        func repeats(_ count: Int) throws -> Data {
            var objects = Objects()
            let key = objects.add("a")
            let value = objects.add(1)
            let root = objects.dictionary(Array(repeating: key, count: count), Array(repeating: value, count: count))
            return try archive(objects, root: root)
        }
        let resolved = try ArchiveResolver.resolve(try repeats(50))
        XCTAssertEqual(Set(keys(of: resolved)).count, 50)
        let ratio = try LinearTime.ratio(n: 400, { try repeats($0) }) { _ = try ArchiveResolver.resolve($0) }
        XCTAssertLessThan(ratio, 30, "renaming 8 times the repeats took \(ratio) times as long")
    }

    /// A class name is written at every use of its object, but was not counted: a 100 KB name
    /// reached 2^20 times (100 GB of output) resolved in a millisecond.
    func testClassNamesCountTowardTheExpansionLimits() throws {
        var objects = Objects()
        let classUID = objects.add(["$classname": .string(PropertyListString(String(repeating: "C", count: 100_000)))])
        var current = objects.add(["$class": classUID])
        for _ in 0..<20 { current = objects.array([current, current]) }
        XCTAssertThrowsError(try ArchiveResolver.resolve(try archive(objects, root: current))) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .objectLimitExceeded)
        }
    }

    /// What the output holds is what the limits count: a `$ref` is a dictionary, a key and a
    /// number with 4 bytes of text; nil is the 5-byte string `$null`; an object's `$class` key
    /// is 6 bytes. Counted short, 1 KB archives came out with 50% more values than the limit
    /// and megabytes of `$null` under a 1,000-byte limit.
    func testTheLimitsCountWhatTheOutputHolds() throws {
        func limits(nodes: Int = 1 << 25, bytes: Int = 1 << 30) -> DecodingLimits {
            var limits = DecodingLimits.default
            limits.maximumExpandedNodeCount = nodes
            limits.maximumExpandedByteCount = bytes
            return limits
        }
        var nils = Objects()
        var current = nils.array([.uid(0)])
        for _ in 0..<10 { current = nils.array([current, current]) }
        let nulls = try archive(nils, root: current)  // 1,024 `$null`s, 5,120 bytes
        XCTAssertNoThrow(try ArchiveResolver(data: nulls, limits: limits(bytes: 5_120)).resolve())
        XCTAssertThrowsError(try ArchiveResolver(data: nulls, limits: limits(bytes: 5_119)).resolve())

        // An object holding 4 references back to itself, 2^3 times: its output, counted here
        // from the value itself, is exactly what the limits must allow.
        var objects = Objects()
        objects.list.append(.null)  // the object, set below
        var shared = objects.array(Array(repeating: .uid(1), count: 4))
        for _ in 0..<3 { shared = objects.array([shared, shared]) }
        let classUID = objects.classUID("")
        objects.list[0] = ["$class": classUID, "x": shared]
        let refs = try archive(objects, root: .uid(1))
        let resolved = try ArchiveResolver.resolve(refs)
        func measure(_ value: PropertyListValue) -> (nodes: Int, bytes: Int) {
            switch value {
            case .array(let items): return items.map(measure).reduce((1, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
            case .dictionary(let dictionary):
                return dictionary.entries.reduce((1, 0)) { total, entry in
                    let (nodes, bytes) = measure(entry.value)
                    return (total.0 + 1 + nodes, total.1 + (entry.key.stringValue?.utf8.count ?? 0) + bytes)
                }
            case .string(let string): return (1, string.utf8Count)
            default: return (1, 0)
            }
        }
        let real = measure(resolved)
        XCTAssertThrowsError(try ArchiveResolver(data: refs, limits: limits(nodes: real.nodes - 1)).resolve())
        XCTAssertThrowsError(try ArchiveResolver(data: refs, limits: limits(bytes: real.bytes - 1)).resolve())
    }

    /// Every remembered result keeps its references back: a chain of D objects whose last
    /// refers back to all of them keeps D²/2, and an 11 MB file held 468 MB. They count
    /// against `maximumExpandedNodeCount`.
    func testRememberedBackReferencesAreBounded() throws {
        var objects = Objects()
        let chain = (0..<100).map { _ in objects.add(.null) }  // set below
        let last = objects.array(chain)
        let classUID = objects.classUID("X")
        for index in 0..<100 {
            guard case .uid(let uid) = chain[index] else { continue }
            objects.list[Int(uid) - 1] = ["$class": classUID, "next": index + 1 < 100 ? chain[index + 1] : last]
        }
        let data = try archive(objects, root: chain[0])
        XCTAssertNoThrow(try ArchiveResolver.resolve(data))
        var limits = DecodingLimits.default
        limits.maximumExpandedNodeCount = 4_000  // the output is about 700 values; 100²/2 references remembered
        XCTAssertThrowsError(try ArchiveResolver(data: data, limits: limits).resolve()) { error in
            XCTAssertTrue("\(error)".contains("remembering"), "\(error)")
        }
    }
}
