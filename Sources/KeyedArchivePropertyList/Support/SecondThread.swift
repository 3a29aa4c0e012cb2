#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Work run on a second thread while the caller does its own part, then joined.
///
/// Used where one large input is processed in two halves (the binary reader's offset-table
/// pass, the binary-to-XML converter). The work usually reads the caller's borrowed bytes, so
/// every path of the caller joins before those bytes go away (`defer { _ = thread.join() }`).
///
/// The thread is a thread of its own (`pthread_create`), not a work item on a shared queue: the
/// caller blocks in ``join()``, and work queued behind other work on a pool the caller may itself
/// be occupying (a dispatch queue, Swift concurrency's pool) could then wait for a long time. If
/// no thread can be started, the work runs on the caller's thread before `init` returns.
///
/// `@unchecked Sendable`: `work` and `result` are used by one thread at a time: the worker between
/// its start and its exit, the caller only after `pthread_join` (or, without a thread, in `init`).
package final class SecondThread<Result>: @unchecked Sendable {
    private var work: (() -> Result)?
    private var result: Result?
    #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
    private var thread: pthread_t?
    #endif
    private var joined = false
    /// True when the work runs on a thread of its own.
    private var isBesideCaller = false

    /// Starts `work` at once on another thread (or runs it now if none can be started).
    package convenience init(_ work: @escaping () -> Result) {
        self.init(work: work, runsHereWithoutThread: true)
    }

    private init(work: @escaping () -> Result, runsHereWithoutThread: Bool) {
        self.work = work
        if startThread() {
            isBesideCaller = true
        } else if runsHereWithoutThread {
            run()
        } else {
            self.work = nil
        }
    }

    /// Starts `work` on another thread, or returns nil when no thread can be started: for work
    /// that waits for the caller, which must not run on the caller's own thread.
    package static func beside(_ work: @escaping () -> Result) -> SecondThread? {
        let thread = SecondThread(work: work, runsHereWithoutThread: false)
        return thread.isBesideCaller ? thread : nil
    }

    /// Starts the thread that calls ``run()``; false when none could be started.
    private func startThread() -> Bool {
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        // The thread owns the body (and through it this object) until the work has run.
        let context = Unmanaged.passRetained(ThreadBody { [self] in run() }).toOpaque()
        #if canImport(Glibc)
        var handle = pthread_t()
        #else
        var handle: pthread_t?  // a pointer type on Darwin and Musl
        #endif
        let status = pthread_create(&handle, nil, { context in
            #if !canImport(Darwin)
            guard let context else { return nil }
            #endif
            Unmanaged<ThreadBody>.fromOpaque(context).takeRetainedValue().body()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<ThreadBody>.fromOpaque(context).release()
            return false
        }
        thread = handle
        return true
        #else
        return false
        #endif
    }

    private func run() {
        result = work?()
        work = nil
    }

    /// Waits for the work and hands over its result (nil on every later call).
    package func join() -> Result? {
        guard !joined else { return nil }
        joined = true
        #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
        if let thread { pthread_join(thread, nil) }
        #endif
        defer { result = nil }
        return result
    }

    /// True when a second thread can run beside the caller (more than one core).
    package static var hasSpareCore: Bool { processHasSpareCore }

    /// Whether work on `count` items goes to two threads: from `threshold` items (at least two)
    /// on, on a machine with a spare core; or on any machine when a test lowered the threshold
    /// below the `usual` one (to reach the two-thread path on small inputs).
    static func splits(_ count: Int, from threshold: Int, usually usual: Int) -> Bool {
        count >= Swift.max(2, threshold) && (hasSpareCore || threshold < usual)
    }
}

/// Whether the process may use more than one core, asked once. On Linux
/// `ProcessInfo.activeProcessorCount` reads the cgroup's cpuset and CPU quota files at every call
/// (eight system calls, about 14 µs here; a read of a 130 KB file, which asks once, ran 1.078x
/// as fast without them). A quota changed while the process runs only changes whether large
/// inputs are split, never a result.
private let processHasSpareCore = ProcessInfo.processInfo.activeProcessorCount > 1

/// What a started thread runs: a non-generic box, because a C function pointer cannot capture
/// the generic context of ``SecondThread``.
private final class ThreadBody {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

/// The thread that made this value, to tell whether work given to ``SecondThread`` runs beside
/// it or on it (no thread could be started): work that waits for the caller must not wait when
/// it runs on the caller's own thread.
struct CallingThread: @unchecked Sendable {
    #if canImport(Glibc) || canImport(Musl) || canImport(Darwin)
    private let thread = pthread_self()

    /// True on the thread that made this value.
    var isCurrent: Bool { pthread_equal(thread, pthread_self()) != 0 }
    #else
    /// Without threads, work always runs on the caller's thread.
    var isCurrent: Bool { true }
    #endif
}
