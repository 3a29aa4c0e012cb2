/// Writing a binary property list as XML straight from its bytes, without building the value
/// tree: the binary reader's checks, the XML writer's layout.
///
/// The output is byte for byte what ``XMLPropertyListWriter`` writes for the value
/// ``BinaryPropertyListReader`` reads, and every input one of them rejects is rejected here too,
/// with the same kinds of error (when a file has several problems, the first one met may differ,
/// because the tree path reads everything before it writes anything). Memory is the input, one
/// byte per object and the output; time is about half of reading then writing (see
/// `Docs/Performance.md`).
extension BinaryPropertyListDecoder {
    /// A container being written: where its references are and which member is next.
    private struct XMLFrame {
        var object: Int
        var isDictionary: Bool
        var refsStart: Int
        /// Members (entries for a dictionary).
        var count: Int
        var next = 0
        /// Where a dictionary's keys start in ``KeyStacks/keys``, and its writing order in
        /// ``KeyStacks/orders`` (-1 when the stored order is already sorted).
        var keysStart = 0
        var wideKeysStart = 0
        var orderStart = -1

        /// The stored position of the `member`-th entry in writing order.
        @inline(__always)
        func position(_ member: Int, _ stacks: KeyStacks) -> Int {
            orderStart < 0 ? member : stacks.orders[orderStart &+ member]
        }
    }

    /// The keys and key orders of all open dictionaries, one stack each (a dictionary pushes
    /// when it opens and pops when it closes), so that no arrays are made per dictionary.
    private struct KeyStacks {
        var keys: [FileKey] = []
        /// UTF-16 keys, decoded (ASCII keys stay bytes in the input).
        var wideKeys: [String] = []
        var orders: [Int] = []
        /// Scratch for sorting.
        var prefixes: [UInt64] = []
    }

    /// A dictionary key: `count` ASCII bytes at `start` in the input, or (`start` negative) the
    /// `count`-th of the decoded UTF-16 keys in ``KeyStacks/wideKeys``.
    private struct FileKey {
        var start: Int
        var count: Int
    }

    /// Passes the UTF-8 bytes of `key` to `body`.
    @inline(__always)
    private func withUTF8<Result>(
        _ key: FileKey, _ wideKeys: [String], _ body: (UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        if key.start >= 0 {
            return body(UnsafeRawBufferPointer(rebasing: bytes[key.start..<(key.start &+ key.count)]).bindMemory(to: UInt8.self))
        }
        var text = wideKeys[key.count]
        return text.withUTF8(body)
    }

    /// True when writing the objects out one use at a time provably stays within the expansion
    /// limits, so the walk never has to stop part way at a limit the tree reader would have
    /// applied at once: no container is referenced twice (so at most one value is written per
    /// reference, plus the root), and the strings and data that are shared cannot add up past
    /// ``DecodingLimits/maximumExpandedByteCount`` even if every reference used the longest.
    /// Otherwise (expansion bombs and other hand-made files) the tree reader, which sizes each
    /// shared container once, is the right tool.
    func canWriteXMLWithinLimits() -> Bool {
        guard let references = countedReferences, references < limits.maximumExpandedNodeCount else { return false }
        var longestShared = 0
        for index in marks.indices where marks[index] == Self.sharedCount {
            let offset = offset(of: index)
            let marker = bytes[offset]
            switch marker & 0xF0 {
            case 0xA0, 0xC0, 0xD0:
                return false
            case 0x40, 0x50, 0x60:
                guard let (count, _) = try? readCount(marker: marker, at: offset, object: index) else { return false }
                // A UTF-16 unit becomes at most three UTF-8 bytes.
                let (length, overflow) = count.multipliedReportingOverflow(by: marker & 0xF0 == 0x60 ? 3 : 1)
                guard !overflow else { return false }
                longestShared = max(longestShared, length)
            default:
                break
            }
        }
        // Unshared strings and data are written once: at most 1.5 times the input's bytes.
        let (shared, overflow) = references.multipliedReportingOverflow(by: longestShared)
        let unshared = bytes.count > Int.max / 2 ? Int.max : 2 * bytes.count
        return !overflow && shared <= limits.maximumExpandedByteCount - min(limits.maximumExpandedByteCount, unshared)
    }

    /// The open containers and running totals of one walk over the objects.
    private struct XMLWalk {
        var frames: [XMLFrame] = []
        var stacks = KeyStacks()
        /// Values written and string and data bytes written: shared references are written out
        /// at every use, so these are bounded as the tree reader bounds them.
        var values = 0
        var stringBytes = 0
    }

    /// Writes the whole property list as an XML document. Call it only when
    /// ``canWriteXMLWithinLimits()`` is true: its cycle check relies on no container being
    /// referenced twice (were one, a cycle would still stop at `maximumDepth`, with that error).
    ///
    /// `maximumDepth` is the XML writer's depth limit (``PropertyList/encode(_:format:maximumOutputLength:)``
    /// passes the default one); the reader's own limits come from the decoder's ``DecodingLimits``.
    ///
    /// With a `sink`, the text goes there in chunks of about `policy.chunkLength` bytes (2 MiB)
    /// and the result is empty.
    ///
    /// Large files are written by two threads when the machine has two cores (see
    /// ``SplitPolicy``): the split container's pieces alternate between them, and the first
    /// thread writes its own and passes on the second's, in order; the output and the errors are
    /// the same either way.
    mutating func writeXML(
        maximumDepth: Int, budget: OutputBudget, sink: ((UnsafeRawBufferPointer) throws -> Void)? = nil,
        split policy: SplitPolicy = .automatic
    ) throws -> Data {
        // XML is about 1.8 times a binary file's size (W3: 88.0 MB from 50.3 MB); a little more
        // keeps the usual file from growing the buffer at all.
        let (expected, overflow) = bytes.count.multipliedReportingOverflow(by: 2)
        let text = XMLText(budget: budget, sink: sink, expectedLength: overflow ? Int.max : expected, chunkLength: policy.chunkLength)
        var walk = XMLWalk()
        var handoff: XMLHandoff?
        if policy.allowsSplitting(inputLength: bytes.count),
            let split = splitPoint(minimumMembers: policy.minimumMembers, objectsPerMember: policy.objectsPerMember, pieces: policy.pieceCount)
        {
            let copy = self
            let pieces = HandoffQueue<XMLPartPiece>()
            // A chunk buffer is one large page; one grown for a value that passed a chunk's end
            // is let go. Eight kept is 16 MiB at most.
            let spares = SpareBuffers(largestCapacity: HugePages.pageLength, mostKept: 8)
            let permits = HandoffQueue<Void>()
            let chunkLength = policy.chunkLength, caller = CallingThread()
            let thread = SplitHandoff<Void>(split: split, observer: policy.onHandoff) { stop in
                var decoder = copy
                // Run on this thread (no second thread could be started), it must not wait for
                // permits this thread would give only after it returns.
                decoder.writeSecondPart(
                    split, maximumDepth: maximumDepth, budget: budget, chunkLength: chunkLength, into: pieces,
                    permits: caller.isCurrent ? nil : permits, spares: spares, stop: stop)
                return ()
            }
            handoff = XMLHandoff(thread: thread, pieces: pieces, permits: permits, spares: spares)
        }
        defer { handoff?.stopAndJoin() }
        do {
            try writeObject(trailer.topObject, text: text, walk: &walk, maximumDepth: maximumDepth)
            try write(&walk, text: text, maximumDepth: maximumDepth, handoff: handoff)
        } catch var error as PropertyListError {
            if error.keyPath == nil { error.keyPath = keyPath(walk) }
            throw error
        }
        return try text.finish()
    }

    /// Writes the members of the open containers until they are all closed, or with `stopDepth`,
    /// until the container at that depth has written its last member (it stays open).
    ///
    /// With a `handoff`, the members of the split container's odd-numbered pieces come from the
    /// other thread: its text is passed on in their place as it comes (see
    /// ``take(_:into:text:)``); when it fails or the whole would go past a limit, they and all
    /// after them are written here as usual, so that whatever went wrong is met, and reported,
    /// in document order.
    ///
    /// The second thread's walk returns at `pauseAt` (where its piece ends), and gives up with
    /// ``SplitCancelled`` soon after `stop` is set.
    private mutating func write(
        _ walk: inout XMLWalk, text: XMLText, maximumDepth: Int, handoff: XMLHandoff? = nil, pauseAt: SplitPosition = .nowhere,
        stopDepth: Int = -1, stop: Protected<Bool>? = nil
    ) throws {
        let referenceWidth = trailer.objectRefSize
        var splitAt = handoff?.thread.position ?? pauseAt
        // The first thread: the other thread's piece that starts at `splitAt`.
        var piece = 1
        var stopCheck = SplitStopCheck(stop)
        while let last = walk.frames.indices.last {
            try text.checkBudget(values: walk.values, stringBytes: walk.stringBytes)
            try stopCheck.check()
            let next = walk.frames[last].next
            guard next < walk.frames[last].count else {
                if last == stopDepth { return }
                let frame = walk.frames.removeLast()
                if frame.isDictionary {
                    walk.stacks.keys.removeLast(walk.stacks.keys.count &- frame.keysStart)
                    walk.stacks.wideKeys.removeLast(walk.stacks.wideKeys.count &- frame.wideKeysStart)
                    if frame.orderStart >= 0 { walk.stacks.orders.removeLast(walk.stacks.orders.count &- frame.orderStart) }
                }
                text.close(frame.isDictionary ? "</dict>\n" : "</array>\n", indent: walk.frames.count)
                continue
            }
            if splitAt.isAt(member: next, depth: last, object: walk.frames[last].object) {
                guard let handoff else { return }
                splitAt = .nowhere
                if handoff.thread.report(taken: try take(handoff, into: &walk, text: text)) {
                    let split = handoff.thread.split
                    walk.frames[last].next = split.start(ofPiece: piece &+ 1)
                    piece &+= 2
                    if piece < split.pieces {
                        splitAt = SplitPosition(container: split.container, depth: split.depth, member: split.start(ofPiece: piece))
                    }
                    continue
                }
                // Not taken: this thread writes those members and all after them.
            }
            walk.frames[last].next = next &+ 1
            let slot: Int
            if walk.frames[last].isDictionary {
                let position = walk.frames[last].position(next, walk.stacks)
                withUTF8(walk.stacks.keys[walk.frames[last].keysStart &+ position], walk.stacks.wideKeys) {
                    text.writeKey(utf8: UnsafeRawBufferPointer($0), indent: walk.frames.count)
                }
                slot = walk.frames[last].count &+ position
            } else {
                slot = next
            }
            let child = try reference(at: walk.frames[last].refsStart &+ slot &* referenceWidth, in: walk.frames[last].object)
            try writeObject(child, text: text, walk: &walk, maximumDepth: maximumDepth)
        }
    }

    /// Passes on the other thread's text as it comes, chunk by chunk, so that the early chunks
    /// are written out while the late ones are still being made, and adds its totals: true when
    /// it wrote all its members and the whole stays within the limits. Each chunk is passed on
    /// only if it keeps the output within its budget and the totals at its end keep within the
    /// expansion limits (totals only grow, so that is the one-thread check at every value in it).
    /// Otherwise (it failed, or a chunk would go past a limit) the text goes back to where the
    /// other thread's began and the result is false: the caller writes those members itself, and
    /// the sink gets no byte twice.
    private func take(_ handoff: XMLHandoff, into walk: inout XMLWalk, text: XMLText) throws -> Bool {
        // The second thread may now start its piece after next (this piece's number plus four).
        handoff.permits.put(())
        let start = text.position
        pieces: while true {
            switch handoff.pieces.take() {
            case .text(let chunk, let values, let stringBytes):
                guard !chunk.failed, text.canAppend(chunk.count), withinLimits(walk, values, stringBytes) else { break pieces }
                try chunk.withBytes { try text.appendWritten($0) }
                handoff.spares.put(chunk)
            case .finished(let values, let stringBytes):
                guard withinLimits(walk, values, stringBytes) else { break pieces }
                walk.values &+= values
                walk.stringBytes &+= stringBytes
                return true
            case .failed:
                break pieces
            }
        }
        handoff.stopAndJoin()
        // What the other thread put after the piece that stopped the hand-over is not needed.
        handoff.pieces.removeAll()
        text.rewind(to: start)
        return false
    }

    /// True when the other thread's totals added to `walk`'s stay within the expansion limits.
    private func withinLimits(_ walk: XMLWalk, _ values: Int, _ stringBytes: Int) -> Bool {
        let (valuesTotal, valuesOverflow) = walk.values.addingReportingOverflow(values)
        let (bytesTotal, bytesOverflow) = walk.stringBytes.addingReportingOverflow(stringBytes)
        return !valuesOverflow && !bytesOverflow && valuesTotal <= limits.maximumExpandedNodeCount
            && bytesTotal <= limits.maximumExpandedByteCount
    }

    /// The second thread's work: the members of the split container's odd-numbered pieces, as
    /// text at their depth, put into `pieces` in chunks of about `chunkLength` bytes as they fill
    /// (in buffers from `spares` when it has some), then, at the end of each piece, its last
    /// chunk and `.finished` with the piece's totals; or, when anything fails, `.failed` after
    /// whatever chunks it put (the first thread then writes those members itself and meets the
    /// problem where the one-thread walk would).
    ///
    /// With `permits`, its third piece and each after it wait for one more permit: the first
    /// thread gives one as it starts to take each of this thread's pieces, so this thread runs
    /// at most two pieces ahead, and what it holds stays a few pieces, not up to half the text.
    mutating func writeSecondPart(
        _ split: SplitPoint, maximumDepth: Int, budget: OutputBudget, chunkLength: Int = XMLText.sinkChunkLength,
        into pieces: HandoffQueue<XMLPartPiece>, permits: HandoffQueue<Void>? = nil, spares: SpareBuffers? = nil,
        stop: Protected<Bool>? = nil
    ) {
        let text = XMLText(budget: budget, chunkLength: chunkLength, spares: spares) { pieces.put(.text($0, values: $1, stringBytes: $2)) }
        var walk = XMLWalk()
        do {
            // Open the containers down to the split one as the first thread does, so that
            // depths, key paths, sorted keys and cycle marks are the same; their text (opening
            // tags only, never a full chunk) is dropped.
            try writeObject(trailer.topObject, text: text, walk: &walk, maximumDepth: maximumDepth)
            for slot in split.path {
                guard let frame = walk.frames.last else { return pieces.put(.failed) }
                var member = slot
                if frame.isDictionary {
                    guard let position = (0..<frame.count).first(where: { frame.position($0, walk.stacks) == slot }) else {
                        return pieces.put(.failed)
                    }
                    member = position
                }
                walk.frames[walk.frames.count - 1].next = member + 1
                let reference = frame.refsStart &+ (frame.isDictionary ? frame.count &+ slot : slot) &* trailer.objectRefSize
                try writeObject(try self.reference(at: reference, in: frame.object), text: text, walk: &walk, maximumDepth: maximumDepth)
            }
            guard walk.frames.count == split.depth + 1, walk.frames[split.depth].object == split.container else {
                return pieces.put(.failed)
            }
            text.output.removeAll()
            var piece = 1
            while piece < split.pieces {
                // Pieces 5, 7, ... wait until the first thread takes pieces 1, 3, ...
                if piece >= 5 { permits?.take() }
                walk.frames[split.depth].next = split.start(ofPiece: piece)
                walk.values = 0
                walk.stringBytes = 0
                let end = SplitPosition(container: split.container, depth: split.depth, member: split.start(ofPiece: piece &+ 1))
                try write(&walk, text: text, maximumDepth: maximumDepth, pauseAt: end, stopDepth: split.depth, stop: stop)
                try text.passOnRest(values: walk.values, stringBytes: walk.stringBytes)
                pieces.put(.finished(values: walk.values, stringBytes: walk.stringBytes))
                piece &+= 2
            }
        } catch {
            return pieces.put(.failed)
        }
    }

    /// Writes a scalar completely, or opens a container: writes its tag and pushes a frame
    /// (reading and sorting a dictionary's keys first).
    private mutating func writeObject(_ index: Int, text: XMLText, walk: inout XMLWalk, maximumDepth: Int) throws {
        let offset = offset(of: index)
        try count(values: &walk.values, at: offset, object: index)
        let marker = bytes[offset]
        let indent = walk.frames.count
        switch marker & 0xF0 {
        case 0xA0, 0xD0:
            try requireDepth(below: walk.frames.count, at: offset, object: index)
            guard walk.frames.count < maximumDepth else { throw XMLText.failure("nesting deeper than \(maximumDepth)") }
            // A container entered while it is open is a cycle. This walk runs only when no
            // container is referenced twice (``canWriteXMLWithinLimits()``), and then only the
            // root can be: any other container was entered through its one reference. So no
            // per-object mark is written, and the two threads share the marks without copying
            // them (6.5 MB of fresh pages for W3).
            if index == trailer.topObject && !walk.frames.isEmpty {
                throw PropertyListError(.referenceCycle, "a container contains itself", byteOffset: offset, objectIndex: index)
            }
            let (count, start, _) = try containerSpan(marker: marker, at: offset, object: index)
            var frame = XMLFrame(object: index, isDictionary: marker & 0xF0 == 0xD0, refsStart: start, count: count)
            if frame.isDictionary {
                frame.keysStart = walk.stacks.keys.count
                frame.wideKeysStart = walk.stacks.wideKeys.count
                for member in 0..<count {
                    let key = try reference(at: start &+ member &* trailer.objectRefSize, in: index)
                    try readKey(key, in: index, into: &walk.stacks, values: &walk.values, stringBytes: &walk.stringBytes)
                }
                let first = frame.keysStart, orderStart = walk.stacks.orders.count
                let keys = walk.stacks.keys, wideKeys = walk.stacks.wideKeys
                if appendKeyOrder(
                    count: count,
                    prefix: { withUTF8(keys[first &+ $0], wideKeys, utf16SortPrefix(utf8:)) },
                    tieBreak: { a, b in
                        withUTF8(keys[first &+ a], wideKeys) { left in withUTF8(keys[first &+ b], wideKeys) { utf16Precedes(left, $0) } }
                    },
                    to: &walk.stacks.orders, scratch: &walk.stacks.prefixes)
                {
                    frame.orderStart = orderStart
                }
                guard text.openDictionary(isEmpty: count == 0, indent: indent) else { return }
            } else {
                guard text.openArray(isEmpty: count == 0, indent: indent) else { return }
            }
            walk.frames.append(frame)
        case 0xC0:
            throw XMLText.failure("sets have no XML form (CoreFoundation refuses them too)")
        case 0x40:
            let data = try dataBytes(marker: marker, at: offset, object: index)
            try count(stringBytes: &walk.stringBytes, data.count, at: offset, object: index)
            text.writeData(data, indent: indent)
        case 0x50:
            let string = try asciiStringBytes(marker: marker, at: offset, object: index)
            try count(stringBytes: &walk.stringBytes, string.count, at: offset, object: index)
            text.writeString(utf8: string, indent: indent)
        case 0x80:
            // Written as a `CF$UID` dictionary: a level of nesting to every reader.
            guard walk.frames.count < maximumDepth else { throw XMLText.failure("nesting deeper than \(maximumDepth)") }
            fallthrough
        default:
            let value = try decodeScalar(marker: marker, at: offset, object: index)
            if case .string(let string) = value {
                try count(stringBytes: &walk.stringBytes, string.utf8Count, at: offset, object: index)
            }
            try text.writeScalar(value, indent: indent)
        }
    }

    /// Pushes the dictionary key that is object `index` onto `stacks`: a string, or an error
    /// saying why not (other primitives are valid binary keys but have no XML form).
    private func readKey(_ index: Int, in dictionary: Int, into stacks: inout KeyStacks, values: inout Int, stringBytes: inout Int) throws {
        let offset = offset(of: index)
        try count(values: &values, at: offset, object: index)
        let marker = bytes[offset]
        switch marker & 0xF0 {
        case 0x50:
            let key = try asciiStringBytes(marker: marker, at: offset, object: index)
            try count(stringBytes: &stringBytes, key.count, at: offset, object: index)
            // The slice lies inside `bytes`, whose base address exists as the slice is in it.
            let start = key.baseAddress.map { $0 - (bytes.baseAddress ?? $0) } ?? 0
            stacks.keys.append(FileKey(start: start, count: key.count))
        case 0x60:
            guard case .string(let key) = try decodeScalar(marker: marker, at: offset, object: index) else { return }
            try count(stringBytes: &stringBytes, key.utf8Count, at: offset, object: index)
            stacks.keys.append(FileKey(start: -1, count: stacks.wideKeys.count))
            stacks.wideKeys.append(key.value)
        case 0x10, 0x20, 0x30, 0x40:
            let key = try decodeScalar(marker: marker, at: offset, object: index)
            throw XMLText.failure("XML dictionary keys must be strings, not \(key.typeName)")
        default:
            try checkKey(index, container: dictionary)
        }
    }

    @inline(__always)
    private func count(values: inout Int, at offset: Int, object: Int) throws {
        values &+= 1
        guard values <= limits.maximumExpandedNodeCount else { throw expansionError(bytes: false, at: offset, object: object) }
    }

    @inline(__always)
    private func count(stringBytes: inout Int, _ length: Int, at offset: Int, object: Int) throws {
        let (sum, overflow) = stringBytes.addingReportingOverflow(length)
        guard !overflow, sum <= limits.maximumExpandedByteCount else { throw expansionError(bytes: true, at: offset, object: object) }
        stringBytes = sum
    }

    /// The key path of the member being written, e.g. `root.records[3].name`.
    private func keyPath(_ walk: XMLWalk) -> String {
        var path = "root"
        for frame in walk.frames where frame.next > 0 {
            if frame.isDictionary {
                let key = walk.stacks.keys[frame.keysStart + frame.position(frame.next - 1, walk.stacks)]
                path += "." + withUTF8(key, walk.stacks.wideKeys) { String(decoding: $0, as: UTF8.self) }
            } else {
                path += "[\(frame.next - 1)]"
            }
        }
        return path
    }
}

/// What the second thread of a split conversion hands over, in order: for each of its pieces,
/// chunks of its text as they fill, then how it ended.
enum XMLPartPiece {
    /// The next chunk of its text, and the piece's totals of values and string bytes at the
    /// chunk's end.
    case text(GrowableBytes, values: Int, stringBytes: Int)
    /// It wrote all the piece's members; the piece's totals of values and string bytes.
    case finished(values: Int, stringBytes: Int)
    /// It failed or was stopped; the text it handed over is a correct beginning of its piece.
    case failed
}

/// A split conversion's second thread, the queue its text comes through, the permits that hold
/// it back and where its chunk buffers go back.
private struct XMLHandoff {
    let thread: SplitHandoff<Void>
    let pieces: HandoffQueue<XMLPartPiece>
    let permits: HandoffQueue<Void>
    let spares: SpareBuffers

    /// Tells the second thread to stop, lets it go on if it waits for a permit (it then stops at
    /// its first value), and waits for it.
    func stopAndJoin() {
        thread.tellToStop()
        permits.put(())
        thread.join()
    }
}
