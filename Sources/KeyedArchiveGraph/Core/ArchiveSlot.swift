import KeyedArchivePropertyList

/// A key or a value of an object being written, in a form with nothing to retain or release:
/// a reference into `$objects`, an inline number or boolean, a stored key interned by the
/// table, or (for anything else) a value the table keeps aside.
///
/// The Codable encoder fills its containers with these. As ``PropertyListValue`` pairs, every
/// field of every object was a key retained, an enum copied and destroyed through generic
/// array code, and a dictionary built only to be taken apart by the layout (about a fifth of
/// W5 encode's instructions, callgrind, session 21).
package struct ArchiveSlot: Sendable, Equatable {
    package enum Kind: UInt8, Sendable {
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
package struct ArchiveField: Sendable, Equatable {
    package var key: ArchiveSlot
    package var value: ArchiveSlot

    @inline(__always)
    package init(key: ArchiveSlot, value: ArchiveSlot) {
        self.key = key
        self.value = value
    }
}

/// The fields of one archived object as slots, for ``ArchiveObjectTable/setObject(fields:array:at:)``:
/// `$class` first, then fields in the order set. Keys are stored keys interned by the table,
/// one id per text, so that setting a key twice finds it by its id and keeps the last value
/// (as ``ArchiveObjectFields`` does with the text).
package struct ArchiveObjectSlots {
    /// The entries so far.
    package private(set) var fields: [ArchiveField]
    /// Positions by key id once an object has ``indexThreshold`` entries.
    private var index: [UInt64: Int] = [:]
    private var unkeyedCount = 0
    /// A bit per stored key id below 64 set so far: a key whose bit is clear (the common case,
    /// each key set once) is appended without looking for it first. The scan was about 50
    /// instructions a field (callgrind, W2: seven fields an object).
    private var storedKeyBits: UInt64 = 0
    private static let indexThreshold = 16

    /// An object of the class whose description has `classUID` (`classKey`: `$class` interned),
    /// with room for `capacity` entries, in `storage` (an earlier object's array, taken from the
    /// caller, emptied and reused: one allocation fewer an object).
    package init(classKey: ArchiveSlot, classUID: UInt32, capacity: Int, reusing storage: inout [ArchiveField]) {
        fields = []
        swap(&fields, &storage)
        fields.removeAll(keepingCapacity: true)
        fields.reserveCapacity(max(1, capacity))
        fields.append(ArchiveField(key: classKey, value: .uid(classUID)))
        _ = markStored(classKey)
    }

    /// Sets `key`'s bit if it has one (a stored key id below 64); returns true when the bit was
    /// clear, i.e. the key is certainly not set yet.
    @inline(__always)
    private mutating func markStored(_ key: ArchiveSlot) -> Bool {
        guard key.kind == .storedKey, key.bits < 64 else { return false }
        let bit: UInt64 = 1 << key.bits
        let wasClear = storedKeyBits & bit == 0
        storedKeyBits |= bit
        return wasClear
    }

    /// The number of entries, `$class` included.
    package var count: Int { fields.count }

    /// Stores `value` under `key` (an interned stored key), replacing an earlier value.
    package mutating func setStored(_ value: ArchiveSlot, forKey key: ArchiveSlot) {
        if !markStored(key), let position = position(of: key) {
            fields[position].value = value
            return
        }
        if !index.isEmpty && key.kind == .storedKey { index[key.bits] = fields.count }
        fields.append(ArchiveField(key: key, value: value))
        if index.isEmpty && fields.count == Self.indexThreshold {
            // Big objects (many unkeyed values) switch from scanning to a hash index.
            for position in fields.indices where fields[position].key.kind == .storedKey { index[fields[position].key.bits] = position }
        }
    }

    /// True when `key` (an interned stored key) has been stored.
    package func contains(key: ArchiveSlot) -> Bool { position(of: key) != nil }

    /// The next unkeyed key (`$0`, `$1`, ...), as text.
    package mutating func nextUnkeyedKey() -> String {
        defer { unkeyedCount += 1 }
        return "$" + String(unkeyedCount)
    }

    private func position(of key: ArchiveSlot) -> Int? {
        guard key.kind == .storedKey else { return nil }
        if !index.isEmpty { return index[key.bits] }
        return fields.firstIndex { $0.key == key }
    }
}
