import KeyedArchiveTestSupport
import XCTest
@testable import KeyedArchivePropertyList

/// `BinaryPropertyListObjectReader.flatDictionary(ofObject:)` reads small flat dictionaries
/// entry by entry, without the decoder. Whatever it returns must be what `value(ofObject:)`
/// returns, down to the strings' storage hints, under any limits; it must decline (`nil`)
/// whatever it does not take, so that the whole read decides, errors included.
final class BinaryObjectReaderTests: XCTestCase {
    private static func storages(_ dictionary: PropertyListDictionary) -> [String] {
        dictionary.entries.flatMap { [$0.key, $0.value] }.map { value in
            if case .string(let string) = value { return "\(string.storage.map { "\($0)" } ?? "none")" }
            return "-"
        }
    }

    func testFlatDictionariesReadAsTheWholeReadDoes() throws {
        let utf16 = PropertyListValue.string(PropertyListString("text", storage: .utf16))
        let cases: [(name: String, value: PropertyListValue, flat: Bool)] = [
            ("UIDs", ["root": .uid(1), "$0": .uid(300), "big": .uid(70_000)], true),
            ("scalars", ["i8": 5, "i16": 300, "i32": 70_000, "i64": .integer(PropertyListInteger(Int64.min)), "r": 2.5, "t": true, "f": false], true),
            ("unsigned", ["u": .integer(PropertyListInteger(UInt64.max))], false),
            ("string values", ["a": "text", "b": ""], true),
            ("integer key", .dictionary(PropertyListDictionary([(7, .uid(1)), ("root", 2)])), true),
            ("128-byte string", ["k": .string(PropertyListString(String(repeating: "s", count: 128)))], true),
            ("129-byte string", ["k": .string(PropertyListString(String(repeating: "s", count: 129)))], false),
            ("16 entries", .dictionary(PropertyListDictionary(stringKeys: (0..<16).map { ("k\($0)", .uid(1)) })), true),
            ("17 entries", .dictionary(PropertyListDictionary(stringKeys: (0..<17).map { ("k\($0)", .uid(1)) })), false),
            ("empty", .dictionary(PropertyListDictionary()), true),
            ("UTF-16 key", .dictionary(PropertyListDictionary([(utf16, 1)])), false),
            ("UTF-16 value", .dictionary(PropertyListDictionary([("k", utf16)])), false),
            ("non-ASCII", ["k": "é"], false),
            ("nested", ["k": ["a": 1]], false),
            ("array", ["k": [1]], false),
            ("data", ["k": .data(Data([1]))], false),
            ("date", ["k": .date(Date(timeIntervalSinceReferenceDate: 1))], false),
        ]
        let limits: [(String, DecodingLimits)] = [
            ("default", .default),
            ("depth 0", DecodingLimits(maximumDepth: 0)),
            ("63 values", DecodingLimits(maximumExpandedNodeCount: 63)),
            ("4,095 bytes", DecodingLimits(maximumExpandedByteCount: 4095)),
            ("strings of 3 bytes", DecodingLimits(maximumStringLength: 3)),
        ]
        for (name, value, flat) in cases {
            // Inside an array, so that the dictionary is not the top object.
            let file = try PropertyList.encode(.array([0, value]), format: .binary)
            for (limitName, limit) in limits {
                let reader = try BinaryPropertyListObjectReader(file, limits: limit)
                let top = try XCTUnwrap(reader.arraySpan(ofObject: reader.topObject))
                let object = try reader.element(1, of: top)
                let whole = Result { try reader.value(ofObject: object) }
                let read = reader.flatDictionary(ofObject: object)
                if let read {
                    guard case .success(.dictionary(let expected)) = whole else {
                        XCTFail("\(name), \(limitName): read flat, but the whole read gives \(whole)")
                        continue
                    }
                    XCTAssertEqual(read, expected, "\(name), \(limitName)")
                    XCTAssertEqual(read.entries.count, expected.entries.count, "\(name), \(limitName)")
                    XCTAssertEqual(Self.storages(read), Self.storages(expected), "\(name), \(limitName)")
                }
                if limitName == "default" {
                    XCTAssertEqual(read != nil, flat, name)
                    if flat { XCTAssertEqual(read.map(PropertyListValue.dictionary), value, name) }
                }
            }
            // Not a dictionary: declined.
            let reader = try BinaryPropertyListObjectReader(file, limits: .default)
            XCTAssertNil(reader.flatDictionary(ofObject: reader.topObject), name)
        }
    }

    /// Under limits that a whole read of a dictionary it takes could exceed, it declines; the
    /// whole read then reports.
    func testTightLimitsLeaveTheFlatReadToTheWholeRead() throws {
        let file = try PropertyList.encode(.array([0, ["root": .uid(1)]]), format: .binary)
        for limit in [DecodingLimits(maximumDepth: 0), DecodingLimits(maximumExpandedNodeCount: 63), DecodingLimits(maximumExpandedByteCount: 4095)] {
            let reader = try BinaryPropertyListObjectReader(file, limits: limit)
            let top = try XCTUnwrap(reader.arraySpan(ofObject: reader.topObject))
            XCTAssertNil(reader.flatDictionary(ofObject: try reader.element(1, of: top)))
        }
        let reader = try BinaryPropertyListObjectReader(file, limits: DecodingLimits(maximumDepth: 0))
        let top = try? reader.arraySpan(ofObject: reader.topObject)
        XCTAssertNotNil(top)
        XCTAssertThrowsError(try reader.value(ofObject: try reader.element(1, of: try XCTUnwrap(top))))
    }

    /// A reader whose borrowed bytes were given back reads nothing flat either.
    func testAClosedReaderDeclines() throws {
        let file = try PropertyList.encode(["root": .uid(1)], format: .binary)
        let reader = try BinaryPropertyListObjectReader(file, limits: .default)
        XCTAssertNotNil(reader.flatDictionary(ofObject: reader.topObject))
        reader.close()
        XCTAssertNil(reader.flatDictionary(ofObject: reader.topObject))
        XCTAssertThrowsError(try reader.value(ofObject: reader.topObject))
    }
}
