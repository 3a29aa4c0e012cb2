internal import CKeyedArchiveShims
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// Shared by every layer that keeps state across threads (the class registry, the preferences
// store): the mutex lives at a stable heap address, as pthread requires.

/// A mutual-exclusion lock over a `pthread_mutex_t` (FoundationEssentials has no lock and the
/// Synchronization module's `Mutex` needs macOS 15).
package final class Lock: @unchecked Sendable {
    fileprivate let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// A lock; a `recursive` one may be taken again by the thread that holds it.
    package init(recursive: Bool = false) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        if recursive {
            var attributes = pthread_mutexattr_t()
            pthread_mutexattr_init(&attributes)
            pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE))
            pthread_mutex_init(mutex, &attributes)
            pthread_mutexattr_destroy(&attributes)
        } else {
            pthread_mutex_init(mutex, nil)
        }
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A value guarded by a ``Lock``.
package final class Protected<Value>: @unchecked Sendable {
    private let lock = Lock()
    /// Unchecked: every access is under the lock, which already excludes others (a dynamic
    /// check cost each use about 80 instructions).
    @exclusivity(unchecked) private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        try lock.withLock { try body(&value) }
    }
}

/// An `Int?` that any thread reads and writes without a lock, each read seeing a whole value
/// written before it: for settings read at every archive (tests' overrides) and answers worked
/// out once per process, where a ``Protected`` read (a lock and an unlock) was about 400
/// instructions of a small archive's 75,000. `nil` is stored as `Int.min`, which is therefore
/// not a value it can hold.
package final class AtomicOptionalInt: @unchecked Sendable {
    private let word: UnsafeMutablePointer<CLong>

    /// A word holding `value`.
    package init(_ value: Int? = nil) {
        word = .allocate(capacity: 1)
        word.initialize(to: CLong(value ?? Int.min))
    }

    deinit { word.deallocate() }

    /// The value last stored (acquire, so what was written before that store is seen too).
    package var value: Int? {
        get {
            let raw = Int(keyed_archive_load_acquire(word))
            return raw == Int.min ? nil : raw
        }
        set { keyed_archive_store_release(word, CLong(newValue ?? Int.min)) }
    }
}

/// A FIFO of values passed from one thread to another: ``put(_:)`` never blocks, ``take()``
/// waits until there is something to take.
///
/// It lets a producer hand over its results while it is still working, so that the consumer can
/// pass on the early ones before the late ones exist (the binary-to-XML converter's second
/// thread hands over its text in chunks this way).
///
/// `@unchecked Sendable`: the values are only touched under the mutex, each by one side at a
/// time: a value put is the producer's no more.
package final class HandoffQueue<Element>: @unchecked Sendable {
    private let lock = Lock()
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Put, oldest first.
    private var incoming: [Element] = []
    /// Moved over from `incoming` when it ran out, oldest last: each is let go as it is taken.
    private var outgoing: [Element] = []

    package init() {
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    /// Appends `element` and wakes a thread waiting in ``take()``.
    package func put(_ element: Element) {
        lock.withLock {
            incoming.append(element)
            pthread_cond_signal(condition)
        }
    }

    /// Lets go of every element not taken yet.
    package func removeAll() {
        lock.withLock {
            incoming.removeAll()
            outgoing.removeAll()
        }
    }

    /// True when nothing is waiting to be taken (tests: whether a producer has put more).
    package var isEmpty: Bool {
        lock.withLock { incoming.isEmpty && outgoing.isEmpty }
    }

    /// Removes and returns the oldest element, waiting for one if there is none yet.
    package func take() -> Element {
        lock.withLock {
            while true {
                if let element = outgoing.popLast() { return element }
                if incoming.isEmpty {
                    pthread_cond_wait(condition, lock.mutex)
                } else {
                    outgoing = incoming.reversed()
                    incoming.removeAll(keepingCapacity: true)
                }
            }
        }
    }
}
