#if canImport(Glibc)
import Glibc
#endif

/// Asks Linux to back the large buffers of whole-file work (a file read into memory, XML text
/// of tens of megabytes, a serialized binary property list) with 2 MiB pages.
///
/// Why: most of the time of filling a fresh buffer is the kernel providing its pages, one
/// fault per 4 KiB page. On this project's test VM a fresh 4 KiB page costs about 2.8 µs and a
/// 2 MiB page about 1 µs per 4 KiB of it; reading W3's 50 MB into fresh memory takes 75 ms
/// with small pages and 38 ms with large ones. See `Docs/PerformanceHistory.md` (session 19).
///
/// Only the 2 MiB-aligned whole pages inside a buffer are advised, so nothing outside it is
/// affected, and only buffers of 2 MiB or more. The advice is a hint: where transparent huge
/// pages are off (`never`) or not supported, or on other systems, nothing changes; where they
/// are `always`, nothing changes either. Memory use does not grow: the advised pages lie inside
/// the buffer, which is written in full. The cost to know: with the kernel's default `defrag`
/// setting (`madvise`), a fault in an advised buffer may compact memory to find a large page
/// when free memory is fragmented (an earlier test VM showed reads of 13 ms and 158 ms); the
/// kernel falls back to small pages when it cannot.
enum HugePages {
    /// The large page size, and the least length a buffer needs to hold one.
    static let pageLength = 2 << 20

    /// `malloc(length)`, but a buffer of ``pageLength`` or more starts on a large-page boundary
    /// and is advised (so that all of it can be large pages, a 2 MiB chunk of text included).
    /// Free it with `free`; `realloc` keeps working on it (then call ``advise(_:length:)``).
    static func allocate(_ length: Int) -> UnsafeMutableRawPointer? {
        #if os(Linux)
        if length >= pageLength {
            var pointer: UnsafeMutableRawPointer?
            guard posix_memalign(&pointer, pageLength, length) == 0, let pointer else { return nil }
            adviseLarge(pointer, length: length)
            return pointer
        }
        #endif
        return malloc(Swift.max(length, 1))
    }

    /// Advises the whole large pages inside the buffer at `base` of `length` bytes (after a
    /// `realloc` has grown or moved it).
    @inline(__always)
    static func advise(_ base: UnsafeMutableRawPointer?, length: Int) {
        #if os(Linux)
        guard length >= pageLength, let base else { return }
        adviseLarge(base, length: length)
        #endif
    }

    /// `count` copies of `value` in an array whose buffer, when it is ``tableMinimumLength`` or
    /// more, is advised (its whole large pages) before it is first written: for tables probed
    /// at random (the writers' uniquing slots), where with 4 KiB pages nearly every probe of a
    /// table of megabytes also misses the TLB.
    static func array<Element>(repeating value: Element, count: Int) -> [Element] {
        let count = Swift.max(count, 0)
        return [Element](unsafeUninitializedCapacity: count) { buffer, initialized in
            let used = UnsafeMutableBufferPointer(rebasing: buffer[0..<count])
            let (length, overflow) = count.multipliedReportingOverflow(by: MemoryLayout<Element>.stride)
            if !overflow, length >= tableMinimumLength { advise(UnsafeMutableRawPointer(used.baseAddress), length: length) }
            used.initialize(repeating: value)
            initialized = count
        }
    }

    /// The least length of a table ``array(repeating:count:)`` advises (8 MiB). An array's
    /// buffer comes from `malloc`, not aligned to 2 MiB, so a smaller one holds at most three
    /// whole large pages; measured (session 20), advising W2's tables of 4-6 MB made its archive
    /// about 2% slower, while W3's and W5's tables of 16 MB and more wrote 2-3% faster.
    static let tableMinimumLength = 4 * pageLength

    #if os(Linux)
    private static func adviseLarge(_ base: UnsafeMutableRawPointer, length: Int) {
        let start = UInt(bitPattern: base)
        let (end, overflow) = start.addingReportingOverflow(UInt(length))
        let mask = UInt(pageLength - 1)
        guard !overflow, start <= UInt.max - mask else { return }
        let first = (start + mask) & ~mask, last = end & ~mask
        guard last > first, let aligned = UnsafeMutableRawPointer(bitPattern: first) else { return }
        // MADV_HUGEPAGE (14). A failure (EINVAL where unsupported) only means small pages.
        _ = madvise(aligned, Int(last - first), 14)
    }
    #endif
}
