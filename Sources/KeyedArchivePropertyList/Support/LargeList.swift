#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A growable list for the binary writer's largest lists (an object and a reference per
/// archived value: tens of millions of elements, hundreds of megabytes), grown in place with
/// `realloc`.
///
/// Why not `Array`: an array grows by allocating a buffer twice the size, moving the elements
/// and freeing the old one, so a list of `n` bytes has had `2n` bytes of fresh pages provided
/// by the kernel and `n` bytes copied by the time it is done. `realloc` of a large block moves
/// its pages instead (`mremap` on Linux): only the new half is fresh and nothing is copied. W5
/// encode at 10^6 records made 680,000 page faults a run, and about 40% of the faults sampled
/// were in growing these two lists (see `Docs/PerformanceHistory.md`, session 19). The buffer is
/// not advised for large pages (``HugePages``): measured, that made W3's binary write slower, not
/// faster (probably because `mremap` to an address of another alignment within 2 MiB splits
/// them; not checked).
///
/// `Element` must be movable by copying its bytes, as Swift's own types are (no weak
/// references, no types that know their own address); the writer keeps object descriptions
/// (enums of integers, strings and property-list values) and integers in it.
///
/// Copies share storage until one of them is changed (copy on write), like an array.
package struct LargeList<Element>: RandomAccessCollection, MutableCollection {
    private final class Storage {
        var base: UnsafeMutablePointer<Element>?
        var count = 0
        var capacity = 0

        init() {}

        deinit {
            base?.deinitialize(count: count)
            free(base)
        }

        /// A copy with room for `capacity` elements; `nil` when memory runs out.
        func copy(capacity wanted: Int) -> Storage? {
            let copy = Storage()
            guard copy.grow(to: Swift.max(wanted, count)) else { return nil }
            if let base, let target = copy.base { target.initialize(from: base, count: count) }
            copy.count = count
            return copy
        }

        /// Makes room for `wanted` elements in all; false when memory runs out.
        func grow(to wanted: Int) -> Bool {
            guard wanted > capacity else { return true }
            let (doubled, overflow) = capacity.multipliedReportingOverflow(by: 2)
            let newCapacity = Swift.max(wanted, overflow ? wanted : doubled, 16)
            let (bytes, bytesOverflow) = newCapacity.multipliedReportingOverflow(by: MemoryLayout<Element>.stride)
            guard !bytesOverflow else { return false }
            let raw: UnsafeMutableRawPointer?
            if let base {
                raw = realloc(UnsafeMutableRawPointer(base), bytes)
            } else {
                raw = malloc(bytes)
            }
            guard let raw else { return false }
            base = raw.bindMemory(to: Element.self, capacity: newCapacity)
            capacity = newCapacity
            return true
        }
    }

    private var storage = Storage()

    /// An empty list.
    package init() {}

    package var startIndex: Int { 0 }
    package var endIndex: Int { storage.count }
    /// The number of elements.
    package var count: Int { storage.count }
    /// The number of elements the list has room for.
    package var capacity: Int { storage.capacity }

    /// The element at `position`. The range check is `Array`'s: the writer indexes these lists
    /// only with the indices it made (objects it added, reference slots it reserved), never
    /// with a number read from input, so it cannot fail on any file.
    package subscript(position: Int) -> Element {
        @inline(__always) get {
            precondition(position >= 0 && position < storage.count, "LargeList index out of range")
            // In range means count > 0, so the buffer exists.
            return storage.base.unsafelyUnwrapped[position]
        }
        @inline(__always) set {
            precondition(position >= 0 && position < storage.count, "LargeList index out of range")
            makeUnique(capacity: storage.capacity)
            storage.base.unsafelyUnwrapped[position] = newValue
        }
    }

    /// Room for `capacity` elements in all.
    package mutating func reserveCapacity(_ capacity: Int) {
        makeUnique(capacity: Swift.max(capacity, storage.capacity))
        guard storage.grow(to: capacity) else { Self.outOfMemory(capacity) }
    }

    /// Adds `element` at the end.
    @inline(__always)
    package mutating func append(_ element: Element) {
        let count = storage.count
        if count == storage.capacity || !isKnownUniquelyReferenced(&storage) { reserveCapacity(count &+ 1) }
        // capacity > count >= 0 here, so the buffer exists (reserveCapacity stops the process
        // rather than return without room).
        (storage.base.unsafelyUnwrapped + count).initialize(to: element)
        storage.count = count &+ 1
    }

    /// Adds `elements` at the end.
    package mutating func append<S: Sequence>(contentsOf elements: S) where S.Element == Element {
        let (wanted, overflow) = storage.count.addingReportingOverflow(elements.underestimatedCount)
        if !overflow { reserveCapacity(wanted) }
        let done: Void? = elements.withContiguousStorageIfAvailable { buffer in
            // An empty buffer may have an address while this list has no buffer yet.
            guard let source = buffer.baseAddress, !buffer.isEmpty else { return }
            reserveCapacity(storage.count + buffer.count)
            // Room for a non-empty buffer was just made, so the buffer exists.
            (storage.base.unsafelyUnwrapped + storage.count).initialize(from: source, count: buffer.count)
            storage.count += buffer.count
        }
        if done == nil { for element in elements { append(element) } }
    }

    /// Adds `source`'s elements at the end, each made into an element by `convert`.
    package mutating func append<Source>(_ source: UnsafeBufferPointer<Source>, converting convert: (Source) -> Element) {
        let count = storage.count
        let (wanted, overflow) = count.addingReportingOverflow(source.count)
        guard !overflow else { Self.outOfMemory(Int.max) }
        reserveCapacity(wanted)
        // Room for `wanted` elements was just made, so the buffer exists when `source` is not empty.
        guard !source.isEmpty else { return }
        let target = storage.base.unsafelyUnwrapped + count
        for (offset, element) in source.enumerated() { (target + offset).initialize(to: convert(element)) }
        storage.count = wanted
    }

    /// Calls `body` with the elements.
    package func withUnsafeBufferPointer<Result>(_ body: (UnsafeBufferPointer<Element>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: storage.base, count: storage.count))
    }

    /// Calls `body` with the elements for it to move out, and then empties the list without
    /// destroying them: for a list taken apart as it is used, whose elements are released where
    /// they are used instead of in a pass of their own over all of them at the end.
    ///
    /// When `body` returns, every slot must hold an element with nothing to release (`body`
    /// moves each element out and leaves such an element in its place). When it throws, every
    /// slot must still hold an element, which the list destroys as usual.
    package mutating func takeElements<Result>(_ body: (UnsafeMutableBufferPointer<Element>) throws -> Result) rethrows -> Result {
        makeUnique(capacity: storage.capacity)
        let result = try body(UnsafeMutableBufferPointer(start: storage.base, count: storage.count))
        storage.count = 0
        return result
    }

    /// Gives the list storage of its own before a change when another copy shares it.
    @inline(__always)
    private mutating func makeUnique(capacity: Int) {
        guard !isKnownUniquelyReferenced(&storage) else { return }
        guard let copy = storage.copy(capacity: capacity) else { Self.outOfMemory(capacity) }
        storage = copy
    }

    /// Running out of memory for the writer's own lists stops the process, as it does for an
    /// `Array`: their sizes follow values already in memory (what the caller archives, or a
    /// document read within its ``DecodingLimits``), never a count read from a header.
    private static func outOfMemory(_ capacity: Int) -> Never {
        fatalError("out of memory for a list of \(capacity) elements")
    }
}
