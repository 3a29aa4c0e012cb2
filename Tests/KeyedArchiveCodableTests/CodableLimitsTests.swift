import Foundation
import KeyedArchive
import KeyedArchiveSample
import KeyedArchiveTestSupport
import XCTest

/// The Codable decoder against archives whose shared references expand: every element handed
/// out counts toward `maximumExpandedNodeCount` and every string or data byte toward
/// `maximumExpandedByteCount`, wherever the shared object is used.
final class CodableLimitsTests: XCTestCase {
    static func sharedArrays(fan: Int, leaf: PropertyListValue) throws -> Data {
        try ArchiveFixtures.sharedArrays(fan: fan, leaf: leaf)
    }

    private func decode<T: Decodable>(_ type: T.Type, _ data: Data, _ limits: DecodingLimits) throws -> T {
        try KeyedUnarchiver.unarchivedObject(ofType: type, from: data, limits: limits)
    }

    private func assertLimit<T: Decodable>(_ type: T.Type, _ data: Data, _ limits: DecodingLimits, _ words: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try decode(type, data, limits), file: file, line: line) { error in
            guard case DecodingError.dataCorrupted(let context) = error else { return XCTFail("\(error)", file: file, line: line) }
            XCTAssertTrue(context.debugDescription.contains(words), context.debugDescription, file: file, line: line)
        }
    }

    func testSharedArraysCountEveryElementAtEveryUse() throws {
        // 128 × 128 integers through 2 array objects: 16,384 values, 129 arrays.
        let data = try Self.sharedArrays(fan: 128, leaf: 7)
        let decoded = try decode([[Int]].self, data, .default)
        XCTAssertEqual(decoded.count, 128)
        XCTAssertEqual(decoded.map(\.count).reduce(0, +), 128 * 128)
        // The elements count, not only the arrays (which alone are 129).
        // Exactly: the root array and its 128 elements, 128 inner arrays and their 16,384 elements.
        let values = 1 + 128 + 128 + 128 * 128
        XCTAssertNoThrow(try decode([[Int]].self, data, DecodingLimits(maximumExpandedNodeCount: values)))
        assertLimit([[Int]].self, data, DecodingLimits(maximumExpandedNodeCount: values - 1), "values once shared references")
    }

    func testSharedStringsCountTheirBytesAtEveryUse() throws {
        // 64 × 64 uses of one 1,000-character string: 4,096,000 bytes from a few KB.
        let data = try Self.sharedArrays(fan: 64, leaf: PropertyListValue(String(repeating: "z", count: 1_000)))
        XCTAssertLessThan(data.count, 10_000)
        assertLimit([[String]].self, data, DecodingLimits(maximumExpandedByteCount: 4_095_999), "bytes of strings and data")
        XCTAssertEqual(try decode([[String]].self, data, DecodingLimits(maximumExpandedByteCount: 4_096_000)).count, 64)
        let blob = try Self.sharedArrays(fan: 64, leaf: .data(Data(count: 1_000)))
        assertLimit([[Data]].self, blob, DecodingLimits(maximumExpandedByteCount: 1_000_000), "bytes of strings and data")
    }

    /// 256 × 256 uses of a 20,000-byte string: 1.3 GB, refused under the default limits.
    func testGigabyteExpansionIsRefusedByDefault() throws {
        let data = try Self.sharedArrays(fan: 256, leaf: PropertyListValue(String(repeating: "q", count: 20_000)))
        assertLimit([[String]].self, data, .default, "bytes of strings and data")
    }

    /// The sample model through the same limits: its image is counted once per use.
    func testArchivingDataImageCountsTowardTheByteLimit() throws {
        let sample = KeyedArchiveSample.ArchivingData(
            image: Data(repeating: 0xAB, count: 50_000), name: "Ada", gender: "f", vocation: "maths", page: "1",
            theSlider: 0.5, isSwitchOn: true)
        let data = try KeyedArchiveEncoder().encode(sample)
        XCTAssertEqual(try decode(KeyedArchiveSample.ArchivingData.self, data, .default), sample)
        assertLimit(KeyedArchiveSample.ArchivingData.self, data, DecodingLimits(maximumExpandedByteCount: 40_000), "bytes of strings and data")
    }
}
