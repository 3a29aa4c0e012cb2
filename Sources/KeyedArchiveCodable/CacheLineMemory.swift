#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Memory for the Codable coders' own hot stacks and tables (``CoderStack``: the coding path and
/// the spare builders; ``InstancesInProgress``, ``CodingKeySlots``) in whole cache lines of its
/// own: aligned to 64 bytes and rounded up to a multiple of them, so that no line is shared with
/// a neighbouring allocation.
///
/// The encoder writes these at every value. Allocated with plain `allocate(capacity:)` they sat
/// beside whatever `malloc` put next to them, and a W5 encode of 10^5 records, whose layout
/// runs on a second thread that allocates and writes its batches meanwhile, took 137-139 ms
/// against 131 ms before the stacks existed (alternating loops), while its encoder's thread ran
/// fewer instructions; in whole lines, 127-131 ms (session 47).
///
/// Taken from `malloc` with a line to spare, the address rounded up to a line and `malloc`'s
/// own address kept in the word before it: glibc's `posix_memalign` to 64 bytes cost about 870
/// instructions an allocation against `malloc`'s 100, and a small archive makes three (W1's
/// default profile, session 58). Freed with ``deallocate(_:)``, never `deallocate()`.
enum CacheLineMemory {
    /// The size of the lines kept apart (64 bytes on the x86-64 and arm64 machines this runs on).
    static let lineSize = 64

    /// Uninitialized memory for `capacity` values of `type`, in whole cache lines.
    static func allocate<Value>(_ type: Value.Type, capacity: Int) -> UnsafeMutablePointer<Value> {
        let (bytes, overflow) = Swift.max(capacity, 1).multipliedReportingOverflow(by: MemoryLayout<Value>.stride)
        // Capacities here follow nesting depth, UIDs or 256: a size past what can be allocated
        // stops the process, as an array's growth would.
        guard !overflow, bytes <= Int.max - 2 * lineSize else { outOfMemory(Int.max) }
        let lines = (bytes + lineSize - 1) / lineSize * lineSize
        // `malloc` gives 16-byte alignment at least, so the rounded address leaves room below
        // it for the word that remembers `malloc`'s address.
        guard let raw = malloc(lines + lineSize) else { outOfMemory(lines + lineSize) }
        let word = MemoryLayout<UnsafeMutableRawPointer>.size
        let start = (UInt(bitPattern: raw) &+ UInt(word) &+ UInt(lineSize - 1)) & ~UInt(lineSize - 1)
        let aligned = raw + Int(start &- UInt(bitPattern: raw))
        (aligned - word).storeBytes(of: raw, as: UnsafeMutableRawPointer.self)
        return aligned.bindMemory(to: Value.self, capacity: capacity)
    }

    /// Frees memory from ``allocate(_:capacity:)`` (its values already deinitialized or trivial).
    static func deallocate<Value>(_ pointer: UnsafeMutablePointer<Value>) {
        let word = MemoryLayout<UnsafeMutableRawPointer>.size
        free((UnsafeMutableRawPointer(pointer) - word).load(as: UnsafeMutableRawPointer.self))
    }

    /// Moves the first `count` values of `old` (memory from ``allocate(_:capacity:)``, or none
    /// yet) into new memory for `capacity` values and frees `old`: the growth of the stacks and
    /// flags here.
    static func moving<Value>(_ old: UnsafeMutablePointer<Value>?, count: Int, toCapacity capacity: Int) -> UnsafeMutablePointer<Value> {
        let grown = allocate(Value.self, capacity: capacity)
        if let old {
            grown.moveInitialize(from: old, count: count)
            deallocate(old)
        }
        return grown
    }

    /// Running out of memory for these small stacks stops the process, as it does for an
    /// `Array`: their sizes follow the nesting and the number of objects already in memory,
    /// never a count read from input.
    private static func outOfMemory(_ bytes: Int) -> Never {
        fatalError("out of memory for \(bytes) bytes of coder stacks")
    }
}
