import Foundation
import KeyedArchive
import XCTest

/// The three readers of object graphs (KeyedUnarchiver, ArchiveResolver, KeyedArchiveDecoder)
/// share one reader of collection references and Foundation leaf objects: each rule here is
/// checked through all three entry points on hand-built archives.
final class SharedFoundationFieldsTests: XCTestCase {
    static let everything = KeyedArchiveClass.foundationClasses + [.archivedObject]

    private func archive(_ objects: [PropertyListValue], root: PropertyListValue = .uid(1)) -> PropertyListValue {
        ["$archiver": "NSKeyedArchiver", "$version": 100000, "$top": ["root": root], "$objects": .array(objects)]
    }

    private func classDescription(_ name: String, _ chain: [String]? = nil) -> PropertyListValue {
        ["$classname": PropertyListValue(name), "$classes": .array((chain ?? [name, "NSObject"]).map { PropertyListValue($0) })]
    }

    private func unarchived(_ plist: PropertyListValue) throws -> Any? {
        try KeyedUnarchiver(propertyList: plist).decodeTopLevelObject(of: Self.everything)
    }

    private func resolved(_ plist: PropertyListValue) throws -> PropertyListValue {
        try ArchiveResolver(propertyList: plist).resolve()
    }

    private func decoded<T: Decodable>(_ type: T.Type, _ plist: PropertyListValue) throws -> T {
        try KeyedArchiveDecoder().decode(type, from: PropertyList.encode(plist))
    }

    /// All three readers refuse the archive with a KeyedArchiveError of `code` whose path
    /// contains `path` (the Codable decoder: dataCorrupted with that error underneath). The
    /// resolver (`karchive print`, `unarchive`) may instead show an object whose own fields
    /// fail its class's shape (`invalidObject`) as its fields and `$class`, since session 66
    /// (``ResolverFidelityTests``): then the output must hold such an object.
    private func assertRefused<T: Decodable>(
        _ plist: PropertyListValue, as type: T.Type, _ code: KeyedArchiveError.Code, path: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        func check(_ error: any Error, _ reader: String) {
            var archiveError = error as? KeyedArchiveError
            if case DecodingError.dataCorrupted(let context) = error {
                archiveError = context.underlyingError as? KeyedArchiveError
            }
            guard let archiveError else {
                return XCTFail("\(reader): not a KeyedArchiveError: \(error)", file: file, line: line)
            }
            XCTAssertEqual(archiveError.code, code, "\(reader): \(archiveError)", file: file, line: line)
            XCTAssertTrue(archiveError.path.contains(path), "\(reader): path of \(archiveError)", file: file, line: line)
        }
        XCTAssertThrowsError(try unarchived(plist), "unarchiver", file: file, line: line) { check($0, "unarchiver") }
        do {
            let shown = try resolved(plist)
            XCTAssertEqual(code, .invalidObject, "resolver accepted it: \(shown)", file: file, line: line)
            XCTAssertTrue(Self.holdsObjectFields(shown), "resolver: \(shown)", file: file, line: line)
        } catch {
            check(error, "resolver")
        }
        XCTAssertThrowsError(try decoded(type, plist), "decoder", file: file, line: line) { check($0, "decoder") }
    }

    /// Whether a resolved value holds an object shown as its fields (a dictionary with `$class`).
    static func holdsObjectFields(_ value: PropertyListValue) -> Bool {
        var pending = [value]
        while let next = pending.popLast() {
            switch next {
            case .dictionary(let dictionary):
                if dictionary["$class"] != nil { return true }
                pending += dictionary.entries.map(\.value)
            case .array(let items): pending += items
            default: break
            }
        }
        return false
    }

    // MARK: Collections

    func testNumberedArrayKeysInAllThree() throws {
        // NS.object.N keys, stored out of order: elements come in index order.
        let plist = archive([
            "$null", ["$class": .uid(2), "NS.object.1": .uid(4), "NS.object.0": .uid(3)], classDescription("NSArray"), "first", "second",
        ])
        XCTAssertEqual(try unarchived(plist) as? [String], ["first", "second"])
        XCTAssertEqual(try resolved(plist), ["first", "second"])
        XCTAssertEqual(try decoded([String].self, plist), ["first", "second"])
    }

    func testNumberedDictionaryKeysInAllThree() throws {
        let plist = archive([
            "$null", ["$class": .uid(2), "NS.key.0": .uid(3), "NS.object.0": .uid(4), "NS.key.1": .uid(5), "NS.object.1": .uid(6)],
            classDescription("NSDictionary"), "a", "one", "b", "two",
        ])
        XCTAssertEqual(try unarchived(plist) as? [String: String], ["a": "one", "b": "two"])
        XCTAssertEqual(try resolved(plist), ["a": "one", "b": "two"])
        XCTAssertEqual(try decoded([String: String].self, plist), ["a": "one", "b": "two"])
    }

    func testGapInNumberedKeysIsRefused() {
        let plist = archive(["$null", ["$class": .uid(2), "NS.object.0": .uid(3), "NS.object.2": .uid(3)], classDescription("NSArray"), "x"])
        assertRefused(plist, as: [String].self, .invalidObject, path: "$objects[1]")
    }

    func testNonUIDItemIsRefusedInAllThree() {
        // The Codable decoder used to take an inline string element as the element itself.
        let objects = archive(["$null", ["$class": .uid(2), "NS.objects": [.uid(3), "inline"]], classDescription("NSArray"), "x"])
        assertRefused(objects, as: [String].self, .invalidReference, path: "NS.objects[1]")
        let numbered = archive(["$null", ["$class": .uid(2), "NS.object.0": .uid(3), "NS.object.1": 7], classDescription("NSArray"), "x"])
        assertRefused(numbered, as: [String].self, .invalidReference, path: "NS.object.1")
        let keys = archive([
            "$null", ["$class": .uid(2), "NS.keys": ["k"], "NS.objects": [.uid(3)]], classDescription("NSDictionary"), "x",
        ])
        assertRefused(keys, as: [String: String].self, .invalidReference, path: "NS.keys[0]")
    }

    func testPrivateArraySubclassReadsAsArrayInAllThree() throws {
        // A private class (like __NSArrayM) is unknown by name; its $classes lead to NSArray.
        let plist = archive([
            "$null", ["$class": .uid(2), "NS.objects": [.uid(3), .uid(4)]],
            classDescription("__NSArrayPrivateTest", ["__NSArrayPrivateTest", "NSArray", "NSObject"]), "p", "q",
        ])
        XCTAssertEqual(try unarchived(plist) as? [String], ["p", "q"])
        XCTAssertEqual(try resolved(plist), ["p", "q"])
        XCTAssertEqual(try decoded([String].self, plist), ["p", "q"])
        XCTAssertEqual(try KeyedArchiveDecoder().decode([String].self, from: PropertyList.encode(plist)), ["p", "q"])
    }

    func testPrivateDictionarySubclassReadsAsDictionaryInCodable() throws {
        let plist = archive([
            "$null", ["$class": .uid(2), "NS.keys": [.uid(3)], "NS.objects": [.uid(4)]],
            classDescription("__NSDictionaryPrivateTest", ["__NSDictionaryPrivateTest", "NSMutableDictionary", "NSDictionary", "NSObject"]),
            "key", "value",
        ])
        XCTAssertEqual(try decoded([String: String].self, plist), ["key": "value"])
        XCTAssertEqual(try unarchived(plist) as? [String: String], ["key": "value"])
    }

    // MARK: NSDate

    private func dateArchive(_ time: PropertyListValue) -> PropertyListValue {
        archive(["$null", ["$class": .uid(2), "NS.time": time], classDescription("NSDate")])
    }

    func testValidTimesAgreeInAllThree() throws {
        for (time, seconds) in [(PropertyListValue.real(PropertyListReal(-1234.5)), -1234.5), (.integer(PropertyListInteger(86400)), 86400)] {
            let plist = dateArchive(time)
            let expected = Date(timeIntervalSinceReferenceDate: seconds)
            XCTAssertEqual(try unarchived(plist) as? Date, expected)
            XCTAssertEqual(try resolved(plist), .date(expected))
            XCTAssertEqual(try decoded(Date.self, plist), expected)
        }
    }

    func testNaNTimeIsRefused() {
        assertRefused(dateArchive(.real(PropertyListReal(Double.nan))), as: Date.self, .invalidObject, path: "NS.time")
        assertRefused(dateArchive(.real(PropertyListReal(Double.infinity))), as: Date.self, .invalidObject, path: "NS.time")
    }

    func testTimeOutsideYears0To9999IsADateButNotAPropertyListDate() throws {
        // Year 10000 starts 252,423,993,600 s after 2001; 1e12 s is around year 33700. NSDate
        // takes any finite time, and so do the unarchiver and the decoder; the resolver's
        // output is a property list, whose dates must be in years 0...9999, so it shows such an
        // NSDate as its fields (it refused the whole archive before session 66).
        for (time, seconds) in [(PropertyListValue.real(PropertyListReal(1e12)), 1e12), (.integer(PropertyListInteger(Int64(-1e12))), -1e12)] {
            let plist = dateArchive(time)
            let expected = Date(timeIntervalSinceReferenceDate: seconds)
            XCTAssertEqual(try unarchived(plist) as? Date, expected)
            XCTAssertEqual(try decoded(Date.self, plist), expected)
            XCTAssertEqual(try resolved(plist), ["NS.time": time, "$class": "NSDate"])
        }
    }

    func testIntegerTimeAboveInt64MaxIsRefused() {
        // Was read as 0 (2001-01-01) by the unarchiver and the Codable decoder.
        let plist = dateArchive(.integer(PropertyListInteger(UInt64(Int64.max) + 1)))
        assertRefused(plist, as: Date.self, .invalidObject, path: "NS.time")
    }

    // MARK: NSUUID

    func testUUIDBytes() throws {
        let uuid = UUID()
        let bytes = withUnsafeBytes(of: uuid.uuid) { Data($0) }
        let good = archive(["$null", ["$class": .uid(2), "NS.uuidbytes": .data(bytes)], classDescription("NSUUID")])
        XCTAssertEqual(try unarchived(good) as? UUID, uuid)
        XCTAssertEqual(try resolved(good), PropertyListValue(uuid.uuidString.uppercased()))
        XCTAssertEqual(try decoded(UUID.self, good), uuid)
        let short = archive(["$null", ["$class": .uid(2), "NS.uuidbytes": .data(bytes.prefix(15))], classDescription("NSUUID")])
        assertRefused(short, as: UUID.self, .invalidObject, path: "NS.uuidbytes")
    }

    // MARK: NSString, NSData, NSURL

    func testStringAndDataObjectForms() throws {
        let text = "h\u{e9}llo"
        let plist = archive([
            "$null", ["$class": .uid(2), "NS.objects": [.uid(3), .uid(5), .uid(6)]], classDescription("NSArray"),
            ["$class": .uid(4), "NS.bytes": .data(Data(text.utf8))], classDescription("NSMutableString"),
            ["$class": .uid(4), "NS.string": .uid(6)], PropertyListValue(text),
        ])
        XCTAssertEqual(try unarchived(plist) as? [String], [text, text, text])
        XCTAssertEqual(try resolved(plist), [PropertyListValue(text), PropertyListValue(text), PropertyListValue(text)])
        XCTAssertEqual(try decoded([String].self, plist), [text, text, text])
        let badUTF8 = archive(["$null", ["$class": .uid(2), "NS.bytes": .data(Data([0xFF, 0xFE]))], classDescription("NSString")])
        assertRefused(badUTF8, as: String.self, .invalidObject, path: "NS.bytes")
        let dataByReference = archive(["$null", ["$class": .uid(2), "NS.data": .uid(3)], classDescription("NSMutableData"), .data(Data([1, 2, 3]))])
        XCTAssertEqual(try unarchived(dataByReference) as? Data, Data([1, 2, 3]))
        XCTAssertEqual(try resolved(dataByReference), .data(Data([1, 2, 3])))
        XCTAssertEqual(try decoded(Data.self, dataByReference), Data([1, 2, 3]))
    }

    func testURLWithBaseAndBaseCycle() throws {
        let plist = archive([
            "$null", ["$class": .uid(2), "NS.base": .uid(3), "NS.relative": .uid(5)], classDescription("NSURL"),
            ["$class": .uid(2), "NS.base": .uid(0), "NS.relative": .uid(4)], "https://example.com/dir/", "file.txt",
        ])
        let expected = URL(string: "file.txt", relativeTo: URL(string: "https://example.com/dir/"))
        XCTAssertEqual(try unarchived(plist) as? URL, expected)
        XCTAssertEqual(try resolved(plist), PropertyListValue("https://example.com/dir/file.txt"))
        XCTAssertEqual(try decoded(URL.self, plist), expected)
        // A base that is itself: bounded, refused, not a hang or a stack overflow.
        let cycle = archive(["$null", ["$class": .uid(2), "NS.base": .uid(1), "NS.relative": .uid(3)], classDescription("NSURL"), "x"])
        assertRefused(cycle, as: URL.self, .invalidObject, path: "NS.base")
    }
}
