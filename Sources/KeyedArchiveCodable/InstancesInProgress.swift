/// The class instances whose `encode(to:)` is running, for the encoder's cycle check: a flag
/// per UID (the object table numbers its entries densely from 1), and a stack of their UIDs
/// with the length of the coding path each started at, innermost last (read only to report a
/// cycle).
///
/// In memory it owns: as two arrays in the encoder, an instance's start and end were four
/// uniqueness checks and their calls, about 60 instructions (callgrind, W2 Codable, session
/// 47). Before the arrays, a dictionary by object identity was 6% of a W2 Codable archive, and
/// keeping the path itself copied it at the next key pushed (session 44). Not copyable: the
/// encoder's state owns it, in place, as it does its ``CodingPathStack``; its memory is in
/// whole cache lines (``CacheLineMemory``), allocated at the first instance: most archives of
/// value types have none, and the two allocations cost a small archive about 1,300
/// instructions (W1).
struct InstancesInProgress: ~Copyable {
    private struct Started {
        var uid: UInt32
        var pathLength: Int
    }

    /// `flagCount` flags, by UID (none until the first instance: `flagCount` is above 0 only
    /// once they exist, which is what makes the unchecked unwraps below sound).
    private var flags: UnsafeMutablePointer<Bool>?
    private var flagCount = 0
    /// `startedCapacity` entries, the first `startedCount` set (trivial: nothing to deinitialize;
    /// `startedCapacity` is above 0 only once they exist).
    private var started: UnsafeMutablePointer<Started>?
    private var startedCapacity = 0
    private var startedCount = 0

    /// No instance in progress.
    init() {}

    deinit {
        if let flags { CacheLineMemory.deallocate(flags) }
        if let started { CacheLineMemory.deallocate(started) }
    }

    /// Whether the instance at `uid` is being encoded.
    @inline(__always)
    func contains(_ uid: UInt32) -> Bool {
        // Unchecked: a checked unwrap here and in `begin` and `end` was about 27 instructions
        // an instance of a W2 Codable archive (every friend is looked up).
        Int(uid) < flagCount && flags.unsafelyUnwrapped[Int(uid)]
    }

    /// Marks the instance at `uid` as being encoded from a coding path of `pathLength` keys.
    @inline(__always)
    mutating func begin(_ uid: UInt32, pathLength: Int) {
        let index = Int(uid)
        if index >= flagCount { growFlags(toHold: index) }
        if startedCount == startedCapacity { growStarted() }
        // Both exist after the growth above (it stops the process rather than fail).
        flags.unsafelyUnwrapped[index] = true
        (started.unsafelyUnwrapped + startedCount).initialize(to: Started(uid: uid, pathLength: pathLength))
        startedCount += 1
    }

    /// Ends ``begin(_:pathLength:)`` for the innermost instance, at `uid`.
    @inline(__always)
    mutating func end(_ uid: UInt32) {
        assert(startedCount > 0 && started?[startedCount - 1].uid == uid, "an instance ended that is not the innermost")
        if Int(uid) < flagCount { flags.unsafelyUnwrapped[Int(uid)] = false }
        if startedCount > 0 { startedCount -= 1 }
    }

    /// The coding-path length at which the innermost instance at `uid` started, if it is in
    /// progress.
    func pathLength(at uid: UInt32) -> Int? {
        guard let started else { return nil }
        var index = startedCount
        while index > 0 {
            index -= 1
            if started[index].uid == uid { return started[index].pathLength }
        }
        return nil
    }

    /// Grows the flags to cover `index`, at least doubling and from 64 (a flag past every
    /// entry asked about is false): grown to each new instance's UID, every instance was a
    /// growth.
    @inline(never)
    private mutating func growFlags(toHold index: Int) {
        let grownCount = Swift.max(index + 1, flagCount * 2, 64)
        let grown = CacheLineMemory.moving(flags, count: flagCount, toCapacity: grownCount)
        (grown + flagCount).initialize(repeating: false, count: grownCount - flagCount)
        flags = grown
        flagCount = grownCount
    }

    /// Doubles the stack's room, from 16 (its depth is bounded by the encoder's maximum depth).
    @inline(never)
    private mutating func growStarted() {
        startedCapacity = Swift.max(startedCapacity * 2, 16)
        started = CacheLineMemory.moving(started, count: startedCount, toCapacity: startedCapacity)
    }
}
