import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A preferences domain: Apple's `UserDefaults` model, persisted as a binary property list, safe
/// across threads, processes and crashes.
///
/// Lookups go through Apple's search list: the **argument domain** (`-Key value` in the process
/// arguments), this **application domain** (the file `DIRECTORY/DOMAIN.plist`), the **global
/// domain** shared by every program of the user (`DIRECTORY/.GlobalPreferences.plist`) and the
/// volatile **registration domain** (``register(defaults:)``, never written).
///
/// Changes are visible in this process at once and written to disk shortly after (coalesced,
/// see ``Configuration/writeDelay``), at exit, or when ``synchronize()`` is called. Each write is
/// a read-modify-write under an exclusive file lock that re-reads the file and applies only the
/// keys this process changed, so processes writing different keys never lose each other's
/// values; the file is replaced atomically (temporary file, fsync, rename, fsync of the
/// directory). Reads notice a file changed by another process (its inode, size and modification
/// time) and reload it.
///
/// ```swift
/// let preferences = try Preferences(domain: "com.example.app")
/// preferences.register(defaults: ["FontSize": 12])
/// preferences.set(true, forKey: "NightMode")
/// preferences.bool(forKey: "NightMode")   // true
/// try preferences.synchronize()           // on disk now
/// ```
public final class Preferences: Sendable {
    /// How a store finds and writes its files.
    public struct Configuration: Sendable {
        /// The directory of the domain files; `nil` means ``PreferencesDirectory/default``.
        public var directory: String?
        /// The argument domain; `nil` means the current process's (``ArgumentDomain/current``).
        /// Pass `[:]` to ignore the process arguments.
        public var argumentDomain: [String: PropertyListValue]?
        /// The global domain's name in the directory, or `nil` for none.
        public var globalDomain: String?
        /// A domain whose file grows past this many bytes triggers a warning (Apple's limit
        /// is 4 MB, past which writes fail there).
        public var sizeBudget: Int
        /// How long after a change the write happens, coalescing changes made in between;
        /// `nil` writes on every change (slower, each change durable when `set` returns, unless
        /// the write fails: that goes to `warningHandler`; ``Preferences/synchronize()`` throws).
        public var writeDelay: Duration?
        /// Where warnings go (size budget, unreadable files, failed background writes);
        /// standard error by default.
        public var warningHandler: @Sendable (String) -> Void

        /// Creates a configuration; every argument has the default described on its property.
        public init(
            directory: String? = nil, argumentDomain: [String: PropertyListValue]? = nil,
            globalDomain: String? = Preferences.globalDomainName, sizeBudget: Int = 4 << 20,
            writeDelay: Duration? = .milliseconds(50),
            warningHandler: @escaping @Sendable (String) -> Void = Preferences.standardErrorWarning
        ) {
            self.directory = directory
            self.argumentDomain = argumentDomain
            self.globalDomain = globalDomain
            self.sizeBudget = sizeBudget
            self.writeDelay = writeDelay
            self.warningHandler = warningHandler
        }
    }

    /// The file name (without `.plist`) of the global domain, as on Apple platforms.
    public static let globalDomainName = ".GlobalPreferences"

    /// Writes a warning to standard error.
    public static let standardErrorWarning: @Sendable (String) -> Void = { message in
        var text = "KeyedArchivePreferences: " + message + "\n"
        text.withUTF8 { buffer in
            _ = buffer.baseAddress.map { Glue.write(2, $0, buffer.count) }
        }
    }

    /// The domain's name.
    public let domain: String
    /// The directory the domain's file is in.
    public let directory: String
    /// The domain's file.
    public let path: String
    let configuration: Configuration
    private let lockPath: String
    private let globalPath: String?
    private let state: Protected<State>
    /// Serialises this process's writes, so two threads never write the file at once.
    private let flushLock = Lock()
    /// Held while telling observers of a change (recursive: an observer may set a value).
    private let deliveryLock = Lock(recursive: true)
    let observers = ObserverRegistry()
    private let watcher = Protected<(any FileWatcher)?>(nil)

    /// A change not yet written; `nil` value = removed. The version tells whether a newer change
    /// to the same key arrived while a write was in progress.
    private struct Pending {
        var value: PropertyListValue?
        var version: UInt64
    }

    private struct State {
        var arguments: [String: PropertyListValue]
        var registration: [String: PropertyListValue] = [:]
        var persisted: [String: PropertyListValue] = [:]
        var persistedStamp: FileStamp?
        var global: [String: PropertyListValue] = [:]
        var globalStamp: FileStamp?
        var pending: [String: Pending] = [:]
        var version: UInt64 = 0
        var flushScheduled = false
        /// Changes of observed keys not yet told to observers, oldest first, numbered in the
        /// order they were made (see ``Preferences/deliver(through:)``).
        var outbox: [(number: UInt64, key: String, value: PropertyListValue?)] = []
        var changeNumber: UInt64 = 0

        func value(forKey key: String) -> PropertyListValue? {
            if let value = arguments[key] { return value }
            if let change = pending[key] {
                if let value = change.value { return value }
            } else if let value = persisted[key] {
                return value
            }
            return global[key] ?? registration[key]
        }

        /// The application domain as this process sees it (stored values plus unwritten changes).
        var applicationDomain: [String: PropertyListValue] {
            var result = persisted
            for (key, change) in pending { result[key] = change.value }
            return result
        }
    }

    /// Opens (without creating anything yet) the domain `domain`.
    public init(domain: String, configuration: Configuration = Configuration()) throws {
        try PreferencesDirectory.validate(domain: domain)
        self.domain = domain
        self.configuration = configuration
        let directory = configuration.directory ?? PreferencesDirectory.default
        try PreferencesDirectory.validate(directory: directory)
        self.directory = directory
        self.path = PreferencesDirectory.path(ofDomain: domain, in: directory)
        self.lockPath = directory + "/." + domain + ".plist.lock"
        if let global = configuration.globalDomain, global != domain {
            try PreferencesDirectory.validate(domain: global)
            globalPath = PreferencesDirectory.path(ofDomain: global, in: directory)
        } else {
            globalPath = nil
        }
        state = Protected(State(arguments: configuration.argumentDomain ?? ArgumentDomain.current))
        PreferencesRegistry.shared.add(self)
        refresh()
    }

    deinit {
        watcher.withLock { $0?.stop() }
        flushQuietly()
    }

    // MARK: Reading

    /// The value for `key` from the first domain of the search list that has it.
    public func object(forKey key: String) -> PropertyListValue? {
        refresh()
        return state.withLock { $0.value(forKey: key) }
    }

    /// Every key and value visible through the search list.
    public func dictionaryRepresentation() -> [String: PropertyListValue] {
        refresh()
        return state.withLock { state in
            var result = state.registration
            result.merge(state.global) { $1 }
            result.merge(state.applicationDomain) { $1 }
            result.merge(state.arguments) { $1 }
            return result
        }
    }

    /// The application domain alone: what is (or is about to be) stored in this domain's file.
    public func persistentDomain() -> [String: PropertyListValue] {
        refresh()
        return state.withLock { $0.applicationDomain }
    }

    /// The volatile registration domain.
    public var registeredDefaults: [String: PropertyListValue] {
        state.withLock { $0.registration }
    }

    /// The argument domain this store uses.
    public var argumentDomain: [String: PropertyListValue] {
        state.withLock { $0.arguments }
    }

    // MARK: Writing

    /// Adds values to the registration domain: the fallback for keys no other domain has.
    /// They are never written to disk. Later registrations replace earlier ones key by key.
    public func register(defaults: [String: PropertyListValue]) {
        mutate { state in state.registration.merge(defaults) { $1 } }
    }

    /// Registers the dictionary stored in a property-list file (any format) as defaults.
    @discardableResult
    public func register(defaultsFromFile path: String) throws -> [String: PropertyListValue] {
        guard let (bytes, _) = try SystemFiles.read(path) else { throw PreferencesError("no such file", path: path) }
        let value = try PropertyList.decode(Data(bytes))
        guard let dictionary = PreferenceConversions.dictionary(value) else {
            throw PreferencesError("the defaults file must hold a dictionary with string keys", path: path)
        }
        register(defaults: dictionary)
        return dictionary
    }

    /// Sets a value in the application domain; `nil` removes it.
    ///
    /// A value a preferences file cannot hold (see ``storageProblem(_:)``) is not stored: the
    /// key keeps its value and `warningHandler` is told why, as `NSUserDefaults` refuses a
    /// non-property-list object.
    public func set(_ value: PropertyListValue?, forKey key: String) {
        if let value, let problem = Self.storageProblem(value) {
            configuration.warningHandler("not storing \(key) in domain \(domain): \(problem)")
            return
        }
        var scheduleWrite = false
        mutate { state in
            state.version &+= 1
            state.pending[key] = Pending(value: value, version: state.version)
            if !state.flushScheduled {
                state.flushScheduled = true
                scheduleWrite = true
            }
        }
        // Without a delay every set writes (or waits for the write that took its change): a
        // set that found another thread's write scheduled returned before that write had run.
        guard let delay = configuration.writeDelay else {
            flushQuietly()
            return
        }
        guard scheduleWrite else { return }
        // Clamped to a day: a configured delay of centuries must not overflow the arithmetic.
        let seconds = min(max(delay.components.seconds, 0), 86_400)
        let nanoseconds = seconds * 1_000_000_000 + max(0, delay.components.attoseconds / 1_000_000_000)
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [weak self] in
            self?.flushQuietly()
        }
    }

    /// Removes a value from the application domain (other domains may still supply one).
    public func removeObject(forKey key: String) {
        set(nil as PropertyListValue?, forKey: key)
    }

    /// Removes every key of the application domain.
    public func removeAll() {
        let keys = persistentDomain().keys
        for key in keys { removeObject(forKey: key) }
    }

    /// Writes this process's changes to disk (merged with other processes' under the file lock)
    /// and reads changes made by others. When it returns without throwing, the data is durable.
    public func synchronize() throws {
        try flush()
        refresh()
    }

    // MARK: Internals

    /// Applies a change to the state and notifies observers of keys whose value changed.
    private func mutate(_ body: (inout State) -> Void) {
        deliver(through: change(body))
    }

    /// Applies a change to the state and puts the observed keys whose value changed in the
    /// outbox, in the same lock, so the outbox has changes in the order they were made; returns
    /// the number of the last one, for the caller to pass to ``deliver(through:)`` (apart, so
    /// that a flush tells observers after it lets go of its lock).
    private func change(_ body: (inout State) -> Void) -> UInt64? {
        let observed = observers.observedKeys
        return state.withLock { state in
            let before = observed.map { state.value(forKey: $0) }
            body(&state)
            var last: UInt64?
            for (key, old) in zip(observed, before) {
                let new = state.value(forKey: key)
                guard new != old else { continue }
                state.changeNumber &+= 1
                state.outbox.append((state.changeNumber, key, new))
                last = state.changeNumber
            }
            return last
        }
    }

    /// Tells observers of the changes in the outbox up to change `number` (the caller's own),
    /// oldest first, one at a time, under the delivery lock and outside the state's. When each
    /// thread told observers of its own changes, two threads could tell theirs swapped, and an
    /// observer's last value was not the key's. Changes made after the caller's are left to the
    /// threads that made them (a thread that kept delivering while others kept changing keys
    /// could be held for seconds); an observer that sets a value (the lock is recursive) has
    /// its change told before it returns, after any older one still waiting.
    private func deliver(through number: UInt64?) {
        guard let number else { return }
        deliveryLock.withLock {
            while let next = state.withLock({ state -> (number: UInt64, key: String, value: PropertyListValue?)? in
                guard let first = state.outbox.first, first.number <= number else { return nil }
                return state.outbox.removeFirst()
            }) {
                observers.notify(key: next.key, value: next.value)
            }
        }
    }

    /// Reloads the domain and global files when they changed on disk since last read.
    func refresh() {
        let stamp = FileStamp.of(path)
        let globalStamp = globalPath.flatMap(FileStamp.of)
        let (known, knownGlobal) = state.withLock { ($0.persistedStamp, $0.globalStamp) }
        let fresh = known == stamp, globalFresh = knownGlobal == globalStamp
        if fresh && globalFresh { return }
        let loaded = fresh ? nil : load(path)
        let loadedGlobal = globalFresh ? nil : globalPath.map(load)
        // Warned after the stamps are recorded: a warning handler that reads the store must
        // not find the file new again and load (and warn) without end.
        defer {
            for warning in [loaded?.warning, loadedGlobal?.warning].compactMap({ $0 }) { configuration.warningHandler(warning) }
        }
        mutate { state in
            // Skip when a write of ours (or another refresh) updated the state meanwhile: what
            // we read may be older than what it recorded.
            if let loaded, state.persistedStamp == known {
                state.persisted = loaded.values
                state.persistedStamp = loaded.stamp
            }
            if let loadedGlobal, state.globalStamp == knownGlobal {
                state.global = loadedGlobal.values
                state.globalStamp = loadedGlobal.stamp
            }
        }
    }

    /// Reads a domain file; a missing file is empty, an unreadable one is empty with a warning
    /// for the caller to give (as Apple ignores a damaged file) and keeps its stamp so it is not
    /// re-read on every lookup.
    private func load(_ path: String) -> (values: [String: PropertyListValue], stamp: FileStamp?, warning: String?) {
        do {
            guard let file = try Self.readDomainFile(path) else { return ([:], nil, nil) }
            if let unreadable = file.unreadable {
                return ([:], file.stamp, "ignoring unreadable preferences file \(path): \(unreadable.error)")
            }
            return (Self.dictionary(of: file.entries), file.stamp, nil)
        } catch {
            return ([:], FileStamp.of(path), "cannot read \(path): \(error)")
        }
    }

    /// Why the domain file at `path` cannot be read (it is there but is not a readable file, or
    /// does not decode), or nil when it reads or is not there: for tools that must not take a
    /// damaged domain as an empty one (`karchive defaults export` wrote `{}` and exited 0).
    package static func readProblem(ofDomainFile path: String) -> String? {
        do {
            return try readDomainFile(path)?.unreadable.map { "\($0.error)" }
        } catch {
            return "\(error)"
        }
    }

    /// A domain file as read: its entries and stamp, and when it does not decode, its bytes
    /// and why (its entries are then empty).
    struct DomainFile {
        var entries: [PropertyListDictionary.Entry] = []
        var stamp: FileStamp?
        var unreadable: (bytes: [UInt8], error: any Error)?
    }

    /// What a damaged domain file's bytes are kept as, beside it, when a write replaces it
    /// (`DOMAIN.plist.unreadable`: not a `.plist`, so not listed as a domain).
    public static let unreadableSuffix = ".unreadable"

    /// How many times a domain file that is empty or does not decode is read again, and how
    /// long apart.
    static let rereadAttempts = 3
    static let rereadPause: useconds_t = 20_000

    /// Reads and decodes a domain file; nil when there is none. A file that is empty or does not
    /// decode is read again (``rereadAttempts`` times, ``rereadPause`` apart) before it is taken
    /// as empty or damaged: a program that rewrites it in place (`cp`, an editor that does not
    /// save atomically) leaves it empty, then half written, for a moment, and a write that took that moment's
    /// bytes as damaged replaced the file, losing every key. CFPreferences retries its parse
    /// for the same reason.
    static func readDomainFile(_ path: String) throws -> DomainFile? {
        var attempt = 0
        while true {
            guard let (bytes, stamp) = try SystemFiles.read(path) else { return nil }
            let isLastAttempt = attempt == rereadAttempts
            if bytes.isEmpty {
                // What a rewrite in place (`O_TRUNC`) leaves first; still empty, it is an empty
                // domain (no writer of ours leaves one).
                if isLastAttempt { return DomainFile(stamp: stamp) }
            } else {
                do {
                    return DomainFile(entries: try decodeDomainEntries(bytes), stamp: stamp)
                } catch {
                    if isLastAttempt { return DomainFile(stamp: stamp, unreadable: (bytes, error)) }
                }
            }
            attempt += 1
            usleep(rereadPause)
        }
    }

    /// Why `value` cannot be stored in a preferences file, or nil. A file holds what Apple's
    /// preferences hold (no null, UID or set), dictionaries with string keys, and containers
    /// nested no deeper than the readers accept (``DecodingLimits/maximumDepth``, the domain's
    /// own dictionary counting as one level): a deeper value was written, then the file was
    /// refused by every reader, and the next write replaced it as damaged, losing every key.
    public static func storageProblem(_ value: PropertyListValue) -> String? {
        let deepest = DecodingLimits.default.maximumDepth - 1
        var pending: [(value: PropertyListValue, depth: Int)] = [(value, 1)]
        while let (value, depth) = pending.popLast() {
            switch value {
            case .null: return "null is not a value a preferences file can hold"
            case .uid: return "a UID is not a value a preferences file can hold"
            case .set: return "a set is not a value a preferences file can hold (store an array)"
            case .array(let items):
                guard depth <= deepest else { return "containers nested more than \(deepest) deep" }
                for item in items { pending.append((item, depth + 1)) }
            case .dictionary(let dictionary):
                guard depth <= deepest else { return "containers nested more than \(deepest) deep" }
                for entry in dictionary.entries {
                    guard entry.key.stringValue != nil else { return "a dictionary key that is not a string (\(entry.key.typeName))" }
                    pending.append((entry.value, depth + 1))
                }
            case .bool, .integer, .real, .date, .data, .string:
                break
            }
        }
        return nil
    }

    /// A domain file's entries as stored: every key once per spelling. (A `[String: _]`
    /// dictionary is one key for spellings Swift calls equal, `café` composed and decomposed,
    /// where Apple compares keys literally; the writer keeps the file's own entries so that a
    /// write of one key never drops another's.)
    static func decodeDomainEntries(_ bytes: [UInt8]) throws -> [PropertyListDictionary.Entry] {
        guard case .dictionary(let dictionary) = try PropertyList.decode(Data(bytes)),
              dictionary.entries.allSatisfy({ $0.key.stringValue != nil })
        else {
            throw PreferencesError("a preferences file must hold a dictionary with string keys")
        }
        return dictionary.entries
    }

    /// The store's view of a domain's entries: of the spellings of a key (see
    /// ``decodeDomainEntries(_:)``), the last in the order the writer stores them
    /// (``sortedEntries(_:)``), whatever order the file has.
    static func dictionary(of entries: [PropertyListDictionary.Entry]) -> [String: PropertyListValue] {
        var result: [String: PropertyListValue] = [:]
        for entry in sortedEntries(entries) {
            // A later spelling replaces the key too, not only the value.
            if let key = entry.key.stringValue { PreferenceConversions.assign(entry.value, to: key, in: &result) }
        }
        return result
    }

    /// Entries in the order the writer stores them: by key, equal ones (other spellings) by
    /// their bytes; stable, so a key a hand-made file repeats keeps its order.
    static func sortedEntries(_ entries: [PropertyListDictionary.Entry]) -> [PropertyListDictionary.Entry] {
        entries.enumerated().sorted { left, right in
            let (a, b) = (left.element.key.stringValue ?? "", right.element.key.stringValue ?? "")
            if a != b { return a < b }
            if !a.utf8.elementsEqual(b.utf8) { return a.utf8.lexicographicallyPrecedes(b.utf8) }
            return left.offset < right.offset
        }.map(\.element)
    }

    /// Applies changes to a file's entries so that the store's view of
    /// them (``dictionary(of:)``) has each change and nothing else moves: a set replaces the
    /// value of the entry the view shows for that key (or adds one), and other spellings of it
    /// stay as the file had them; a removal removes every spelling, as the view's key is gone.
    /// A set key that a hand-made file repeats byte for byte keeps only the entry it updated.
    static func apply(_ changes: [String: PropertyListValue?], to entries: inout [PropertyListDictionary.Entry]) {
        entries = sortedEntries(entries)
        var shown: [String: Int] = [:]
        for (index, entry) in entries.enumerated() {
            if let key = entry.key.stringValue { shown[key] = index }
        }
        var removedKeys = Set<String>()
        var updated = Set<Int>()
        for (key, value) in changes {
            if let value {
                if let index = shown[key] {
                    entries[index].value = value
                    updated.insert(index)
                } else {
                    shown[key] = entries.count
                    updated.insert(entries.count)
                    entries.append((PropertyListValue(key), value))
                }
            } else {
                removedKeys.insert(key)
            }
        }
        let updatedBytes = Set(updated.compactMap { entries[$0].key.stringValue.map { Array($0.utf8) } })
        // (Left in this order: the view and the writer sort entries themselves.)
        entries = entries.enumerated().filter { index, entry in
            guard let key = entry.key.stringValue else { return true }
            if removedKeys.contains(key) { return false }
            return updated.contains(index) || !updatedBytes.contains(Array(key.utf8))
        }.map(\.element)
    }

    static func encodeDomain(_ values: [String: PropertyListValue]) throws -> [UInt8] {
        try encodeDomain(entries: values.map { (PropertyListValue($0.key), $0.value) })
    }

    static func encodeDomain(entries: [PropertyListDictionary.Entry]) throws -> [UInt8] {
        // Sorted (``sortedEntries(_:)``): the same contents always give the same bytes.
        [UInt8](try PropertyList.encode(.dictionary(PropertyListDictionary(sortedEntries(entries))), format: .binary))
    }

    private func flushQuietly() {
        do {
            try flush()
        } catch {
            configuration.warningHandler("cannot write domain \(domain): \(error)")
        }
    }

    /// Writes pending changes: lock, re-read, apply only our changes, write atomically, unlock;
    /// then warns and tells observers, outside the lock: a warning handler or an observer that
    /// sets a value (which, without a write delay, writes) deadlocked on it.
    private func flush() throws {
        var warnings: [String] = []
        var lastChange: UInt64?
        defer {
            // Changes first: a warning handler that sets a value tells observers of it at once,
            // and the flush's older value delivered after it was the last they heard.
            deliver(through: lastChange)
            for warning in warnings { configuration.warningHandler(warning) }
        }
        try flushLock.withLock {
            let snapshot = state.withLock { state in
                state.flushScheduled = false
                return state.pending
            }
            guard !snapshot.isEmpty else { return }
            try SystemFiles.createDirectory(directory)
            var merged: [String: PropertyListValue]
            var stamp: FileStamp?
            do {
                let lock = try DomainFileLock(path: lockPath)
                removeLeftoverTemporaryFiles()
                var entries: [PropertyListDictionary.Entry] = []
                let file = try Self.readDomainFile(path)
                if let file {
                    entries = file.entries
                    if let unreadable = file.unreadable {
                        // Replaced, but not lost: its bytes are kept beside it (one copy, the
                        // latest), and when they cannot be, nothing is written.
                        let kept = path + Self.unreadableSuffix
                        try SystemFiles.writeAtomically(unreadable.bytes, to: kept)
                        warnings.append("replacing unreadable preferences file \(path) (its bytes are kept in \(kept)): \(unreadable.error)")
                    }
                }
                Self.apply(snapshot.mapValues(\.value), to: &entries)
                merged = Self.dictionary(of: entries)
                // Removals from a domain with no file leave it without one (a file of `{}` made
                // the domain appear in `karchive defaults domains`); they are done all the same.
                if file != nil || !entries.isEmpty {
                    let bytes = try Self.encodeDomain(entries: entries)
                    // A file the readers would refuse is not written (the next write would
                    // replace it as damaged); the changes stay pending and readable here.
                    guard bytes.count <= SystemFiles.maximumFileLength else {
                        throw PreferencesError(
                            "the domain would be \(bytes.count) bytes, more than the \(SystemFiles.maximumFileLength) a preferences file may hold; not written",
                            path: path)
                    }
                    if bytes.count > configuration.sizeBudget {
                        warnings.append("domain \(domain) is \(bytes.count) bytes, over its budget of \(configuration.sizeBudget) bytes")
                    }
                    try SystemFiles.writeAtomically(bytes, to: path)
                    stamp = FileStamp.of(path)
                }
                _ = consume lock
            }
            lastChange = change { state in
                state.persisted = merged
                state.persistedStamp = stamp
                for (key, change) in snapshot where state.pending[key]?.version == change.version {
                    state.pending.removeValue(forKey: key)
                }
            }
        }
    }

    /// Temporary files are only created under the domain's lock, so any found while holding it
    /// belong to a writer that was killed before its rename: remove them. Only names `mkstemp`
    /// makes (`.D.plist.tmp-` and six letters or digits) are this domain's: the prefix alone
    /// also begins other domains' files (a domain named `.D.plist.tmp-x` is stored in
    /// `.D.plist.tmp-x.plist`, and one named `D.plist.tmp-x` has temporary files of its own).
    private func removeLeftoverTemporaryFiles() {
        let prefix = "." + SystemFiles.fileName(of: path) + ".tmp-"
        for name in SystemFiles.list(directory) where Self.isTemporaryFile(name, prefix: prefix) {
            unlink(directory + "/" + name)
        }
    }

    /// Whether `name` is `prefix` and the six letters or digits `mkstemp` puts in place of
    /// `XXXXXX` (see `AtomicFile`).
    static func isTemporaryFile(_ name: String, prefix: String) -> Bool {
        guard name.utf8.starts(with: prefix.utf8) else { return false }
        let suffix = name.utf8.dropFirst(prefix.utf8.count)
        return suffix.count == 6 && suffix.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
    }

    /// Starts watching the directory for other processes' changes (once, on first observation).
    func startWatchingIfNeeded() {
        watcher.withLock { watcher in
            guard watcher == nil else { return }
            try? SystemFiles.createDirectory(directory)
            var names: Set<String> = [SystemFiles.fileName(of: path)]
            if let globalPath { names.insert(SystemFiles.fileName(of: globalPath)) }
            watcher = makeFileWatcher(directory: directory, names: names) { [weak self] in self?.refresh() }
        }
    }

    /// Writes every store's pending changes (at process exit).
    static func flushAll() {
        for store in PreferencesRegistry.shared.live() { store.flushQuietly() }
    }
}

/// The live stores, so pending changes are written when the process exits normally.
final class PreferencesRegistry: Sendable {
    static let shared = PreferencesRegistry()

    private final class Weak: @unchecked Sendable {
        weak var store: Preferences?
        init(_ store: Preferences) { self.store = store }
    }

    private let stores = Protected<[Weak]>([])
    private let installed = Protected(false)

    func add(_ store: Preferences) {
        stores.withLock { stores in
            stores.removeAll { $0.store == nil }
            stores.append(Weak(store))
        }
        let install = installed.withLock { installed -> Bool in
            defer { installed = true }
            return !installed
        }
        if install { atexit { Preferences.flushAll() } }
    }

    func live() -> [Preferences] {
        stores.withLock { $0.compactMap(\.store) }
    }
}
