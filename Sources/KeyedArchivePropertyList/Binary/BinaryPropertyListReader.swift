/// Reads binary property lists (`bplist00`), hardened for untrusted input.
///
/// The reader scans the input bytes in place (no copy, no Foundation bridging per object) and
/// validates the trailer exactly as CoreFoundation does. Objects are decoded once and cached by
/// object index, so objects shared by many containers cost nothing extra and share storage in
/// the result. Decoding is iterative: nesting depth never grows the call stack.
///
/// On a machine with more than one core, large inputs are decoded by two threads (the offset
/// table in halves from 2^18 objects, the biggest array in halves from 1 MiB): the value and
/// the errors are those of one thread (see `Docs/PropertyListFormat.md`, "Two threads for the
/// tree").
///
/// Every failure throws ``PropertyListError`` with the byte offset, object index and key path.
/// Limits (``DecodingLimits``) bound the object count, nesting depth, string and data lengths,
/// and the size of the tree once shared objects are counted at every place they are used.
///
/// Where CoreFoundation is more lenient than the corpus expectations, this reader follows the
/// corpus (see `Docs/PropertyListFormat.md`): it rejects non-ASCII bytes in ASCII strings,
/// unpaired UTF-16 surrogates, dates that are not finite or fall outside years 0...9999,
/// 16-byte integers outside `Int64.min ... UInt64.max`, and dictionary keys that are not
/// strings, numbers, dates or data.
public enum BinaryPropertyListReader {
    /// Reads a binary property list from raw bytes.
    public static func read(_ bytes: UnsafeRawBufferPointer, limits: DecodingLimits = .default) throws -> PropertyListValue {
        var decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: limits)
        return try decoder.decodeRoot()
    }

    /// ``read(_:limits:)`` with the offset-table pass on two threads from `secondThreadObjectCount`
    /// objects on (tests and fuzzing pass 2 to force it on small files, `.max` to forbid it), and
    /// the tree decoded by two threads as `split` says.
    package static func read(
        _ bytes: UnsafeRawBufferPointer, limits: DecodingLimits = .default,
        secondThreadObjectCount: Int? = nil, split: SplitPolicy = .automaticForReading
    ) throws -> PropertyListValue {
        var decoder = try BinaryPropertyListDecoder(
            bytes: bytes, limits: limits,
            secondThreadObjectCount: secondThreadObjectCount ?? BinaryPropertyListDecoder.secondThreadObjectCount)
        return try decoder.decodeRoot(split: split)
    }

    /// Reads a binary property list from `data`.
    public static func read(_ data: Data, limits: DecodingLimits = .default) throws -> PropertyListValue {
        try data.withUnsafeBytes { try read($0, limits: limits) }
    }

    /// Reads a binary property list from a byte array.
    public static func read(_ bytes: [UInt8], limits: DecodingLimits = .default) throws -> PropertyListValue {
        try bytes.withUnsafeBytes { try read($0, limits: limits) }
    }

    /// The dates the reader accepts, in seconds since 2001-01-01 00:00:00 UTC: from
    /// 0000-01-01 up to (not including) 10000-01-01, the years an XML property list's
    /// four-digit `<date>` can spell. NaN and infinite dates are outside it.
    public static let validDateRange: Range<Double> = GregorianCalendar.validSeconds
}

/// The decoding state for one input. Internal: use ``BinaryPropertyListReader``.
struct BinaryPropertyListDecoder {
    let bytes: UnsafeRawBufferPointer
    let limits: DecodingLimits
    let trailer: BinaryPropertyListTrailer
    /// End of the object area (the offset-table offset).
    let objectsEnd: Int
    /// Per object: how many containers refer to it (0, 1, or 2 meaning "two or more"), counted
    /// over the whole object table in `init`, plus ``onStack`` while the object is a container
    /// being decoded. One byte per object: only shared objects need more (see ``denseSlots``).
    var marks: [UInt8]
    /// Where a decoded shared object sits in ``shared``: per object (0, or 1 + the index) when
    /// many objects are shared, as in keyed archives, whose writers unique strings; otherwise a
    /// hash table (and this array is empty), so that a file with few shared objects does not
    /// pay four bytes for every object.
    private var denseSlots: [UInt32]
    private var sparseSlots = WordPairTable()
    /// Decoded shared strings, data and containers, so that every later reference costs a
    /// lookup and shares storage with the first; with their expanded sizes (1 + the expanded
    /// sizes of their members) and the string and data bytes they hold with shared members
    /// counted at every use (``DecodingLimits/maximumExpandedByteCount``).
    private var shared: [(value: PropertyListValue, expanded: Int, bytes: Int)] = []
    /// The height of each shared container decoded (1 for one with no container among its
    /// members): a container reused where it is referenced again must fit under the depth
    /// limit there too. Checked only where a container was first decoded, a chain of shared
    /// containers, each first met shallow, built a 60,001-deep value from a 420 KB file,
    /// which overflowed the stack when it was released.
    private var sharedHeights: [Int: Int] = [:]

    static let onStack: UInt8 = 0x80
    static let sharedCount: UInt8 = 2
    /// The references of all containers in the table, or nil when counting stopped (see
    /// `referenceBudget` in `init`).
    let countedReferences: Int?

    /// A container being decoded. Members are appended straight into the container's own
    /// storage, which then becomes the value without copying.
    private struct Frame {
        var object: Int
        /// The marker's high nibble: 0xA0 array, 0xC0 set, 0xD0 dictionary.
        var kind: UInt8
        var objectOffset: Int
        var refsStart: Int
        /// Number of members (entries for dictionaries).
        var count: Int
        /// Number of references: the count, or twice the count for dictionaries.
        var total: Int
        var next: Int = 0
        var expanded: Int = 1
        var bytes: Int = 0
        /// 1 + the greatest height of a container among the members decoded so far.
        var height: Int = 1
        var items: [PropertyListValue] = []
        /// Dictionary entries; the keys are read first, with `null` values filled in later.
        var entries: [PropertyListDictionary.Entry] = []
    }

    /// Validates the trailer and the offset table and counts references. Tables of
    /// `secondThreadObjectCount` objects or more are scanned by two threads on a machine with a
    /// spare core (tests pass other thresholds to force or forbid it).
    ///
    /// Without `countsReferences`, the pass only checks the offsets and every object counts as
    /// used once (nothing is cached): for readers that take objects one at a time.
    init(
        bytes: UnsafeRawBufferPointer, limits: DecodingLimits, secondThreadObjectCount: Int = Self.secondThreadObjectCount,
        countsReferences: Bool = true
    ) throws {
        self.bytes = bytes
        self.limits = limits
        let trailer = try BinaryPropertyListTrailer(validating: bytes, limits: limits)
        self.trailer = trailer
        self.objectsEnd = trailer.offsetTableOffset
        // Every table entry must point into the object area. Checking them all up front lets
        // later lookups skip the check, and costs one pass over a table we already sized. The
        // same pass counts references, so that only objects used twice or more are cached:
        // a per-object cache of values was most of the reader's memory on large files.
        let count = trailer.objectCount
        let referenceWidth = trailer.objectRefSize
        let objectsEnd = trailer.offsetTableOffset
        // The table fits in the input, so this allocation is bounded by the input's size.
        var marks = [UInt8](repeating: 0, count: count)
        // References of well-formed containers do not overlap, so there are at most this many.
        // Table entries that point at the same container more than once could otherwise make
        // this pass quadratic: past this budget, counting stops and every object counts as shared.
        // A negative budget counts nothing.
        let referenceCapacity = countsReferences ? (objectsEnd - 8) / referenceWidth : -1
        var counted: Int?
        if SecondThread<Void>.splits(count, from: secondThreadObjectCount, usually: Self.secondThreadObjectCount) {
            // Large tables are scanned in two halves at once, the second into its own marks;
            // the first half's error, if any, is the one the one-thread pass would throw first.
            let half = count / 2
            // Allocated here, not on the other thread: glibc gives each thread its own arena, and
            // memory freed into the other thread's arena is not reused by the tree built after
            // this (W3 read peak: +3.4 MB when it was).
            // Without counting (a negative budget) the pass writes no marks: none are needed.
            let secondMarks = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: countsReferences ? count : 0)
            secondMarks.initialize(repeating: 0)
            defer { secondMarks.deallocate() }
            let second = SecondThread { () -> Result<Int?, any Error> in
                Result { try Self.scanOffsetTable(bytes, trailer, entries: half..<count, marks: secondMarks, budget: referenceCapacity) }
            }
            // The second thread reads `bytes` and writes `secondMarks`: join on every path,
            // throwing ones included (this defer runs before the one above).
            defer { _ = second.join() }
            let first = try marks.withUnsafeMutableBufferPointer { marks in
                try Self.scanOffsetTable(bytes, trailer, entries: 0..<half, marks: marks, budget: referenceCapacity)
            }
            // join() is nil only when called twice; the deferred call is the second.
            guard let secondResult = second.join() else { throw PropertyListError(.invalidObject, "offset table pass lost") }
            let secondCounted = try secondResult.get()
            Self.mergeCounts(UnsafeBufferPointer(secondMarks), into: &marks)
            if let first, let secondCounted, first &+ secondCounted <= referenceCapacity { counted = first &+ secondCounted }
        } else {
            counted = try marks.withUnsafeMutableBufferPointer { marks in
                try Self.scanOffsetTable(bytes, trailer, entries: 0..<count, marks: marks, budget: referenceCapacity)
            }
        }
        var sharedObjects = 0
        if !countsReferences {
            self.countedReferences = 0
        } else if let counted {
            self.countedReferences = counted
            for mark in marks where mark == Self.sharedCount { sharedObjects &+= 1 }
        } else {
            marks = [UInt8](repeating: Self.sharedCount, count: count)
            sharedObjects = count
            self.countedReferences = nil
        }
        self.marks = marks
        // A hash slot takes about 48 bytes at the table's load, a dense one 4 per object.
        self.denseSlots = sharedObjects >= count / 12 && sharedObjects > 0 ? [UInt32](repeating: 0, count: count) : []
    }

    /// Objects in the table from which the offset-table pass runs on two threads (about 5 ms of
    /// work on one).
    static let secondThreadObjectCount = 1 << 18

    /// Checks that each of the table's `entries` points into the object area and counts the
    /// references of each container among them into `marks` (saturating at ``sharedCount``).
    /// Returns the number of references counted, or nil once more than `budget` were met
    /// (counting stops then, the checks go on).
    private static func scanOffsetTable(
        _ bytes: UnsafeRawBufferPointer, _ trailer: BinaryPropertyListTrailer, entries: Range<Int>,
        marks: UnsafeMutableBufferPointer<UInt8>, budget: Int
    ) throws -> Int? {
        let width = trailer.offsetIntSize
        let referenceWidth = trailer.objectRefSize
        let objectsEnd = trailer.offsetTableOffset
        let count = marks.count
        var referenceBudget = budget
        var position = trailer.offsetTableOffset &+ entries.lowerBound &* width
        for index in entries {
            let offset = BinaryBytes.readUInt(bytes, at: position, width: width)
            guard offset >= 8, offset < UInt64(objectsEnd) else {
                throw PropertyListError(
                    .invalidOffset, "offset \(offset) is outside the object area [8, \(objectsEnd))",
                    byteOffset: position, objectIndex: index)
            }
            position &+= width
            // Containers whose references do not fit are skipped here; decoding one throws.
            // Once the budget is spent nothing more is counted (nor subtracted, so the budget
            // cannot overflow on a huge input).
            guard referenceBudget >= 0,
                let (start, total) = referenceSpan(bytes, at: Int(offset), end: objectsEnd, referenceWidth: referenceWidth)
            else { continue }
            referenceBudget -= total
            guard referenceBudget >= 0 else { continue }
            var reference = start
            for _ in 0..<total {
                let target = BinaryBytes.readUInt(bytes, at: reference, width: referenceWidth)
                reference &+= referenceWidth
                if target < UInt64(count) {
                    let target = Int(truncatingIfNeeded: target)
                    if marks[target] < sharedCount { marks[target] &+= 1 }
                }
            }
        }
        return referenceBudget >= 0 ? budget - referenceBudget : nil
    }

    /// Adds the counts of the other half's pass to `marks`, saturating at ``sharedCount``.
    private static func mergeCounts(_ other: UnsafeBufferPointer<UInt8>, into marks: inout [UInt8]) {
        marks.withUnsafeMutableBufferPointer { marks in
            for index in 0..<min(marks.count, other.count) {
                marks[index] = min(sharedCount, marks[index] &+ other[index])
            }
        }
    }

    /// Where the references of the container at `offset` start and how many there are (twice
    /// the count for a dictionary), or `nil` when the object is no container or its references
    /// do not fit in the object area.
    @inline(__always)
    private static func referenceSpan(
        _ bytes: UnsafeRawBufferPointer, at offset: Int, end: Int, referenceWidth: Int
    ) -> (start: Int, total: Int)? {
        let marker = bytes[offset]
        let kind = marker & 0xF0
        guard kind == 0xA0 || kind == 0xC0 || kind == 0xD0 else { return nil }
        var count = Int(marker & 0x0F)
        var start = offset &+ 1
        if count == 0x0F {
            guard start < end else { return nil }
            let intMarker = bytes[start]
            guard intMarker & 0xF0 == 0x10, intMarker & 0x0F <= 3 else { return nil }
            let intWidth = 1 << Int(intMarker & 0x0F)
            guard intWidth <= end &- start &- 1 else { return nil }
            let raw = BinaryBytes.readUInt(bytes, at: start &+ 1, width: intWidth)
            guard raw <= UInt64(end) else { return nil }
            count = Int(raw)
            start = start &+ 1 &+ intWidth
        }
        let total = kind == 0xD0 ? count &* 2 : count
        // count <= end, so neither product overflows.
        guard total &* referenceWidth <= end &- start else { return nil }
        return (start, total)
    }

    /// The object index stored at `position` in the references of container `container`.
    @inline(__always)
    func reference(at position: Int, in container: Int) throws -> Int {
        let reference = BinaryBytes.readUInt(bytes, at: position, width: trailer.objectRefSize)
        guard reference < UInt64(trailer.objectCount) else {
            throw PropertyListError(
                .invalidReference, "reference \(reference) is not below the object count \(trailer.objectCount)",
                byteOffset: position, objectIndex: container)
        }
        return Int(truncatingIfNeeded: reference)
    }

    /// The byte offset of object `index` (validated in `init`).
    @inline(__always)
    func offset(of index: Int) -> Int {
        Int(truncatingIfNeeded: BinaryBytes.readUInt(
            bytes, at: trailer.offsetTableOffset &+ index &* trailer.offsetIntSize, width: trailer.offsetIntSize))
    }

    // MARK: - Tree walk

    /// Decodes the whole tree. Large files are read by two threads when the machine has two
    /// cores (see ``SplitPolicy``): the value and the errors are the same either way.
    mutating func decodeRoot(split policy: SplitPolicy = .automaticForReading) throws -> PropertyListValue {
        var frames: [Frame] = []
        var handoff: SplitHandoff<TreePart>?
        if policy.allowsSplitting(inputLength: bytes.count), !hasSharedContainers(),
            let split = splitPoint(minimumMembers: policy.minimumMembers, objectsPerMember: policy.objectsPerMember, arraysOnly: true)
        {
            let second = SecondPartDecoder(self)
            handoff = SplitHandoff(split: split, observer: policy.onHandoff) { stop in second.decode(split, stop: stop) }
        }
        defer { handoff?.stopAndJoin() }
        do {
            if let value = try enter(trailer.topObject, frames: &frames) { return value.value }
            if let value = try walk(&frames, handoff: handoff) { return value }
            // Unreachable: the walk returns the root when it completes.
            throw PropertyListError(.invalidObject, "no root object", objectIndex: trailer.topObject)
        } catch var error as PropertyListError {
            if error.keyPath == nil, !frames.isEmpty { error.keyPath = keyPath(frames) }
            throw error
        }
    }

    /// Decodes the tree under object `index` alone (one thread), with the same checks and
    /// limits as a whole read: for readers that take objects one at a time
    /// (``BinaryPropertyListObjectReader``). Shared strings and containers decoded by earlier
    /// calls are reused when references were counted (the object reader does not count them).
    mutating func decodeObject(_ index: Int) throws -> PropertyListValue {
        var frames: [Frame] = []
        do {
            if let value = try enter(index, frames: &frames) { return value.value }
            if let value = try walk(&frames) { return value }
            // Unreachable: the walk returns the object when it completes.
            throw PropertyListError(.invalidObject, "object not decoded", objectIndex: index)
        } catch var error as PropertyListError {
            // Leave no container marked as open: the next call starts afresh.
            for frame in frames { marks[frame.object] &= ~Self.onStack }
            if error.keyPath == nil, !frames.isEmpty { error.keyPath = keyPath(frames) }
            throw error
        }
    }

    /// Decodes the members of the open containers until the root completes (returns its value)
    /// or, with `stopDepth`, until the container at that depth has all its members (returns nil;
    /// it stays open).
    ///
    /// With a `handoff`, the members from its split point on come from the other thread: they
    /// are appended when it succeeded within the limits; otherwise they are decoded here as
    /// usual, so that whatever went wrong is met, and reported, in document order.
    ///
    /// With `stop` (the second thread), the walk gives up with ``SplitCancelled`` soon after
    /// `stop` is set.
    private mutating func walk(
        _ frames: inout [Frame], handoff: SplitHandoff<TreePart>? = nil, stopDepth: Int = -1, stop: Protected<Bool>? = nil
    ) throws -> PropertyListValue? {
        var splitAt = handoff?.position ?? .nowhere
        var stopCheck = SplitStopCheck(stop)
        while !frames.isEmpty {
            let last = frames.count - 1
            let next = frames[last].next
            if next < frames[last].total {
                try stopCheck.check()
                if splitAt.isAt(member: next, depth: last, object: frames[last].object), let split = handoff {
                    splitAt = .nowhere
                    if split.report(taken: take(split.thread, into: &frames[last])) { continue }
                }
                let position = frames[last].refsStart &+ next &* trailer.objectRefSize
                frames[last].next = next + 1
                let child = try reference(at: position, in: frames[last].object)
                let isDictionary = frames[last].kind == 0xD0
                let keyOf = isDictionary && next < frames[last].count ? frames[last].object : nil
                if let (value, expanded, bytes) = try enter(child, frames: &frames, keyOf: keyOf) {
                    try add(expanded, bytes: bytes, to: &frames[last])
                    if !isDictionary {
                        frames[last].items.append(value)
                    } else if next < frames[last].count {
                        frames[last].entries.append((value, .null))
                    } else {
                        frames[last].entries[next - frames[last].count].value = value
                    }
                }
            } else {
                if last == stopDepth { return nil }
                let frame = frames.removeLast()
                let value: PropertyListValue
                switch frame.kind {
                case 0xA0: value = .array(frame.items)
                case 0xC0: value = .set(frame.items)
                default: value = .dictionary(PropertyListDictionary(frame.entries))
                }
                marks[frame.object] &= ~Self.onStack
                remember(frame.object, (value, frame.expanded, frame.bytes), height: frame.height)
                guard let parent = frames.indices.last else { return value }
                try add(frame.expanded, bytes: frame.bytes, height: frame.height, to: &frames[parent])
                let member = frames[parent].next - 1
                if frames[parent].kind != 0xD0 {
                    frames[parent].items.append(value)
                } else if member < frames[parent].count {
                    // Unreachable: container keys are rejected by checkKey.
                    frames[parent].entries.append((value, .null))
                } else {
                    frames[parent].entries[member - frames[parent].count].value = value
                }
            }
        }
        return nil
    }

    /// Appends the other thread's members and totals when it succeeded and the sums stay within
    /// the limits; false when the caller is to decode those members itself. (The totals only
    /// grow member by member, so sums within the limits mean every partial sum was.)
    private func take(_ thread: SecondThread<TreePart?>, into frame: inout Frame) -> Bool {
        guard let part = thread.join() ?? nil else { return false }
        let (expanded, expandedOverflow) = frame.expanded.addingReportingOverflow(part.expanded)
        let (bytes, bytesOverflow) = frame.bytes.addingReportingOverflow(part.bytes)
        guard !expandedOverflow, !bytesOverflow, expanded <= limits.maximumExpandedNodeCount,
            bytes <= limits.maximumExpandedByteCount, frame.items.count &+ part.items.count == frame.count
        else { return false }
        frame.items.append(contentsOf: part.items)
        frame.expanded = expanded
        frame.bytes = bytes
        frame.next = frame.total
        return true
    }

    /// Readies a copy of a fresh decoder for the second thread: marks of its own, allocated here
    /// on the calling thread (glibc gives each thread its own arena, and memory freed into the
    /// other thread's arena is not reused by the tree), and empty caches of shared objects (no
    /// container is shared when the tree is split, so only strings and data are decoded again).
    /// Its cache is always the hash table: it holds only the strings and data of its own part,
    /// and a dense table would cost four bytes for every object of the file.
    mutating func prepareForSecondThread() {
        marks = marks.withUnsafeBufferPointer { Array($0) }
        denseSlots = []
        sparseSlots = WordPairTable()
        shared = []
        sharedHeights = [:]
    }

    /// The second thread's work: the members of the split array from the split point on, with
    /// their totals; nil when anything fails or it is told to stop (the first thread then decodes
    /// them itself and meets the problem where the one-thread walk would).
    mutating func decodeSecondPart(_ split: SplitPoint, stop: Protected<Bool>) -> TreePart? {
        var frames: [Frame] = []
        do {
            // Open the containers down to the split one as the first thread does, so that depths
            // and cycle marks are the same.
            guard try enter(trailer.topObject, frames: &frames) == nil else { return nil }
            for slot in split.path {
                guard let last = frames.indices.last else { return nil }
                let member = frames[last].kind == 0xD0 ? frames[last].count &+ slot : slot
                guard slot >= 0, member < frames[last].total else { return nil }
                let child = try reference(at: frames[last].refsStart &+ member &* trailer.objectRefSize, in: frames[last].object)
                guard try enter(child, frames: &frames) == nil else { return nil }
            }
            guard frames.count == split.depth + 1, frames[split.depth].object == split.container,
                frames[split.depth].kind == 0xA0, split.member >= 0, split.member <= frames[split.depth].count
            else { return nil }
            frames[split.depth].next = split.member
            // Room for this part's members only (`enter` reserved room for all of them).
            frames[split.depth].items = []
            frames[split.depth].items.reserveCapacity(frames[split.depth].count &- split.member)
            // The container itself (1) is the first thread's to count.
            frames[split.depth].expanded = 0
            _ = try walk(&frames, stopDepth: split.depth, stop: stop)
            let frame = frames[split.depth]
            return TreePart(items: frame.items, expanded: frame.expanded, bytes: frame.bytes)
        } catch {
            return nil
        }
    }

    /// Adds a member's expanded size (values and string/data bytes) to its container's,
    /// enforcing the expansion limits.
    /// `height`, a container member's (0 for others), raises the container's own (in this
    /// access to its frame rather than a second one).
    @inline(__always)
    private func add(_ expanded: Int, bytes: Int, height: Int = 0, to frame: inout Frame) throws {
        if height >= frame.height { frame.height = height &+ 1 }
        if bytes > 0 {
            let (byteSum, byteOverflow) = frame.bytes.addingReportingOverflow(bytes)
            guard !byteOverflow, byteSum <= limits.maximumExpandedByteCount else {
                throw expansionError(bytes: true, at: frame.objectOffset, object: frame.object)
            }
            frame.bytes = byteSum
        }
        let (sum, overflow) = frame.expanded.addingReportingOverflow(expanded)
        guard !overflow, sum <= limits.maximumExpandedNodeCount else {
            throw expansionError(bytes: false, at: frame.objectOffset, object: frame.object)
        }
        frame.expanded = sum
    }

    /// The error for a tree that shared references expand past the limit on values (`bytes`
    /// false) or on bytes of strings and data (`bytes` true).
    func expansionError(bytes: Bool, at offset: Int, object: Int) -> PropertyListError {
        let limit = bytes
            ? "\(limits.maximumExpandedByteCount) bytes of strings and data"
            : "\(limits.maximumExpandedNodeCount) values"
        return PropertyListError(
            .objectLimitExceeded, "shared references expand past the limit of \(limit)", byteOffset: offset, objectIndex: object)
    }

    /// Returns the value of object `index`, its expanded size and its expanded string/data
    /// bytes when it is a scalar or already decoded; otherwise starts decoding the container
    /// (pushes a frame) and returns `nil`.
    ///
    /// `keyOf` is the dictionary whose key this object is: keys must be primitives (strings,
    /// integers, reals, dates or data), checked here from the marker already at hand.
    private mutating func enter(
        _ index: Int, frames: inout [Frame], keyOf dictionary: Int? = nil
    ) throws -> (value: PropertyListValue, expanded: Int, bytes: Int)? {
        let mark = marks[index]
        if mark == Self.sharedCount, let decoded = sharedValue(index) {
            // Decoded already: a string or data (valid keys), or a container (not one).
            switch decoded.value {
            case .array, .set, .dictionary:
                if let dictionary { try checkKey(index, container: dictionary) }
                try reuseContainer(index, frames: &frames)
            default: break
            }
            return decoded
        }
        let offset = offset(of: index)
        if let dictionary {
            switch bytes[offset] & 0xF0 {
            case 0x10, 0x20, 0x30, 0x40, 0x50, 0x60: break
            default: try checkKey(index, container: dictionary)
            }
        }
        if mark & Self.onStack != 0 {
            throw PropertyListError(.referenceCycle, "a container contains itself", byteOffset: offset, objectIndex: index)
        }
        let marker = bytes[offset]
        switch marker & 0xF0 {
        case 0xA0, 0xC0, 0xD0:
            try requireDepth(below: frames.count, at: offset, object: index)
            let (count, start, total) = try containerSpan(marker: marker, at: offset, object: index)
            let isDictionary = marker & 0xF0 == 0xD0
            marks[index] |= Self.onStack
            // The count is now known to fit in the input (one reference byte or more each).
            var frame = Frame(object: index, kind: marker & 0xF0, objectOffset: offset, refsStart: start, count: count, total: total)
            if isDictionary { frame.entries.reserveCapacity(count) } else { frame.items.reserveCapacity(count) }
            frames.append(frame)
            return nil
        case 0x40, 0x50, 0x60:
            // Strings and data own storage: decode once and share it wherever referenced.
            let value = try decodeScalar(marker: marker, at: offset, object: index)
            let bytes: Int
            switch value {
            case .string(let string): bytes = string.utf8Count
            case .data(let data): bytes = data.count
            default: bytes = 0
            }
            remember(index, (value, 1, bytes))
            return (value, 1, bytes)
        default:
            // Numbers, dates, booleans, null and UIDs are cheaper to decode again than to cache.
            return (try decodeScalar(marker: marker, at: offset, object: index), 1, 0)
        }
    }

    /// Checks that the shared container `index`, decoded already, fits under the depth limit
    /// where it is referenced now, and counts its height in its new parent's.
    private func reuseContainer(_ index: Int, frames: inout [Frame]) throws {
        let height = sharedHeights[index] ?? 1
        guard frames.count <= limits.maximumDepth &- height else {
            throw PropertyListError(
                .depthLimitExceeded, "nesting is deeper than the limit of \(limits.maximumDepth) (a shared container \(height) deep)",
                byteOffset: offset(of: index), objectIndex: index)
        }
        if let parent = frames.indices.last { frames[parent].height = Swift.max(frames[parent].height, height &+ 1) }
    }

    /// The decoded value of a shared object, if decoded already.
    @inline(__always)
    private func sharedValue(_ index: Int) -> (value: PropertyListValue, expanded: Int, bytes: Int)? {
        if denseSlots.isEmpty {
            return sparseSlots.find(UInt64(truncatingIfNeeded: index), 0).map { shared[$0] }
        }
        let slot = denseSlots[index]
        return slot == 0 ? nil : shared[Int(slot &- 1)]
    }

    /// Keeps a decoded string, data or container for later references when it is shared.
    /// An object used once is never looked up again, so it is not kept.
    @inline(__always)
    private mutating func remember(_ index: Int, _ decoded: (value: PropertyListValue, expanded: Int, bytes: Int), height: Int = 0) {
        guard marks[index] == Self.sharedCount else { return }
        if height > 1 { sharedHeights[index] = height }
        if denseSlots.isEmpty {
            _ = sparseSlots.findOrInsert(UInt64(truncatingIfNeeded: index), 0, shared.count)
        } else {
            // Fewer shared objects than objects, and the object count fits the offset table.
            guard shared.count < Int(UInt32.max) else { return }
            denseSlots[index] = UInt32(truncatingIfNeeded: shared.count + 1)
        }
        shared.append(decoded)
    }

    /// Dictionary keys must be primitives: strings, integers, reals, dates or data. Throws
    /// for any other marker (called by ``enter(_:frames:keyOf:)`` once it knows the key is bad).
    func checkKey(_ index: Int, container: Int) throws {
        let offset = offset(of: index)
        let marker = bytes[offset]
        switch marker & 0xF0 {
        case 0x10, 0x20, 0x30, 0x40, 0x50, 0x60: return
        default:
            throw PropertyListError(
                .invalidObject, "dictionary key (object \(index), marker 0x\(hex(marker))) is not a string, number, date or data",
                byteOffset: offset, objectIndex: container)
        }
    }

    /// The key path of the member being decoded, e.g. `root.items[3]`.
    private func keyPath(_ frames: [Frame]) -> String {
        var path = "root"
        for frame in frames {
            let member = frame.next - 1
            guard member >= 0 else { break }
            if frame.kind == 0xD0 {
                if member < frame.count {
                    path += ".<key \(member)>"
                } else if member - frame.count < frame.entries.count, case .string(let key) = frame.entries[member - frame.count].key {
                    path += "." + key.value
                } else {
                    path += ".<value \(member - frame.count)>"
                }
            } else {
                path += "[\(member)]"
            }
        }
        return path
    }

    // MARK: - Objects

    /// Throws when a container opened inside `openContainers` others would be too deep.
    @inline(__always)
    func requireDepth(below openContainers: Int, at offset: Int, object: Int) throws {
        guard openContainers < limits.maximumDepth else {
            throw PropertyListError(
                .depthLimitExceeded, "nesting is deeper than the limit of \(limits.maximumDepth)",
                byteOffset: offset, objectIndex: object)
        }
    }

    /// The member count of the container at `offset`, where its references start, and how many
    /// references it has (twice the count for a dictionary), all checked to lie in the object area.
    func containerSpan(marker: UInt8, at offset: Int, object: Int) throws -> (count: Int, start: Int, total: Int) {
        let (count, start) = try readCount(marker: marker, at: offset, object: object)
        let (total, overflow1) = count.multipliedReportingOverflow(by: marker & 0xF0 == 0xD0 ? 2 : 1)
        let (length, overflow2) = total.multipliedReportingOverflow(by: trailer.objectRefSize)
        guard !overflow1, !overflow2, length <= objectsEnd - start else {
            throw PropertyListError(
                .truncated, "\(containerName(marker)) of \(count) members runs past the object area",
                byteOffset: offset, objectIndex: object)
        }
        return (count, start, total)
    }

    /// The bytes of the data object (marker 0x4_) at `offset`, checked against the limits.
    func dataBytes(marker: UInt8, at offset: Int, object: Int) throws -> UnsafeRawBufferPointer {
        let (count, start) = try readCount(marker: marker, at: offset, object: object)
        try requireBytes(count, from: start, object: object, at: offset, "data of \(count) bytes")
        guard count <= limits.maximumDataLength else {
            throw PropertyListError(
                .lengthLimitExceeded, "data of \(count) bytes exceeds the limit of \(limits.maximumDataLength)",
                byteOffset: offset, objectIndex: object)
        }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)])
    }

    /// The bytes of the ASCII string object (marker 0x5_) at `offset`, checked against the
    /// limits and to be ASCII (so they are also UTF-8).
    func asciiStringBytes(marker: UInt8, at offset: Int, object: Int) throws -> UnsafeRawBufferPointer {
        let (count, start) = try readCount(marker: marker, at: offset, object: object)
        try requireBytes(count, from: start, object: object, at: offset, "ASCII string of \(count) bytes")
        try checkStringLength(count, at: offset, object: object)
        let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)])
        if let bad = Self.firstNonASCII(slice) {
            throw PropertyListError(
                .invalidString, "ASCII string contains the non-ASCII byte 0x\(hex(slice[bad]))",
                byteOffset: start + bad, objectIndex: object)
        }
        return slice
    }

    /// Reads the count of a data, string or container object: the marker's low nibble, or when
    /// that is 0xF, the integer object that follows. Returns the count and where the payload starts.
    func readCount(marker: UInt8, at offset: Int, object: Int) throws -> (count: Int, start: Int) {
        let nibble = Int(marker & 0x0F)
        if nibble != 0x0F { return (nibble, offset + 1) }
        let intOffset = offset + 1
        guard intOffset < objectsEnd else {
            throw PropertyListError(.truncated, "count runs past the object area", byteOffset: offset, objectIndex: object)
        }
        let intMarker = bytes[intOffset]
        guard intMarker & 0xF0 == 0x10, intMarker & 0x0F <= 3 else {
            throw PropertyListError(
                .invalidObject, "count is not a 1-, 2-, 4- or 8-byte integer (marker 0x\(hex(intMarker)))",
                byteOffset: intOffset, objectIndex: object)
        }
        let width = 1 << Int(intMarker & 0x0F)
        guard width <= objectsEnd - intOffset - 1 else {
            throw PropertyListError(.truncated, "count runs past the object area", byteOffset: intOffset, objectIndex: object)
        }
        let raw = BinaryBytes.readUInt(bytes, at: intOffset + 1, width: width)
        guard raw <= UInt64(Int.max) else {
            throw PropertyListError(.invalidObject, "count \(Int64(bitPattern: raw)) is negative", byteOffset: intOffset, objectIndex: object)
        }
        return (Int(raw), intOffset + 1 + width)
    }

    /// Checks that `length` bytes from `start` lie inside the object area.
    @inline(__always)
    func requireBytes(_ length: Int, from start: Int, object: Int, at offset: Int, _ what: @autoclosure () -> String) throws {
        guard length >= 0, start <= objectsEnd, length <= objectsEnd - start else {
            throw PropertyListError(.truncated, "\(what()) runs past the object area", byteOffset: offset, objectIndex: object)
        }
    }

    func decodeScalar(marker: UInt8, at offset: Int, object: Int) throws -> PropertyListValue {
        let nibble = marker & 0x0F
        switch marker & 0xF0 {
        case 0x00:
            switch marker {
            case 0x00: return .null
            case 0x08: return .bool(false)
            case 0x09: return .bool(true)
            case 0x0C, 0x0D, 0x0E:
                throw PropertyListError(
                    .unsupportedObject, "marker 0x\(hex(marker)) (URL/UUID) exists only in bplist1x",
                    byteOffset: offset, objectIndex: object)
            default:
                throw PropertyListError(.invalidObject, "unknown marker 0x\(hex(marker))", byteOffset: offset, objectIndex: object)
            }
        case 0x10:
            return .integer(try decodeInteger(width: nibble, at: offset, object: object))
        case 0x20:
            switch nibble {
            case 2:
                try requireBytes(4, from: offset + 1, object: object, at: offset, "4-byte real")
                let bits = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: UInt32.self))
                return .real(PropertyListReal(Float(bitPattern: bits)))
            case 3:
                try requireBytes(8, from: offset + 1, object: object, at: offset, "8-byte real")
                return .real(PropertyListReal(Double(bitPattern: BinaryBytes.readUInt64(bytes, at: offset + 1))))
            default:
                throw PropertyListError(
                    .invalidObject, "real of \(1 << Int(nibble)) bytes (only 4 and 8 exist)", byteOffset: offset, objectIndex: object)
            }
        case 0x30:
            guard marker == 0x33 else {
                throw PropertyListError(.invalidObject, "unknown marker 0x\(hex(marker))", byteOffset: offset, objectIndex: object)
            }
            try requireBytes(8, from: offset + 1, object: object, at: offset, "date")
            let seconds = Double(bitPattern: BinaryBytes.readUInt64(bytes, at: offset + 1))
            guard BinaryPropertyListReader.validDateRange.contains(seconds) else {
                throw PropertyListError(
                    .invalidObject, "date \(seconds) is not finite or outside years 0...9999", byteOffset: offset, objectIndex: object)
            }
            return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case 0x40:
            return .data(Data(try dataBytes(marker: marker, at: offset, object: object)))
        case 0x50:
            let slice = try asciiStringBytes(marker: marker, at: offset, object: object)
            return .string(PropertyListString(validatedUTF8: slice, storage: .ascii))
        case 0x60:
            let (count, start) = try readCount(marker: marker, at: offset, object: object)
            let (length, overflow) = count.multipliedReportingOverflow(by: 2)
            guard !overflow else {
                throw PropertyListError(.truncated, "UTF-16 string of \(count) units runs past the object area", byteOffset: offset, objectIndex: object)
            }
            try requireBytes(length, from: start, object: object, at: offset, "UTF-16 string of \(count) units")
            try checkStringLength(length, at: offset, object: object)
            return .string(PropertyListString(try decodeUTF16(count: count, at: start, object: object), storage: .utf16))
        case 0x70:
            throw PropertyListError(.unsupportedObject, "UTF-8 string (marker 0x7_) exists only in bplist1x", byteOffset: offset, objectIndex: object)
        case 0x80:
            let width = Int(nibble) + 1
            guard width <= 8 else {
                throw PropertyListError(.invalidObject, "UID of \(width) bytes", byteOffset: offset, objectIndex: object)
            }
            try requireBytes(width, from: offset + 1, object: object, at: offset, "UID")
            let value = BinaryBytes.readUInt(bytes, at: offset + 1, width: width)
            guard let uid = UInt32(exactly: value) else {
                throw PropertyListError(.invalidObject, "UID \(value) is above 2^32-1", byteOffset: offset, objectIndex: object)
            }
            return .uid(uid)
        case 0xB0:
            throw PropertyListError(.unsupportedObject, "ordered set (marker 0xB_) exists only in bplist1x", byteOffset: offset, objectIndex: object)
        default:
            throw PropertyListError(.invalidObject, "unknown marker 0x\(hex(marker))", byteOffset: offset, objectIndex: object)
        }
    }

    /// 1-, 2- and 4-byte integers are unsigned, 8-byte ones signed; 16-byte ones are signed
    /// 128-bit values, accepted when they fit `Int64.min ... UInt64.max`.
    private func decodeInteger(width code: UInt8, at offset: Int, object: Int) throws -> PropertyListInteger {
        guard code <= 4 else {
            throw PropertyListError(.invalidObject, "integer of 2^\(code) bytes (at most 16 exist)", byteOffset: offset, objectIndex: object)
        }
        let width = 1 << Int(code)
        try requireBytes(width, from: offset + 1, object: object, at: offset, "\(width)-byte integer")
        switch width {
        case 1, 2, 4:
            return PropertyListInteger(BinaryBytes.readUInt(bytes, at: offset + 1, width: width), storedWidth: UInt8(width))
        case 8:
            return PropertyListInteger(Int64(bitPattern: BinaryBytes.readUInt64(bytes, at: offset + 1)), storedWidth: 8)
        default:
            let high = BinaryBytes.readUInt64(bytes, at: offset + 1)
            let low = BinaryBytes.readUInt64(bytes, at: offset + 9)
            if high == 0 { return PropertyListInteger(low, storedWidth: 16) }
            if high == UInt64.max, Int64(bitPattern: low) < 0 {
                return PropertyListInteger(Int64(bitPattern: low), storedWidth: 16)
            }
            throw PropertyListError(
                .invalidObject, "16-byte integer is outside -2^63 ... 2^64-1", byteOffset: offset, objectIndex: object)
        }
    }

    func checkStringLength(_ length: Int, at offset: Int, object: Int) throws {
        guard length <= limits.maximumStringLength else {
            throw PropertyListError(
                .lengthLimitExceeded, "string of \(length) bytes exceeds the limit of \(limits.maximumStringLength)",
                byteOffset: offset, objectIndex: object)
        }
    }

    /// The index of the first byte >= 0x80, checking eight bytes at a time.
    static func firstNonASCII(_ slice: UnsafeRawBufferPointer) -> Int? {
        var index = 0
        let count = slice.count
        while index + 8 <= count {
            if slice.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { break }
            index += 8
        }
        while index < count {
            if slice[index] >= 0x80 { return index }
            index += 1
        }
        return nil
    }

    /// Transcodes big-endian UTF-16 straight to a native UTF-8 string; unpaired surrogates are errors.
    private func decodeUTF16(count: Int, at start: Int, object: Int) throws -> String {
        if count == 0 { return "" }
        let bytes = self.bytes
        return try String(unsafeUninitializedCapacity: count * 3) { output in
            var written = 0
            var index = 0
            @inline(__always) func unit(_ index: Int) -> UInt32 {
                UInt32(UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: start + 2 * index, as: UInt16.self)))
            }
            while index < count {
                var scalar = unit(index)
                index += 1
                if scalar < 0x80 {
                    output[written] = UInt8(truncatingIfNeeded: scalar)
                    written += 1
                    continue
                }
                if scalar < 0x800 {
                    output[written] = UInt8(truncatingIfNeeded: 0xC0 | scalar >> 6)
                    output[written + 1] = UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F)
                    written += 2
                    continue
                }
                if scalar & 0xF800 == 0xD800 {
                    guard scalar < 0xDC00, index < count else {
                        throw PropertyListError(
                            .invalidString, "UTF-16 string has an unpaired surrogate", byteOffset: start + 2 * (index - 1), objectIndex: object)
                    }
                    let low = unit(index)
                    guard low & 0xFC00 == 0xDC00 else {
                        throw PropertyListError(
                            .invalidString, "UTF-16 string has an unpaired surrogate", byteOffset: start + 2 * (index - 1), objectIndex: object)
                    }
                    index += 1
                    scalar = 0x10000 + ((scalar & 0x3FF) << 10 | low & 0x3FF)
                    output[written] = UInt8(truncatingIfNeeded: 0xF0 | scalar >> 18)
                    output[written + 1] = UInt8(truncatingIfNeeded: 0x80 | scalar >> 12 & 0x3F)
                    output[written + 2] = UInt8(truncatingIfNeeded: 0x80 | scalar >> 6 & 0x3F)
                    output[written + 3] = UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F)
                    written += 4
                    continue
                }
                output[written] = UInt8(truncatingIfNeeded: 0xE0 | scalar >> 12)
                output[written + 1] = UInt8(truncatingIfNeeded: 0x80 | scalar >> 6 & 0x3F)
                output[written + 2] = UInt8(truncatingIfNeeded: 0x80 | scalar & 0x3F)
                written += 3
            }
            return written
        }
    }

    func containerName(_ marker: UInt8) -> String {
        switch marker & 0xF0 {
        case 0xA0: "array"
        case 0xC0: "set"
        default: "dictionary"
        }
    }
}

/// Two hex digits.
func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}

/// The second thread's part of a split read: the split array's members from the split point on,
/// and their expanded totals (values, and bytes of strings and data).
struct TreePart {
    var items: [PropertyListValue]
    var expanded: Int
    var bytes: Int
}

/// The decoder the second thread of a split read works with: a copy made on the calling thread
/// (``BinaryPropertyListDecoder/prepareForSecondThread()``), held in a box so that the second
/// thread mutates it in place instead of copying its arrays over there.
///
/// `@unchecked Sendable`: used by one thread at a time: made by the caller, used by the second
/// thread, dropped after the join.
final class SecondPartDecoder: @unchecked Sendable {
    private var decoder: BinaryPropertyListDecoder

    init(_ first: BinaryPropertyListDecoder) {
        decoder = first
        decoder.prepareForSecondThread()
    }

    func decode(_ split: SplitPoint, stop: Protected<Bool>) -> TreePart? {
        decoder.decodeSecondPart(split, stop: stop)
    }
}
