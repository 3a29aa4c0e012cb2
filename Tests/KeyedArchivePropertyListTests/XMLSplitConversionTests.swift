import KeyedArchiveTestSupport
import XCTest
@testable import KeyedArchivePropertyList

/// Large binary-to-XML conversions are cut in two and written by two threads. Whatever the input,
/// the bytes written and the error thrown must be exactly those of the one-thread walk: same
/// code, message, byte offset, object index and key path.
final class XMLSplitConversionTests: XCTestCase {
    private let always = SplitPolicy.always

    /// The streamed conversion under `policy`, or nil when the file takes the tree path.
    private func convert(
        _ data: Data, _ policy: SplitPolicy, limits: DecodingLimits = .default, maximumOutputLength: Int = .max,
        chunked: Bool = false
    ) -> Result<Data, Error>? {
        data.withUnsafeBytes { bytes in
            guard var decoder = try? BinaryPropertyListDecoder(bytes: bytes, limits: limits), decoder.canWriteXMLWithinLimits() else {
                return nil
            }
            var chunks = Data()
            return Result {
                let whole = try decoder.writeXML(
                    maximumDepth: DecodingLimits.default.maximumDepth, budget: OutputBudget(maximumOutputLength),
                    sink: chunked ? { chunks.append(contentsOf: $0) } : nil, split: policy)
                return chunked ? chunks : whole
            }
        }
    }

    /// What the conversion passed to its sink before it succeeded or failed.
    private func sinkBytes(_ data: Data, _ policy: SplitPolicy, maximumOutputLength: Int = .max) -> (Data, Error?) {
        data.withUnsafeBytes { bytes in
            var chunks = Data()
            do {
                var decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: .default)
                _ = try decoder.writeXML(
                    maximumDepth: DecodingLimits.default.maximumDepth, budget: OutputBudget(maximumOutputLength),
                    sink: { chunks.append(contentsOf: $0) }, split: policy)
                return (chunks, nil)
            } catch {
                return (chunks, error)
            }
        }
    }

    /// The second thread's work, run here: its text put together from the chunks it handed
    /// over and how many chunks, or nil when it failed.
    private func secondPart(
        _ decoder: inout BinaryPropertyListDecoder, _ split: SplitPoint, maximumDepth: Int = DecodingLimits.default.maximumDepth,
        budget: OutputBudget = OutputBudget(.max), chunkLength: Int = 1 << 20, stop: Protected<Bool>? = nil
    ) -> (text: Data, chunks: Int)? {
        let pieces = HandoffQueue<XMLPartPiece>()
        decoder.writeSecondPart(split, maximumDepth: maximumDepth, budget: budget, chunkLength: chunkLength, into: pieces, stop: stop)
        var text = Data(), chunks = 0
        while true {
            switch pieces.take() {
            case .text(let chunk, _, _):
                chunk.withBytes { text.append(contentsOf: $0) }
                chunks += 1
            case .finished: return (text, chunks)
            case .failed: return nil
            }
        }
    }

    private func hasSplitPoint(_ data: Data, minimumMembers: Int = 2) -> Bool {
        splitPoint(data, minimumMembers: minimumMembers) != nil
    }

    private func splitPoint(_ data: Data, minimumMembers: Int = 2, pieces: Int = 2) -> SplitPoint? {
        data.withUnsafeBytes { bytes in
            (try? BinaryPropertyListDecoder(bytes: bytes, limits: .default))?.splitPoint(minimumMembers: minimumMembers, pieces: pieces)
        }
    }

    /// Same bytes, or the same error in every detail; returns what the one-thread walk did
    /// (nil when the file takes the tree path). When the conversion succeeds with a split, the
    /// second thread's text must have been used (not rewritten by the first thread), for each of
    /// its pieces. Cut in two, in seven and into one piece per member, into memory or a sink.
    @discardableResult
    private func assertSplitMatches(
        _ data: Data, _ context: @autoclosure () -> String, limits: DecodingLimits = .default, maximumOutputLength: Int = .max,
        minimumMembers: Int = 2, file: StaticString = #filePath, line: UInt = #line
    ) -> Result<Data, Error>? {
        guard let expected = convert(data, .never, limits: limits, maximumOutputLength: maximumOutputLength) else { return nil }
        // Seven pieces: the second thread's third piece waits for a permit.
        for (chunked, pieceCount) in [(false, 2), (true, 2), (false, Int.max), (true, Int.max), (true, 7)] {
            let handoffs = Protected<[Bool]>([])
            let policy = SplitPolicy(
                minimumInputLength: 0, minimumMembers: minimumMembers, requiresSeveralCores: false, chunkLength: 64, pieceCount: pieceCount,
                onHandoff: { taken in handoffs.withLock { $0.append(taken) } })
            let label = "\(context()) (\(pieceCount == .max ? "a piece per member" : "\(pieceCount) pieces")\(chunked ? ", sink" : ""))"
            let actual = convert(data, policy, limits: limits, maximumOutputLength: maximumOutputLength, chunked: chunked)
            switch (expected, actual) {
            case (.success(let a), .success(let b)?):
                XCTAssertTrue(a == b, "\(label): split output differs (\(b.count) bytes, one thread \(a.count))", file: file, line: line)
                XCTAssertFalse(handoffs.withLock { $0.contains(false) }, "\(label): the second thread's text was not used", file: file, line: line)
                if let split = splitPoint(data, minimumMembers: minimumMembers, pieces: pieceCount) {
                    // Its pieces are the odd-numbered ones.
                    XCTAssertEqual(handoffs.withLock { $0 }, Array(repeating: true, count: split.pieces / 2), "\(label): handoffs", file: file, line: line)
                }
            case (.failure(let a as PropertyListError), .failure(let b as PropertyListError)?):
                XCTAssertSameError(b, a, label, file: file, line: line)
            default:
                XCTFail("\(label): split \(String(describing: actual)), one thread \(expected)", file: file, line: line)
            }
        }
        return expected
    }

    func testCorpusFilesSplitToTheSameBytesAndErrors() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        var split = 0, rejected = 0
        for entry in BinaryCorpusTests.binaryEntries() {
            guard hasSplitPoint(entry.data) else { continue }
            switch assertSplitMatches(entry.data, entry.path) {
            case .success?: split += 1
            case .failure?: rejected += 1
            case nil: break
            }
        }
        XCTAssertGreaterThan(split, 20, "corpus files with a split point that convert")
        XCTAssertGreaterThan(rejected, 3, "corpus files with a split point that are refused")
    }

    func testDamagedCorpusFilesSplitToTheSameBytesAndErrors() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        var failures = 0
        for (name, data) in BinaryCorpusTests.damagedEntries(seed: 51, perFile: 16, where: { hasSplitPoint($0) }) {
            if case .failure? = assertSplitMatches(data, name) { failures += 1 }
        }
        XCTAssertGreaterThan(failures, 50, "damaged files that fail in the walk")
    }

    func testRandomTreesSplitToTheSameBytes() throws {
        var options = RandomPropertyList.Options()
        options.maximumDepth = 8
        var random = RandomPropertyList(seed: 52, options: options)
        var split = 0
        for index in 0..<300 {
            let binary = try PropertyList.encode(random.rootDictionary(), format: .binary)
            // Larger minimums make the split point lie below containers of several members.
            let minimumMembers = 2 + index % 6
            if hasSplitPoint(binary, minimumMembers: minimumMembers) { split += 1 }
            assertSplitMatches(binary, "random value \(index)", minimumMembers: minimumMembers)
        }
        XCTAssertGreaterThan(split, 150)
    }

    func testTheSecondThreadWritesItsMembersAtTheirDepth() throws {
        // Its text must be the one-thread text of those members, at the split container's depth,
        // found where they are in the whole document.
        var options = RandomPropertyList.Options()
        options.maximumDepth = 6
        var random = RandomPropertyList(seed: 53, options: options)
        var checked = 0, handedOverInChunks = 0
        for index in 0..<100 {
            let value: PropertyListValue = ["outer": ["records": .array((0..<8).map { _ in random.rootDictionary() })]]
            let binary = try PropertyList.encode(value, format: .binary)
            let whole = try PropertyList.encode(value, format: .xml)
            try binary.withUnsafeBytes { bytes in
                var decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: .default)
                let split = try XCTUnwrap(decoder.splitPoint(minimumMembers: 2))
                XCTAssertEqual(split.depth, 2, "value \(index): the records array is two levels down")
                XCTAssertEqual(split.member, 4, "half of the 8 members stay with the first thread")
                // The walk leaves the path's containers marked as open: each run gets a fresh copy.
                var again = decoder
                let part = try XCTUnwrap(secondPart(&decoder, split))
                XCTAssertTrue(part.text.starts(with: Data("\t\t\t<dict".utf8)), "value \(index): starts at depth 3")
                XCTAssertNotNil(whole.firstRange(of: part.text + Data("\t\t</array>\n\t</dict>\n</dict>\n</plist>\n".utf8)))
                // Handed over in small chunks, the same text.
                let chunked = try XCTUnwrap(secondPart(&again, split, chunkLength: 64))
                XCTAssertEqual(chunked.text, part.text, "value \(index)")
                if chunked.chunks > 1 { handedOverInChunks += 1 }
                checked += 1
            }
        }
        XCTAssertEqual(checked, 100)
        XCTAssertGreaterThan(handedOverInChunks, 90, "second parts handed over in more than one chunk")
    }

    func testPiecesCoverTheMembersInOrderAndEvenly() {
        for memberCount in [2, 3, 7, 16, 84_000] {
            for pieces in [2, 3, 5, 16, memberCount] where pieces <= memberCount {
                let split = SplitPoint(path: [], container: 0, memberCount: memberCount, pieces: pieces)
                let starts = (0...pieces).map(split.start(ofPiece:))
                XCTAssertEqual(starts.first, 0)
                XCTAssertEqual(starts.last, memberCount, "\(memberCount) in \(pieces)")
                let sizes = zip(starts, starts.dropFirst()).map { $1 - $0 }
                XCTAssertGreaterThan(sizes.min() ?? 0, 0, "\(memberCount) in \(pieces): an empty piece")
                XCTAssertLessThanOrEqual((sizes.max() ?? 0) - (sizes.min() ?? 0), 1, "\(memberCount) in \(pieces)")
                XCTAssertEqual(split.member, starts[1])
            }
        }
        // Two halves of an odd count: the extra member is the second thread's, as before pieces.
        XCTAssertEqual(SplitPoint(path: [], container: 0, memberCount: 7, pieces: 2).member, 3)
    }

    func testTheSecondThreadWritesItsPiecesInOrderAtTheirDepth() throws {
        // Eight records in four pieces: the second thread writes records 2-3 and 6-7, each piece
        // ending with its own `.finished`. The tree writer's document is the independent check:
        // each piece's text is the text of its records there.
        let value: PropertyListValue = [
            "records": .array((0..<8).map { index in ["index": PropertyListValue(index), "name": PropertyListValue("record \(index) <&>")] })
        ]
        let binary = try PropertyList.encode(value, format: .binary)
        let whole = try PropertyList.encode(value, format: .xml)
        // The records' text, cut where each record's opening tag (at depth 2) starts.
        let opening = Data("\n\t\t<dict>\n".utf8), end = Data("\t</array>\n".utf8)
        var starts: [Int] = []
        var searchFrom = whole.startIndex
        while let range = whole[searchFrom...].firstRange(of: opening) {
            starts.append(range.lowerBound + 1)
            searchFrom = range.upperBound
        }
        let endOfRecords = try XCTUnwrap(whole.firstRange(of: end)).lowerBound
        XCTAssertEqual(starts.count, 8)
        let recordText = { (index: Int) in whole[starts[index]..<(index + 1 < starts.count ? starts[index + 1] : endOfRecords)] }
        try binary.withUnsafeBytes { bytes in
            let decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: .default)
            let split = try XCTUnwrap(decoder.splitPoint(minimumMembers: 2, pieces: 4))
            XCTAssertEqual((0...4).map(split.start(ofPiece:)), [0, 2, 4, 6, 8])
            for chunkLength in [64, 1 << 20] {
                var copy = decoder
                let queue = HandoffQueue<XMLPartPiece>()
                copy.writeSecondPart(
                    split, maximumDepth: DecodingLimits.default.maximumDepth, budget: OutputBudget(.max), chunkLength: chunkLength, into: queue)
                var pieces: [Data] = [], current = Data(), values: [Int] = []
                collecting: while true {
                    switch queue.take() {
                    case .text(let chunk, _, _): chunk.withBytes { current.append(contentsOf: $0) }
                    case .finished(let count, _):
                        pieces.append(current)
                        values.append(count)
                        current = Data()
                        if pieces.count == 2 { break collecting }
                    case .failed: return XCTFail("chunks of \(chunkLength): failed")
                    }
                }
                XCTAssertEqual(pieces, [recordText(2) + recordText(3), recordText(6) + recordText(7)], "chunks of \(chunkLength)")
                // Each piece counts its own values: two records of a dictionary, two keys and two
                // values each.
                XCTAssertEqual(values, [10, 10], "chunks of \(chunkLength)")
            }
        }
    }

    func testTheSecondThreadRunsAtMostTwoPiecesAhead() throws {
        // Eight records in eight pieces: the second thread writes pieces 1 and 3 at once, then
        // each next piece only for a permit (the first thread gives one as it starts to take each
        // of the second's pieces). Told to stop while it waits, it stops at its next piece.
        let data = try records(8)
        try data.withUnsafeBytes { bytes in
            let decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: .default)
            let split = try XCTUnwrap(decoder.splitPoint(minimumMembers: 2, pieces: 8))
            let queue = HandoffQueue<XMLPartPiece>(), permits = HandoffQueue<Void>(), stop = Protected(false)
            let thread = SecondThread<Void> {
                var copy = decoder
                copy.writeSecondPart(
                    split, maximumDepth: DecodingLimits.default.maximumDepth, budget: OutputBudget(.max), chunkLength: 64, into: queue,
                    permits: permits, stop: stop)
            }
            defer {
                stop.withLock { $0 = true }
                permits.put(())
                _ = thread.join()
            }
            /// What comes through the queue up to the next end of a piece.
            func nextPiece() -> String {
                while true {
                    switch queue.take() {
                    case .text: continue
                    case .finished: return "finished"
                    case .failed: return "failed"
                    }
                }
            }
            XCTAssertEqual([nextPiece(), nextPiece()], ["finished", "finished"], "pieces 1 and 3 need no permit")
            // Piece 5 is held back: nothing comes without a permit (given time to run ahead).
            Thread.sleep(forTimeInterval: 0.05)
            XCTAssertTrue(queue.isEmpty, "piece 5 was begun without a permit")
            permits.put(())
            XCTAssertEqual(nextPiece(), "finished", "piece 5, for one permit")
            // Piece 7 waits for a second permit: stopped before it gets one, it gives up.
            stop.withLock { $0 = true }
            permits.put(())
            XCTAssertEqual(nextPiece(), "failed", "piece 7 was written without its permit")
        }
    }

    func testWorkRunOnTheCallersThreadIsToldSo() {
        // The converter's second thread waits for permits only when it runs beside the first;
        // run on the caller's thread (no thread could be started) it would wait for ever.
        let caller = CallingThread()
        XCTAssertTrue(caller.isCurrent)
        let beside = SecondThread { caller.isCurrent }
        XCTAssertEqual(beside.join(), false)
    }

    func testTheSecondThreadFillsBuffersHandedBack() throws {
        // A buffer put back is filled again: the chunks after the first are written in the
        // spare buffers, not in new memory.
        let spares = SpareBuffers(largestCapacity: 1 << 20, mostKept: 2)
        let first = GrowableBytes(capacity: 8_192), second = GrowableBytes(capacity: 8_192)
        first.append(1)
        second.append(2)
        let addresses = Set([first, second].compactMap { $0.withBytes { $0.baseAddress } })
        XCTAssertEqual(addresses.count, 2)
        // Too large (a buffer grown for a long value): let go, with room left to keep it.
        spares.put(GrowableBytes(capacity: 2 << 20))
        spares.put(first)
        spares.put(second)
        // Too many: let go.
        spares.put(GrowableBytes(capacity: 8_192))
        let data = try records(200)
        try data.withUnsafeBytes { bytes in
            var decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: .default)
            let split = try XCTUnwrap(decoder.splitPoint(minimumMembers: 2))
            let queue = HandoffQueue<XMLPartPiece>()
            decoder.writeSecondPart(
                split, maximumDepth: DecodingLimits.default.maximumDepth, budget: OutputBudget(.max), chunkLength: 64, into: queue, spares: spares)
            var chunkAddresses: [UnsafeRawPointer?] = []
            collecting: while true {
                switch queue.take() {
                case .text(let chunk, _, _): chunkAddresses.append(chunk.withBytes { $0.baseAddress })
                case .finished: break collecting
                case .failed: return XCTFail("failed")
                }
            }
            XCTAssertGreaterThan(chunkAddresses.count, 10)
            // The first chunk is in the buffer the text started with; the next two in the spares.
            XCTAssertEqual(Set(chunkAddresses[1...2].compactMap { $0 }), addresses)
            XCTAssertFalse(chunkAddresses[0].map(addresses.contains) ?? true)
            XCTAssertNil(spares.take(), "both spares used, the others let go")
        }
        // A spare with less room than a chunk needs is not used.
        let output = GrowableBytes(capacity: 64), small = GrowableBytes(capacity: 64)
        output.append(7)
        small.append(9)
        let smallAddress = small.withBytes { $0.baseAddress }
        let handed = output.handOver(reserving: 8_192, reusing: small)
        XCTAssertEqual(handed.count, 1)
        XCTAssertGreaterThanOrEqual(output.capacity, 8_192)
        XCTAssertEqual(small.withBytes { $0.baseAddress }, smallAddress, "the small spare keeps its buffer")
    }

    func testTheSplitPathGoesThroughDictionariesInSortedOrder() throws {
        // The records sit under "inner" then "m", each stored second of three keys and written
        // in another place of the sorted order. With a minimum of four members, the walk goes
        // down through both three-key dictionaries.
        func document(badAt bad: Int? = nil) throws -> Data {
            let records: PropertyListValue = .array((0..<50).map { (index: Int) -> PropertyListValue in
                index == bad ? .set([1]) : PropertyListValue("record \(index)")
            })
            let inner: PropertyListValue = .dictionary(PropertyListDictionary([
                (PropertyListValue("zeta"), PropertyListValue(1)), (PropertyListValue("m"), records),
                (PropertyListValue("alpha"), PropertyListValue(true)),
            ]))
            let root: PropertyListValue = .dictionary(PropertyListDictionary([
                (PropertyListValue("z"), PropertyListValue("last")), (PropertyListValue("inner"), inner),
                (PropertyListValue("a"), PropertyListValue(2.5)),
            ]))
            return try PropertyList.encode(root, format: .binary)
        }
        let data = try document()
        let split = try data.withUnsafeBytes { try XCTUnwrap(BinaryPropertyListDecoder(bytes: $0, limits: .default).splitPoint(minimumMembers: 4)) }
        XCTAssertEqual(split.path, [1, 1], "stored positions of \"inner\" and \"m\"")
        XCTAssertEqual(split.member, 25)
        guard case .success? = assertSplitMatches(data, "three-key dictionaries", minimumMembers: 4) else { return XCTFail("refused") }
        // A failure after the split point: its key path goes through the sorted keys.
        guard case .failure(let error as PropertyListError)? = assertSplitMatches(try document(badAt: 30), "set at 30", minimumMembers: 4) else {
            return XCTFail("accepted")
        }
        XCTAssertEqual(error.keyPath, "root.inner.m[30]")
    }

    func testTheSecondThreadStopsWhenToldTo() throws {
        // Set when the first thread fails before the split point: the second gives up instead
        // of writing the rest of its part.
        let data = try records(20_000)
        try data.withUnsafeBytes { bytes in
            var decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: .default)
            let split = try XCTUnwrap(decoder.splitPoint(minimumMembers: 2))
            let budget = OutputBudget(.max), depth = DecodingLimits.default.maximumDepth
            XCTAssertNotNil(secondPart(&decoder, split, maximumDepth: depth, budget: budget, stop: Protected(false)))
            XCTAssertNil(secondPart(&decoder, split, maximumDepth: depth, budget: budget, stop: Protected(true)))
        }
        // Through the public path: an error in the first record, the second thread stopped, the
        // same error as one thread.
        let early = try records(20_000, bad: 0)
        guard case .failure(let error as PropertyListError)? = assertSplitMatches(early, "early failure") else { return XCTFail("accepted") }
        XCTAssertEqual(error.keyPath, "root.records[0].x")
    }

    /// `count` dictionaries in an array under a key; member `bad` holds `badValue` under "x".
    private func records(_ count: Int, bad: Int? = nil, badValue: PropertyListValue = .set([1])) throws -> Data {
        let records: [PropertyListValue] = (0..<count).map { index in
            var record: PropertyListValue = ["name": PropertyListValue("record \(index) <&>"), "index": PropertyListValue(index)]
            if index == bad, case .dictionary(var fields) = record {
                fields.entries.append((PropertyListValue("x"), badValue))
                record = .dictionary(fields)
            }
            return record
        }
        return try PropertyList.encode(["records": .array(records)], format: .binary)
    }

    func testFailuresInTheSecondPartAreReportedWhereOneThreadReportsThem() throws {
        // The second thread fails; the first writes those members itself and meets the problem
        // in document order: the same error, key path included.
        // In seven pieces the second thread has records 14-27, 42-55 and 70-84: 20 fails its
        // first piece, 49 its second after the first was taken, 75 its third.
        for bad in [0, 20, 49, 50, 51, 75, 99] {
            let data = try records(100, bad: bad)
            guard case .failure(let error as PropertyListError)? = assertSplitMatches(data, "set at \(bad)") else {
                return XCTFail("set at \(bad) accepted")
            }
            XCTAssertEqual(error.code, .unrepresentableValue)
            XCTAssertEqual(error.keyPath, "root.records[\(bad)].x")
        }
        // The same through the public API, which splits files this size on several cores.
        let big = try records(40_000, bad: 30_000)
        XCTAssertGreaterThan(big.count, 1 << 20)
        XCTAssertThrowsError(try PropertyList.convert(big, to: .xml)) { error in
            XCTAssertEqual((error as? PropertyListError)?.keyPath, "root.records[30000].x")
        }
    }

    func testTheSinkGetsEachByteOnceWhenTheSecondPartFailsPartWay() throws {
        // The first thread passes on the second's text chunk by chunk as it comes (64 bytes
        // under `.always`); when the second then fails, the first writes those members again
        // and must not pass on what the sink already has: what the sink got is a beginning of
        // the document without the bad member, and it reaches well into the second part.
        let good = try records(2_000)
        guard case .success(let whole)? = convert(good, .never) else { return XCTFail("does not convert") }
        // In halves, the second thread has records 1000-1999; in 16 pieces of 125, record 1700
        // is in its seventh piece (1625-1749), after six were taken.
        let halves = SplitPolicy(minimumInputLength: 0, minimumMembers: 2, requiresSeveralCores: false, chunkLength: 64)
        var sixteen = halves
        sixteen.pieceCount = 16
        for (policy, bad, share) in [(halves, 1_500, 0.7), (halves, 1_999, 0.95), (sixteen, 1_700, 0.8), (always, 1_999, 0.95)] {
            let data = try records(2_000, bad: bad)
            let (passedOn, error) = sinkBytes(data, policy)
            let (oneThread, expectedError) = sinkBytes(data, .never)
            guard let error = error as? PropertyListError, let expectedError = expectedError as? PropertyListError else {
                return XCTFail("set at \(bad) accepted")
            }
            XCTAssertSameError(error, expectedError, "set at \(bad)")
            XCTAssertTrue(whole.starts(with: passedOn), "set at \(bad): the sink got bytes out of order or twice")
            XCTAssertGreaterThan(Double(passedOn.count), Double(whole.count) * share, "set at \(bad): chunks were not passed on as they came")
            XCTAssertTrue(whole.starts(with: oneThread), "set at \(bad), one thread")
        }
    }

    /// What `writeXML` passed to a sink in chunks of 64 bytes, and its error, with the decoder's
    /// `limits` and without the check that sends files that could pass them to the tree path.
    private func sinkBytesUnchecked(_ data: Data, _ policy: SplitPolicy, limits: DecodingLimits) -> (Data, Error?) {
        data.withUnsafeBytes { bytes in
            var chunks = Data()
            do {
                var decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: limits)
                _ = try decoder.writeXML(
                    maximumDepth: DecodingLimits.default.maximumDepth, budget: OutputBudget(.max),
                    sink: { chunks.append(contentsOf: $0) }, split: policy)
                return (chunks, nil)
            } catch {
                return (chunks, error)
            }
        }
    }

    func testExpansionLimitsHoldForEachChunkPassedOn() throws {
        // Files that could pass the expansion limits take the tree path, so the walk never
        // meets them there; called directly, it must stop where one thread stops, and pass on
        // no chunk of the second part whose totals are past a limit.
        let data = try records(2_000)
        let oneThreadChunks = SplitPolicy(minimumInputLength: .max, minimumMembers: .max, chunkLength: 64)
        var failures = 0
        for (nodes, bytes) in [(7_500, Int.max), (Int.max, 30_000), (9_000, Int.max)] {
            var limits = DecodingLimits.default
            limits.maximumExpandedNodeCount = nodes
            limits.maximumExpandedByteCount = bytes
            let (expectedBytes, expectedError) = sinkBytesUnchecked(data, oneThreadChunks, limits: limits)
            let (passedOn, error) = sinkBytesUnchecked(data, always, limits: limits)
            guard let expectedError = expectedError as? PropertyListError else { continue }
            failures += 1
            guard let error = error as? PropertyListError else { XCTFail("limits \(nodes), \(bytes): split accepted"); continue }
            XCTAssertSameError(error, expectedError, "limits \(nodes), \(bytes)")
            XCTAssertTrue(passedOn.starts(with: expectedBytes) || expectedBytes.starts(with: passedOn), "limits \(nodes), \(bytes)")
            XCTAssertLessThanOrEqual(passedOn.count, expectedBytes.count + 1_024, "limits \(nodes), \(bytes): text past the limit passed on")
        }
        XCTAssertEqual(failures, 3, "each limit is met in the second part")
    }

    func testASinkThatFailsStopsTheConversion() throws {
        struct Full: Error {}
        let data = try records(2_000)
        for failAt in [100, 20_000, 60_000] {
            var received = 0
            let result = Result {
                try PropertyList.convert(data, to: .xml, splitting: always) { chunk in
                    guard received + chunk.count <= failAt else { throw Full() }
                    received += chunk.count
                }
            }
            guard case .failure(let error) = result else { return XCTFail("fail at \(failAt): succeeded") }
            XCTAssertTrue(error is Full, "fail at \(failAt): \(error)")
            XCTAssertLessThanOrEqual(received, failAt)
        }
    }

    func testTheOutputBudgetHoldsAcrossTheParts() throws {
        let data = try records(100)
        guard case .success(let xml)? = convert(data, .never) else { return XCTFail("does not convert") }
        // Exactly enough converts; less fails at the same value either way, wherever the limit
        // falls: in the first part, in the second, or only when the two are put together.
        // (The budget is checked before each value and each closing tag, so the last few
        // closing tags can overshoot it: limits just below the length may or may not fail,
        // but the same way with one thread or two.)
        XCTAssertEqual(try convert(data, always, maximumOutputLength: xml.count)?.get(), xml)
        assertSplitMatches(data, "limit one byte short", maximumOutputLength: xml.count - 1)
        var failures = 0
        for limit in [xml.count - 40, xml.count * 3 / 4, xml.count / 2 + 10, xml.count / 2 - 10, xml.count / 4, 100] {
            if case .failure? = assertSplitMatches(data, "limit \(limit)", maximumOutputLength: limit) { failures += 1 }
            // What reached the sink is a beginning of the document, each byte once, and within
            // the limit give or take the value being written.
            let (passedOn, _) = sinkBytes(data, always, maximumOutputLength: limit)
            XCTAssertTrue(xml.starts(with: passedOn), "limit \(limit): the sink got bytes out of order or twice")
            XCTAssertLessThanOrEqual(passedOn.count, limit, "limit \(limit)")
        }
        XCTAssertEqual(failures, 6)
    }

    func testManyConcurrentCallersAllFinishWithTheSameBytes() throws {
        // Sixteen callers on a shared pool, each blocking in its own join: every second thread
        // is a thread of its own, so none waits behind the callers that wait for it.
        let data = try records(2_000)
        let expected = try PropertyList.convert(data, to: .xml, splitting: .never)
        let matches = Protected(0)
        DispatchQueue.concurrentPerform(iterations: 16) { _ in
            if (try? PropertyList.convert(data, to: .xml, splitting: .always)) == expected { matches.withLock { $0 += 1 } }
        }
        XCTAssertEqual(matches.withLock { $0 }, 16)
    }

    func testBigFilesConvertTheSameThroughThePublicAPI() throws {
        // Over 1 MiB, so `convert` splits it on a machine with two cores; the tree path is the
        // independent check.
        let data = try records(40_000)
        XCTAssertGreaterThan(data.count, 1 << 20)
        XCTAssertTrue(hasSplitPoint(data))
        let expected = try PropertyList.encode(PropertyList.decode(data), format: .xml)
        XCTAssertEqual(try PropertyList.convert(data, to: .xml), expected)
        var chunks = Data()
        try PropertyList.convert(data, to: .xml) { chunks.append(contentsOf: $0) }
        XCTAssertEqual(chunks, expected)
    }
}
