/// The coding path of an encoding or decoding run, as a stack of keys in memory it owns; copied
/// into an array only when something asks for the path (`codingPath`, an error).
///
/// Every value the coder boxes or decodes under a key or at an index (anything but a primitive
/// set in place) pushes that key and pops it after. As an `[any CodingKey]` in the coder's
/// state, each push and pop was a uniqueness check and the array's generic append and
/// `removeLast`, about 150 instructions a key (callgrind, W2 Codable archive, session 47).
typealias CodingPathStack = CoderStack<any CodingKey>

/// A stack in memory it owns, for the coders' per-value stacks (the coding path, the encoder's
/// spare container builders). Not copyable: the coder's state owns it, in place (as a class of
/// its own, it was retained and released around every value). Its memory is in whole cache
/// lines (``CacheLineMemory``).
struct CoderStack<Element>: ~Copyable {
    /// `capacity` elements, the first `count` initialized.
    private var base: UnsafeMutablePointer<Element>
    private var capacity = 16
    /// The number of elements (for a coding path, its length).
    private(set) var count = 0

    /// An empty stack.
    init() {
        base = CacheLineMemory.allocate(Element.self, capacity: capacity)
    }

    deinit {
        base.deinitialize(count: count)
        CacheLineMemory.deallocate(base)
    }

    /// Pushes `element` (moved in, not copied).
    @inline(__always)
    mutating func append(_ element: consuming Element) {
        if count == capacity { grow() }
        (base + count).initialize(to: element)
        count += 1
    }

    /// Pops the last element, moved out; nil when there is none.
    @inline(__always)
    mutating func popLast() -> Element? {
        guard count > 0 else { return nil }
        count -= 1
        return (base + count).move()
    }

    /// Pops the last element (a coding path's pushes and pops are paired with `defer`; an
    /// extra pop does nothing).
    @inline(__always)
    mutating func removeLast() {
        assert(count > 0, "a coding-path pop without its push")
        guard count > 0 else { return }
        count -= 1
        // Moved out before it is destroyed, so that the stack is consistent if the element's
        // release runs code that pushes again.
        _ = (base + count).move()
    }

    /// The last element, if any (a copy).
    var top: Element? { count > 0 ? base[count - 1] : nil }

    /// The whole stack, bottom first (for a coding path: outermost key first).
    var path: [Element] { prefix(count) }

    /// The first `length` elements (all of them when there are fewer).
    func prefix(_ length: Int) -> [Element] {
        elements(from: 0, upTo: length)
    }

    /// The elements from `start` up to `end`, clamped to those there are.
    func elements(from start: Int, upTo end: Int) -> [Element] {
        let end = Swift.max(0, Swift.min(end, count))
        let start = Swift.max(0, Swift.min(start, end))
        return Array(UnsafeBufferPointer(start: base + start, count: end - start))
    }

    /// Makes the stack hold `elements` instead of what it holds.
    mutating func replaceAll(with elements: [Element]) {
        while count > 0 { removeLast() }
        for element in elements { append(element) }
    }

    /// Doubles the room (a path's length is bounded by the coder's maximum depth; the spare
    /// builders by the most builders open at once).
    @inline(never)
    private mutating func grow() {
        capacity *= 2
        base = CacheLineMemory.moving(base, count: count, toCapacity: capacity)
    }
}
