import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The NSCoding-style API where it must behave as NSKeyedArchiver / NSKeyedUnarchiver do
/// (found by an exploratory review against Foundation): the last write of a key wins, even over
/// a conditional reference; objects are archived as they are when they are encoded; a failed
/// encode is never finished into an archive; a process-wide class name does not cut off older
/// archives; `$class` is not a user key.
final class CoderSemanticsTests: XCTestCase {
    /// A named object.
    final class Item: KeyedArchiving {
        var name: String
        init(_ name: String) { self.name = name }
        func encode(with coder: KeyedArchiver) throws { try coder.encode(name, forKey: "name") }
        init(coder: KeyedUnarchiver) throws { name = try coder.decodeObject(of: String.self, forKey: "name") ?? "" }
    }

    /// Writes "k" conditionally to `conditional` (and to `alsoConditional`), then `second`.
    final class Overwriter: KeyedArchiving {
        nonisolated(unsafe) static var second: (KeyedArchiver) throws -> Void = { _ in }
        let conditional: Item
        let alsoConditional: Item?
        var k: Any?
        init(_ conditional: Item, _ alsoConditional: Item? = nil) {
            (self.conditional, self.alsoConditional) = (conditional, alsoConditional)
        }
        func encode(with coder: KeyedArchiver) throws {
            try coder.encodeConditionalObject(conditional, forKey: "k")
            if let alsoConditional { try coder.encodeConditionalObject(alsoConditional, forKey: "k") }
            try Self.second(coder)
        }
        init(coder: KeyedUnarchiver) throws { (conditional, alsoConditional) = (Item("?"), nil) }
        func decodeReferences(with coder: KeyedUnarchiver) throws {
            // A number is stored inline, where an object decode finds no reference.
            do { k = try coder.decodeObject(of: [.type(Item.self)], forKey: "k") } catch { k = try coder.decodeInt(forKey: "k") }
        }
    }

    /// Encodes `objects` unconditionally.
    final class Holder: KeyedArchiving {
        let objects: [Item]
        init(_ objects: [Item]) { self.objects = objects }
        func encode(with coder: KeyedArchiver) throws { try coder.encode(objects, forKey: "objects") }
        init(coder: KeyedUnarchiver) throws { objects = [] }
    }

    private func decodedK(_ data: Data) throws -> Any? {
        let classes: [KeyedArchiveClass] = [.type(Overwriter.self), .type(Holder.self), .type(Item.self), .number, .string, .array]
        let unarchiver = try KeyedUnarchiver(data: data)
        return try XCTUnwrap(unarchiver.decodeObject(of: classes, forKey: "root") as? Overwriter).k
    }

    /// A conditional reference to an object encoded later was patched into its key at the end,
    /// over whatever the object wrote there afterwards (with two such references, which one
    /// depended on a dictionary's order, so the bytes changed from run to run).
    func testALaterWriteOfAKeyWinsOverAConditionalReference() throws {
        let cases: [(String, (KeyedArchiver) throws -> Void, (Any?) -> Bool)] = [
            ("an object", { try $0.encode(Item("A"), forKey: "k") }, { ($0 as? Item)?.name == "A" }),
            ("a number", { $0.encode(5, forKey: "k") }, { ($0 as? Int) == 5 }),
            ("nil", { try $0.encode(nil as Item?, forKey: "k") }, { $0 == nil }),
            ("nothing", { _ in }, { ($0 as? Item)?.name == "C" }),
        ]
        defer { Overwriter.second = { _ in } }
        for (name, second, expected) in cases {
            Overwriter.second = second
            var archives: Set<Data> = []
            for _ in 0..<8 {
                let (b, c) = (Item("B"), Item("C"))
                let archiver = KeyedArchiver()
                try archiver.encode(Overwriter(b, c), forKey: "root")
                try archiver.encode(Holder([b, c]), forKey: "later")  // both targets encoded after the conditionals
                let data = try archiver.finishEncoding()
                archives.insert(data)
                let k = try decodedK(data)
                XCTAssertTrue(expected(k), "\(name): \(String(describing: k))")
            }
            XCTAssertEqual(archives.count, 1, "\(name): the same archive every time")
        }
        // At the top level too: the last write of a `$top` key wins.
        let target = Item("T")
        let archiver = KeyedArchiver()
        try archiver.encodeConditionalObject(target, forKey: "k")
        archiver.encode(7, forKey: "k")
        try archiver.encode(target, forKey: "root")
        let unarchiver = try KeyedUnarchiver(data: archiver.finishEncoding())
        XCTAssertEqual(try unarchiver.decodeInt(forKey: "k"), 7)
    }

    /// Foundation calls `encode(with:)` during the encode call, so a later change to the object
    /// is not archived; ours ran it when finishing.
    func testObjectsAreArchivedAsTheyAreWhenEncoded() throws {
        let item = Item("before")
        let archiver = KeyedArchiver()
        try archiver.encode(item, forKey: "root")
        item.name = "after"
        let ours = try KeyedUnarchiver.unarchivedObject(ofClass: Item.self, from: archiver.finishEncoding())
        XCTAssertEqual(ours?.name, "before")

        let peer = NamedObject(name: "before")
        let foundation = NSKeyedArchiver(requiringSecureCoding: false)
        foundation.encode(peer, forKey: NSKeyedArchiveRootObjectKey)
        peer.name = "after"
        foundation.finishEncoding()
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: foundation.encodedData)
        unarchiver.requiresSecureCoding = false
        XCTAssertEqual((unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? NamedObject)?.name, ours?.name)
    }

    struct Refusal: Error, Equatable {}

    /// Throws from `encode(with:)`.
    final class Refuser: KeyedArchiving {
        init() {}
        func encode(with coder: KeyedArchiver) throws { throw Refusal() }
        init(coder: KeyedUnarchiver) throws {}
    }

    /// A failed encode left an entry never set; a second `finishEncoding()` wrote it as the
    /// string `$null` (an array came back as `["first", "$null", "last"]`). The encode call
    /// now throws, naming where, and every later call throws the same.
    func testAFailedEncodeIsNeverFinishedIntoAnArchive() throws {
        let unsupported = KeyedArchiver()
        XCTAssertThrowsError(try unsupported.encode(["ok", NSObject()] as [Any], forKey: "root")) { error in
            let error = error as? KeyedArchiveError
            XCTAssertEqual(error?.code, .unsupportedValue)
            XCTAssertEqual(error?.path.hasPrefix("$objects["), true, "\(String(describing: error))")
            XCTAssertEqual(error?.path.hasSuffix("(NSArray)"), true, "\(String(describing: error))")
        }
        for _ in 0..<2 {
            XCTAssertThrowsError(try unsupported.finishEncoding()) { XCTAssertEqual(($0 as? KeyedArchiveError)?.code, .unsupportedValue) }
        }
        XCTAssertThrowsError(try unsupported.encode("more", forKey: "other"))

        let refused = KeyedArchiver()
        XCTAssertThrowsError(try refused.encode(["first", Refuser(), "last"] as [Any], forKey: "root")) {
            XCTAssertEqual($0 as? Refusal, Refusal())
        }
        XCTAssertThrowsError(try refused.finishEncoding()) { XCTAssertEqual($0 as? Refusal, Refusal()) }
        XCTAssertThrowsError(try refused.encodedData) { XCTAssertEqual($0 as? Refusal, Refusal()) }

        // Inside an object, the key and the object are named.
        final class Wrapper: KeyedArchiving {
            init() {}
            func encode(with coder: KeyedArchiver) throws { try coder.encode(NSObject(), forKey: "bad") }
            init(coder: KeyedUnarchiver) throws {}
        }
        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: Wrapper(), format: .binary)) { error in
            let path = (error as? KeyedArchiveError)?.path ?? ""
            XCTAssertTrue(path.hasPrefix("$objects[") && path.hasSuffix("(\(Wrapper.archivedClassName)) bad"), path)
        }
    }

    /// A class whose name is mapped process-wide after archives were written with its own.
    final class Renamed: KeyedArchiving {
        var value = 0
        init(_ value: Int) { self.value = value }
        func encode(with coder: KeyedArchiver) throws { coder.encode(value, forKey: "value") }
        init(coder: KeyedUnarchiver) throws { value = try coder.decodeInt(forKey: "value") }
    }

    /// `KeyedArchiver.setClassName(_:for:)` replaced the class's own name among the names the
    /// unarchiver allows, so every archive written before the mapping failed ("… is not among
    /// the allowed classes"); Foundation's mapping affects only writing.
    func testAProcessWideClassNameKeepsOlderArchivesReadable() throws {
        let old = try KeyedArchiver.archivedData(withRootObject: Renamed(1), format: .binary)
        KeyedArchiver.setClassName("RenamedV2", for: Renamed.self)
        defer { KeyedArchiver.setClassName(nil, for: Renamed.self) }
        let new = try KeyedArchiver.archivedData(withRootObject: Renamed(2), format: .binary)
        func names(_ data: Data) throws -> String { String(decoding: try PropertyList.convert(data, to: .xml), as: UTF8.self) }
        XCTAssertTrue(try names(new).contains("<string>RenamedV2</string>"))
        XCTAssertFalse(try names(old).contains("RenamedV2"))
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofClass: Renamed.self, from: old)?.value, 1)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofClass: Renamed.self, from: new)?.value, 2)
    }

    /// Looks at `$class` as a user key while decoding, and writes a user key of that name.
    final class ClassKeyProbe: KeyedArchiving {
        var contains = true
        var number: Int64 = -1
        var object: Any? = "unset"
        var userValue = 0
        init() {}
        func encode(with coder: KeyedArchiver) throws { coder.encode(9, forKey: "$classy") }
        init(coder: KeyedUnarchiver) throws {
            contains = coder.containsValue(forKey: "$class")
            number = try coder.decodeInt64(forKey: "$class")
            object = try coder.decodeObject(of: [.string], forKey: "$class")
            userValue = try coder.decodeInt(forKey: "$classy")
        }
    }

    /// `$class` was found as a user key in every object; Foundation escapes a user key of that
    /// name, so it reads as absent (false, 0, nil).
    func testClassIsNotAUserKey() throws {
        let data = try KeyedArchiver.archivedData(withRootObject: ClassKeyProbe(), format: .binary)
        let probe = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: ClassKeyProbe.self, from: data))
        XCTAssertFalse(probe.contains)
        XCTAssertEqual(probe.number, 0)
        XCTAssertNil(probe.object)
        XCTAssertEqual(probe.userValue, 9)
    }

    // MARK: Found by session 65's review against Foundation

    /// The root object as NSKeyedUnarchiver reads it, with `type`'s class name read as
    /// ``NamedObject``.
    private func foundationRoot<T: KeyedArchiving>(_ data: Data, mapping type: T.Type) throws -> Any? {
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
        unarchiver.requiresSecureCoding = false
        unarchiver.decodingFailurePolicy = .setErrorAndReturn
        unarchiver.setClass(NamedObject.self, forClassName: T.archivedClassName)
        let root = unarchiver.decodeObject(forKey: "root")
        if let error = unarchiver.error { throw error }
        return root
    }

    /// Every UID in the arrays under `NS.objects` and `NS.keys` of an archive's objects.
    private func memberReferences(_ data: Data) throws -> [UInt32] {
        guard case .array(let objects)? = try PropertyList.decode(data)["$objects"] else { return [] }
        return objects.flatMap { object -> [UInt32] in
            guard case .dictionary(let fields) = object else { return [] }
            return fields.entries.flatMap { entry -> [UInt32] in
                guard entry.key == "NS.objects" || entry.key == "NS.keys" || (entry.key.stringValue?.hasPrefix("NS.object.") ?? false) else { return [] }
                switch entry.value {
                case .array(let items): return items.compactMap { if case .uid(let uid) = $0 { uid } else { nil } }
                case .uid(let uid): return [uid]
                default: return []
                }
            }
        }
    }

    /// A nil in an array or dictionary was written as UID 0, which our unarchiver refused,
    /// NSKeyedUnarchiver dropped (`(1, x)`) or, in a dictionary, crashed on. Foundation bridges
    /// a Swift nil into an NSArray or NSDictionary as NSNull, and so does the archiver now.
    func testANilInACollectionIsArchivedAsNSNull() throws {
        let roots: [(String, Any)] = [
            ("array", [1, nil, "x"] as [Any?]),
            ("dictionary", ["a": nil, "b": 2] as [String: Any?]),
            ("array of objects", [Item("A"), nil] as [Item?]),
            ("nested", [[nil] as [Any?], ["k": nil] as [String: Any?]] as [Any]),
        ]
        for (name, root) in roots {
            let data = try KeyedArchiver.archivedData(withRootObject: root, format: .binary)
            let members = try memberReferences(data)
            XCTAssertFalse(members.isEmpty, name)
            // Checked before Foundation reads it: NSKeyedUnarchiver crashes on a nil value.
            guard !members.contains(0) else {
                XCTFail("\(name): a collection member is UID 0")
                continue
            }
            let ours = try KeyedUnarchiver.unarchivedObject(
                ofClasses: [.array, .dictionary, .number, .string, .null, .type(Item.self)], from: data)
            let theirs = try foundationRoot(data, mapping: Item.self)
            switch name {
            case "array":
                let array = try XCTUnwrap(ours as? [Any])
                XCTAssertEqual(array.count, 3)
                XCTAssertEqual(array[1] as? ArchivedNull, .null)
                let foundation = try XCTUnwrap(theirs as? NSArray)
                XCTAssertEqual(foundation.count, 3)
                XCTAssertTrue(foundation[1] is NSNull)
                XCTAssertEqual(foundation[2] as? String, "x")
            case "dictionary":
                let dictionary = try XCTUnwrap(ours as? [AnyHashable: Any])
                XCTAssertEqual(dictionary["a"] as? ArchivedNull, .null)
                XCTAssertEqual(dictionary["b"] as? Int, 2)
                let foundation = try XCTUnwrap(theirs as? NSDictionary)
                XCTAssertTrue(foundation["a"] is NSNull)
                XCTAssertEqual(foundation["b"] as? Int, 2)
            case "array of objects":
                let array = try XCTUnwrap(ours as? [Any])
                XCTAssertEqual((array.first as? Item)?.name, "A")
                XCTAssertEqual(array.last as? ArchivedNull, .null)
                XCTAssertEqual(try XCTUnwrap(theirs as? NSArray).count, 2)
            default:
                let array = try XCTUnwrap(ours as? [Any])
                XCTAssertEqual((array.first as? [Any])?.first as? ArchivedNull, .null)
                XCTAssertEqual((array.last as? [AnyHashable: Any])?["k"] as? ArchivedNull, .null)
            }
        }
        // What Foundation writes for the same array: an NSNull object, as above.
        let foundation = try NSKeyedArchiver.archivedData(withRootObject: [1, nil, "x"] as [Any?], requiringSecureCoding: false)
        let array = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .number, .string, .null], from: foundation) as? [Any])
        XCTAssertEqual(array.count, 3)
        XCTAssertEqual(array[1] as? ArchivedNull, .null)
    }

    /// Finishes the archive from its own `encode(with:)`, then writes a field.
    final class SelfFinisher: KeyedArchiving {
        nonisolated(unsafe) static var innerError: (any Error)?
        func encode(with coder: KeyedArchiver) throws {
            do { _ = try coder.finishEncoding() } catch { Self.innerError = error }
            try coder.encode("after", forKey: "name")
        }
        init() {}
        var field = ""
        init(coder: KeyedUnarchiver) throws { field = try coder.decodeObject(of: String.self, forKey: "name") ?? "" }
    }

    /// `finishEncoding()` from inside an object's `encode(with:)` wrote the archive without that
    /// object (its entry the placeholder `"$null"`, read by us as that string and by Foundation
    /// as nil), and the outer call returned the same bytes. It now throws and changes nothing.
    func testFinishingFromInsideAnObjectIsRefused() throws {
        SelfFinisher.innerError = nil
        let archiver = KeyedArchiver(outputFormat: .binary)
        try archiver.encode(SelfFinisher(), forKey: "root")
        let error = try XCTUnwrap(SelfFinisher.innerError as? KeyedArchiveError)
        XCTAssertEqual(error.code, .unsupportedValue)
        let data = try archiver.finishEncoding()
        let object = try XCTUnwrap(KeyedUnarchiver(data: data).decodeObject(of: [.type(SelfFinisher.self)], forKey: "root") as? SelfFinisher)
        XCTAssertEqual(object.field, "after")
        // Foundation reads the root as an object of the class, not nil.
        XCTAssertEqual((try foundationRoot(data, mapping: SelfFinisher.self) as? NamedObject)?.name, "after")
    }

    /// Numbered members were read with `Int(...)`, so `NS.object.00` and `NS.object.+1` counted
    /// as 0 and 1 and replaced the members a reader that looks them up by the exact key
    /// `NS.object.N` (as Apple's coders write it) finds. (Foundation on Linux reads no numbered
    /// members of an NSArray at all: it gives `[]` for each of these, so it is no peer here.)
    func testNumberedMembersAreReadByTheirExactKeys() throws {
        func archive(_ members: [(String, PropertyListValue)]) throws -> Data {
            var array: [(PropertyListValue, PropertyListValue)] = [("$class", .uid(2))]
            for (key, value) in members { array.append((.string(PropertyListString(key)), value)) }
            let envelope: PropertyListValue = [
                "$archiver": "NSKeyedArchiver", "$version": 100000, "$top": ["root": .uid(1)],
                "$objects": .array([
                    "$null", .dictionary(PropertyListDictionary(array)), ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]],
                    "a", "b",
                ]),
            ]
            return try PropertyList.encode(envelope, format: .binary)
        }
        let cases: [([(String, PropertyListValue)], [String])] = [
            ([("NS.object.0", .uid(3)), ("NS.object.00", .uid(4))], ["a"]),
            ([("NS.object.00", .uid(4)), ("NS.object.0", .uid(3))], ["a"]),
            ([("NS.object.0", .uid(3)), ("NS.object.+1", .uid(4))], ["a"]),
            ([("NS.object.0", .uid(3)), ("NS.object.1", .uid(4)), ("NS.object. 1", .uid(3))], ["a", "b"]),
        ]
        for (members, expected) in cases {
            let data = try archive(members)
            let ours = try KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .string], from: data) as? [String]
            XCTAssertEqual(ours, expected, "\(members.map(\.0))")
            // The resolver behind `karchive print` reads the same members.
            let resolved = try ArchiveResolver.resolve(data)
            XCTAssertEqual(resolved, .array(expected.map { .string(PropertyListString($0)) }))
        }
        // Only numbered keys that are not canonical: the array has no members.
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .string], from: archive([("NS.object.01", .uid(3))])) as? [String], [])
    }

    /// Decodes a dictionary of strings to integers as one of strings to doubles, then as one
    /// of integers to integers (which fails on its first key), catching the error, `rounds`
    /// times; then reads a string as an integer.
    final class CaughtFailures: KeyedArchiving {
        let rounds: Int
        var lastError: KeyedArchiveError?
        var dictionaryError: KeyedArchiveError?
        init(rounds: Int) { self.rounds = rounds }
        func encode(with coder: KeyedArchiver) throws {
            try coder.encode(["a": 1, "b": 2] as [String: Any], forKey: "dict")
            try coder.encode(rounds, forKey: "rounds")
            try coder.encode("text", forKey: "str")
        }
        init(coder: KeyedUnarchiver) throws {
            rounds = try coder.decodeInt(forKey: "rounds")
            for _ in 0..<rounds {
                _ = try? coder.decodeDictionary(withKeyClass: String.self, objectClass: Double.self, forKey: "dict")
                do { _ = try coder.decodeDictionary(withKeyClass: Int.self, objectClass: Int.self, forKey: "dict") } catch {
                    dictionaryError = error as? KeyedArchiveError
                }
            }
            do { _ = try coder.decodeInt(forKey: "str") } catch { lastError = error as? KeyedArchiveError }
        }
    }

    /// A dictionary decode that failed and was caught left its member's segment in the path,
    /// and every later error of the object named it (600 caught failures: a path of "dict
    /// dict ..." 2,900 characters long).
    func testACaughtFailureLeavesNothingInThePath() throws {
        let clean = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(
            ofClass: CaughtFailures.self, from: KeyedArchiver.archivedData(withRootObject: CaughtFailures(rounds: 0), format: .binary)))
        let caught = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(
            ofClass: CaughtFailures.self, from: KeyedArchiver.archivedData(withRootObject: CaughtFailures(rounds: 50), format: .binary)))
        let expected = try XCTUnwrap(clean.lastError)
        XCTAssertEqual(caught.lastError?.path, expected.path)
        XCTAssertFalse(expected.path.contains("dict"), expected.path)
        // The allowed classes are named once each (NSNumber was listed twice).
        let message = try XCTUnwrap(caught.dictionaryError?.message)
        XCTAssertTrue(message.hasSuffix("(NSDictionary, NSNumber)"), message)
    }

    /// Reads a string through `decodeArrayOfObjects` and `decodeDictionary`, keeping the errors.
    final class CollectionMismatches: KeyedArchiving {
        var arrayError: KeyedArchiveError?
        var dictionaryError: KeyedArchiveError?
        init() {}
        func encode(with coder: KeyedArchiver) throws {
            try coder.encode("not an array", forKey: "list")
            try coder.encode("not a dictionary", forKey: "table")
        }
        init(coder: KeyedUnarchiver) throws {
            do { _ = try coder.decodeArrayOfObjects(ofClass: String.self, forKey: "list") } catch { arrayError = error as? KeyedArchiveError }
            do { _ = try coder.decodeDictionary(withKeyClass: String.self, objectClass: String.self, forKey: "table") } catch {
                dictionaryError = error as? KeyedArchiveError
            }
        }
    }

    /// A string (an allowed class: the element's) where `decodeArrayOfObjects` or
    /// `decodeDictionary` expects a collection was reported without the key, at the object.
    func testCollectionMismatchesNameTheirKey() throws {
        let archive = try KeyedArchiver.archivedData(withRootObject: CollectionMismatches(), format: .binary)
        let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: CollectionMismatches.self, from: archive))
        let arrayError = try XCTUnwrap(decoded.arrayError)
        XCTAssertEqual(arrayError.code, .typeMismatch)
        XCTAssertTrue(arrayError.path.hasSuffix(" list"), arrayError.path)
        let dictionaryError = try XCTUnwrap(decoded.dictionaryError)
        XCTAssertEqual(dictionaryError.code, .typeMismatch)
        XCTAssertTrue(dictionaryError.path.hasSuffix(" table"), dictionaryError.path)
    }
}

/// Foundation's side of ``CoderSemanticsTests/Item``.
final class NamedObject: NSObject, NSCoding {
    var name: String
    init(name: String) { self.name = name }
    func encode(with coder: NSCoder) { coder.encode(name as NSString, forKey: "name") }
    init?(coder: NSCoder) { name = (coder.decodeObject(forKey: "name") as? String) ?? "" }
}
