import Foundation

/// Runs work on a new thread with a stack of a chosen size, as Apple platforms give secondary
/// threads and dispatch queues 512 KiB: the decoders that recurse must stop before such a
/// stack runs out (`StackSpace`), where Linux's 8 MiB default hides an overflow.
public enum SmallStackThread {
    /// `body`'s result, run on a thread whose stack is `stackSize` bytes.
    public static func run<Result: Sendable>(stackSize: Int, _ body: @escaping @Sendable () -> Result) -> Result {
        let box = ResultBox<Result>()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            box.set(body())
            done.signal()
        }
        thread.stackSize = stackSize
        thread.start()
        done.wait()
        return box.get()
    }
}

/// A result handed from the thread to the waiting caller (the semaphore orders the accesses).
private final class ResultBox<Value>: @unchecked Sendable {
    private var value: Value?
    func set(_ value: Value) { self.value = value }
    func get() -> Value {
        guard let value else { preconditionFailure("the thread ended without a result") }
        return value
    }
}
