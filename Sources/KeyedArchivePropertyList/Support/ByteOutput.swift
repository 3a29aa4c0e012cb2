#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the text writers put bytes: a `[UInt8]`, or a ``GrowableBytes`` that becomes `Data`
/// without a copy.
protocol ByteOutput {
    mutating func append(_ byte: UInt8)
    mutating func append<S: Sequence>(contentsOf bytes: S) where S.Element == UInt8
}

extension Array: ByteOutput where Element == UInt8 {}

/// An output buffer for writers whose size is not known in advance (XML, 88 MB for the W3
/// benchmark file): `malloc`/`realloc` growth (large blocks are remapped, not copied) and a
/// hand-over to `Data` without copying. If memory runs out, further bytes are dropped and
/// ``failed`` is set; the writer turns that into an error.
final class GrowableBytes: ByteOutput {
    private var base: UnsafeMutableRawPointer?
    /// Bytes the buffer has room for.
    private(set) var capacity = 0
    /// Bytes written.
    private(set) var count = 0
    /// True once an allocation failed (bytes were dropped).
    private(set) var failed = false

    init(capacity: Int) {
        reserve(Swift.max(capacity, 64))
        if failed && capacity > 4096 {
            // A guess too large to reserve: start small and grow as needed instead.
            failed = false
            reserve(4096)
        }
    }

    /// Takes over `other`'s bytes and buffer.
    private init(takingOver other: GrowableBytes) {
        base = other.base
        capacity = other.capacity
        count = other.count
        failed = other.failed
    }

    deinit { free(base) }

    /// Hands the bytes written over to a new object, and starts again empty with room for
    /// `capacity` bytes: in `spare`'s buffer when it has that room (`spare` is left empty), else
    /// in a new one. (The text writers keep one output object for good: the hot paths then need
    /// no retain of it, as they would if it could be replaced.)
    func handOver(reserving capacity: Int, reusing spare: GrowableBytes? = nil) -> GrowableBytes {
        let handed = GrowableBytes(takingOver: self)
        count = 0
        failed = false
        if let spare, spare.capacity >= capacity, !spare.failed {
            base = spare.base
            self.capacity = spare.capacity
            spare.base = nil
            spare.capacity = 0
            spare.count = 0
            return handed
        }
        base = nil
        self.capacity = 0
        reserve(Swift.max(capacity, 64))
        return handed
    }

    private func reserve(_ needed: Int) {
        guard needed > capacity, !failed else { return }
        let (doubled, overflow) = capacity.multipliedReportingOverflow(by: 2)
        let newCapacity = Swift.max(needed, overflow ? needed : doubled)
        let grown: UnsafeMutableRawPointer?
        if let base {
            grown = realloc(base, newCapacity)
            HugePages.advise(grown, length: newCapacity)
        } else {
            // Advised already when large.
            grown = HugePages.allocate(newCapacity)
        }
        guard let grown else {
            failed = true
            return
        }
        base = grown
        capacity = newCapacity
    }

    /// Makes room for `length` more bytes and returns where they go (advancing ``count``), or
    /// `nil` when memory ran out (``failed`` is then set and the bytes are dropped).
    @inline(__always)
    private func claim(_ length: Int) -> UnsafeMutableRawPointer? {
        let (needed, overflow) = count.addingReportingOverflow(length)
        guard !overflow else {
            failed = true
            return nil
        }
        if needed > capacity { reserve(needed) }
        guard needed <= capacity, let base else { return nil }
        defer { count = needed }
        return base + count
    }

    @inline(__always)
    func append(_ byte: UInt8) {
        claim(1)?.storeBytes(of: byte, as: UInt8.self)
    }

    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        guard let target = claim(bytes.count) else { return }
        let length = bytes.count
        // Text writers append many pieces of 4 to 16 bytes (tags, short keys and numbers): two
        // overlapping word copies beat a call to memmove for those.
        if length >= 8 && length <= 16 {
            target.storeBytes(of: source.loadUnaligned(as: UInt64.self), as: UInt64.self)
            target.storeBytes(of: source.loadUnaligned(fromByteOffset: length &- 8, as: UInt64.self), toByteOffset: length &- 8, as: UInt64.self)
        } else if length >= 4 && length < 8 {
            target.storeBytes(of: source.loadUnaligned(as: UInt32.self), as: UInt32.self)
            target.storeBytes(of: source.loadUnaligned(fromByteOffset: length &- 4, as: UInt32.self), toByteOffset: length &- 4, as: UInt32.self)
        } else {
            target.copyMemory(from: source, byteCount: length)
        }
    }

    func append<S: Sequence>(contentsOf bytes: S) where S.Element == UInt8 {
        let done: Void? = bytes.withContiguousStorageIfAvailable { append(UnsafeRawBufferPointer($0)) }
        if done == nil { for byte in bytes { append(byte) } }
    }

    /// Appends `length` bytes that `write` fills in (all of them).
    @inline(__always)
    func append(uninitialized length: Int, _ write: (UnsafeMutableRawBufferPointer) -> Void) {
        guard length > 0, let target = claim(length) else { return }
        write(UnsafeMutableRawBufferPointer(start: target, count: length))
    }

    /// `count` copies of `byte`.
    func append(repeating byte: UInt8, count repeats: Int) {
        guard repeats > 0 else { return }
        claim(repeats)?.initializeMemory(as: UInt8.self, repeating: byte, count: repeats)
    }

    /// Passes the bytes written so far to `body`.
    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: count > 0 ? base : nil, count: count))
    }

    /// Forgets the bytes written, keeping the buffer for more.
    func removeAll() {
        count = 0
    }

    /// Forgets the bytes written after the first `length` (which must not be more than ``count``).
    func truncate(to length: Int) {
        count = Swift.max(0, Swift.min(count, length))
    }

    /// The bytes as `Data`, taking over the buffer (the object is empty afterwards).
    func takeData() -> Data {
        guard let base, count > 0 else { return Data() }
        let data = Data(bytesNoCopy: base, count: count, deallocator: .free)
        self.base = nil
        capacity = 0
        count = 0
        return data
    }
}

/// Buffers handed back to be filled again: the binary-to-XML converter's second thread fills
/// its chunks of text in the buffers of chunks the first thread has written out, not in new
/// memory, whose pages the kernel clears at their first use (see ``SplitPolicy/pieceCount``).
final class SpareBuffers: @unchecked Sendable {
    private let spares = Protected<[GrowableBytes]>([])
    /// Buffers larger than this (grown for a long value) are let go, not kept.
    private let largestCapacity: Int
    private let mostKept: Int

    init(largestCapacity: Int, mostKept: Int) {
        self.largestCapacity = largestCapacity
        self.mostKept = mostKept
    }

    /// Keeps `buffer` (emptied) for ``take()``, unless enough are kept or it is too large.
    /// `buffer` must not be used afterwards.
    func put(_ buffer: GrowableBytes) {
        guard !buffer.failed, buffer.capacity <= largestCapacity else { return }
        buffer.removeAll()
        spares.withLock { if $0.count < mostKept { $0.append(buffer) } }
    }

    /// A buffer put back, if there is one.
    func take() -> GrowableBytes? {
        spares.withLock { $0.popLast() }
    }
}
