import KeyedArchivePropertyList

/// A key or a value of an object being written, in a form with nothing to retain or release:
/// a reference into `$objects`, an inline number or boolean, a stored key interned by the
/// table, or (for anything else) a value the table keeps aside.
///
/// The Codable encoder fills its containers with these. As ``PropertyListValue`` pairs, every
/// field of every object was a key retained, an enum copied and destroyed through generic
/// array code, and a dictionary built only to be taken apart by the layout (about a fifth of
/// W5 encode's instructions, callgrind, session 21).
package struct ArchiveSlot: Sendable, Equatable, BitwiseCopyable {
    package enum Kind: UInt8, Sendable, BitwiseCopyable {
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

    package var kind: Kind
    package var bits: UInt64

    @inline(__always)
    package init(_ kind: Kind, _ bits: UInt64) {
        self.kind = kind
        self.bits = bits
    }

    /// A reference to the entry at `uid`.
    @inline(__always)
    package static func uid(_ uid: UInt32) -> ArchiveSlot { ArchiveSlot(.uid, UInt64(uid)) }

    /// An inline signed integer.
    @inline(__always)
    package static func integer(_ value: Int64) -> ArchiveSlot { ArchiveSlot(.integer, UInt64(bitPattern: value)) }

    /// An inline unsigned integer.
    @inline(__always)
    package static func unsigned(_ value: UInt64) -> ArchiveSlot {
        value > UInt64(Int64.max) ? ArchiveSlot(.largeUnsigned, value) : ArchiveSlot(.integer, value)
    }

    /// An inline 8-byte real.
    @inline(__always)
    package static func real(_ value: Double) -> ArchiveSlot { ArchiveSlot(.real, value.bitPattern) }

    /// An inline 4-byte real.
    @inline(__always)
    package static func float(_ value: Float) -> ArchiveSlot { ArchiveSlot(.float, Double(value).bitPattern) }

    /// An inline boolean.
    @inline(__always)
    package static func bool(_ value: Bool) -> ArchiveSlot { ArchiveSlot(.bool, value ? 1 : 0) }

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
package struct ArchiveField: Sendable, Equatable, BitwiseCopyable {
    package var key: ArchiveSlot
    package var value: ArchiveSlot

    @inline(__always)
    package init(key: ArchiveSlot, value: ArchiveSlot) {
        self.key = key
        self.value = value
    }
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
