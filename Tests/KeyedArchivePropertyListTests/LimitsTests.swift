import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// DecodingLimits hold in every reader: each limit at its boundary (the limit accepted, one
/// less refused with the right code), the documented defaults, caller overrides, memory that
/// stays proportional to the input for files claiming huge sizes, and time that stays linear on
/// inputs built to trigger quadratic behaviour.
final class LimitsTests: XCTestCase {
    /// The three readers over the same value, each written by its own writer.
    private static func encodings(_ value: PropertyListValue) throws -> [(format: String, bytes: Data)] {
        [
            ("binary", Data(try BinaryPropertyListWriter.write(value))),
            ("xml", Data(try XMLPropertyListWriter.write(value))),
            ("openStep", Data(try OpenStepPropertyListWriter.write(value))),
        ]
    }

    private static func read(_ format: String, _ bytes: Data, _ limits: DecodingLimits) throws -> PropertyListValue {
        switch format {
        case "binary": return try BinaryPropertyListReader.read(bytes, limits: limits)
        case "xml": return try XMLPropertyListReader.read(bytes, limits: limits)
        default: return try bytes.withUnsafeBytes { try OpenStepPropertyListReader.read($0, limits: limits) }
        }
    }

    /// `value` is read under `limits(exact)` and refused with `code` under `limits(exact - 1)`,
    /// in all three formats.
    private func assertBoundary(
        _ value: PropertyListValue, exact: Int, code: PropertyListError.Code, _ limits: (Int) -> DecodingLimits,
        file: StaticString = #filePath, line: UInt = #line
    ) throws {
        for (format, bytes) in try Self.encodings(value) {
            XCTAssertEqual(try Self.read(format, bytes, limits(exact)), value, "\(format) at the limit \(exact)", file: file, line: line)
            XCTAssertThrowsError(try Self.read(format, bytes, limits(exact - 1)), "\(format) under \(exact - 1)", file: file, line: line) { error in
                XCTAssertEqual((error as? PropertyListError)?.code, code, "\(format): \(error)", file: file, line: line)
            }
        }
    }

    func testDepthLimitCountsNestedContainersInEveryFormat() throws {
        var value: PropertyListValue = "leaf"
        for index in 0..<20 { value = index % 2 == 0 ? .array([value]) : .dictionary(["k": value]) }
        try assertBoundary(value, exact: 20, code: .depthLimitExceeded) { DecodingLimits(maximumDepth: $0) }
    }

    /// An error at the default depth limit names a path of 1,500 characters: its description
    /// shows the path's two ends and how much is left out, and `keyPath` keeps all of it.
    func testDeepErrorPathsAreShortenedInDescriptionsOnly() throws {
        let depth = DecodingLimits.default.maximumDepth + 1
        let xml = Data(("<plist>" + String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth) + "</plist>").utf8)
        XCTAssertThrowsError(try XMLPropertyListReader.read(xml)) { error in
            guard let error = error as? PropertyListError else { return XCTFail("\(error)") }
            XCTAssertEqual(error.code, .depthLimitExceeded)
            let keyPath = error.keyPath ?? ""
            XCTAssertGreaterThan(keyPath.count, 1_000)
            XCTAssertLessThan(error.description.count, 300, error.description)
            XCTAssertTrue(error.description.contains("…(\(keyPath.count - 120) characters)…"), error.description)
            XCTAssertTrue(error.description.contains(String(keyPath.prefix(60))) && error.description.contains(String(keyPath.suffix(60))))
            XCTAssertTrue(error.description.hasSuffix(error.message))
        }
        // A short path is shown whole.
        let short = PropertyListError(.invalidObject, "bad", keyPath: "root.a[1]")
        XCTAssertEqual(short.description, "at root.a[1]: bad")
        let archiveError = KeyedArchiveError(.invalidObject, "bad", path: String(repeating: "$objects[1] ", count: 40))
        XCTAssertLessThan(archiveError.description.count, 200, archiveError.description)
        XCTAssertEqual(archiveError.path.count, 480)
    }

    func testObjectLimitCountsEveryValueInEveryFormat() throws {
        // An array of 30 distinct strings: 31 values in every format.
        let array = PropertyListValue.array((0..<30).map { PropertyListValue("s\($0)") })
        try assertBoundary(array, exact: 31, code: .objectLimitExceeded) { DecodingLimits(maximumObjectCount: $0) }
        // Keys count as values too (they are objects in binary files): 1 + 2 × 10.
        let dictionary = PropertyListValue.dictionary(PropertyListDictionary(stringKeys: (0..<10).map { ("k\($0)", PropertyListValue("v\($0)")) }))
        try assertBoundary(dictionary, exact: 21, code: .objectLimitExceeded) { DecodingLimits(maximumObjectCount: $0) }
    }

    func testStringAndDataLengthLimitsInEveryFormat() throws {
        try assertBoundary(["hello", "hi"], exact: 5, code: .lengthLimitExceeded) { DecodingLimits(maximumStringLength: $0) }
        try assertBoundary([.data(Data([1, 2, 3])), .data(Data([4]))], exact: 3, code: .lengthLimitExceeded) {
            DecodingLimits(maximumDataLength: $0)
        }
    }

    func testCallersCanRaiseLimitsPastTheDefaults() throws {
        // 600 nested arrays (the text writers refuse to write past 512, so spell them out).
        var deep: PropertyListValue = "leaf"
        for _ in 0..<600 { deep = .array([deep]) }
        let xml = "<plist version=\"1.0\">" + String(repeating: "<array>", count: 600) + "<string>leaf</string>"
            + String(repeating: "</array>", count: 600) + "</plist>"
        let openStep = String(repeating: "(", count: 600) + "leaf" + String(repeating: ")", count: 600)
        let inputs = [("binary", Data(try BinaryPropertyListWriter.write(deep))), ("xml", Data(xml.utf8)), ("openStep", Data(openStep.utf8))]
        for (format, bytes) in inputs {
            XCTAssertThrowsError(try Self.read(format, bytes, .default), format)
            XCTAssertEqual(try Self.read(format, bytes, DecodingLimits(maximumDepth: 600)), deep, format)
        }
    }

    /// The defaults are the ones Docs/Security.md documents.
    func testDefaultsMatchTheDocumentation() throws {
        let docs = try String(contentsOfFile: Corpus.repositoryRoot + "/Docs/Security.md", encoding: .utf8)
        let limits = DecodingLimits.default
        let documented: [(String, Int)] = [
            ("maximumDepth", limits.maximumDepth), ("maximumObjectCount", limits.maximumObjectCount),
            ("maximumExpandedNodeCount", limits.maximumExpandedNodeCount),
            ("maximumExpandedByteCount", limits.maximumExpandedByteCount),
            ("maximumStringLength", limits.maximumStringLength), ("maximumDataLength", limits.maximumDataLength),
        ]
        for (name, value) in documented {
            // A table row such as "| `maximumDepth` | 512 | ...".
            let row = docs.split(separator: "\n").first { $0.hasPrefix("| `\(name)`") }
            XCTAssertNotNil(row, "Docs/Security.md has no row for \(name)")
            let cells = row?.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) } ?? []
            let number = cells.count > 1 ? Int(cells[1].prefix { $0.isNumber }) : nil
            XCTAssertEqual(number, value, "\(name): Docs/Security.md says \(cells.count > 1 ? cells[1] : "nothing")")
        }
    }

    // MARK: - Expansion of shared references

    /// A binary file whose root array holds `fan` references to an array holding `fan`
    /// references to one data value of `size` bytes.
    static func sharedDataFile(fan: Int, size: Int) -> [UInt8] {
        let count = { (marker: UInt8, n: Int) -> [UInt8] in n < 15 ? [marker | UInt8(n)] : [marker | 0xF, 0x11, UInt8(n >> 8), UInt8(n & 0xFF)] }
        return BinaryRobustnessTests.file([
            count(0xA0, fan) + [UInt8](repeating: 1, count: fan),
            count(0xA0, fan) + [UInt8](repeating: 2, count: fan),
            count(0x40, size) + [UInt8](repeating: 0x61, count: size),
        ])
    }

    func testExpandedByteAndNodeLimitsAreExact() throws {
        let file = Self.sharedDataFile(fan: 16, size: 100)
        // 16 × 16 uses of 100 bytes; 1 + 16 × (1 + 16) values.
        let bytes = 16 * 16 * 100, nodes = 1 + 16 * 17
        XCTAssertNoThrow(try BinaryPropertyListReader.read(file, limits: DecodingLimits(maximumExpandedNodeCount: nodes, maximumExpandedByteCount: bytes)))
        for limits in [DecodingLimits(maximumExpandedByteCount: bytes - 1), DecodingLimits(maximumExpandedNodeCount: nodes - 1)] {
            XCTAssertThrowsError(try BinaryPropertyListReader.read(file, limits: limits)) { error in
                XCTAssertEqual((error as? PropertyListError)?.code, .objectLimitExceeded, "\(error)")
            }
        }
    }

    func testGigabyteExpansionIsRefusedByDefault() throws {
        // 256 × 256 uses of 20,000 bytes: 1.3 GB from 21 KB, far under the node limit.
        let file = Self.sharedDataFile(fan: 256, size: 20_000)
        XCTAssertLessThan(file.count, 22_000)
        XCTAssertThrowsError(try BinaryPropertyListReader.read(file)) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .objectLimitExceeded)
            XCTAssertTrue("\(error)".contains("bytes of strings and data"), "\(error)")
        }
    }

    // MARK: - Memory proportional to the input

    /// Peak resident memory (KiB) of `karchive lint FILE`, measured by a Python parent that
    /// runs nothing else, or nil when python3 is missing.
    private func peakLintMemory(_ bytes: [UInt8], _ name: String) throws -> (kib: Int, output: String)? {
        guard Python.executable != nil else { return nil }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ka-limits-\(UUID().uuidString)-\(name)")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let script = """
            import resource, subprocess, sys
            run = subprocess.run(sys.argv[1:], capture_output=True)
            print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, run.returncode, run.stderr.decode(errors="replace").strip())
            """
        let output = String(decoding: try Python.run(script, arguments: [ToolRunner.karchiveURL.path, "lint", url.path]), as: UTF8.self)
        guard let kib = Int(output.split(separator: " ").first ?? "") else { XCTFail("no measurement: \(output)"); return nil }
        return (kib, output)
    }

    func testFilesClaimingHugeSizesAllocateInProportionToTheirLength() throws {
        guard let baseline = try peakLintMemory(BinaryRobustnessTests.file([[0x09]]), "baseline") else {
            print("python3 not found: skipping the peak-memory measurement of karchive lint")
            return
        }
        let huge: [UInt8] = [0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        var hostile: [(String, [UInt8])] = [
            ("data of 2^63 bytes", BinaryRobustnessTests.file([[0x4F] + huge])),
            ("string of 2^63 bytes", BinaryRobustnessTests.file([[0x5F] + huge])),
            ("UTF-16 string of 2^62 units", BinaryRobustnessTests.file([[0x6F, 0x13, 0x40, 0, 0, 0, 0, 0, 0, 0]])),
            ("array of 2^40 members", BinaryRobustnessTests.file([[0xAF, 0x13, 0, 0, 1, 0, 0, 0, 0, 0]])),
            ("dictionary of 2^40 entries", BinaryRobustnessTests.file([[0xDF, 0x13, 0, 0, 1, 0, 0, 0, 0, 0]])),
        ]
        // A trailer claiming 2^40 objects of 8-byte offsets.
        var objects = BinaryRobustnessTests.file([[0x09]])
        objects.replaceSubrange((objects.count - 24)..<(objects.count - 16), with: [0, 0, 1, 0, 0, 0, 0, 0])
        hostile.append(("trailer claiming 2^40 objects", objects))
        // 4 MB of offset-table entries all pointing at one byte (the shared-offsets fixture, larger).
        var shared = Array("bplist00".utf8) + [0x09] + [UInt8](repeating: 8, count: 4 << 20)
        shared += [0, 0, 0, 0, 0, 0, 1, 4] + Self.bigEndian(UInt64(4 << 20)) + Self.bigEndian(0) + Self.bigEndian(9)
        hostile.append(("4 MB table of shared offsets", shared))
        for (name, bytes) in hostile {
            guard let peak = try peakLintMemory(bytes, "hostile") else { return }
            XCTAssertTrue(peak.output.contains(" 1 "), "\(name) must be refused: \(peak.output)")
            XCTAssertLessThan(peak.kib - baseline.kib, 4 * 1024 + 12 * bytes.count / 1024, "\(name): \(peak.kib) KiB against \(baseline.kib) KiB")
        }
        // The worst layout still accepted: 1,000,000 one-byte objects with 3-byte offsets (4 MB).
        let dense = Self.denseFile(objects: 1_000_000)
        guard let peak = try peakLintMemory(dense, "dense") else { return }
        XCTAssertTrue(peak.output.contains(" 0 "), "the dense file is valid: \(peak.output)")
        XCTAssertLessThan(peak.kib - baseline.kib, 4 * 1024 + 12 * dense.count / 1024, "dense file: \(peak.kib) KiB against \(baseline.kib) KiB")
        print("peak RSS of karchive lint: baseline \(baseline.kib) KiB, \(dense.count)-byte dense file \(peak.kib) KiB")
    }

    static func bigEndian(_ value: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) } }

    /// `objects` objects: a root array of the first 14 `true`s and `objects - 1` one-byte `true`
    /// objects, each at its own offset (3-byte entries, 3-byte references).
    static func denseFile(objects: Int) -> [UInt8] {
        var bytes = Array("bplist00".utf8) + [0xAE]
        for index in 1...14 { bytes += [0, 0, UInt8(index)] }
        var offsets = [8]
        for _ in 1..<objects {
            offsets.append(bytes.count)
            bytes.append(0x09)
        }
        let table = bytes.count
        for offset in offsets { bytes += [UInt8(offset >> 16), UInt8((offset >> 8) & 0xFF), UInt8(offset & 0xFF)] }
        return bytes + [0, 0, 0, 0, 0, 0, 3, 3] + bigEndian(UInt64(objects)) + bigEndian(0) + bigEndian(UInt64(table))
    }

    // MARK: - Linear time

    /// Reading the input built for `8n` takes less than 30 times as long as for `n` (8 when
    /// linear, 64 when quadratic; see `LinearTime.ratio`).
    private func assertLinear(_ name: String, n: Int, _ make: (Int) throws -> Data, _ read: (Data) throws -> Void) throws {
        let ratio = try LinearTime.ratio(n: n, make, read)
        print("linear-time check \(name): 8n/n time ratio \(String(format: "%.1f", ratio))")
        XCTAssertLessThan(ratio, 30, "\(name): 8n takes \(ratio) times as long as n")
    }

    /// Many keys sharing a long prefix (hashing and comparison costs grow with the shared part).
    private static func prefixedKeys(_ count: Int, duplicates: Bool) -> PropertyListValue {
        let prefix = String(repeating: "com.example.preference.", count: 4)
        var dictionary = PropertyListDictionary()
        for index in 0..<count { dictionary.entries.append((PropertyListValue(prefix + String(duplicates ? index % 7 : index)), PropertyListValue(Int64(index)))) }
        return .dictionary(dictionary)
    }

    func testReadingStaysLinearOnKeyHeavyInputs() throws {
        // Small sizes keep the debug build quick; the 8n input is still large enough to time.
        for duplicates in [false, true] {
            let label = duplicates ? "repeated keys" : "distinct keys with a long shared prefix"
            // Binary inputs are small: larger ones cross cache sizes between n and 8n.
            try assertLinear("binary, \(label)", n: 150, { Data(try BinaryPropertyListWriter.write(Self.prefixedKeys($0, duplicates: duplicates))) }) {
                _ = try BinaryPropertyListReader.read($0)
            }
            try assertLinear("XML, \(label)", n: 200, { Data(try XMLPropertyListWriter.write(Self.prefixedKeys($0, duplicates: duplicates))) }) {
                _ = try XMLPropertyListReader.read($0)
            }
            try assertLinear("OpenStep, \(label)", n: 200, { Data(try OpenStepPropertyListWriter.write(Self.prefixedKeys($0, duplicates: duplicates))) }) { data in
                _ = try data.withUnsafeBytes { try OpenStepPropertyListReader.read($0) }
            }
        }
    }

    func testReadingStaysLinearOnLongReferenceChains() throws {
        // n arrays nested n deep, each also referring to one shared string: a long chain with
        // sharing at every level.
        func chain(_ n: Int) -> Data {
            let leaf = UInt64(n)
            var objects: [[UInt8]] = []
            for index in 0..<n {
                let next = index + 1 == n ? leaf : UInt64(index + 1)
                objects.append([0xA2] + Self.bigEndian(next).suffix(3) + Self.bigEndian(leaf).suffix(3))
            }
            objects.append([0x51, 0x78])
            return Data(BinaryRobustnessTests.file(objects, refSize: 3))
        }
        try assertLinear("binary, reference chain", n: 2_000, chain) { data in
            _ = try BinaryPropertyListReader.read(data, limits: DecodingLimits(maximumDepth: 20_000))
        }
    }
}

/// The text writers' output budget: shared references cannot expand a small value into an
/// unbounded text.
final class OutputBudgetTests: XCTestCase {
    func testEveryTextWriterStopsAtItsBudgetAndNotBefore() throws {
        // 200 references to one 200-element array: small in memory (arrays are shared), about
        // 40,000 values once written out.
        let shared = PropertyListValue.array((0..<200).map { PropertyListValue($0) })
        let value = PropertyListValue.array(Array(repeating: shared, count: 200))
        let writers: [(String, (Int) throws -> [UInt8])] = [
            ("xml", { try XMLPropertyListWriter.write(value, maximumDepth: 512, maximumOutputLength: $0) }),
            ("json", { try JSONPropertyListWriter.write(value, pretty: true, maximumOutputLength: $0) }),
            ("openstep", { try OpenStepPropertyListWriter.write(value, options: .init(maximumOutputLength: $0)) }),
            ("encode xml", { [UInt8](try PropertyList.encode(value, format: .xml, maximumOutputLength: $0)) }),
        ]
        for (name, write) in writers {
            let full = try write(.max)
            XCTAssertGreaterThan(full.count, 100_000, name)
            // A budget the text fits in is enough; a smaller one stops with a typed error.
            XCTAssertEqual(try write(full.count), full, name)
            XCTAssertThrowsError(try write(full.count / 2), name) { error in
                XCTAssertEqual((error as? PropertyListError)?.code, .lengthLimitExceeded, name)
            }
        }
    }

    /// Binary output stores equal scalars once but every use of a container again (as
    /// CoreFoundation's writer does), so shared arrays expand there too. The budget holds at
    /// the exact size: Foundation's bytes for the same value fit in their own length and not
    /// in one byte less.
    func testTheBinaryWriterStopsAtItsBudgetAndNotBefore() throws {
        let shared = PropertyListValue.array((0..<200).map { PropertyListValue($0) })
        let value = PropertyListValue.array(Array(repeating: shared, count: 200))
        let foundation = try BinaryFoundationTests.foundationBytes(value)
        XCTAssertGreaterThan(foundation.count, 80_000, "200 copies of 200 references")
        let writers: [(String, (Int) throws -> [UInt8])] = [
            ("binary", { try BinaryPropertyListWriter.write(value, maximumOutputLength: $0) }),
            ("encode binary", { [UInt8](try PropertyList.encode(value, format: .binary, maximumOutputLength: $0)) }),
        ]
        for (name, write) in writers {
            XCTAssertEqual(try write(foundation.count), foundation, name)
            XCTAssertThrowsError(try write(foundation.count - 1), name) { error in
                XCTAssertEqual((error as? PropertyListError)?.code, .lengthLimitExceeded, name)
                XCTAssertTrue("\(error)".contains("output would be longer than \(foundation.count - 1) bytes"), "\(error)")
            }
        }
    }

    /// A value whose containers are shared by reference stops the binary writer while it
    /// flattens, near the budget, not after it has stored every copy: 22 arrays each holding
    /// the next twice are 8,388,607 arrays written (75 MB, after about 235 MB of object list).
    func testSharedContainersStopTheBinaryWriterBeforeItsListOutgrowsTheBudget() throws {
        var value: PropertyListValue = []
        for _ in 0..<22 { value = .array([value, value]) }
        var objects = BinaryPropertyListObjects()
        objects.outputBudget = OutputBudget(1 << 20)
        XCTAssertThrowsError(try objects.add(value)) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .lengthLimitExceeded)
        }
        // Past 65,536 objects, half the arrays (the empty ones at the bottom) take 5 bytes
        // written (a marker, a 4-byte offset) and half 13 (two 4-byte references more): 9 on
        // average, so 1 MiB is about 116,500 of them.
        XCTAssertGreaterThan(objects.count, 110_000, "not before the budget")
        XCTAssertLessThan(objects.count, 120_000, "stopped within a container of the budget")
    }
}
