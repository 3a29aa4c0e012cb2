/// Memory for the Codable coders' own hot stacks and tables (``CoderStack``: the coding path and
/// the spare builders; ``InstancesInProgress``, ``CodingKeySlots``) in whole cache lines of its
/// own: aligned to 64 bytes and rounded up to a multiple of them, so that no line is shared with
/// a neighbouring allocation.
///
/// The encoder writes these at every value. Allocated with plain `allocate(capacity:)` they sat
/// beside whatever `malloc` put next to them, and a W5 encode of 10^5 records, whose layout
/// runs on a second thread that allocates and writes its batches meanwhile, took 137-139 ms
/// against 131 ms before the stacks existed (alternating loops), while its encoder's thread ran
/// fewer instructions; in whole lines, 127-131 ms (session 47). Freed with `deallocate()`.
enum CacheLineMemory {
    /// The size of the lines kept apart (64 bytes on the x86-64 and arm64 machines this runs on).
    static let lineSize = 64

    /// Uninitialized memory for `capacity` values of `type`, in whole cache lines.
    static func allocate<Value>(_ type: Value.Type, capacity: Int) -> UnsafeMutablePointer<Value> {
        let (bytes, overflow) = Swift.max(capacity, 1).multipliedReportingOverflow(by: MemoryLayout<Value>.stride)
        // Capacities here follow nesting depth, UIDs or 256; a product past `Int.max` cannot be
        // allocated anyway, so it is left to `allocate` to fail as an array's growth would.
        let lines = overflow || bytes > Int.max - lineSize ? Int.max : (bytes + lineSize - 1) / lineSize * lineSize
        return UnsafeMutableRawPointer.allocate(byteCount: lines, alignment: lineSize)
            .bindMemory(to: Value.self, capacity: capacity)
    }

    /// Moves the first `count` values of `old` (memory from ``allocate(_:capacity:)``, or none
    /// yet) into new memory for `capacity` values and frees `old`: the growth of the stacks and
    /// flags here.
    static func moving<Value>(_ old: UnsafeMutablePointer<Value>?, count: Int, toCapacity capacity: Int) -> UnsafeMutablePointer<Value> {
        let grown = allocate(Value.self, capacity: capacity)
        if let old {
            grown.moveInitialize(from: old, count: count)
            old.deallocate()
        }
        return grown
    }
}
