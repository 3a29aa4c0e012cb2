import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// Truncated and bit-flipped corpus files, and hand-built hostile files: the reader returns or
/// throws PropertyListError, quickly, without big allocations.
final class BinaryRobustnessTests: XCTestCase {
    private func assertReturnsOrThrowsCleanly(_ bytes: [UInt8], _ context: @autoclosure () -> String) {
        do {
            _ = try BinaryPropertyListReader.read(bytes)
        } catch is PropertyListError {
        } catch {
            XCTFail("\(context()): threw \(error)")
        }
    }

    func testTruncatedCorpusFiles() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        var generator = SeededGenerator(seed: 11)
        for entry in BinaryCorpusTests.binaryEntries() {
            let bytes = Array(entry.data)
            let lengths = bytes.count <= 1_500 ? Array(0..<bytes.count) : (0..<48).map { _ in Int.random(in: 0..<bytes.count, using: &generator) }
            for length in lengths {
                let prefix = Array(bytes[0..<length])
                assertReturnsOrThrowsCleanly(prefix, "\(entry.path) truncated to \(length)")
                // A prefix is never a valid file unless the format's sizes still add up, which
                // the exact-length trailer rule makes impossible for a shorter prefix.
                if length < bytes.count, length >= 40 {
                    XCTAssertThrowsError(try BinaryPropertyListReader.read(prefix), "\(entry.path) truncated to \(length)")
                }
            }
        }
    }

    func testBitFlippedCorpusFiles() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        var generator = SeededGenerator(seed: 12)
        for entry in BinaryCorpusTests.binaryEntries() {
            let original = Array(entry.data)
            guard !original.isEmpty else { continue }
            let flips = original.count > 100_000 ? 8 : 40
            for _ in 0..<flips {
                var bytes = original
                for _ in 0..<Int.random(in: 1...3, using: &generator) {
                    // Bias toward the trailer and offset table, where the interesting fields are.
                    let index = generator.chance(0.5) ? max(0, bytes.count - Int.random(in: 1...min(64, bytes.count), using: &generator)) : Int.random(in: 0..<bytes.count, using: &generator)
                    bytes[index] ^= 1 << UInt8.random(in: 0...7, using: &generator)
                }
                assertReturnsOrThrowsCleanly(bytes, "\(entry.path) with flipped bits")
            }
        }
    }

    // MARK: - Hand-built hostile files

    /// Builds a file from objects (each as its bytes) with the given ref size, offset size 1..8.
    static func file(_ objects: [[UInt8]], refSize: UInt8 = 1, offsetSize: UInt8? = nil, top: UInt64 = 0) -> [UInt8] {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects { offsets.append(bytes.count); bytes += object }
        let tableOffset = bytes.count
        let width = Int(offsetSize ?? (tableOffset <= 0xFF ? 1 : tableOffset <= 0xFFFF ? 2 : 4))
        for offset in offsets { for shift in stride(from: (width - 1) * 8, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: offset >> shift)) } }
        bytes += [0, 0, 0, 0, 0, 0, UInt8(width), refSize]
        for field in [UInt64(objects.count), top, UInt64(tableOffset)] { for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: field >> UInt64(shift))) } }
        return bytes
    }

    private func assertRejects(_ bytes: [UInt8], _ code: PropertyListError.Code, limits: DecodingLimits = .default, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try BinaryPropertyListReader.read(bytes, limits: limits), file: file, line: line) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, code, "\(error)", file: file, line: line)
        }
    }

    func testHandBuiltFileHelperMatchesOurWriter() throws {
        // The helper lays files out as the writer does, so the hostile variants below differ
        // from valid files only where intended.
        XCTAssertEqual(Self.file([[0xA1, 0x01], [0x51, 0x61]]), try BinaryPropertyListWriter.write(["a"]))
        XCTAssertEqual(try BinaryPropertyListReader.read(Self.file([[0xA1, 0, 0, 1], [0x51, 0x61]], refSize: 3, offsetSize: 5)), ["a"])
    }

    func testHugeClaimedCountsAreRejectedBeforeAllocating() {
        let eightByteHuge: [UInt8] = [0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        for marker: UInt8 in [0xAF, 0xDF, 0xCF, 0x4F, 0x5F, 0x6F] {
            assertRejects(Self.file([[marker] + eightByteHuge]), .truncated)
        }
        // A count whose doubling or scaling by the reference size overflows.
        assertRejects(Self.file([[0xDF, 0x13, 0x40, 0, 0, 0, 0, 0, 0, 0]], refSize: 8), .truncated)
        // A negative 8-byte count.
        assertRejects(Self.file([[0xAF, 0x13, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]]), .invalidObject)
        // Trailers claiming 2^62 objects or a table past the end.
        var bytes = Self.file([[0x08]])
        bytes.replaceSubrange((bytes.count - 24)..<(bytes.count - 16), with: [0x40, 0, 0, 0, 0, 0, 0, 0])
        assertRejects(bytes, .invalidTrailer)
    }

    func testLengthAndObjectLimits() throws {
        let string = Self.file([[0x55] + Array("hello".utf8)])
        assertRejects(string, .lengthLimitExceeded, limits: DecodingLimits(maximumStringLength: 4))
        XCTAssertEqual(try BinaryPropertyListReader.read(string, limits: DecodingLimits(maximumStringLength: 5)), "hello")
        let data = Self.file([[0x43, 1, 2, 3]])
        assertRejects(data, .lengthLimitExceeded, limits: DecodingLimits(maximumDataLength: 2))
        let array = Self.file([[0xA2, 1, 2], [0x10, 1], [0x10, 2]])
        assertRejects(array, .objectLimitExceeded, limits: DecodingLimits(maximumObjectCount: 2))
        XCTAssertEqual(try BinaryPropertyListReader.read(array, limits: DecodingLimits(maximumObjectCount: 3)), [1, 2])
    }

    /// Arrays that each hold the next one twice: 2^depth leaves from a few hundred bytes.
    static func expansionBomb(depth: Int) -> [UInt8] {
        var objects: [[UInt8]] = []
        for index in 0..<depth { objects.append([0xA2, UInt8(index + 1), UInt8(index + 1)]) }
        objects.append([0x51, 0x78])
        return file(objects)
    }

    func testSharedObjectsAreDecodedOnceAndExpansionIsLimited() throws {
        // 2^16 leaves: decoded once per object, shared in memory.
        let small = try BinaryPropertyListReader.read(Self.expansionBomb(depth: 16))
        var node = small
        for _ in 0..<16 {
            guard case .array(let pair) = node, pair.count == 2 else { return XCTFail("not a pair") }
            node = pair[0]
        }
        XCTAssertEqual(node, "x")
        // 2^61 leaves: rejected by the expansion limit, immediately.
        let bomb = Self.expansionBomb(depth: 60)
        XCTAssertLessThan(bomb.count, 400)
        assertRejects(bomb, .objectLimitExceeded)
        assertRejects(Self.expansionBomb(depth: 16), .objectLimitExceeded, limits: DecodingLimits(maximumExpandedNodeCount: 1_000))
    }

    /// `padding` unshared strings around an expansion bomb of `depth` levels: few shared objects
    /// among many, so the reader keeps its shared objects in a hash table, not a dense array.
    static func paddedBomb(depth: Int, padding: Int) -> [UInt8] {
        // Object 0: [bomb, pad0, pad1, ...]; 1...depth: the bomb's pairs; depth + 1: "x"; then the padding.
        let first = depth + 2
        var root: [UInt8] = [0xAF, 0x11] + bigEndian16(UInt16(padding + 1)) + bigEndian16(1)
        for index in 0..<padding { root += bigEndian16(UInt16(first + index)) }
        var objects = [root]
        for index in 1...depth { objects.append([0xA2] + bigEndian16(UInt16(index + 1)) + bigEndian16(UInt16(index + 1))) }
        objects.append([0x51, 0x78])
        for index in 0..<padding { objects.append([0x54] + Array(String(format: "p%03d", index % 1000).utf8)) }
        return file(objects, refSize: 2)
    }

    static func bigEndian16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

    func testSharedObjectsAmongManyUnsharedOnesAreDecodedOnceAndLimited() throws {
        // 10 shared pairs and a shared leaf among 600 unshared strings.
        let value = try BinaryPropertyListReader.read(Self.paddedBomb(depth: 10, padding: 600))
        guard case .array(let items) = value, items.count == 601 else { return XCTFail("root is \(value)") }
        XCTAssertEqual(items[1], "p000")
        XCTAssertEqual(items[600], "p599")
        var node = items[0]
        for _ in 0..<10 {
            guard case .array(let pair) = node, pair.count == 2 else { return XCTFail("not a pair") }
            XCTAssertEqual(pair[0], pair[1])
            node = pair[1]
        }
        XCTAssertEqual(node, "x")
        // The same limits as when most objects are shared.
        assertRejects(Self.paddedBomb(depth: 60, padding: 800), .objectLimitExceeded)
        assertRejects(Self.paddedBomb(depth: 12, padding: 600), .objectLimitExceeded, limits: DecodingLimits(maximumExpandedNodeCount: 5_000))
        // A cycle through a shared container, among unshared objects.
        var cyclic = Self.paddedBomb(depth: 3, padding: 300)
        // Object 3's second reference goes back to object 1: 1 -> 2 -> 3 -> 1.
        let tableOffset = Int(cyclic.suffix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        let third = Int(cyclic[tableOffset + 6]) << 8 | Int(cyclic[tableOffset + 7])
        cyclic[third + 3] = 0
        cyclic[third + 4] = 1
        assertRejects(cyclic, .referenceCycle)
    }

    func testOffsetTablesPointingManyTimesAtOneContainerReadInLinearTime() throws {
        // n table entries point at one array of n references to object n (`true`): counting
        // references container by container would read n * n of them.
        func overlapping(_ n: Int) -> Data {
            var bytes = Array("bplist00".utf8) + [0xAF, 0x12] + Self.bigEndian(UInt64(n)).suffix(4)
            for _ in 0..<n { bytes += Self.bigEndian(UInt64(n)).suffix(4) }
            let trueOffset = bytes.count
            bytes.append(0x09)
            let table = bytes.count
            for _ in 0..<n { bytes += Self.bigEndian(8).suffix(4) }
            bytes += Self.bigEndian(UInt64(trueOffset)).suffix(4)
            bytes += [0, 0, 0, 0, 0, 0, 4, 4] + Self.bigEndian(UInt64(n + 1)) + Self.bigEndian(0) + Self.bigEndian(UInt64(table))
            return Data(bytes)
        }
        let value = try BinaryPropertyListReader.read(overlapping(100))
        XCTAssertEqual(value, .array([PropertyListValue](repeating: true, count: 100)))
        let ratio = try LinearTime.ratio(n: 2_000, overlapping) { _ = try BinaryPropertyListReader.read($0) }
        print("linear-time check, overlapping containers: 8n/n time ratio \(String(format: "%.1f", ratio))")
        XCTAssertLessThan(ratio, 30, "8n takes \(ratio) times as long as n")
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } }

    func testCyclesAreErrors() {
        assertRejects(Self.file([[0xA1, 0x00]]), .referenceCycle)
        assertRejects(Self.file([[0xA1, 0x01], [0xD1, 0x02, 0x00], [0x51, 0x6B]]), .referenceCycle)
        // Sharing without a cycle is fine: [a, a] where a = [].
        XCTAssertEqual(try BinaryPropertyListReader.read(Self.file([[0xA2, 0x01, 0x01], [0xA0]])), [[], []])
    }

    func testDeepCorpusFileThrowsCleanly() throws {
        guard let root = Corpus.root else { print("SKIP: corpus not found (../shared/corpus)"); return }
        let bytes = try Data(contentsOf: URL(fileURLWithPath: root + "/malformed/handmade-deep-nesting-100000-arrays.bplist"))
        XCTAssertThrowsError(try BinaryPropertyListReader.read(bytes)) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .depthLimitExceeded)
            XCTAssertNotNil((error as? PropertyListError)?.objectIndex)
        }
    }

    func testErrorsSayWhere() {
        // An array whose second member is an unknown marker.
        let bytes = Self.file([[0xD1, 0x01, 0x02], [0x51, 0x6B], [0xA2, 0x01, 0x03], [0xFF]])
        XCTAssertThrowsError(try BinaryPropertyListReader.read(bytes)) { error in
            guard let error = error as? PropertyListError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.code, .invalidObject)
            XCTAssertEqual(error.objectIndex, 3)
            XCTAssertEqual(error.byteOffset, 16)
            XCTAssertEqual(error.keyPath, "root.k[1]")
        }
    }

    func testMarkerSemantics() throws {
        XCTAssertEqual(try BinaryPropertyListReader.read(Self.file([[0x00]])), .null)
        assertRejects(Self.file([[0x0F]]), .invalidObject)  // fill
        for marker: UInt8 in [0x0C, 0x0D, 0x0E, 0x70, 0xB0] { assertRejects(Self.file([[marker]]), .unsupportedObject) }
        // Header bplist0x is accepted, as CoreFoundation does.
        var header = Self.file([[0x09]])
        header[7] = UInt8(ascii: "x")
        XCTAssertEqual(try BinaryPropertyListReader.read(header), true)
        // 16-byte integers: unsigned when the high half is zero, negative when it is all ones.
        let high0: [UInt8] = [0x14] + [UInt8](repeating: 0, count: 8) + [UInt8](repeating: 0xFF, count: 8)
        XCTAssertEqual(try BinaryPropertyListReader.read(Self.file([high0])).uint64Value, UInt64.max)
        let negative: [UInt8] = [0x14] + [UInt8](repeating: 0xFF, count: 15) + [0xFE]
        XCTAssertEqual(try BinaryPropertyListReader.read(Self.file([negative])).int64Value, -2)
        let outside: [UInt8] = [0x14, 1] + [UInt8](repeating: 0, count: 15)
        assertRejects(Self.file([outside]), .invalidObject)
        // UIDs of up to 4 bytes, and wider ones that fit 32 bits; not above.
        XCTAssertEqual(try BinaryPropertyListReader.read(Self.file([[0x83, 0xFF, 0xFF, 0xFF, 0xFF]])), .uid(UInt32.max))
        XCTAssertEqual(try BinaryPropertyListReader.read(Self.file([[0x87, 0, 0, 0, 0, 0, 0, 0, 7]])), .uid(7))
        assertRejects(Self.file([[0x84, 1, 0, 0, 0, 0]]), .invalidObject)
        // UTF-16 surrogate pairs decode; lone surrogates are errors.
        XCTAssertEqual(try BinaryPropertyListReader.read(Self.file([[0x62, 0xD8, 0x3D, 0xDE, 0x00]])).stringValue, "😀")
        assertRejects(Self.file([[0x61, 0xD8, 0x3D]]), .invalidString)
        assertRejects(Self.file([[0x62, 0xDE, 0x00, 0xD8, 0x3D]]), .invalidString)
        // Non-ASCII bytes in an ASCII string.
        assertRejects(Self.file([[0x52, 0x61, 0xE9]]), .invalidString)
    }
}
