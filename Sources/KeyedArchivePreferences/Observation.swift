/// Observation of keys: a callback or an `AsyncStream` of new values, for changes made in this
/// process and (through a file watcher) by other processes.

/// A live observation; it ends when cancelled or released.
public final class PreferencesObservation: Sendable {
    private let cancellation: @Sendable () -> Void
    private let cancelled = Protected(false)

    init(_ cancellation: @escaping @Sendable () -> Void) { self.cancellation = cancellation }

    /// Stops the observation.
    public func cancel() {
        let first = cancelled.withLock { cancelled -> Bool in
            defer { cancelled = true }
            return !cancelled
        }
        if first { cancellation() }
    }

    deinit { cancel() }
}

/// The observers of one store.
final class ObserverRegistry: Sendable {
    typealias Handler = @Sendable (PropertyListValue?) -> Void

    private struct Entry {
        var key: String
        var handler: Handler
    }

    private let entries = Protected<[Int: Entry]>([:])
    private let nextID = Protected(0)

    /// The keys someone observes (deduplicated).
    var observedKeys: [String] {
        entries.withLock { Array(Set($0.values.map(\.key))) }
    }

    func add(key: String, handler: @escaping Handler) -> Int {
        let id = nextID.withLock { id -> Int in
            id += 1
            return id
        }
        entries.withLock { $0[id] = Entry(key: key, handler: handler) }
        return id
    }

    func remove(_ id: Int) {
        _ = entries.withLock { $0.removeValue(forKey: id) }
    }

    /// Calls the key's handlers (outside any lock, so they may use the store).
    func notify(key: String, value: PropertyListValue?) {
        let handlers = entries.withLock { $0.values.filter { $0.key == key }.map(\.handler) }
        for handler in handlers { handler(value) }
    }
}

extension Preferences {
    /// Calls `handler` with the new value of `key` (as the search list resolves it; `nil` when
    /// removed) whenever it changes, in this process or, via a file watcher, in another one.
    /// A store's changes arrive one at a time, in the order they were made: the handler runs on
    /// the thread that made or noticed the change, or on one with a later change of the store,
    /// and must not wait for another thread's change to be observed. Keep the returned token:
    /// releasing it ends the observation.
    public func observe(_ key: String, handler: @escaping @Sendable (PropertyListValue?) -> Void) -> PreferencesObservation {
        startWatchingIfNeeded()
        let id = observers.add(key: key, handler: handler)
        let observers = self.observers
        return PreferencesObservation { observers.remove(id) }
    }

    /// The new values of `key` as they change. The stream ends when the consuming task is
    /// cancelled or the stream is released.
    public func changes(forKey key: String) -> AsyncStream<PropertyListValue?> {
        let (stream, continuation) = AsyncStream<PropertyListValue?>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let observation = observe(key) { continuation.yield($0) }
        continuation.onTermination = { _ in observation.cancel() }
        return stream
    }

    /// Calls `handler` with a typed key's new value (its default when removed or unconvertible).
    public func observe<Value>(_ key: PreferenceKey<Value>, handler: @escaping @Sendable (Value) -> Void) -> PreferencesObservation {
        observe(key.name) { value in handler(value.flatMap(Value.init(preferenceValue:)) ?? key.defaultValue) }
    }

    /// A typed key's new values as they change.
    public func changes<Value>(for key: PreferenceKey<Value>) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let observation = observe(key) { continuation.yield($0) }
        continuation.onTermination = { _ in observation.cancel() }
        return stream
    }
}
