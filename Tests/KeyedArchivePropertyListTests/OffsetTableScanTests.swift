import KeyedArchiveTestSupport
import XCTest
@testable import KeyedArchivePropertyList

/// The binary reader's first pass (every offset checked, every container's references counted)
/// runs on two threads for large tables. Whatever the input, it must end exactly as the
/// one-thread pass does: the same error, or the same counts.
final class OffsetTableScanTests: XCTestCase {
    private typealias File = BinaryRobustnessTests

    /// What a pass ended with: its error's text, or the reference total and the marks.
    private func scan(_ bytes: [UInt8], secondThreadObjectCount: Int) -> Result<(references: Int?, marks: [UInt8]), Error> {
        bytes.withUnsafeBytes { buffer in
            Result {
                let decoder = try BinaryPropertyListDecoder(bytes: buffer, limits: .default, secondThreadObjectCount: secondThreadObjectCount)
                return (decoder.countedReferences, decoder.marks)
            }
        }
    }

    @discardableResult
    private func assertTwoThreadsMatchOne(_ bytes: [UInt8], _ context: @autoclosure () -> String, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        let one = scan(bytes, secondThreadObjectCount: .max)
        let two = scan(bytes, secondThreadObjectCount: 2)
        switch (one, two) {
        case (.success(let a), .success(let b)):
            XCTAssertEqual(b.references, a.references, "\(context())", file: file, line: line)
            XCTAssertTrue(b.marks == a.marks, "\(context()): marks differ", file: file, line: line)
            return true
        case (.failure(let a), .failure(let b)):
            XCTAssertEqual("\(b)", "\(a)", "\(context())", file: file, line: line)
            return false
        default:
            XCTFail("\(context()): two threads \(two), one \(one)", file: file, line: line)
            return false
        }
    }

    func testCorpusFilesScanAlikeOnOneAndTwoThreads() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        var accepted = 0, rejected = 0
        var generator = SeededGenerator(seed: 61)
        for entry in BinaryCorpusTests.binaryEntries() {
            let original = Array(entry.data)
            if assertTwoThreadsMatchOne(original, entry.path) { accepted += 1 } else { rejected += 1 }
            guard original.count > 100, original.count < 200_000 else { continue }
            // Damage aimed at the offset table and the objects just before it.
            for attempt in 0..<8 {
                var bytes = original
                let index = Int.random(in: max(8, bytes.count * 2 / 3)..<(bytes.count - 32), using: &generator)
                bytes[index] ^= 1 << UInt8.random(in: 0...7, using: &generator)
                if !assertTwoThreadsMatchOne(bytes, "\(entry.path) flip \(attempt)") { rejected += 1 }
            }
        }
        XCTAssertGreaterThan(accepted, 20)
        XCTAssertGreaterThan(rejected, 50)
    }

    /// An array of `count` strings, each used `uses` times (so shared when `uses` > 1).
    private func bigArray(count: Int, uses: Int = 1) throws -> [UInt8] {
        let strings = (0..<count).map { PropertyListValue("s\($0)") }
        let members = (0..<uses).flatMap { _ in strings }
        return Array(try PropertyList.encode(.array(members), format: .binary))
    }

    func testBadOffsetsAreReportedInTableOrder() throws {
        let bytes = try bigArray(count: 3_000)
        let trailer = try bytes.withUnsafeBytes { try BinaryPropertyListTrailer(validating: $0, limits: .default) }
        let count = trailer.objectCount, width = trailer.offsetIntSize, table = trailer.offsetTableOffset
        XCTAssertEqual(width, 2)
        // One bad entry in the first half, one in the second, or both: the first in the table is reported.
        for positions in [[10], [count - 5], [count / 2], [count / 2 - 1, count / 2], [7, count - 2]] {
            var damaged = bytes
            for position in positions {
                damaged[table + position * width] = 0xFF
                damaged[table + position * width + 1] = 0xFF
            }
            XCTAssertFalse(assertTwoThreadsMatchOne(damaged, "bad offsets at \(positions)"))
            guard case .failure(let error as PropertyListError) = scan(damaged, secondThreadObjectCount: 2) else { continue }
            XCTAssertEqual(error.code, .invalidOffset)
            XCTAssertEqual(error.objectIndex, positions.min())
        }
    }

    func testSharedObjectsAreCountedAcrossTheHalves() throws {
        // Strings used three times by one array, whose references one half counts; then
        // 400 small arrays spread over both halves of the table, each using one of seven
        // shared strings, so that both halves count uses of the same objects.
        XCTAssertTrue(assertTwoThreadsMatchOne(try bigArray(count: 2_000, uses: 3), "strings used three times"))
        let nested: PropertyListValue = .array((0..<400).map { index in
            .array([PropertyListValue("shared \(index % 7)"), PropertyListValue(index), PropertyListValue("own \(index)")])
        })
        let bytes = Array(try PropertyList.encode(nested, format: .binary))
        XCTAssertTrue(assertTwoThreadsMatchOne(bytes, "arrays across the table"))
        guard case .success(let result) = scan(bytes, secondThreadObjectCount: 2) else { return XCTFail("rejected") }
        XCTAssertEqual(result.marks.filter { $0 == BinaryPropertyListDecoder.sharedCount }.count, 7, "the seven shared strings")
    }

    /// `entries` table entries that all point at one 200-member array, in a file whose object
    /// area can hold 2,202 references.
    private func containerListed(_ entries: Int) -> [UInt8] {
        var bytes = Array("bplist00".utf8)
        bytes += [0xAF, 0x11] + File.bigEndian16(200) + [UInt8](repeating: 0x00, count: 400)
        // Never referenced; room for the objects the table lists (the trailer checks that).
        bytes += [UInt8](repeating: 0x08, count: 4_000)
        let table = bytes.count
        for _ in 0..<entries { bytes += File.bigEndian16(8) }
        bytes += [0, 0, 0, 0, 0, 0, 2, 2]  // 2-byte offsets and references
        for field in [UInt64(entries), 0, UInt64(table)] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: field >> UInt64(shift))) }
        }
        return bytes
    }

    func testAContainerListedOverAndOverStopsCountingOnBothPaths() {
        // 4,000 entries: 800,000 references; 16 entries: 3,200, but only 1,600 in each half of
        // the table, so only the sum of the halves shows the file is over; 8 entries: 1,600, fine.
        // Over the budget, counting stops and every object counts as shared.
        for (entries, expected) in [(4_000, nil), (16, nil), (8, 1_600)] as [(Int, Int?)] {
            let bytes = containerListed(entries)
            XCTAssertTrue(assertTwoThreadsMatchOne(bytes, "one container listed \(entries) times"))
            guard case .success(let result) = scan(bytes, secondThreadObjectCount: 2) else {
                return XCTFail("rejected: \(scan(bytes, secondThreadObjectCount: .max))")
            }
            XCTAssertEqual(result.references, expected, "\(entries) entries")
            XCTAssertEqual(result.marks.allSatisfy { $0 == BinaryPropertyListDecoder.sharedCount }, expected == nil)
        }
    }

    func testManyConcurrentReadersAllFinishWithTheSameValue() throws {
        let value: PropertyListValue = .array((0..<3_000).map { PropertyListValue("m\($0)") })
        let bytes = try PropertyList.encode(value, format: .binary)
        let matches = Protected(0)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            let read = bytes.withUnsafeBytes { try? BinaryPropertyListReader.read($0, secondThreadObjectCount: 2) }
            if read == value { matches.withLock { $0 += 1 } }
        }
        XCTAssertEqual(matches.withLock { $0 }, 16)
    }

    func testLargeFilesReadTheSameThroughThePublicAPI() throws {
        // Over 2^18 objects, so `decode` scans on two threads on a machine with two cores.
        let wide: PropertyListValue = .array((0..<300_000).map { PropertyListValue("m\($0)") })
        let bytes = try PropertyList.encode(wide, format: .binary)
        let objects = try bytes.withUnsafeBytes { try BinaryPropertyListTrailer(validating: $0, limits: .default).objectCount }
        XCTAssertGreaterThanOrEqual(objects, BinaryPropertyListDecoder.secondThreadObjectCount)
        XCTAssertEqual(try PropertyList.decode(bytes), wide)
        XCTAssertTrue(assertTwoThreadsMatchOne(Array(bytes), "300,000 strings"))
    }
}
