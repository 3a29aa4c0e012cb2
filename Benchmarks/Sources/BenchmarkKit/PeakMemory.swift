import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Peak resident memory of the current process around one operation.
///
/// On Linux the kernel's high-water mark (VmHWM) is reset by writing "5" to
/// /proc/self/clear_refs after the inputs are built, so the peak covers the operation alone;
/// the baseline is VmRSS at that moment. Elsewhere (or when the reset is refused) the peak is the
/// whole process's (ru_maxrss), an upper bound, and the method says so.
public enum PeakMemory {
    /// The state taken before the operation.
    public struct Baseline {
        /// Resident bytes just before the operation.
        public var rssBytes: Int?
        /// True when the high-water mark was reset.
        public var reset: Bool
    }

    /// Keeps freed heap memory in the process instead of returning it to the kernel (glibc:
    /// no trimming of the heap top, and blocks up to 32 MiB from the heap instead of mappings of
    /// their own). Returns false where that cannot be set. For `--keep-freed-heap`: on this VM,
    /// memory given back to the kernel is slow to get back, and the runs after one that freed
    /// a gigabyte paid for it (see Docs/PerformanceHistory.md, "Scaling and nesting as series").
    @discardableResult
    public static func keepFreedHeap() -> Bool {
        #if canImport(Glibc)
        guard let mallopt = glibcFunction("mallopt", as: (@convention(c) (Int32, Int32) -> Int32).self) else { return false }
        // M_TRIM_THRESHOLD is -1, M_MMAP_THRESHOLD -3 (at most 32 MiB on 64-bit).
        return mallopt(-1, Int32.max) == 1 && mallopt(-3, 32 << 20) == 1
        #else
        return false
        #endif
    }

    #if canImport(Glibc)
    /// A glibc allocator function looked up by name: `malloc_trim` and `mallopt` (with its
    /// constants) are not in the Glibc module map.
    private static func glibcFunction<F>(_ name: String, as type: F.Type) -> F? {
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), name).map { unsafeBitCast($0, to: type) }
    }
    #endif

    /// Resets the high-water mark (where possible) and records the baseline.
    public static func begin() -> Baseline {
        #if canImport(Glibc)
        // Give freed heap pages back first: otherwise the operation reuses pages that are already
        // resident (left over from building the inputs) and its peak is undercounted.
        if let trim = glibcFunction("malloc_trim", as: (@convention(c) (Int) -> Int32).self) { _ = trim(0) }
        #endif
        let reset = (try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)) != nil
        return Baseline(rssBytes: status("VmRSS") ?? maxRSS(), reset: reset)
    }

    /// The peak above `baseline` and how it was measured.
    public static func end(_ baseline: Baseline) -> (aboveBaseline: Int?, method: String) {
        let peak = status("VmHWM") ?? maxRSS()
        guard let peak, let rss = baseline.rssBytes else { return (nil, "unavailable") }
        let method = baseline.reset ? "VmHWM after clear_refs reset" : "process max RSS (upper bound)"
        return (max(0, peak - rss), method)
    }

    /// A field of /proc/self/status in bytes ("VmRSS", "VmHWM"), or `nil` off Linux.
    public static func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            let digits = line.split(separator: " ").compactMap { Int($0) }
            if let kilobytes = digits.first { return kilobytes * 1024 }
        }
        return nil
    }

    /// getrusage's ru_maxrss in bytes (kilobytes on Linux, bytes on Darwin).
    public static func maxRSS() -> Int? {
        var usage = rusage()
        #if canImport(Glibc)
        let who = __rusage_who_t(RUSAGE_SELF.rawValue)
        #else
        let who = RUSAGE_SELF
        #endif
        guard getrusage(who, &usage) == 0 else { return nil }
        #if canImport(Darwin)
        return Int(usage.ru_maxrss)
        #else
        return Int(usage.ru_maxrss) * 1024
        #endif
    }
}
