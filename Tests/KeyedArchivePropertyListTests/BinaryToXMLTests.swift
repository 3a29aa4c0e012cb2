import KeyedArchiveTestSupport
import XCTest
@testable import KeyedArchivePropertyList

/// `PropertyList.convert` from binary to XML streams without a tree; it must write exactly what
/// reading then writing writes, and reject exactly what that rejects.
final class BinaryToXMLTests: XCTestCase {
    /// Reading into a tree, then writing XML.
    private func twoStep(_ data: Data, limits: DecodingLimits = .default, maximumOutputLength: Int = .max) -> Result<Data, Error> {
        Result { try PropertyList.encode(PropertyList.decode(data, limits: limits), format: .xml, maximumOutputLength: maximumOutputLength) }
    }

    private func streamed(_ data: Data, limits: DecodingLimits = .default, maximumOutputLength: Int = .max) -> Result<Data, Error> {
        Result { try PropertyList.convert(data, to: .xml, limits: limits, maximumOutputLength: maximumOutputLength) }
    }

    /// True when `convert` takes the streaming path for `data` (false when it reads a tree).
    private func streams(_ data: Data, limits: DecodingLimits = .default) throws -> Bool {
        try data.withUnsafeBytes { bytes in
            try BinaryPropertyListDecoder(bytes: bytes, limits: limits).canWriteXMLWithinLimits()
        }
    }

    private func code(_ result: Result<Data, Error>) -> PropertyListError.Code? {
        if case .failure(let error) = result { return (error as? PropertyListError)?.code }
        return nil
    }

    /// Same bytes when the two-step path succeeds; an error of the same kind when it fails.
    private func assertSameOutcome(
        _ data: Data, _ context: @autoclosure () -> String, limits: DecodingLimits = .default, maximumOutputLength: Int = .max,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let expected = twoStep(data, limits: limits, maximumOutputLength: maximumOutputLength)
        let actual = streamed(data, limits: limits, maximumOutputLength: maximumOutputLength)
        switch (expected, actual) {
        case (.success(let a), .success(let b)):
            XCTAssertTrue(a == b, "\(context()): streamed XML differs (\(b.count) bytes, two-step \(a.count))", file: file, line: line)
        case (.failure, .failure):
            XCTAssertEqual(code(actual), code(expected), "\(context()): \(actual) vs two-step \(expected)", file: file, line: line)
        default:
            XCTFail("\(context()): streamed \(actual), two-step \(expected)", file: file, line: line)
        }
    }

    func testCorpusFilesConvertExactlyAsTheTwoStepPath() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        var converted = 0, rejected = 0, streamedFiles = 0
        for entry in BinaryCorpusTests.binaryEntries() {
            let data = entry.data
            assertSameOutcome(data, entry.path)
            if case .success = twoStep(data) {
                converted += 1
                if (try? streams(data)) == true { streamedFiles += 1 }
            } else {
                rejected += 1
            }
        }
        // Both kinds must be present, and the streaming path taken, for this to mean anything.
        XCTAssertGreaterThan(converted, 20)
        XCTAssertGreaterThan(rejected, 10)
        XCTAssertGreaterThan(streamedFiles, converted * 3 / 4, "files Apple wrote should stream")
    }

    func testDamagedCorpusFilesFailOrConvertAsTheTwoStepPath() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        for (name, damaged) in BinaryCorpusTests.damagedEntries(seed: 41, perFile: 24) {
            let expected = twoStep(damaged), actual = streamed(damaged)
            // Several problems in one file may be met in another order, so only the outcome
            // (and the bytes, when it converts) must agree.
            switch (expected, actual) {
            case (.success(let a), .success(let b)): XCTAssertTrue(a == b, "\(name): output differs")
            case (.failure, .failure): break
            default: XCTFail("\(name): streamed \(actual), two-step \(expected)")
            }
        }
    }

    func testRandomTreesConvertExactlyAsTheTwoStepPath() throws {
        var options = RandomPropertyList.Options()
        options.maximumDepth = 8
        var random = RandomPropertyList(seed: 42, options: options)
        for index in 0..<400 {
            var value = random.rootDictionary()
            if index % 5 == 0 {
                // Shared members: the binary writer stores them once, the XML repeats them.
                let shared = random.value()
                value = ["a": value, "b": shared, "c": [shared, shared, value]]
            }
            let binary = try PropertyList.encode(value, format: .binary)
            XCTAssertTrue(try streams(binary), "random value \(index) should stream")
            assertSameOutcome(binary, "random value \(index)")
        }
    }

    func testKeysThatTieOnTheirFirstEightBytesSortAsTheTreeWriterSortsThem() throws {
        // ASCII keys stay bytes and UTF-16 keys become strings in the streaming path; the order
        // must still be UTF-16 order (U+FF5E after U+1F600's surrogates, "abcdefgh" before
        // "abcdefgh\0x"), duplicates keeping their stored order.
        let keys = [
            "abcdefgh", "abcdefghi", "abcdefgh\u{E9}", "abcdefgh\u{FF5E}", "abcdefgh\u{1F600}", "abcdefg", "abcdefgh",
            "", "ABCDEFGHIJ", "abcdefgh\u{0}x", "\u{FF5E}", "\u{1F600}", "abcdefgh<&>", "abcdefgi",
        ]
        for rotation in 0..<keys.count {
            let rotated = Array(keys[rotation...] + keys[..<rotation])
            let dictionary = PropertyListDictionary(rotated.enumerated().map { (PropertyListValue($0.element), PropertyListValue($0.offset)) })
            let binary = try PropertyList.encode(.dictionary(dictionary), format: .binary)
            XCTAssertTrue(try streams(binary))
            assertSameOutcome(binary, "rotation \(rotation)")
        }
    }

    func testStreamedXMLReadsBackInPlistlibAsTheBinaryFileDoes() throws {
        guard Python.executable != nil else { print("SKIP: python3 not found"); return }
        // plistlib reads the binary input and our streamed XML; both must give the same value.
        var options = RandomPropertyList.Options()
        options.uid = false  // plistlib reads CF$UID dictionaries in XML as plain dictionaries
        options.fractionalDates = false  // XML keeps whole seconds
        options.nan = false  // nan != nan in Python
        options.unsignedAbove64 = true
        var random = RandomPropertyList(seed: 43, options: options)
        var files: [Data] = []
        for _ in 0..<60 {
            let binary = try PropertyList.encode(random.rootDictionary(), format: .binary)
            files.append(binary)
            files.append(try PropertyList.convert(binary, to: .xml))
        }
        let script = """
            import plistlib, sys, struct
            data = sys.stdin.buffer.read()
            position, results = 0, []
            while position < len(data):
                (length,) = struct.unpack('>Q', data[position:position + 8])
                results.append(plistlib.loads(data[position + 8:position + 8 + length]))
                position += 8 + length
            def lf(value):
                # XML parsers turn CR LF and lone CR in text into LF (XML 1.0, 2.11).
                if isinstance(value, str): return value.replace('\\r\\n', '\\n').replace('\\r', '\\n')
                if isinstance(value, list): return [lf(v) for v in value]
                if isinstance(value, dict): return {lf(k): lf(v) for k, v in value.items()}
                return value
            bad = [i for i in range(0, len(results), 2) if lf(results[i]) != results[i + 1]]
            print(len(results), bad)
            """
        var input = Data()
        for file in files {
            withUnsafeBytes(of: UInt64(file.count).bigEndian) { input.append(contentsOf: $0) }
            input.append(file)
        }
        let output = String(decoding: try Python.run(script, input: input), as: UTF8.self)
        XCTAssertEqual(output.trimmingCharacters(in: .whitespacesAndNewlines), "\(files.count) []")
    }

    // MARK: - What XML cannot hold, and hostile files

    private typealias File = BinaryRobustnessTests

    private func assertBothReject(
        _ bytes: [UInt8], _ code: PropertyListError.Code, limits: DecodingLimits = .default, maximumOutputLength: Int = .max,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        let data = Data(bytes)
        XCTAssertEqual(self.code(streamed(data, limits: limits, maximumOutputLength: maximumOutputLength)), code, file: file, line: line)
        XCTAssertEqual(self.code(twoStep(data, limits: limits, maximumOutputLength: maximumOutputLength)), code, file: file, line: line)
    }

    func testValuesXMLCannotHoldAreRefused() {
        // A set, a null, and an integer key: valid binary, no XML form.
        assertBothReject(File.file([[0xA1, 0x01], [0xC1, 0x02], [0x10, 0x01]]), .unrepresentableValue)
        assertBothReject(File.file([[0xA1, 0x01], [0x00]]), .unrepresentableValue)
        assertBothReject(File.file([[0xD1, 0x01, 0x02], [0x10, 0x07], [0x51, 0x76]]), .unrepresentableValue)
        // A container as a key is not even valid binary.
        assertBothReject(File.file([[0xD1, 0x01, 0x02], [0xA0], [0x51, 0x76]]), .invalidObject)
    }

    func testHostileFilesAreRejected() {
        assertBothReject(File.file([[0xA1, 0x00]]), .referenceCycle)
        assertBothReject(File.file([[0xA1, 0x01], [0xD1, 0x02, 0x00], [0x51, 0x6B]]), .referenceCycle)
        // The streamed walk checks only the root for cycles: with no container referenced twice,
        // only the root can be met again (here three deep), and a cycle that misses the root
        // makes a container shared, which sends the file to the tree reader.
        let rootCycle = File.file([[0xA1, 0x01], [0xA1, 0x02], [0xA1, 0x00]])
        XCTAssertTrue(try streams(Data(rootCycle)))
        assertBothReject(rootCycle, .referenceCycle)
        let innerCycle = File.file([[0xA1, 0x01], [0xA1, 0x02], [0xA1, 0x01]])
        XCTAssertFalse(try streams(Data(innerCycle)))
        assertBothReject(innerCycle, .referenceCycle)
        assertBothReject(File.file([[0xA1, 0x05]]), .invalidReference)
        // 2^61 leaves from a few hundred bytes: shared containers go through the tree reader,
        // whose expansion limit stops it at once.
        XCTAssertFalse(try streams(Data(File.expansionBomb(depth: 60))))
        assertBothReject(File.expansionBomb(depth: 60), .objectLimitExceeded)
        assertBothReject(File.expansionBomb(depth: 16), .objectLimitExceeded, limits: DecodingLimits(maximumExpandedNodeCount: 1_000))
        assertBothReject(File.expansionBomb(depth: 16), .objectLimitExceeded, limits: DecodingLimits(maximumExpandedByteCount: 1_000))
        // Under the limits it converts, and the output budget still applies.
        assertSameOutcome(Data(File.expansionBomb(depth: 10)), "bomb of depth 10")
        assertBothReject(File.expansionBomb(depth: 14), .lengthLimitExceeded, maximumOutputLength: 100_000)
        // Deeper than the limit: arrays nested 600 deep.
        var objects: [[UInt8]] = (0..<600).map { index in [0xA1, 0x00, 0x00] }
        for index in 0..<600 { objects[index] = [0xA1] + File.bigEndian16(UInt16(index + 1)) }
        objects.append([0x08])
        assertBothReject(File.file(objects, refSize: 2), .depthLimitExceeded)
    }

    func testSharedStringsThatWouldExpandPastTheLimitAreSizedFirst() throws {
        // One 1,000-byte string used by 3,000 array slots: 3 MB of text from a 7 KB file.
        let count = 3_000
        let array: [UInt8] = [0xAF, 0x11] + File.bigEndian16(UInt16(count)) + [UInt8](repeating: 0x01, count: count)
        let string: [UInt8] = [0x5F, 0x11, 0x03, 0xE8] + [UInt8](repeating: UInt8(ascii: "s"), count: 1_000)
        let bytes = File.file([array, string])
        let tight = DecodingLimits(maximumExpandedByteCount: 2_000_000)
        XCTAssertFalse(try streams(Data(bytes), limits: tight))
        assertBothReject(bytes, .objectLimitExceeded, limits: tight)
        // Within the limit it streams and writes the string at every use.
        XCTAssertTrue(try streams(Data(bytes)))
        assertSameOutcome(Data(bytes), "shared string")
        let xml = try PropertyList.convert(Data(bytes), to: .xml)
        XCTAssertGreaterThan(xml.count, count * 1_000)
    }

    func testErrorsSayWhere() {
        // A dictionary {k: [x, <unknown marker>]}.
        let bytes = File.file([[0xD1, 0x01, 0x02], [0x51, 0x6B], [0xA2, 0x01, 0x03], [0xFF]])
        guard case .failure(let error as PropertyListError) = streamed(Data(bytes)) else { return XCTFail("accepted") }
        XCTAssertEqual(error.code, .invalidObject)
        XCTAssertEqual(error.objectIndex, 3)
        XCTAssertEqual(error.byteOffset, 16)
        XCTAssertEqual(error.keyPath, "root.k[1]")
    }

    /// An array of `count` distinct strings, then a set (no XML form) when `failAtEnd`.
    private func bigFile(count: Int, failAtEnd: Bool) throws -> Data {
        var members: [PropertyListValue] = (0..<count).map { PropertyListValue("member \($0) <&> é") }
        if failAtEnd { members.append(.set([1])) }
        return try PropertyList.encode(.array(members), format: .binary)
    }

    func testChunkedOutputIsTheSameBytes() throws {
        let data = try bigFile(count: 120_000, failAtEnd: false)
        var chunks: [Data] = []
        try PropertyList.convert(data, to: .xml) { chunks.append(Data($0)) }
        let whole = try PropertyList.convert(data, to: .xml)
        XCTAssertGreaterThan(whole.count, 3 << 20)
        XCTAssertGreaterThanOrEqual(chunks.count, 3, "streamed output should come in chunks")
        XCTAssertLessThanOrEqual(chunks.map(\.count).max() ?? 0, XMLText.sinkChunkLength + 4_096, "chunks stay near 2 MiB")
        XCTAssertEqual(chunks.reduce(Data(), +), whole)
        XCTAssertEqual(whole, try PropertyList.encode(PropertyList.decode(data), format: .xml))
        // Conversions that are not streamed pass their output in one piece.
        var pieces = 0
        try PropertyList.convert(whole, to: .binary) { _ in pieces += 1 }
        XCTAssertEqual(pieces, 1)
    }

    func testChunkedOutputStopsAtTheFirstError() throws {
        let data = try bigFile(count: 120_000, failAtEnd: true)
        var seen = 0
        XCTAssertThrowsError(try PropertyList.convert(data, to: .xml) { seen += $0.count }) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .unrepresentableValue)
            XCTAssertEqual((error as? PropertyListError)?.keyPath, "root[120000]")
        }
        // Part of the document went out before the set was met: callers must be able to discard it.
        XCTAssertGreaterThan(seen, 1 << 20)
    }

    func testErrorsInsideNestedSortedDictionariesSayWhere() {
        // {z: 1, a: {y: 2, b: [1, <unknown marker>]}}: both dictionaries are written in sorted
        // order, so the path comes from the key stacks' orders, not the stored ones.
        let bytes = File.file([
            [0xD2, 0x01, 0x02, 0x03, 0x04], [0x51, 0x7A], [0x51, 0x61], [0x10, 0x01],
            [0xD2, 0x05, 0x06, 0x07, 0x08], [0x51, 0x79], [0x51, 0x62], [0x10, 0x02],
            [0xA2, 0x03, 0x09], [0xFF],
        ])
        for result in [streamed(Data(bytes)), twoStep(Data(bytes))] {
            guard case .failure(let error as PropertyListError) = result else { return XCTFail("accepted") }
            XCTAssertEqual(error.code, .invalidObject)
            XCTAssertEqual(error.objectIndex, 9)
            XCTAssertEqual(error.keyPath, "root.a.b[1]")
        }
        // With the bad marker fixed, the XML is the two-step XML.
        var good = bytes
        good[good.firstIndex(of: 0xFF)!] = 0x09
        assertSameOutcome(Data(good), "nested sorted dictionaries")
    }

    func testOtherConversionsGoThroughTheTree() throws {
        let value: PropertyListValue = ["name": "Ada", "list": [1, 2.5, true], "blob": .data(Data([1, 2, 3]))]
        let xml = try PropertyList.encode(value, format: .xml)
        let read = try PropertyList.decode(xml)
        XCTAssertEqual(read, value)
        XCTAssertEqual(try PropertyList.convert(xml, to: .binary), try PropertyList.encode(read, format: .binary))
        XCTAssertEqual(try PropertyList.convert(xml, to: .openStep), try PropertyList.encode(read, format: .openStep))
        XCTAssertEqual(try PropertyList.convert(try PropertyList.encode(value, format: .binary), to: .xml), xml)
    }
}
