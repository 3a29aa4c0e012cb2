import KeyedArchiveTestSupport
import XCTest
@testable import KeyedArchivePropertyList

/// Large binary property lists are read by two threads: the biggest array on the way down from
/// the top object is cut in two and its later members are decoded by a second thread. Whatever
/// the input, the value read and the error thrown must be exactly those of one thread: the same
/// value down to storage hints, or the same code, message, byte offset, object index and key path.
final class SplitReadTests: XCTestCase {
    private func read(
        _ data: Data, _ policy: SplitPolicy, limits: DecodingLimits = .default, secondThreadObjectCount: Int = .max
    ) -> Result<PropertyListValue, Error> {
        data.withUnsafeBytes { bytes in
            Result { try BinaryPropertyListReader.read(bytes, limits: limits, secondThreadObjectCount: secondThreadObjectCount, split: policy) }
        }
    }

    private func splitPoint(_ data: Data, minimumMembers: Int = 2) -> SplitPoint? {
        data.withUnsafeBytes { bytes in
            guard let decoder = try? BinaryPropertyListDecoder(bytes: bytes, limits: .default), !decoder.hasSharedContainers() else { return nil }
            return decoder.splitPoint(minimumMembers: minimumMembers, arraysOnly: true)
        }
    }

    /// Same value (compared as values and as the bytes our writer makes of them, which keep
    /// integer widths and string storage), or the same error in every detail; returns what one
    /// thread did. When the read succeeds with a split, the second thread's part must have been
    /// used (not decoded again by the first thread).
    @discardableResult
    private func assertSplitMatches(
        _ data: Data, _ context: @autoclosure () -> String, limits: DecodingLimits = .default, minimumMembers: Int = 2,
        file: StaticString = #filePath, line: UInt = #line
    ) -> Result<PropertyListValue, Error> {
        let expected = read(data, .never, limits: limits)
        let handoffs = Protected<[Bool]>([])
        let policy = SplitPolicy(
            minimumInputLength: 0, minimumMembers: minimumMembers, requiresSeveralCores: false,
            onHandoff: { taken in handoffs.withLock { $0.append(taken) } })
        let actual = read(data, policy, limits: limits)
        switch (expected, actual) {
        case (.success(let a), .success(let b)):
            XCTAssertTrue(a == b, "\(context()): split value differs", file: file, line: line)
            XCTAssertEqual(
                try? PropertyList.encode(b, format: .binary), try? PropertyList.encode(a, format: .binary),
                "\(context()): storage hints differ", file: file, line: line)
            XCTAssertFalse(handoffs.withLock { $0.contains(false) }, "\(context()): the second thread's part was not used", file: file, line: line)
            if splitPoint(data, minimumMembers: minimumMembers) != nil {
                XCTAssertEqual(handoffs.withLock { $0 }, [true], "\(context()): one handoff expected", file: file, line: line)
            }
        case (.failure(let a as PropertyListError), .failure(let b as PropertyListError)):
            XCTAssertSameError(b, a, context(), file: file, line: line)
        default:
            func brief(_ result: Result<PropertyListValue, Error>) -> String {
                switch result {
                case .success(let value): "a \(value.typeName)"
                case .failure(let error): "\(error)"
                }
            }
            XCTFail("\(context()): split read gave \(brief(actual)), one thread \(brief(expected))", file: file, line: line)
        }
        return expected
    }

    /// `count` records in an array under a key; record `bad` holds the ASCII string "BAD!"
    /// whose last byte is then made 0xFF, which the reader refuses.
    /// Record `deep`, if any, holds three more levels of arrays than the others.
    private func records(_ count: Int, bad: Int? = nil, deep: Int? = nil) throws -> Data {
        let records: [PropertyListValue] = (0..<count).map { index in
            var fields: [(String, PropertyListValue)] = [
                ("name", PropertyListValue("record \(index)")), ("index", PropertyListValue(index)),
                ("tags", .array([PropertyListValue("a\(index % 7)"), PropertyListValue(Double(index) / 8)])),
            ]
            if index == bad { fields.append(("x", PropertyListValue("BAD!"))) }
            if index == deep { fields.append(("deep", [[["x"]]])) }
            return .dictionary(PropertyListDictionary(stringKeys: fields))
        }
        var bytes = Array(try PropertyList.encode(["version": 1, "records": .array(records)], format: .binary))
        if bad != nil {
            let marker = Array("BAD!".utf8)
            let at = try XCTUnwrap((0...(bytes.count - marker.count)).first { Array(bytes[$0..<($0 + marker.count)]) == marker })
            bytes[at + 3] = 0xFF
        }
        return Data(bytes)
    }

    func testCorpusFilesReadTheSameOnTwoThreads() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        var split = 0, rejected = 0
        for entry in BinaryCorpusTests.binaryEntries() {
            // Both passes forced onto two threads where they can be.
            for secondThreadObjectCount in [Int.max, 2] {
                let expected = read(entry.data, .never)
                let actual = read(entry.data, .always, secondThreadObjectCount: secondThreadObjectCount)
                switch (expected, actual) {
                case (.success(let a), .success(let b)): XCTAssertTrue(a == b, entry.path)
                case (.failure(let a), .failure(let b)): XCTAssertEqual("\(a)", "\(b)", entry.path)
                default: XCTFail("\(entry.path): \(actual) against \(expected)")
                }
            }
            guard splitPoint(entry.data) != nil else { continue }
            switch assertSplitMatches(entry.data, entry.path) {
            case .success: split += 1
            case .failure: rejected += 1
            }
        }
        XCTAssertGreaterThan(split, 20, "corpus files with a split point that read")
        XCTAssertGreaterThan(rejected, 0, "corpus files with a split point that are refused (the damaged files below have many more)")
    }

    func testDamagedCorpusFilesReadTheSameOnTwoThreads() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        var failures = 0
        for (name, data) in BinaryCorpusTests.damagedEntries(seed: 61, perFile: 16, where: { splitPoint($0) != nil }) {
            if case .failure = assertSplitMatches(data, name) { failures += 1 }
        }
        XCTAssertGreaterThan(failures, 50, "damaged files that fail in the walk")
    }

    func testRandomTreesReadTheSameOnTwoThreads() throws {
        var options = RandomPropertyList.Options()
        options.maximumDepth = 8
        var random = RandomPropertyList(seed: 62, options: options)
        var split = 0
        for index in 0..<300 {
            let value: PropertyListValue = index % 2 == 0
                ? random.rootDictionary()
                : ["meta": random.rootDictionary(), "items": .array((0..<(2 + index % 9)).map { _ in random.rootDictionary() })]
            let binary = try PropertyList.encode(value, format: .binary)
            // Larger minimums put the split point below containers of several members.
            let minimumMembers = 2 + index % 6
            if splitPoint(binary, minimumMembers: minimumMembers) != nil { split += 1 }
            guard case .success(let read) = assertSplitMatches(binary, "random value \(index)", minimumMembers: minimumMembers) else {
                XCTFail("random value \(index) refused")
                continue
            }
            XCTAssertTrue(read == value, "random value \(index) read back")
        }
        XCTAssertGreaterThan(split, 150)
    }

    func testFailuresInEitherPartAreReportedWhereOneThreadReportsThem() throws {
        // In the first part the first thread meets the problem itself; in the second, the second
        // thread fails and the first decodes those members again and meets it in document order.
        for bad in [0, 49, 50, 51, 99] {
            let data = try records(100, bad: bad)
            guard case .failure(let error as PropertyListError) = assertSplitMatches(data, "bad string at \(bad)") else {
                return XCTFail("bad string at \(bad) accepted")
            }
            XCTAssertEqual(error.keyPath, "root.records[\(bad)].x", "at \(bad)")
        }
    }

    func testExpansionLimitsHoldForTheSumOfTheParts() throws {
        let data = try records(100)
        let value = try PropertyList.decode(data)
        // Values (keys included, as the reader counts them) and string bytes of the whole tree.
        func totals(_ value: PropertyListValue) -> (values: Int, bytes: Int) {
            switch value {
            case .array(let items), .set(let items):
                return items.reduce((1, 0)) { sum, item in let t = totals(item); return (sum.0 + t.values, sum.1 + t.bytes) }
            case .dictionary(let dictionary):
                return dictionary.entries.reduce((1, 0)) { sum, entry in
                    let k = totals(entry.key), v = totals(entry.value)
                    return (sum.0 + k.values + v.values, sum.1 + k.bytes + v.bytes)
                }
            case .string(let string): return (1, string.value.utf8.count)
            default: return (1, 0)
            }
        }
        let whole = totals(value)
        let records = totals(try XCTUnwrap(value["records"]))
        // Exactly enough reads. Less fails the same way on one thread or two, wherever the limit
        // is met: at the top, or inside the split array although each part alone is within it.
        let cases: [(name: String, limit: WritableKeyPath<DecodingLimits, Int>, whole: Int, records: Int)] = [
            ("values", \.maximumExpandedNodeCount, whole.values, records.values),
            ("bytes", \.maximumExpandedByteCount, whole.bytes, records.bytes),
        ]
        for (name, keyPath, whole, records) in cases {
            var limits = DecodingLimits.default
            limits[keyPath: keyPath] = whole
            XCTAssertTrue(try assertSplitMatches(data, "\(name) at the limit", limits: limits).get() == value)
            for limit in [whole - 1, records - 1, records / 2 + 10] {
                limits[keyPath: keyPath] = limit
                guard case .failure(let error as PropertyListError) = assertSplitMatches(data, "\(name) limit \(limit)", limits: limits) else {
                    return XCTFail("\(name) over the limit \(limit) accepted")
                }
                XCTAssertEqual(error.code, .objectLimitExceeded)
            }
        }
    }

    func testDepthLimitsAroundTheSplitAreTheOneThreadOnes() throws {
        // The second thread opens the containers above the split array as the first does, so a
        // depth limit at, above or below the split depth fails or passes the same way; with one
        // record deeper than the rest, in either part, the limit can fall between them.
        var limits = DecodingLimits.default
        var failures = 0, successes = 0
        for deep in [nil, 10, 75] {
            let data = try records(100, deep: deep)
            for depth in 0...8 {
                limits.maximumDepth = depth
                switch assertSplitMatches(data, "record \(deep ?? -1) deeper, maximumDepth \(depth)", limits: limits) {
                case .success: successes += 1
                case .failure(let error):
                    failures += 1
                    if let deep, depth >= 4, depth < 7 {
                        XCTAssertEqual((error as? PropertyListError)?.keyPath?.hasPrefix("root.records[\(deep)].deep"), true, "\(error)")
                    }
                }
            }
        }
        XCTAssertGreaterThan(failures, 5)
        XCTAssertGreaterThan(successes, 5)
    }

    func testTheSplitPathGoesThroughDictionaries() throws {
        func document(bad: Int? = nil) throws -> Data {
            let items: PropertyListValue = .array((0..<40).map { index in
                index == bad ? PropertyListValue("BAD!") : ["n": PropertyListValue(index), "s": PropertyListValue("é\(index)")]
            })
            let value: PropertyListValue = [
                "z": 1, "outer": ["a": "x", "inner": ["items": items, "b": [1, 2]], "c": 2.5], "y": [true],
            ]
            var bytes = Array(try PropertyList.encode(value, format: .binary))
            if bad != nil {
                let marker = Array("BAD!".utf8)
                let at = try XCTUnwrap((0...(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == marker })
                bytes[at + 3] = 0xFF
            }
            return Data(bytes)
        }
        let data = try document()
        let split = try XCTUnwrap(splitPoint(data, minimumMembers: 10))
        XCTAssertEqual(split.path, [1, 1, 0], "stored positions of \"outer\", \"inner\" and \"items\"")
        XCTAssertEqual(split.member, 20)
        guard case .success = assertSplitMatches(data, "through dictionaries", minimumMembers: 10) else { return XCTFail("refused") }
        for bad in [5, 25] {
            guard case .failure(let error as PropertyListError) = assertSplitMatches(try document(bad: bad), "bad at \(bad)", minimumMembers: 10) else {
                return XCTFail("bad string at \(bad) accepted")
            }
            XCTAssertEqual(error.keyPath, "root.outer.inner.items[\(bad)]")
        }
    }

    func testACycleBackToTheTopIsReportedAsOneThreadReportsIt() throws {
        // A top array of four members whose last member is the array itself: the second thread
        // meets the cycle, and the first thread then meets it too, with the same error.
        let bytes: [UInt8] = Array("bplist00".utf8) + [0xA4, 0x01, 0x02, 0x03, 0x00, 0x10, 0x01, 0x10, 0x02, 0x10, 0x03]
            + [0x08, 0x0D, 0x0F, 0x11] + [0, 0, 0, 0, 0, 0, 1, 1] + [0, 0, 0, 0, 0, 0, 0, 4] + [0, 0, 0, 0, 0, 0, 0, 0]
            + [0, 0, 0, 0, 0, 0, 0, 19]
        let data = Data(bytes)
        XCTAssertNotNil(splitPoint(data))
        guard case .failure(let error as PropertyListError) = assertSplitMatches(data, "cycle to the top") else {
            return XCTFail("a cycle accepted")
        }
        XCTAssertEqual(error.code, .referenceCycle)
    }

    func testSmallArraysBesideMostOfTheDataAreNotCut() throws {
        // Automatic splitting wants a member per 4,096 objects: one small array beside a big
        // dictionary would leave all the work on one thread.
        let perMember = SplitPolicy.automatic.objectsPerMember
        XCTAssertEqual(perMember, 4_096)
        var entries: [(String, PropertyListValue)] = (0..<40_000).map { ("key \($0)", PropertyListValue($0 + 1_000_000)) }
        entries.append(("list", .array((0..<16).map { PropertyListValue("item \($0)") })))
        let data = try PropertyList.encode(.dictionary(PropertyListDictionary(stringKeys: entries)), format: .binary)
        try data.withUnsafeBytes { bytes in
            let decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: .default)
            XCTAssertGreaterThan(decoder.trailer.objectCount, 16 * perMember)
            XCTAssertNil(decoder.splitPoint(minimumMembers: 16, objectsPerMember: perMember, arraysOnly: true))
            XCTAssertNotNil(decoder.splitPoint(minimumMembers: 16, objectsPerMember: 0, arraysOnly: true))
        }
        // Chains nested 500 deep, 400 of them (the nesting benchmark's deepest file), are cut.
        let chains: PropertyListValue = .array((0..<400).map { chain in
            var node: PropertyListValue = PropertyListValue(chain)
            for level in 1..<500 { node = level % 2 == 0 ? .array([PropertyListValue(level), node]) : ["level": PropertyListValue(level), "next": node] }
            return node
        })
        let deep = try PropertyList.encode(chains, format: .binary)
        XCTAssertNotNil(deep.withUnsafeBytes {
            try? BinaryPropertyListDecoder(bytes: $0, limits: .default).splitPoint(minimumMembers: 16, objectsPerMember: perMember, arraysOnly: true)
        })
    }

    func testTheSecondThreadDecodesItsMembersAndStopsWhenToldTo() throws {
        let data = try records(1_000)
        try data.withUnsafeBytes { bytes in
            let decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: .default)
            let split = try XCTUnwrap(decoder.splitPoint(minimumMembers: 2, arraysOnly: true))
            XCTAssertEqual(split.path, [1], "\"records\" is the second value stored, after \"version\"")
            XCTAssertEqual(split.member, 500)
            let part = try XCTUnwrap(SecondPartDecoder(decoder).decode(split, stop: Protected(false)))
            let whole = try PropertyList.decode(data)["records"]?.arrayValue
            XCTAssertTrue(part.items == Array(try XCTUnwrap(whole)[500...]), "the members from the split point on")
            XCTAssertNil(SecondPartDecoder(decoder).decode(split, stop: Protected(true)))
        }
    }

    func testFilesWithSharedContainersAreReadOnOneThread() throws {
        // [[1], [1]] with the inner array stored once: a shared container is decoded once and its
        // value shared, so such files are not split.
        let bytes: [UInt8] = Array("bplist00".utf8) + [0xA2, 0x01, 0x01, 0xA1, 0x02, 0x10, 0x01, 0x08, 0x0B, 0x0D]
            + [0, 0, 0, 0, 0, 0, 1, 1] + [0, 0, 0, 0, 0, 0, 0, 3] + [0, 0, 0, 0, 0, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, 15]
        let data = Data(bytes)
        try data.withUnsafeBytes { raw in
            XCTAssertTrue(try BinaryPropertyListDecoder(bytes: raw, limits: .default).hasSharedContainers())
        }
        let handoffs = Protected(0)
        let policy = SplitPolicy(minimumInputLength: 0, minimumMembers: 2, requiresSeveralCores: false, onHandoff: { _ in handoffs.withLock { $0 += 1 } })
        XCTAssertTrue(try read(data, policy).get() == [[1], [1]])
        XCTAssertEqual(handoffs.withLock { $0 }, 0)
        // Unshared, the same shape is split.
        XCTAssertNotNil(splitPoint(try PropertyList.encode([[1], [2]], format: .binary)))
    }

    func testManyConcurrentReadersAllGetTheSameValue() throws {
        let data = try records(2_000)
        let expected = try read(data, .never).get()
        let matches = Protected(0)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            let value = data.withUnsafeBytes { try? BinaryPropertyListReader.read($0, split: .always) }
            if value == expected { matches.withLock { $0 += 1 } }
        }
        XCTAssertEqual(matches.withLock { $0 }, 16)
    }

    func testBigFilesReadTheSameThroughThePublicAPI() throws {
        // Over 1 MiB, so `PropertyList.decode` splits it on a machine with two cores: the
        // automatic thresholds (core count aside) do cut it, and use the second thread's part.
        let data = try records(40_000)
        XCTAssertGreaterThan(data.count, 1 << 20)
        let handoffs = Protected<[Bool]>([])
        var automatic = SplitPolicy.automaticForReading
        automatic.requiresSeveralCores = false
        automatic.onHandoff = { taken in handoffs.withLock { $0.append(taken) } }
        let split = try read(data, automatic).get()
        XCTAssertEqual(handoffs.withLock { $0 }, [true])
        let expected = try read(data, .never).get()
        XCTAssertTrue(split == expected)
        let value = try PropertyList.decode(data)
        XCTAssertTrue(value == expected)
        XCTAssertEqual(try PropertyList.encode(value, format: .binary), try PropertyList.encode(expected, format: .binary))
        XCTAssertThrowsError(try PropertyList.decode(try records(40_000, bad: 30_000))) { error in
            XCTAssertEqual((error as? PropertyListError)?.keyPath, "root.records[30000].x")
        }
    }

    /// The tree reader splits from 64 KiB on, the converter from 1 MiB (session 26: a 130 KB
    /// file read 19-27% faster on two threads, and converted no faster).
    func testTheReaderSplitsSmallerFilesThanTheConverter() throws {
        let data = try records(4_000)
        XCTAssertGreaterThan(data.count, 1 << 16)
        XCTAssertLessThan(data.count, 1 << 20)
        for (policy, expected) in [(SplitPolicy.automaticForReading, [true]), (SplitPolicy.automatic, [])] {
            let handoffs = Protected<[Bool]>([])
            var policy = policy
            policy.requiresSeveralCores = false
            policy.onHandoff = { taken in handoffs.withLock { $0.append(taken) } }
            XCTAssertTrue(try read(data, policy).get() == read(data, .never).get())
            XCTAssertEqual(handoffs.withLock { $0 }, expected)
        }
    }
}
