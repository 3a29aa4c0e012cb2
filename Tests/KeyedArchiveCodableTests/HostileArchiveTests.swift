import Foundation
import KeyedArchive
import KeyedArchiveSample
import KeyedArchiveTestSupport
import XCTest

struct Profile: Codable, Equatable {
    var name: String
    var age: Int
    var score: Float
    var tags: [String]
}

struct Tree: Codable {
    var children: [Tree]
}

/// Arrays of arrays of ... (any depth).
struct NestedArrays: Decodable {
    var count = 0
    init(from decoder: any Decoder) throws {
        var container = try decoder.unkeyedContainer()
        while !container.isAtEnd {
            count += 1 + (try container.decode(NestedArrays.self)).count
        }
    }
}

final class HostileArchiveTests: XCTestCase {
    let sample = Profile(name: "Ada", age: 36, score: 0.5, tags: ["x", "y"])

    /// The archive of `sample` as an editable property list: the envelope and the root's UID.
    private func editable() throws -> (objects: [PropertyListValue], root: Int, envelope: PropertyListDictionary) {
        let plist = try PropertyList.decode(KeyedArchiver.archivedData(withRootObject: sample))
        guard case .dictionary(let envelope) = plist, case .array(let objects)? = plist["$objects"],
            case .uid(let root)? = plist["$top"]?["root"]
        else {
            // Our own archive always has this shape; anything else is a bug to report, not skip.
            XCTFail("our archive of the sample lacks $objects or $top.root")
            throw PropertyListError(.invalidValue, "unexpected archive shape")
        }
        return (objects, Int(root), envelope)
    }

    private func archive(_ objects: [PropertyListValue], envelope: PropertyListDictionary) throws -> Data {
        var envelope = envelope
        envelope["$objects"] = .array(objects)
        return try PropertyList.encode(.dictionary(envelope), format: .binary)
    }

    private func setField(_ key: String, _ value: PropertyListValue?, in objects: inout [PropertyListValue], at index: Int) {
        guard case .dictionary(var fields) = objects[index] else { return }
        fields[key] = value
        objects[index] = .dictionary(fields)
    }

    private func assertDecodingError<T: Decodable>(_ type: T.Type, _ data: Data, file: StaticString = #filePath, line: UInt = #line,
                                                    _ check: (DecodingError) -> Void = { _ in }) {
        XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofType: type, from: data), file: file, line: line) { error in
            guard let error = error as? DecodingError else { return XCTFail("not a DecodingError: \(error)", file: file, line: line) }
            check(error)
        }
    }

    func testWrongTypesUnderKeys() throws {
        let (objects, root, envelope) = try editable()
        var edited = objects
        setField("name", .integer(7), in: &edited, at: root)
        assertDecodingError(Profile.self, try archive(edited, envelope: envelope)) { error in
            guard case .typeMismatch(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(context.codingPath.last?.stringValue, "name")
        }
        edited = objects
        setField("age", .string(PropertyListString("old")), in: &edited, at: root)
        assertDecodingError(Profile.self, try archive(edited, envelope: envelope))
        edited = objects
        setField("age", .integer(PropertyListInteger(UInt64.max)), in: &edited, at: root)
        assertDecodingError(Profile.self, try archive(edited, envelope: envelope)) { error in
            guard case .dataCorrupted = error else { return XCTFail("\(error)") }
        }
        edited = objects
        setField("tags", .uid(UInt32(root)), in: &edited, at: root)  // the profile itself where an array belongs
        assertDecodingError(Profile.self, try archive(edited, envelope: envelope))
        edited = objects
        setField("name", .uid(9_999), in: &edited, at: root)  // out of range
        assertDecodingError(Profile.self, try archive(edited, envelope: envelope))
        edited = objects
        setField("$class", .integer(1), in: &edited, at: root)
        assertDecodingError(Profile.self, try archive(edited, envelope: envelope))
        // The whole archive as another type.
        assertDecodingError([Int].self, try KeyedArchiver.archivedData(withRootObject: sample))
        assertDecodingError(Profile.self, try KeyedArchiver.archivedData(withRootObject: [1, 2]))
        assertDecodingError(Profile.self, try KeyedArchiver.archivedData(withRootObject: "text"))
    }

    /// Repeated keys in an object (a damaged or hand-made archive): every lookup returns the
    /// first entry, as CoreFoundation's reader keeps it (Security.md), whatever order the fields
    /// are read in; and keys match byte for byte, not by canonical equivalence.
    func testRepeatedAndEquivalentKeysResolveToTheFirstLiteralMatch() throws {
        let (objects, root, envelope) = try editable()
        guard case .dictionary(let fields) = objects[root] else { return XCTFail("the root is not an object") }
        // "age" before "name" (Profile reads name first, then age), and a second "age" at the end.
        var entries = fields.entries.filter { $0.key != "age" }
        entries.insert(("age", .integer(36)), at: 1)
        entries.append(("age", .integer(99)))
        var edited = objects
        edited[root] = .dictionary(PropertyListDictionary(entries))
        let decoded = try KeyedUnarchiver.unarchivedObject(ofType: Profile.self, from: try archive(edited, envelope: envelope))
        XCTAssertEqual(decoded.age, 36)
        XCTAssertEqual(decoded.name, sample.name)

        // The same key read twice, its repeat right after it: the second read is the first entry too.
        struct ReadTwice: Codable {
            var a: Int
            var again = 0
            enum CodingKeys: String, CodingKey { case a }
            init(a: Int) { self.a = a }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                a = try container.decode(Int.self, forKey: .a)
                again = try container.decode(Int.self, forKey: .a)
            }
        }
        let twice = try PropertyList.decode(KeyedArchiver.archivedData(withRootObject: ReadTwice(a: 1)))
        guard case .dictionary(var twiceEnvelope) = twice, case .array(var twiceObjects)? = twice["$objects"],
            case .uid(let twiceRoot)? = twice["$top"]?["root"], case .dictionary(var twiceFields) = twiceObjects[Int(twiceRoot)]
        else { return XCTFail("unexpected archive shape") }
        twiceFields.entries.append(("a", .integer(3)))
        twiceObjects[Int(twiceRoot)] = .dictionary(twiceFields)
        twiceEnvelope["$objects"] = .array(twiceObjects)
        let readTwice = try KeyedUnarchiver.unarchivedObject(
            ofType: ReadTwice.self, from: try PropertyList.encode(.dictionary(twiceEnvelope), format: .binary))
        XCTAssertEqual([readTwice.a, readTwice.again], [1, 1])

        // "é" spelled decomposed (NFD) first, then composed (NFC): the NFC key finds the second.
        struct Accented: Codable, Equatable {
            var value: Int
            enum CodingKeys: String, CodingKey { case value = "\u{E9}" }
        }
        let accented = try PropertyList.decode(KeyedArchiver.archivedData(withRootObject: Accented(value: 2)))
        guard case .dictionary(var accentedEnvelope) = accented, case .array(var accentedObjects)? = accented["$objects"],
            case .uid(let accentedRoot)? = accented["$top"]?["root"],
            case .dictionary(let accentedFields) = accentedObjects[Int(accentedRoot)]
        else { return XCTFail("unexpected archive shape") }
        var accentedEntries = accentedFields.entries
        accentedEntries.insert((.string(PropertyListString("e\u{301}")), .integer(1)), at: 1)
        accentedObjects[Int(accentedRoot)] = .dictionary(PropertyListDictionary(accentedEntries))
        accentedEnvelope["$objects"] = .array(accentedObjects)
        let data = try PropertyList.encode(.dictionary(accentedEnvelope), format: .binary)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Accented.self, from: data), Accented(value: 2))
    }

    func testMissingKeysAndNulls() throws {
        let (objects, root, envelope) = try editable()
        var edited = objects
        setField("age", nil, in: &edited, at: root)
        assertDecodingError(Profile.self, try archive(edited, envelope: envelope)) { error in
            guard case .keyNotFound(let key, _) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(key.stringValue, "age")
        }
        edited = objects
        setField("name", .uid(0), in: &edited, at: root)
        assertDecodingError(Profile.self, try archive(edited, envelope: envelope)) { error in
            guard case .valueNotFound = error else { return XCTFail("\(error)") }
        }
        var top = envelope
        top["$top"] = .dictionary(PropertyListDictionary())
        assertDecodingError(Profile.self, try archive(objects, envelope: top))
        assertDecodingError(Profile.self, Data("not an archive".utf8))
        assertDecodingError(Profile.self, Data())
    }

    func testCyclesInHostileArchivesAreErrors() throws {
        // A tree whose child list contains the tree itself.
        let data = try KeyedArchiver.archivedData(withRootObject: Tree(children: [Tree(children: [])]))
        let plist = try PropertyList.decode(data)
        guard case .dictionary(let envelope) = plist, case .array(var objects)? = plist["$objects"],
            case .uid(let root)? = plist["$top"]?["root"], case .uid(let list)? = objects[Int(root)]["children"]
        else { return XCTFail("shape") }
        setField("NS.objects", .array([.uid(root)]), in: &objects, at: Int(list))
        assertDecodingError(Tree.self, try archive(objects, envelope: envelope)) { error in
            guard case .dataCorrupted(let context) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(context.debugDescription.contains("cycle"), context.debugDescription)
        }
        // Class instances in a cycle: also an error, never a crash.
        let person = Person("p")
        var peopleData = try PropertyList.decode(KeyedArchiver.archivedData(withRootObject: person))
        guard case .dictionary(var people) = peopleData, case .array(var personObjects)? = people["$objects"],
            case .uid(let personUID)? = peopleData["$top"]?["root"], case .uid(let friends)? = personObjects[Int(personUID)]["friends"]
        else { return XCTFail("shape") }
        setField("NS.objects", .array([.uid(personUID)]), in: &personObjects, at: Int(friends))
        people["$objects"] = .array(personObjects)
        peopleData = .dictionary(people)
        assertDecodingError(Person.self, try PropertyList.encode(peopleData, format: .binary))
        // A URL whose base is itself.
        let urlData = try PropertyList.decode(KeyedArchiver.archivedData(withRootObject: URL(string: "https://example.com")!))
        guard case .dictionary(var urlEnvelope) = urlData, case .array(var urlObjects)? = urlData["$objects"],
            case .uid(let urlUID)? = urlData["$top"]?["root"]
        else { return XCTFail("shape") }
        setField("NS.base", .uid(urlUID), in: &urlObjects, at: Int(urlUID))
        urlEnvelope["$objects"] = .array(urlObjects)
        assertDecodingError(URL.self, try PropertyList.encode(.dictionary(urlEnvelope), format: .binary))
    }

    /// Cycle flags are kept for every object: a chain of 150 trees decodes, and a child list
    /// pointing back at any tree on the way down, near the root or far from it, is a cycle.
    func testCyclesAreFoundAtEveryObjectIndex() throws {
        var chain = Tree(children: [])
        for _ in 0..<150 { chain = Tree(children: [chain, Tree(children: [])]) }
        let data = try KeyedArchiver.archivedData(withRootObject: chain)
        func depth(_ tree: Tree) -> Int { tree.children.first.map { 1 + depth($0) } ?? 0 }
        XCTAssertEqual(depth(try KeyedUnarchiver.unarchivedObject(ofType: Tree.self, from: data)), 150)

        let plist = try PropertyList.decode(data)
        guard case .dictionary(let envelope) = plist, case .array(let objects)? = plist["$objects"] else { return XCTFail("shape") }
        // Each tree's UID and the UID of its child list, root first.
        var trees: [(tree: Int, list: Int)] = []
        var next = plist["$top"]?["root"]
        while case .uid(let tree)? = next, case .uid(let list)? = objects[Int(tree)]["children"] {
            trees.append((Int(tree), Int(list)))
            guard case .array(let members)? = objects[Int(list)]["NS.objects"], let first = members.first else { break }
            next = first
        }
        XCTAssertEqual(trees.count, 151)
        XCTAssertTrue(trees.contains { $0.tree < 64 } && trees.contains { $0.tree > 64 }, "\(trees.map(\.tree))")
        let deepest = trees[trees.count - 1]
        for target in [trees[0].tree, trees[100].tree, trees[trees.count - 2].tree] {
            var edited = objects
            setField("NS.objects", .array([.uid(UInt32(target))]), in: &edited, at: deepest.list)
            assertDecodingError(Tree.self, try archive(edited, envelope: envelope)) { error in
                guard case .dataCorrupted(let context) = error else { return XCTFail("\(error)") }
                XCTAssertTrue(context.debugDescription.contains("cycle"), context.debugDescription)
            }
        }
        // The same subtree twice in one list is no cycle: its flag is cleared once it is read
        // (one subtree near the start of `$objects`, one far from it).
        let low = try XCTUnwrap(trees.indices.dropFirst().first { trees[$0].tree < 64 })
        let high = try XCTUnwrap(trees.indices.dropFirst().first { trees[$0].tree > 64 })
        for child in [low, high] {
            var shared = objects
            let sharedChild: PropertyListValue = .uid(UInt32(trees[child].tree))
            setField("NS.objects", .array([sharedChild, sharedChild]), in: &shared, at: trees[child - 1].list)
            XCTAssertNoThrow(try KeyedUnarchiver.unarchivedObject(ofType: Tree.self, from: try archive(shared, envelope: envelope)), "\(child)")
        }
    }

    func testDeepNestingIsBoundedByTheLimits() throws {
        // 20,000 nested arrays built directly in the object table (our encoder refuses to write them).
        let table = ArchiveObjectTable()
        let depth = 20_000
        let uids = (0..<depth).map { _ in table.reserveUID() }
        let arrayClass = table.classUID(chain: ["NSArray", "NSObject"])
        for (index, uid) in uids.enumerated() {
            let children: [PropertyListValue] = index + 1 < depth ? [.uid(uids[index + 1])] : []
            table.setObject(.dictionary(PropertyListDictionary([("$class", .uid(arrayClass)), ("NS.objects", .array(children))])), at: uid)
        }
        let data = try table.encodedData(top: PropertyListDictionary([("root", .uid(uids[0]))]))
        let decoder = KeyedArchiveDecoder()
        XCTAssertThrowsError(try decoder.decode(NestedArrays.self, from: data)) { error in
            guard case DecodingError.dataCorrupted(let context) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(context.debugDescription.contains("depth"), context.debugDescription)
        }
        // Shared sub-arrays: 2^40 paths through 40 objects; the expansion limit stops it.
        let bomb = ArchiveObjectTable()
        let levels = (0..<40).map { _ in bomb.reserveUID() }
        let bombClass = bomb.classUID(chain: ["NSArray", "NSObject"])
        for (index, uid) in levels.enumerated() {
            let children: [PropertyListValue] = index + 1 < levels.count ? [.uid(levels[index + 1]), .uid(levels[index + 1])] : []
            bomb.setObject(.dictionary(PropertyListDictionary([("$class", .uid(bombClass)), ("NS.objects", .array(children))])), at: uid)
        }
        let bombData = try bomb.encodedData(top: PropertyListDictionary([("root", .uid(levels[0]))]))
        decoder.limits.maximumExpandedNodeCount = 100_000
        XCTAssertThrowsError(try decoder.decode(NestedArrays.self, from: bombData)) { error in
            XCTAssertTrue(error is DecodingError)
        }
    }

    func testStrictClassNamesAndMapping() throws {
        let data = try KeyedArchiver.archivedData(withRootObject: sample)  // class "Profile"
        let strict = KeyedArchiveDecoder()
        strict.isStrict = true
        XCTAssertEqual(try strict.decode(Profile.self, from: data), sample)

        // The same fields under an old class name: lenient accepts, strict refuses unless mapped.
        let encoder = KeyedArchiveEncoder()
        encoder.setClassName("LegacyProfile", for: Profile.self)
        let legacy = try encoder.encode(sample)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Profile.self, from: legacy), sample)
        XCTAssertThrowsError(try strict.decode(Profile.self, from: legacy)) { error in
            guard case DecodingError.typeMismatch(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(context.debugDescription.contains("LegacyProfile"), context.debugDescription)
        }
        strict.setType(Profile.self, forClassName: "LegacyProfile")
        XCTAssertEqual(try strict.decode(Profile.self, from: legacy), sample)

        // Module-qualified names, as Swift's NSKeyedArchiver writes them.
        for name in ["MyApp.Profile", "KeyedArchiveCodableTests.Profile"] {
            encoder.setClassName(name, for: Profile.self)
            let qualified = try encoder.encode(sample)
            let decoder = KeyedArchiveDecoder()
            decoder.isStrict = true
            XCTAssertEqual(try decoder.decode(Profile.self, from: qualified), sample, name)
        }
        for name in ["Other.Module.Profile", "ProfileX", "NSObject"] {
            encoder.setClassName(name, for: Profile.self)
            let decoder = KeyedArchiveDecoder()
            decoder.isStrict = true
            XCTAssertThrowsError(try decoder.decode(Profile.self, from: encoder.encode(sample)), name)
        }
        // The sample's protocol-given name, and an override on the decoder side.
        let sampleData = try KeyedArchiver.archivedData(withRootObject: KeyedArchiveSample.ArchivingData.defaultProfile)
        XCTAssertEqual(try Self.className(sampleData), "ArchivingData")
        XCTAssertEqual(try strict.decode(KeyedArchiveSample.ArchivingData.self, from: sampleData), .defaultProfile)
        strict.setClassName("Renamed", for: KeyedArchiveSample.ArchivingData.self)
        XCTAssertThrowsError(try strict.decode(KeyedArchiveSample.ArchivingData.self, from: sampleData))
    }

    func testRandomByteDamageNeverTraps() throws {
        var generator = ModelGenerator(seed: 7)
        let model = generator.model(depth: 1)
        let data = try KeyedArchiver.archivedData(withRootObject: model)
        var rng = SeededGenerator(seed: 99)
        for _ in 0..<300 {
            var damaged = [UInt8](data)
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let index = Int.random(in: 0..<damaged.count, using: &rng)
                damaged[index] = UInt8.random(in: 0...255, using: &rng)
            }
            // Any outcome but a trap is acceptable; errors must be DecodingErrors.
            do {
                _ = try KeyedUnarchiver.unarchivedObject(ofType: Model.self, from: Data(damaged))
            } catch {
                XCTAssertTrue(error is DecodingError, "\(error)")
            }
        }
    }

    /// Types that follow their own links through containers they make themselves (a super
    /// decoder per link, or a loop over nested containers): through an archive whose link
    /// points back at its own object, the decode makes none of these containers, so only
    /// their depth stops them. Both ran away before: a stack overflow (SIGSEGV) and a loop
    /// that never ended.
    func testSelfFollowingContainersStopAtTheDepthLimit() throws {
        let chain = SuperChain(label: 0, next: SuperChain(label: 1, next: SuperChain(label: 2, next: nil)))
        let valid = try KeyedArchiver.archivedData(withRootObject: chain)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: SuperChain.self, from: valid), chain)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: NestedWalk.self, from: valid).steps, 3)

        // The root's "next" made to point at the root itself, in binary and XML.
        let plist = try PropertyList.decode(valid)
        guard case .dictionary(var envelope) = plist, case .array(var objects)? = plist["$objects"],
              case .uid(let root)? = plist["$top"]?["root"] else { return XCTFail("not an archive") }
        setField("next", .uid(root), in: &objects, at: Int(root))
        envelope["$objects"] = .array(objects)
        for format in [PropertyListFormat.binary, .xml] {
            let cyclic = try PropertyList.encode(.dictionary(envelope), format: format)
            for decode in [{ _ = try KeyedUnarchiver.unarchivedObject(ofType: SuperChain.self, from: cyclic) },
                           { _ = try KeyedUnarchiver.unarchivedObject(ofType: NestedWalk.self, from: cyclic) }] {
                XCTAssertThrowsError(try decode(), "\(format)") { error in
                    guard case DecodingError.dataCorrupted(let context)? = error as? DecodingError else { return XCTFail("\(error)") }
                    XCTAssertTrue(context.debugDescription.contains("maximum depth"), context.debugDescription)
                }
            }
        }
    }

    static func className(_ data: Data) throws -> String? {
        try FoundationInteropTests.rootClassName(data)
    }
}

/// A chain decoded by a super decoder per link (`Self(from: container.superDecoder(forKey:))`).
private struct SuperChain: Codable, Equatable {
    var label: Int
    var next: Box?
    final class Box: Codable, Equatable {
        let value: SuperChain
        init(_ value: SuperChain) { self.value = value }
        static func == (a: Box, b: Box) -> Bool { a.value == b.value }
    }
    init(label: Int, next: SuperChain?) {
        self.label = label
        self.next = next.map(Box.init)
    }
    enum CodingKeys: String, CodingKey { case label, next }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(label, forKey: .label)
        if let next { try next.value.encode(to: container.superEncoder(forKey: .next)) }
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        label = try container.decode(Int.self, forKey: .label)
        next = container.contains(.next) ? Box(try SuperChain(from: container.superDecoder(forKey: .next))) : nil
    }
}

/// The same archive walked by a loop over nested containers.
private struct NestedWalk: Decodable {
    var steps = 0
    enum CodingKeys: String, CodingKey { case label, next }
    init(from decoder: any Decoder) throws {
        var container = try decoder.container(keyedBy: CodingKeys.self)
        steps = 1
        while container.contains(.next) {
            container = try container.nestedContainer(keyedBy: CodingKeys.self, forKey: .next)
            steps += 1
        }
    }
}
