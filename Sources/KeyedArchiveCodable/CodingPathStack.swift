/// The coding path of an encoding or decoding run, as a stack of keys in memory it owns; copied
/// into an array only when something asks for the path (`codingPath`, an error).
///
/// Every value the coder boxes or decodes under a key or at an index (anything but a primitive
/// set in place) pushes that key and pops it after. As an `[any CodingKey]` in the coder's
/// state, each push and pop was a uniqueness check and the array's generic append and
/// `removeLast`, about 150 instructions a key (callgrind, W2 Codable archive, session 47). Not
/// copyable: the coder's state owns it, in place (as a class of its own, it was retained and
/// released around every value stored under a key). Its memory is in whole cache lines
/// (``CacheLineMemory``).
struct CodingPathStack: ~Copyable {
    /// `capacity` keys, the first `count` initialized.
    private var base: UnsafeMutablePointer<any CodingKey>
    private var capacity = 16
    /// The path's length.
    private(set) var count = 0

    /// An empty path.
    init() {
        base = CacheLineMemory.allocate((any CodingKey).self, capacity: capacity)
    }

    deinit {
        base.deinitialize(count: count)
        base.deallocate()
    }

    /// Pushes `key` (moved in, not copied).
    @inline(__always)
    mutating func append(_ key: consuming any CodingKey) {
        if count == capacity { grow() }
        (base + count).initialize(to: key)
        count += 1
    }

    /// Pops the last key (pushes and pops are paired with `defer`; an extra pop does nothing).
    @inline(__always)
    mutating func removeLast() {
        assert(count > 0, "a coding-path pop without its push")
        guard count > 0 else { return }
        count -= 1
        // Moved out before it is destroyed, so that the stack is consistent if the key's
        // release runs code that pushes again.
        _ = (base + count).move()
    }

    /// The whole path, outermost key first.
    var path: [any CodingKey] { prefix(count) }

    /// The first `length` keys of the path (all of them when it is shorter).
    func prefix(_ length: Int) -> [any CodingKey] {
        Array(UnsafeBufferPointer(start: base, count: Swift.max(0, Swift.min(length, count))))
    }

    /// Doubles the room (the path's length is bounded by the coder's maximum depth).
    @inline(never)
    private mutating func grow() {
        capacity *= 2
        base = CacheLineMemory.moving(base, count: count, toCapacity: capacity)
    }
}
