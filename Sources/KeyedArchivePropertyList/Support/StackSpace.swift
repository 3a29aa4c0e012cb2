internal import CKeyedArchiveShims
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How much of the calling thread's stack is left, for the decoders that recurse as deep as
/// the input nests: the keyed unarchiver, the archive resolver and the Codable decoder follow
/// an object graph through the user's and Foundation's own recursive initializers, so they
/// cannot be made iterative.
///
/// `DecodingLimits.maximumDepth` (512) bounds that recursion, but not in bytes: a level costs
/// about 3.5 KB of stack in a release build and 15 KB in a debug one, and a thread of 512 KiB
/// (the default for secondary threads and dispatch queues on Apple platforms) overflowed at
/// about 150 nested arrays in a release build (35 in debug), a crash from a 3.5 KB file. The
/// decoders ask ``runsShort(atDepth:)`` at each level and throw `depthLimitExceeded` (with
/// ``exhaustedMessage(depth:)``) while ``reserve`` bytes are still free.
package enum StackSpace {
    /// Whether a decoder at `depth` must stop: fewer than ``reserve`` bytes of stack are left.
    /// Asked at 8 and at every level from 16: shallower input (nearly all of it: records nest
    /// 3 or 4 deep) never pays for a check; the check at 8 is for small stacks (64 KiB in a
    /// release build, 160 KiB in a debug one, overflowed before 16 levels) and costs a deep
    /// decode one check.
    @inline(__always)
    package static func runsShort(atDepth depth: Int) -> Bool {
        (depth >= 16 || depth == 8) && !hasRoom()
    }

    /// Stack kept free below the deepest decoding level: for what runs below the check (one
    /// level's frames, a user's `init(coder:)` or `init(from:)`, an error being built).
    package static let reserve: UInt = 128 << 10

    /// Whether more than ``reserve`` bytes of the calling thread's stack are left below the
    /// caller. True when the stack's extent is unknown (a platform without a way to ask).
    @inline(never)
    private static func hasRoom() -> Bool {
        let floor = cachedFloor()
        var marker: UInt8 = 0
        let here = withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
        return here > floor
    }

    /// The lowest address the decoders may reach on this thread (the stack's bottom plus the
    /// reserve), or 0 when unknown; asked of the system once per thread (on Linux, the main
    /// thread's extent is read from `/proc`), then kept in a thread-specific slot.
    private static func cachedFloor() -> UInt {
        // Without a slot (keys exhausted), unknown: slot 0 would be another library's.
        guard let floorKey else { return 0 }
        if let cached = pthread_getspecific(floorKey) { return UInt(bitPattern: cached) }
        let bottom = UInt(keyed_archive_stack_bottom())
        // Unknown: 0, which every address passes. A stack smaller than the reserve is all
        // reserve: nothing deeper than the checked depth is decoded on it.
        let floor = bottom == 0 ? 0 : bottom.addingReportingOverflow(reserve).partialValue
        // Kept as floor | 1, so that the slot is never the nil pointer once set.
        pthread_setspecific(floorKey, UnsafeRawPointer(bitPattern: floor | 1))
        return floor | 1
    }

    /// The decoders' message when ``runsShort(atDepth:)`` is true at `depth`.
    package static func exhaustedMessage(depth: Int) -> String {
        "nesting \(depth) deep needs more stack than this thread has left (\(reserve >> 10) KiB are kept free); "
            + "decode on a thread with a larger stack, or lower DecodingLimits.maximumDepth"
    }

    /// The thread-specific slot for the floor (created once, never deleted), or `nil` when the
    /// system had no key left.
    private static let floorKey: pthread_key_t? = {
        var key = pthread_key_t()
        return pthread_key_create(&key, nil) == 0 ? key : nil
    }()
}
