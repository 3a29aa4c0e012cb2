import KeyedArchivePropertyList

/// The stored form of the keys an archiver used recently: the property-list string of the
/// escaped key (see ``ArchiveKeys/escape(_:)``).
///
/// Every object of a class sets the same keys, and making a ``PropertyListString`` copies the
/// key's bytes (about 115 instructions a key, callgrind; session 16 made strings inline). A key
/// met before costs a hash of its bits and a comparison here.
///
/// An entry matches when the key's own bits equal the bits of the key the entry keeps. The
/// entry keeps its key alive, so equal bits mean the same small-string bytes or the same
/// storage: the same UTF-8 bytes. A key with equal text but other bits (a copy built at run
/// time) misses and takes an entry over; keys are never confused. (`==` would not do: it calls
/// canonically equivalent Unicode equal, and a key's bytes are what the archive stores.)
///
/// Entries come in pairs (two-way associative): with one entry a slot, two of a type's dozen
/// keys shared a slot often enough to miss on every value (W5: 4 misses a record in 64 slots).
package final class StoredKeyCache {
    private struct Entry {
        var keyBits: Bits
        var key: String
        var value: PropertyListValue
        /// The id ``slot(for:in:)`` interned `value` under, or `UInt64.max` before it asked.
        var internedID: UInt64 = .max
    }

    private typealias Bits = (first: UInt64, last: UInt64)

    /// 64 pairs of entries (128 × 48 bytes on 64-bit platforms), allocated but not initialized:
    /// a bit per pair tells whether its first and its second entry hold a key. (Initializing
    /// and destroying all of them cost a one-object archive, W1, 32 K more instructions a run.)
    private static let pairBits = 6
    private let entries: UnsafeMutablePointer<Entry>
    @exclusivity(unchecked) private var firstFilled: UInt64 = 0
    @exclusivity(unchecked) private var secondFilled: UInt64 = 0

    /// An empty cache.
    package init() {
        entries = .allocate(capacity: 2 << Self.pairBits)
    }

    deinit {
        // Only the entries in use, found from the bits: a loop over all 64 pairs was about 450
        // instructions of a one-object archive, which fills a handful (session 60).
        func deinitialize(_ filled: UInt64, entryInPair: Int) {
            var filled = filled
            while filled != 0 {
                (entries + 2 * filled.trailingZeroBitCount + entryInPair).deinitialize(count: 1)
                filled &= filled &- 1
            }
        }
        deinitialize(firstFilled, entryInPair: 0)
        deinitialize(secondFilled, entryInPair: 1)
        entries.deallocate()
    }

    /// The property-list string of `key` escaped, for the key of an object's field.
    package func value(for key: String) -> PropertyListValue {
        entry(for: key).pointee.value
    }

    /// The stored key of `key` as a slot of `table` (interned on first use). A cache serves
    /// one table: the ids are that table's.
    ///
    /// Inline, a key already interned costs a hash and two or four comparisons; a call for
    /// every field of every object was about 45 instructions (callgrind, W2). Both entries of
    /// the pair are tried here: a key in the second went through the call and hashed again
    /// (W5: a few of a record's 17 keys).
    @inline(__always)
    package func slot(for key: String, in table: ArchiveObjectTable) -> ArchiveSlot {
        let bits = Self.bits(of: key)
        let pair = Self.pair(of: bits)
        let bit: UInt64 = 1 << UInt64(pair)
        let first = entries + 2 * pair
        if firstFilled & bit != 0 {
            if first.pointee.keyBits == bits, first.pointee.internedID != .max {
                return ArchiveSlot(.storedKey, first.pointee.internedID)
            }
            let second = first + 1
            if secondFilled & bit != 0, second.pointee.keyBits == bits, second.pointee.internedID != .max {
                return ArchiveSlot(.storedKey, second.pointee.internedID)
            }
        }
        return slotInGeneral(for: key, in: table)
    }

    /// ``slot(for:in:)`` for a key met for the first time or not interned yet.
    @inline(never)
    private func slotInGeneral(for key: String, in table: ArchiveObjectTable) -> ArchiveSlot {
        let entry = entry(for: key)
        if entry.pointee.internedID == .max { entry.pointee.internedID = table.internStoredKey(entry.pointee.value).bits }
        return ArchiveSlot(.storedKey, entry.pointee.internedID)
    }

    @inline(__always)
    private static func pair(of bits: Bits) -> Int {
        Int(truncatingIfNeeded: ((bits.first ^ bits.last &* 0xC2B2_AE3D_27D4_EB4F) &* 0x9E37_79B9_7F4A_7C15) >> (64 - pairBits))
    }

    @inline(__always)
    private func entry(for key: String) -> UnsafeMutablePointer<Entry> {
        let bits = Self.bits(of: key)
        let pair = Self.pair(of: bits)
        let bit: UInt64 = 1 << UInt64(pair)
        let first = entries + 2 * pair
        let second = first + 1
        if firstFilled & bit != 0 {
            if first.pointee.keyBits == bits { return first }
            if secondFilled & bit != 0 {
                if second.pointee.keyBits == bits { return second }
                second.pointee = first.pointee
            } else {
                second.initialize(to: first.pointee)
                secondFilled |= bit
            }
            // A miss in a full pair: its first entry became its second; the key takes the first.
            first.pointee = Self.entry(key, bits)
        } else {
            first.initialize(to: Self.entry(key, bits))
            firstFilled |= bit
        }
        return first
    }

    private static func entry(_ key: String, _ bits: Bits) -> Entry {
        Entry(keyBits: bits, key: key, value: PropertyListValue(ArchiveKeys.escape(key)))
    }

    /// The first and last eight bytes of a `String` value (all of it on 64-bit platforms, where
    /// it is 16 bytes; overlapping on 32-bit ones, where it is 12).
    @inline(__always)
    private static func bits(of key: String) -> Bits {
        withUnsafeBytes(of: key) { raw in
            (raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
             raw.loadUnaligned(fromByteOffset: raw.count - 8, as: UInt64.self))
        }
    }
}
