/// Where a binary property list is cut for a second thread: the split container is reached from
/// the top object through the stored member positions in `path` (value positions in file
/// order); its `memberCount` members (in the caller's order: file order for the tree reader,
/// writing order for the XML converter) are cut into `pieces` runs of consecutive members, as
/// even as can be. The first thread does the even-numbered pieces (0, 2, ...), the second the
/// odd-numbered ones; in two pieces, the second thread takes its members from `member` on.
struct SplitPoint: Sendable {
    var path: [Int]
    var container: Int
    var memberCount: Int
    /// 2 or more, at most `memberCount`.
    var pieces: Int
    /// The split container's depth (the top object is at 0).
    var depth: Int { path.count }
    /// The first member of the second thread's first piece.
    var member: Int { start(ofPiece: 1) }

    /// The first member of piece `piece` (`memberCount` for `pieces`): the last `memberCount %
    /// pieces` pieces have one member more than the others (so that two halves of an odd count
    /// leave the extra member to the second thread, as the tree reader has always cut).
    func start(ofPiece piece: Int) -> Int {
        startOfEvenRun(piece, of: pieces, count: memberCount)
    }
}

/// Where run `run` of `runs` starts when `count` items are cut into runs of equal length, the
/// last `count % runs` runs one longer: the converter's pieces, the binary writer's runs.
func startOfEvenRun(_ run: Int, of runs: Int, count: Int) -> Int {
    let quotient = count / runs, remainder = count % runs
    // At most count for run <= runs: no overflow.
    return run &* quotient &+ max(0, run &- (runs &- remainder))
}

/// When the binary reader and the binary-to-XML converter use a second thread: for inputs of
/// `minimumInputLength` bytes or more on a machine with more than one core, cut at the first
/// container on the way down from the top object with `minimumMembers` members or more, and
/// (with `objectsPerMember`) at least one member for every `objectsPerMember` objects of the file,
/// so that a small collection beside most of the data is not cut in vain.
///
/// Two threads pay off because the work is the walk over the objects, not I/O. The price is
/// memory: the converter keeps the second thread's text of a piece until the first thread has
/// written the pieces before it (it is passed on chunk by chunk from then on), the reader a second
/// copy of its per-object marks while both run (one byte per object). See
/// `Docs/PerformanceHistory.md` (sessions 5, 6 and 25).
package struct SplitPolicy: Sendable {
    package var minimumInputLength: Int
    package var minimumMembers: Int
    /// 0, or the most objects of the file per member of the split container.
    package var objectsPerMember: Int
    /// Whether to look at the core count (tests force the split on one-core machines too).
    package var requiresSeveralCores: Bool
    /// Told, at the split point (the converter: at each of the second thread's pieces), whether
    /// the second thread's part was used (false: its members, and for the converter all after
    /// them, are being done by the first thread). Tests and fuzzing check that a conversion or
    /// read that succeeds used every part.
    package var onHandoff: (@Sendable (_ taken: Bool) -> Void)?
    /// The size of the chunks of text the converter passes on: to its sink, and from its second
    /// thread to the first.
    package var chunkLength: Int
    /// How many pieces the converter cuts the split container into (at most one per member; the
    /// tree reader cuts it in two). With two, the second thread's half of the text is all held
    /// until the first half is written; with more, the first thread passes on each of the second
    /// thread's pieces after its own piece before it, and the chunk buffers go back to the second
    /// thread to be filled again, so that text is held one piece at a time, in memory the
    /// process already has. Fresh memory is what costs: the kernel clears every page at its
    /// first use (session 25: 44 MB of new chunk buffers took the second thread of a W3
    /// conversion 90 ms longer than the first; see `Docs/PerformanceHistory.md`).
    package var pieceCount: Int

    package init(
        minimumInputLength: Int, minimumMembers: Int, objectsPerMember: Int = 0, requiresSeveralCores: Bool = true,
        chunkLength: Int = XMLText.sinkChunkLength, pieceCount: Int = 2, onHandoff: (@Sendable (_ taken: Bool) -> Void)? = nil
    ) {
        self.minimumInputLength = minimumInputLength
        self.minimumMembers = minimumMembers
        self.objectsPerMember = objectsPerMember
        self.requiresSeveralCores = requiresSeveralCores
        self.chunkLength = chunkLength
        self.pieceCount = pieceCount
        self.onHandoff = onHandoff
    }

    /// Split files of 1 MiB and more at a container of 16 members or more, and of one member or
    /// more per 4,096 objects: a small collection beside most of the data is not cut, while
    /// W3's 84,000 records, a keyed archive's `$objects` or 400 chains nested 500 deep are. The
    /// converter cuts it into 16 pieces (W3: 5.5 MB of text, under three chunks, per piece).
    package static let automatic = SplitPolicy(minimumInputLength: 1 << 20, minimumMembers: 16, objectsPerMember: 4_096, pieceCount: 16)
    /// ``automatic`` for the tree reader, from 64 KiB on: measured in session 26, a 130 KB
    /// file (10,000 objects) read 19-27% faster on two threads, where the converter was as
    /// fast either way (0.85x and 1.14x in two runs), so it keeps the 1 MiB threshold.
    package static let automaticForReading: SplitPolicy = {
        var policy = automatic
        policy.minimumInputLength = 1 << 16
        return policy
    }()
    /// Never split.
    package static let never = SplitPolicy(minimumInputLength: .max, minimumMembers: .max)
    /// Split wherever a container on the way down has two members or more, on any machine, into
    /// one piece per member, and pass text on in chunks of 64 bytes (tests and fuzzing: every
    /// small file exercises the second thread, the hand-over of pieces and of chunks).
    package static let always = SplitPolicy(
        minimumInputLength: 0, minimumMembers: 2, requiresSeveralCores: false, chunkLength: 64, pieceCount: .max)

    func allowsSplitting(inputLength: Int) -> Bool {
        guard inputLength >= minimumInputLength else { return false }
        return !requiresSeveralCores || SecondThread<Void>.hasSpareCore
    }
}

/// A walk stands at the split point when it is in the split container (`container`, at
/// `depth`), about to do member `member`.
struct SplitPosition: Equatable {
    var container: Int
    var depth: Int
    var member: Int
    /// No position a walk reaches (no handoff, or it was already met).
    static let nowhere = SplitPosition(container: -1, depth: -1, member: -1)

    /// Whether a walk in container `object` at `depth`, about to do member `member`, is here.
    @inline(__always)
    func isAt(member: Int, depth: Int, object: Int) -> Bool {
        member == self.member && depth == self.depth && object == container
    }
}

/// The second thread was told to stop (its part is no longer needed).
struct SplitCancelled: Error {}

/// A split walk's second thread and where its part (the reader's members, the converter's text)
/// goes.
struct SplitHandoff<Part> {
    let split: SplitPoint
    let thread: SecondThread<Part?>
    /// Set when the first thread fails before the split point.
    private let stop: Protected<Bool>
    /// Told whether the second thread's part was used (tests and fuzzing).
    private let observer: (@Sendable (_ taken: Bool) -> Void)?

    /// Starts `work` (given the stop flag to pass to its walk) on a second thread.
    init(split: SplitPoint, observer: (@Sendable (_ taken: Bool) -> Void)?, work: @escaping (Protected<Bool>) -> Part?) {
        let stop = Protected(false)
        self.split = split
        self.stop = stop
        self.observer = observer
        thread = SecondThread { work(stop) }
    }

    /// Where the first thread's walk hands over, as plain integers: the walks test it once per
    /// value, and testing the handoff itself there retained its references every time (about
    /// 8% of a two-thread conversion).
    var position: SplitPosition {
        SplitPosition(container: split.container, depth: split.depth, member: split.member)
    }

    /// Reports whether the second thread's part was used, and returns that.
    func report(taken: Bool) -> Bool {
        observer?(taken)
        return taken
    }

    /// Tells the second thread to stop and waits for it. The work reads the caller's borrowed
    /// bytes, so every path of the caller runs this before they go away; when the first thread
    /// failed before the split point, the second's part is not needed and it gives up early.
    func stopAndJoin() {
        tellToStop()
        join()
    }

    /// Sets the stop flag (see ``stopAndJoin()``).
    func tellToStop() {
        stop.withLock { $0 = true }
    }

    /// Waits for the second thread (see ``stopAndJoin()``).
    func join() {
        _ = thread.join()
    }
}

/// The second thread's side of ``SplitHandoff``'s stop flag: a walk calls ``check()`` once per
/// value, and it throws ``SplitCancelled`` soon after the flag is set (a lock every few thousand
/// values costs nothing measurable). Without a flag (the first thread) it does nothing.
struct SplitStopCheck {
    private let stop: Protected<Bool>?
    private var countdown = 0

    init(_ stop: Protected<Bool>?) { self.stop = stop }

    @inline(__always)
    mutating func check() throws {
        guard let stop else { return }
        countdown &-= 1
        guard countdown < 0 else { return }
        countdown = 4_096
        if stop.withLock({ $0 }) { throw SplitCancelled() }
    }
}

extension BinaryPropertyListDecoder {
    /// Where to cut the document for a second thread: the first container, from the top object
    /// down through the member container with the most members, that has `minimumMembers` or
    /// more, and one or more per `objectsPerMember` objects when that is not 0 (with
    /// `arraysOnly`, the first such array: dictionaries are only passed through), cut into
    /// `pieces` pieces (at most one per member); nil when there is none (or the path looks wrong:
    /// the walk will say what is wrong).
    func splitPoint(minimumMembers: Int, objectsPerMember: Int = 0, arraysOnly: Bool = false, pieces: Int = 2) -> SplitPoint? {
        var index = trailer.topObject
        var path: [Int] = []
        let width = trailer.objectRefSize
        let required = max(2, minimumMembers, objectsPerMember > 0 ? trailer.objectCount / objectsPerMember : 0)
        // Deeper than this, a file is not one big collection.
        while path.count < 8 {
            let offset = offset(of: index)
            let marker = bytes[offset]
            guard marker & 0xF0 == 0xA0 || marker & 0xF0 == 0xD0,
                let (count, start, _) = try? containerSpan(marker: marker, at: offset, object: index)
            else { return nil }
            if count >= required, !arraysOnly || marker & 0xF0 == 0xA0 {
                // Equal pieces: on W3 the two threads then finish within a few milliseconds of
                // each other (a 47:53 cut in two left the first thread of a conversion waiting).
                return SplitPoint(path: path, container: index, memberCount: count, pieces: min(max(2, pieces), count))
            }
            let valuesStart = marker & 0xF0 == 0xD0 ? count : 0
            var best: (slot: Int, index: Int, count: Int)?
            for member in 0..<count {
                guard let child = try? reference(at: start &+ (valuesStart &+ member) &* width, in: index) else { return nil }
                let childOffset = self.offset(of: child)
                let childMarker = bytes[childOffset]
                guard childMarker & 0xF0 == 0xA0 || childMarker & 0xF0 == 0xD0,
                    let (childCount, _, _) = try? containerSpan(marker: childMarker, at: childOffset, object: child),
                    childCount > best?.count ?? 0
                else { continue }
                best = (member, child, childCount)
            }
            guard let best else { return nil }
            path.append(best.slot)
            index = best.index
        }
        return nil
    }

    /// True when some container is referenced from two places or more (or counting stopped):
    /// then the tree reader decodes on one thread, so that such a container is decoded once and
    /// its value shared, as ``BinaryPropertyListReader`` promises.
    func hasSharedContainers() -> Bool {
        guard countedReferences != nil else { return true }
        for index in marks.indices where marks[index] & ~Self.onStack == Self.sharedCount {
            switch bytes[offset(of: index)] & 0xF0 {
            case 0xA0, 0xC0, 0xD0: return true
            default: continue
            }
        }
        return false
    }
}
