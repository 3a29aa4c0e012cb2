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
}

/// Foundation's side of ``CoderSemanticsTests/Item``.
final class NamedObject: NSObject, NSCoding {
    var name: String
    init(name: String) { self.name = name }
    func encode(with coder: NSCoder) { coder.encode(name as NSString, forKey: "name") }
    init?(coder: NSCoder) { name = (coder.decodeObject(forKey: "name") as? String) ?? "" }
}
