import KeyedArchivePropertyList

/// A key or a value of an object being written, in a form with nothing to retain or release:
/// a reference into `$objects`, an inline number or boolean, a stored key interned by the
/// table, or (for anything else) a value the table keeps aside.
///
/// The Codable encoder fills its containers with these. As ``PropertyListValue`` pairs, every
/// field of every object was a key retained, an enum copied and destroyed through generic
/// array code, and a dictionary built only to be taken apart by the layout (about a fifth of
/// W5 encode's instructions, callgrind, session 21).
///
/// Public to the package's own modules only (`@_spi(KeyedArchiveInternals)`), with
/// `@inlinable` constructors, so that they are inline in the Codable module: as `package`
/// declarations each was a call there (see ``SlotBuffer``).
@_spi(KeyedArchiveInternals)
public struct ArchiveSlot: Sendable, Equatable, BitwiseCopyable {
    /// What ``bits`` holds.
    public enum Kind: UInt8, Sendable, BitwiseCopyable {
        /// `bits` is a UID.
        case uid
        /// `bits` is the id of a stored key interned by ``ArchiveObjectTable/internStoredKey(_:)``.
        case storedKey
        /// `bits` is 0 or 1.
        case bool
        /// `bits` is the two's-complement pattern of a signed 64-bit integer.
        case integer
        /// `bits` is an unsigned integer above `Int64.max`.
        case largeUnsigned
        /// `bits` is the bit pattern of a `Double`.
        case real
        /// `bits` is the bit pattern of a `Float` widened to `Double` (stored as 4 bytes).
        case float
        /// `bits` is the index of a value the table keeps aside (``ArchiveObjectTable/slot(for:)``).
        case boxed
    }

    /// What ``bits`` holds.
    public var kind: Kind
    /// The slot's value (see ``Kind``).
    public var bits: UInt64

    /// A slot of `kind` holding `bits`.
    @inlinable @inline(__always)
    public init(_ kind: Kind, _ bits: UInt64) {
        self.kind = kind
        self.bits = bits
    }

    /// A reference to the entry at `uid`.
    @inlinable @inline(__always)
    public static func uid(_ uid: UInt32) -> ArchiveSlot { ArchiveSlot(.uid, UInt64(uid)) }

    /// An inline signed integer.
    @inlinable @inline(__always)
    public static func integer(_ value: Int64) -> ArchiveSlot { ArchiveSlot(.integer, UInt64(bitPattern: value)) }

    /// An inline unsigned integer.
    @inlinable @inline(__always)
    public static func unsigned(_ value: UInt64) -> ArchiveSlot {
        value > UInt64(Int64.max) ? ArchiveSlot(.largeUnsigned, value) : ArchiveSlot(.integer, value)
    }

    /// An inline 8-byte real.
    @inlinable @inline(__always)
    public static func real(_ value: Double) -> ArchiveSlot { ArchiveSlot(.real, value.bitPattern) }

    /// An inline 4-byte real.
    @inlinable @inline(__always)
    public static func float(_ value: Float) -> ArchiveSlot { ArchiveSlot(.float, Double(value).bitPattern) }

    /// An inline boolean.
    @inlinable @inline(__always)
    public static func bool(_ value: Bool) -> ArchiveSlot { ArchiveSlot(.bool, value ? 1 : 0) }

    /// The value of a slot that needs no table (numbers, booleans, references); nil for stored
    /// keys and boxed values.
    package var plainValue: PropertyListValue? {
        switch kind {
        case .uid: return .uid(UInt32(truncatingIfNeeded: bits))
        case .bool: return .bool(bits != 0)
        case .integer: return .integer(PropertyListInteger(Int64(bitPattern: bits)))
        case .largeUnsigned: return .integer(PropertyListInteger(bits))
        case .real: return .real(PropertyListReal(Double(bitPattern: bits)))
        case .float: return .real(PropertyListReal(Double(bitPattern: bits), isSinglePrecision: true))
        case .storedKey, .boxed: return nil
        }
    }

    /// The slot of a value that needs no table, if it is one (a number or boolean with no
    /// stored width, or a reference).
    package init?(plain value: PropertyListValue) {
        switch value {
        case .uid(let uid): self = .uid(uid)
        case .bool(let bool): self = .bool(bool)
        case .integer(let integer) where integer.storedWidth == nil:
            self = ArchiveSlot(integer.isAboveInt64Max ? .largeUnsigned : .integer, integer.bitPattern)
        case .real(let real): self = ArchiveSlot(real.isSinglePrecision ? .float : .real, real.value.bitPattern)
        default: return nil
        }
    }
}

/// One field of an object being written: its key (a stored key, or for NSDictionary-form
/// containers the UID of the key string) and its value.
@_spi(KeyedArchiveInternals)
public struct ArchiveField: Sendable, Equatable, BitwiseCopyable {
    /// The field's key.
    public var key: ArchiveSlot
    /// The field's value.
    public var value: ArchiveSlot

    /// The field `key` = `value`.
    @inlinable @inline(__always)
    public init(key: ArchiveSlot, value: ArchiveSlot) {
        self.key = key
        self.value = value
    }
}

/// A growable list of trivial values (``ArchiveSlot``, ``ArchiveField``) that one writer owns
/// and reuses: an append is a capacity check and a store, and emptying it keeps its memory.
///
/// The layout's batches copy objects' runs of fields into these, and the Codable encoder's
/// container builders collect an object's fields or an array's elements in them. As arrays,
/// every append was a uniqueness check, a capacity check and a call, emptying a builder for
/// the next object (`removeAll(keepingCapacity:)`) about 85 instructions, and
/// `append(contentsOf:)` from a buffer about 75 a run (callgrind, W2).
///
/// Public to the package's own modules only (`@_spi(KeyedArchiveInternals)`), with
/// `@inlinable` methods, so that the Codable module's appends are specialized and inline
/// there. A `package` declaration is not inlined into another module (without package-wide
/// optimization, which needs unsafe flags): a generic list called that way ran as
/// unspecialized calls and cost more than the arrays it replaced (session 45, Performance.md
/// "Tried and not kept"), and so did this one as `package` (W2 Codable archive 734 -> 1,215 M
/// instructions).
///
/// A class, so that copies share one list: its holder is its only user at a time (a builder is
/// one encoder's; a batch's lists go with the batch from thread to thread). Its properties are
/// not checked for exclusive access at run time for the same reason. Not API: a client that
/// imports the SPI gets no promise that it stays.
@_spi(KeyedArchiveInternals)
public final class SlotBuffer<Element: BitwiseCopyable> {
    /// `capacity` elements, the first `storedCount` set; nil until the first growth. The
    /// elements are trivial: nothing to deinitialize.
    @exclusivity(unchecked) @usableFromInline var base: UnsafeMutablePointer<Element>?
    @exclusivity(unchecked) @usableFromInline var capacity = 0
    @exclusivity(unchecked) @usableFromInline var storedCount = 0

    /// An empty list; it allocates at its first append or reserve.
    public init() {}

    deinit { base?.deallocate() }

    /// The number of elements.
    @inlinable public var count: Int { storedCount }

    /// Appends one element.
    @inlinable @inline(__always)
    public func append(_ element: Element) {
        if storedCount == capacity { grow(toHold: storedCount &+ 1) }
        guard let base else { return }
        (base + storedCount).initialize(to: element)
        storedCount &+= 1
    }

    /// Appends a run of elements.
    @inlinable @inline(__always)
    public func append(contentsOf run: UnsafeBufferPointer<Element>) {
        guard let source = run.baseAddress, !run.isEmpty else { return }
        if capacity &- storedCount < run.count { grow(toHold: storedCount &+ run.count) }
        guard let base else { return }
        (base + storedCount).initialize(from: source, count: run.count)
        storedCount &+= run.count
    }

    /// Makes room for `minimumCapacity` elements in all.
    @inlinable
    public func reserveCapacity(_ minimumCapacity: Int) {
        if minimumCapacity > capacity { grow(toHold: minimumCapacity) }
    }

    /// Forgets the elements, keeping the memory.
    @inlinable
    public func removeAll() { storedCount = 0 }

    /// The elements, valid during `body`, which must not append to this list (a growth would
    /// free the memory `body` reads; nothing checks it).
    @inlinable
    public func withBuffer<Result>(_ body: (UnsafeBufferPointer<Element>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: base, count: storedCount))
    }

    /// Moves the elements to memory for at least `needed` (doubling, from 16).
    @usableFromInline @inline(never)
    func grow(toHold needed: Int) {
        var newCapacity = Swift.max(16, capacity)
        while newCapacity < needed { newCapacity = newCapacity > Int.max / 4 ? needed : newCapacity &* 2 }
        base = movedToNewMemory(base, count: storedCount, capacity: newCapacity)
        capacity = newCapacity
    }
}

/// New memory for `capacity` elements holding the first `count` of `old` (moved, and `old`
/// freed), or none when there was no memory yet: the growth step of the graph module's own
/// lists (``SlotBuffer``, ``LayoutStepList``).
func movedToNewMemory<Element>(_ old: UnsafeMutablePointer<Element>?, count: Int, capacity: Int) -> UnsafeMutablePointer<Element> {
    let grown = UnsafeMutablePointer<Element>.allocate(capacity: capacity)
    if let old {
        grown.moveInitialize(from: old, count: count)
        old.deallocate()
    }
    return grown
}

/// The fields of the object being archived as slots, for ``ArchiveObjectTable/setObject(fields:array:at:)``:
/// `$class` first, then fields in the order set. Keys are stored keys interned by the table,
/// one id per text, so that setting a key twice finds it by its id and keeps the last value
/// (as ``ArchiveObjectFields`` does with the text).
///
/// One per archiver, reused object after object (``begin(classKey:classUID:capacity:)``), its
/// fields in memory it owns: as an array in a struct, every field set was a uniqueness check
/// of the array, a capacity check and a call, about 70 instructions (callgrind, W2: seven
/// fields an object). A key not yet set (its bit clear) is appended inline here.
package final class ArchiveObjectSlots {
    /// `capacity` fields, the first `count` set. ``ArchiveField`` is trivial: nothing to
    /// deinitialize.
    @exclusivity(unchecked) private var base: UnsafeMutablePointer<ArchiveField>
    @exclusivity(unchecked) private var capacity: Int
    /// The number of entries, `$class` included.
    @exclusivity(unchecked) package private(set) var count = 0
    /// Appends below this count take the inline path: the capacity, or one less than
    /// ``indexThreshold`` (the append that reaches it builds the index).
    @exclusivity(unchecked) private var inlineLimit: Int
    /// Positions by key id once an object has ``indexThreshold`` entries.
    @exclusivity(unchecked) private var index: [UInt64: Int] = [:]
    @exclusivity(unchecked) private var unkeyedCount = 0
    /// A bit per stored key id below 64 set so far: a key whose bit is clear (the common case,
    /// each key set once) is appended without looking for it first. The scan was about 50
    /// instructions a field (callgrind, W2: seven fields an object).
    @exclusivity(unchecked) private var storedKeyBits: UInt64 = 0
    private static let indexThreshold = 16

    /// Empty, with room for `capacity` entries before the first growth.
    package init(capacity: Int = 16) {
        self.capacity = max(1, capacity)
        base = .allocate(capacity: self.capacity)
        inlineLimit = min(self.capacity, Self.indexThreshold - 1)
    }

    deinit { base.deallocate() }

    /// Starts an object of the class whose description has `classUID` (`classKey`: `$class`
    /// interned), with room for at least `capacity` entries; the previous object's fields are
    /// dropped.
    package func begin(classKey: ArchiveSlot, classUID: UInt32, capacity: Int) {
        count = 0
        if !index.isEmpty { index.removeAll(keepingCapacity: true) }
        unkeyedCount = 0
        storedKeyBits = 0
        if capacity > self.capacity { grow(to: capacity) }
        setStored(.uid(classUID), forKey: classKey)
    }

    /// The fields set so far, valid during `body` (and until the next change).
    package func withFields<Result>(_ body: (UnsafeBufferPointer<ArchiveField>) throws -> Result) rethrows -> Result {
        try body(UnsafeBufferPointer(start: base, count: count))
    }

    /// Stores `value` under `key` (an interned stored key), replacing an earlier value.
    @inline(__always)
    package func setStored(_ value: ArchiveSlot, forKey key: ArchiveSlot) {
        if key.kind == .storedKey, key.bits < 64, count < inlineLimit {
            let bit: UInt64 = 1 << key.bits
            if storedKeyBits & bit == 0 {
                storedKeyBits |= bit
                (base + count).initialize(to: ArchiveField(key: key, value: value))
                count += 1
                return
            }
        }
        setStoredInGeneral(value, forKey: key)
    }

    /// ``setStored(_:forKey:)`` for a key that may be set already, a key id of 64 or more, a
    /// full buffer, or a big object (its index).
    @inline(never)
    private func setStoredInGeneral(_ value: ArchiveSlot, forKey key: ArchiveSlot) {
        if !markStored(key), let position = position(of: key) {
            base[position].value = value
            return
        }
        if count == capacity { grow(to: capacity * 2) }
        if !index.isEmpty && key.kind == .storedKey { index[key.bits] = count }
        (base + count).initialize(to: ArchiveField(key: key, value: value))
        count += 1
        if index.isEmpty && count == Self.indexThreshold {
            // Big objects (many unkeyed values) switch from scanning to a hash index.
            for position in 0..<count where base[position].key.kind == .storedKey { index[base[position].key.bits] = position }
        }
    }

    /// Sets `key`'s bit if it has one (a stored key id below 64); returns true when the bit was
    /// clear, i.e. the key is certainly not set yet.
    private func markStored(_ key: ArchiveSlot) -> Bool {
        guard key.kind == .storedKey, key.bits < 64 else { return false }
        let bit: UInt64 = 1 << key.bits
        let wasClear = storedKeyBits & bit == 0
        storedKeyBits |= bit
        return wasClear
    }

    private func grow(to newCapacity: Int) {
        let grown = UnsafeMutablePointer<ArchiveField>.allocate(capacity: newCapacity)
        grown.moveInitialize(from: base, count: count)
        base.deallocate()
        base = grown
        capacity = newCapacity
        inlineLimit = min(capacity, Self.indexThreshold - 1)
    }

    /// True when `key` (an interned stored key) has been stored.
    package func contains(key: ArchiveSlot) -> Bool { position(of: key) != nil }

    /// The next unkeyed key (`$0`, `$1`, ...), as text.
    package func nextUnkeyedKey() -> String {
        defer { unkeyedCount += 1 }
        return "$" + String(unkeyedCount)
    }

    private func position(of key: ArchiveSlot) -> Int? {
        guard key.kind == .storedKey else { return nil }
        if !index.isEmpty { return index[key.bits] }
        return (0..<count).first { base[$0].key == key }
    }
}
