/// A property-list dictionary: entries in the order they were read or inserted.
///
/// Keys are strings in almost every file, but binary property lists may use other primitive
/// keys (Instruments traffic carries integer keys), so a key is any ``PropertyListValue``.
/// Lookups by string key scan the entries, which is the fast choice for the small dictionaries
/// that dominate real files (keyed-archive objects have a handful of keys); build a Swift
/// `Dictionary` from ``entries`` when you need many lookups into a large one.
///
/// Equality ignores entry order, as property-list dictionaries are unordered.
public struct PropertyListDictionary: Sendable {
    /// One key and its value.
    public typealias Entry = (key: PropertyListValue, value: PropertyListValue)

    /// The entries, in order. Duplicate keys can occur in files read from outside; lookups
    /// return the first.
    public var entries: [Entry]

    /// An empty dictionary.
    public init() { entries = [] }

    /// A dictionary with the given entries, in order.
    public init(_ entries: [Entry]) { self.entries = entries }

    /// A dictionary with string keys, in the order given.
    public init(stringKeys entries: [(String, PropertyListValue)]) {
        self.entries = entries.map { (PropertyListValue($0.0), $0.1) }
    }

    /// The number of entries.
    public var count: Int { entries.count }
    /// True when there are no entries.
    public var isEmpty: Bool { entries.isEmpty }

    /// The keys, in order.
    public var keys: [PropertyListValue] { entries.map(\.key) }
    /// The values, in order.
    public var values: [PropertyListValue] { entries.map(\.value) }

    /// The value for a string key; setting `nil` removes it, setting a new key appends it.
    public subscript(key: String) -> PropertyListValue? {
        get { Self.index(ofStringKey: key, in: entries).flatMap { Self.value(at: $0, in: entries) } }
        set { self[PropertyListValue(key)] = newValue }
    }

    /// The value for any key; setting `nil` removes it, setting a new key appends it.
    public subscript(key: PropertyListValue) -> PropertyListValue? {
        get { entries.first { $0.key == key }?.value }
        set {
            let index = entries.firstIndex { $0.key == key }
            switch (index, newValue) {
            case (let index?, let value?): entries[index].value = value
            case (let index?, nil): entries.remove(at: index)
            case (nil, let value?): entries.append((key, value))
            case (nil, nil): break
            }
        }
    }
}

extension PropertyListDictionary: ExpressibleByDictionaryLiteral {
    /// A dictionary of string keys, in the order written.
    public init(dictionaryLiteral elements: (String, PropertyListValue)...) {
        self.init(stringKeys: elements)
    }
}

extension PropertyListDictionary {
    /// The key of the entry at `entry`, in place. Reading `entries[i].key` (or `.value`) copies
    /// the whole entry first, two retains and releases; hot loops that only look at a key or a
    /// value read it through these pointers instead.
    @inlinable @inline(__always)
    package static func key(of entry: UnsafePointer<Entry>) -> UnsafePointer<PropertyListValue> {
        // A tuple lays out its elements in order, each at the next multiple of its alignment:
        // the key at 0, the value at the key's stride (checked by a test against `offset(of:)`,
        // which is a key-path lookup at run time, too slow here).
        UnsafeRawPointer(entry).assumingMemoryBound(to: PropertyListValue.self)
    }

    /// The value of the entry at `entry`, in place (see ``key(of:)``).
    @inlinable @inline(__always)
    package static func value(of entry: UnsafePointer<Entry>) -> UnsafePointer<PropertyListValue> {
        (UnsafeRawPointer(entry) + MemoryLayout<PropertyListValue>.stride).assumingMemoryBound(to: PropertyListValue.self)
    }

    /// A copy of the value at `index` of `entries` (only the value is copied), if in range.
    @inlinable
    package static func value(at index: Int, in entries: [Entry]) -> PropertyListValue? {
        entries.withUnsafeBufferPointer { entries in
            guard index >= 0, index < entries.count, let first = entries.baseAddress else { return nil }
            return value(of: first + index).pointee
        }
    }

    /// The first entry whose key is the string `key`, byte for byte (no Unicode normalisation),
    /// among the first `end` entries (all of them when `end` is nil). Keys are read in place,
    /// and compared as a `PropertyListString` made of `key` once: a key of up to 14 bytes is two
    /// words and a length, so most entries are told apart without reading any text.
    @inlinable
    package static func index(ofStringKey key: String, in entries: [Entry], before end: Int? = nil) -> Int? {
        index(ofStringKey: PropertyListString(key), in: entries, before: end)
    }

    /// The first entry whose key is the string `probe`, byte for byte, among the first `end`
    /// entries (all of them when `end` is nil).
    @inlinable
    package static func index(ofStringKey probe: PropertyListString, in entries: [Entry], before end: Int? = nil) -> Int? {
        entries.withUnsafeBufferPointer { entries -> Int? in
            guard let first = entries.baseAddress else { return nil }
            for index in 0..<min(end ?? entries.count, entries.count) {
                if self.key(of: first + index).pointee.isString(probe) { return index }
            }
            return nil
        }
    }
}
