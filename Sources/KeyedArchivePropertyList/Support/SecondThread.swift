import Dispatch

/// Work run on a second thread while the caller does its own part, then joined.
///
/// Used where one large input is processed in two halves (the binary reader's offset-table
/// pass, the binary-to-XML converter). The work usually reads the caller's borrowed bytes, so
/// every path of the caller joins before those bytes go away (`defer { _ = thread.join() }`).
///
/// `@unchecked Sendable`: `work` and `result` are used by one thread at a time: the worker between
/// the start and `done.leave()`, the caller only after `done.wait()`; the group orders them.
final class SecondThread<Result>: @unchecked Sendable {
    private var work: (() -> Result)?
    private var result: Result?
    private let done = DispatchGroup()

    /// Starts `work` at once on another thread.
    init(_ work: @escaping () -> Result) {
        self.work = work
        done.enter()
        DispatchQueue.global().async { [self] in
            result = self.work?()
            self.work = nil
            done.leave()
        }
    }

    /// Waits for the work and hands over its result (nil on every later call).
    func join() -> Result? {
        done.wait()
        defer { result = nil }
        return result
    }

    /// True when a second thread can run beside the caller (more than one core).
    static var hasSpareCore: Bool { ProcessInfo.processInfo.activeProcessorCount > 1 }
}
