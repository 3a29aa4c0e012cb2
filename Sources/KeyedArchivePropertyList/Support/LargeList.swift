#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A growable list for the binary writer's largest lists (an object and a reference per
/// archived value: tens of millions of elements, hundreds of megabytes), grown without copying.
///
/// Why not `Array`: an array grows by allocating a buffer twice the size, moving the elements
/// and freeing the old one, so a list of `n` bytes has had `2n` bytes of fresh pages provided
/// by the kernel and `n` bytes copied by the time it is done. W5 encode at 10^6 records made
/// 680,000 page faults a run, and about 40% of the faults sampled were in growing these two
/// lists (see `Docs/PerformanceHistory.md`, session 19).
///
/// On 64-bit Linux a list of 2 MiB or more lives in address space reserved for it (`mmap`,
/// inaccessible until used), starting on a large-page boundary and advised for large pages
/// (``HugePages``): it grows by making more of the reservation usable, in place, so its pages
/// are neither copied nor moved, and each 2 MiB of it can be one page (one fault instead of
/// 512). Reserving costs no memory (the kernel does not count an inaccessible mapping as
/// committed), only address space. A list that outgrows its reservation moves to one four times
/// its size (one copy). Elsewhere, and below 2 MiB, the buffer comes from `malloc` and grows
/// with `realloc` (which moves a large block's pages with `mremap` instead of copying; session
/// 19 advised such buffers and the W3 write got slower, as moving a buffer to an address of
/// another alignment splits its large pages).
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
        /// The buffer's reservation when it has one (see ``LargeList``); else it is `malloc`'s.
        var reservation: AddressReservation?
        /// The least address space a reservation takes.
        let minimumReservation: Int

        init(minimumReservation: Int) {
            self.minimumReservation = minimumReservation
        }

        deinit {
            base?.deinitialize(count: count)
            if let reservation { reservation.release() } else { free(base) }
        }

        /// A copy with room for `capacity` elements; `nil` when memory runs out.
        func copy(capacity wanted: Int) -> Storage? {
            let copy = Storage(minimumReservation: minimumReservation)
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
            let stride = MemoryLayout<Element>.stride
            let (bytes, bytesOverflow) = newCapacity.multipliedReportingOverflow(by: stride)
            guard !bytesOverflow else { return false }
            if AddressReservation.isAvailable, bytes >= HugePages.pageLength, growReserved(to: bytes) { return true }
            guard reservation == nil else { return false }
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

        /// Makes the first `bytes` of the reservation usable, first moving the elements into a
        /// new reservation when there is none or it is too small; false when that fails (the
        /// list is unchanged).
        private func growReserved(to bytes: Int) -> Bool {
            let stride = MemoryLayout<Element>.stride
            if let reservation, reservation.commit(bytes) {
                capacity = reservation.committed / stride
                return true
            }
            // Four times what is needed, and at least the minimum, so that moving again is rare.
            let (quadrupled, overflow) = bytes.multipliedReportingOverflow(by: 4)
            guard !overflow, let fresh = AddressReservation(length: Swift.max(quadrupled, minimumReservation)) else { return false }
            guard fresh.commit(bytes) else {
                fresh.release()
                return false
            }
            let target = fresh.base.bindMemory(to: Element.self, capacity: fresh.committed / stride)
            if let base {
                target.moveInitialize(from: base, count: count)
                if let reservation { reservation.release() } else { free(base) }
            }
            base = target
            reservation = fresh
            capacity = fresh.committed / stride
            return true
        }
    }

    private var storage: Storage

    /// An empty list.
    package init() {
        storage = Storage(minimumReservation: Self.defaultMinimumReservation)
    }

    /// An empty list whose reservations take at least `minimumReservation` bytes of address
    /// space (tests use small ones, to make a list move from one to the next).
    package init(minimumReservation: Int) {
        storage = Storage(minimumReservation: minimumReservation)
    }

    /// The least address space a list's reservation takes: 1 GiB, so that a list moves at most
    /// once below a quarter of it, and a writer's two lists take 2 GiB of the 128 TiB a 64-bit
    /// Linux process has.
    package static var defaultMinimumReservation: Int { 1 << 30 }

    package var startIndex: Int { 0 }
    package var endIndex: Int { storage.count }
    /// The number of elements.
    package var count: Int { storage.count }

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

/// Address space set aside for one buffer (``LargeList``'s on 64-bit Linux): inaccessible
/// until committed, from a large-page boundary, advised for large pages.
final class AddressReservation {
    /// The start, on a ``HugePages/pageLength`` boundary.
    let base: UnsafeMutableRawPointer
    /// The bytes reserved, a whole number of large pages.
    let length: Int
    /// The bytes usable (readable and writable) from `base`, a whole number of large pages.
    private(set) var committed = 0

    /// Whether buffers can be reserved on this system (64-bit Linux).
    static var isAvailable: Bool {
        #if os(Linux)
        return MemoryLayout<Int>.size == 8
        #else
        return false
        #endif
    }

    /// Reserves `length` bytes (rounded up to whole large pages); nil when that fails.
    init?(length wanted: Int) {
        #if os(Linux)
        let page = HugePages.pageLength
        let (padded, overflow) = wanted.addingReportingOverflow(2 &* page &- 1)
        guard !overflow, wanted > 0 else { return nil }
        let length = (padded &- page) & ~(page &- 1)
        // One large page more than needed, so that the reservation can start on a boundary;
        // the unaligned ends are given back.
        let span = length &+ page
        guard let region = mmap(nil, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0),
            region != UnsafeMutableRawPointer(bitPattern: -1)
        else { return nil }
        let start = UInt(bitPattern: region)
        let aligned = (start &+ UInt(page &- 1)) & ~UInt(page &- 1)
        let lead = Int(aligned &- start)
        if lead > 0 { munmap(region, lead) }
        let trail = span &- lead &- length
        guard let base = UnsafeMutableRawPointer(bitPattern: aligned) else { return nil }
        if trail > 0 { munmap(base + length, trail) }
        // MADV_HUGEPAGE (14), once for all of it (committing keeps the advice); a failure only
        // means small pages.
        _ = madvise(base, length, 14)
        self.base = base
        self.length = length
        #else
        return nil
        #endif
    }

    /// Makes the first `bytes` usable (at least; rounded up to whole large pages); false when
    /// they are more than the reservation or the system refuses.
    func commit(_ bytes: Int) -> Bool {
        #if os(Linux)
        guard bytes > committed else { return true }
        guard bytes <= length else { return false }
        let page = HugePages.pageLength
        let end = Swift.min(length, (bytes &+ page &- 1) & ~(page &- 1))
        let start = base + committed
        guard mprotect(start, end &- committed, PROT_READ | PROT_WRITE) == 0 else { return false }
        committed = end
        return true
        #else
        return false
        #endif
    }

    /// Gives the address space (and the memory in it) back.
    func release() {
        #if os(Linux)
        munmap(base, length)
        #endif
    }
}
