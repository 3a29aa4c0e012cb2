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

    /// 26 arrays, each holding the next twice (884 bytes), built 33 million values before the
    /// expansion limit stopped them: 18 s and 860 MB for a generic `enum` tree. A decode now
    /// builds at most 64 values per byte of its input past 1,048,576.
    func testExpansionIsBoundedByTheArchivesSize() throws {
        // 1,100 × 1,100 integers through 2 array objects: 1,212,201 values from 6 objects.
        let data = try Self.sharedArrays(fan: 1_100, leaf: 7)
        let values = 1 + 1_100 + 1_100 + 1_100 * 1_100
        XCTAssertGreaterThan(values, DecodingLimits.expansionFactorFloor)
        assertLimit([[Int]].self, data, .default, "64 per byte of the archive's \(data.count)")
        assertLimit([[Int]].self, data, .default, "DecodingLimits.maximumExpansionFactor")
        // Raised, the absolute limit is what counts again.
        var raised = DecodingLimits.default
        raised.maximumExpansionFactor = .max
        XCTAssertEqual(try decode([[Int]].self, data, raised).map(\.count).reduce(0, +), 1_100 * 1_100)
        raised.maximumExpandedNodeCount = values - 1
        assertLimit([[Int]].self, data, raised, "more than \(values - 1) values once shared references")
        // Under the floor, sharing is never refused: 1,000 × 1,000 (1,002,001 values).
        XCTAssertEqual(try decode([[Int]].self, try Self.sharedArrays(fan: 1_000, leaf: 7), .default).count, 1_000)

        // An archive of many objects with ordinary sharing (one string used by every record)
        // expands to more than the floor and reads under the default limits.
        struct Record: Codable, Equatable { var id: Int; var kind: String; var note: String }
        let records = (0..<360_000).map { Record(id: $0, kind: "shared", note: $0 % 2 == 0 ? "even" : "odd") }
        let archive = try KeyedArchiver.archivedData(withRootObject: records)
        XCTAssertEqual(try decode([Record].self, archive, .default), records)

        // One array of a million references to a few shared values (the encoder stores equal
        // values once): its size is in its bytes, not its handful of objects. The first form
        // of the limit (per object) refused these.
        let zeros = [Int](repeating: 0, count: 1_100_000)
        XCTAssertEqual(try decode([Int].self, try KeyedArchiver.archivedData(withRootObject: zeros), .default), zeros)
        var random = SeededGenerator(seed: 7)
        let bytes = (0..<1_200_000).map { _ in UInt8.random(in: 0...255, using: &random) }
        XCTAssertEqual(try decode([UInt8].self, try KeyedArchiver.archivedData(withRootObject: bytes), .default), bytes)
        let reals = (0..<1_200_000).map { Double($0 % 1_000) / 8 }
        XCTAssertEqual(try KeyedArchiveDecoder().decode([Double].self, from: try KeyedArchiveEncoder().encode(reals)), reals)
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
