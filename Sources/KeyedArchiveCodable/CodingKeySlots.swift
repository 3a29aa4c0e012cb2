@_spi(KeyedArchiveInternals) import KeyedArchiveGraph

/// The stored keys of one coding-key type, found by the key's value without asking for its
/// `stringValue`: for the types whose values are a byte of plain data (or no data at all),
/// which includes every synthesized `CodingKeys` enum of up to 256 cases.
///
/// An object's field names its key through ``StoredKeyCache``, from the key's text. Getting
/// that text is a protocol call into the key's `stringValue`, which builds a `String` that is
/// then released, and the cache hashes it: about 80 instructions a field (callgrind, session
/// 47), a tenth of a W5 record's encoding. Here a key met before is one load, indexed by its
/// byte.
///
/// A key's byte stands for its text because the type is plain data (`_isPOD`: no references,
/// nothing a copy does but copy the bytes) of at most one byte: two keys with equal bytes are
/// the same value, and `stringValue` is read from the value. The first key with each byte asks
/// for its text once, through the cache. (A hand-written key type of one byte whose
/// `stringValue` also reads global state changed during an encode would keep its first
/// names; a key type's names are a function of its values everywhere else in Codable.)
final class CodingKeySlots {
    /// The stored-key slot's id + 1 by the key's byte; 0 for a byte not met yet.
    private let known: UnsafeMutablePointer<UInt64>
    /// Whether the key type has no stored bytes (a one-case enum): every key is byte 0.
    private let isEmpty: Bool

    /// The slots of `Key`, or nil when its values are not plain data of at most one byte (its
    /// keys are then found by their text).
    init?<Key: CodingKey>(for type: Key.Type) {
        // One byte at most: the table has 256 entries, and `slot` reads the key as a `UInt8`.
        guard _isPOD(Key.self), MemoryLayout<Key>.size <= 1 else { return nil }
        isEmpty = MemoryLayout<Key>.size == 0
        let count = isEmpty ? 1 : 256
        known = CacheLineMemory.allocate(UInt64.self, capacity: count)
        known.initialize(repeating: 0, count: count)
    }

    deinit { CacheLineMemory.deallocate(known) }

    /// The stored-key slot of `key` in `table`, found through `storedKeys` the first time.
    @inline(__always)
    func slot<Key: CodingKey>(for key: Key, storedKeys: StoredKeyCache, table: ArchiveObjectTable) -> ArchiveSlot {
        // `init` checked that `Key` is plain data of one byte when not empty.
        let byte = isEmpty ? 0 : Int(unsafeBitCast(key, to: UInt8.self))
        let id = known[byte]
        if id != 0 { return ArchiveSlot(.storedKey, id &- 1) }
        return firstSlot(for: key, byte: byte, storedKeys: storedKeys, table: table)
    }

    /// ``slot(for:storedKeys:table:)`` for the first key with its byte.
    @inline(never)
    private func firstSlot<Key: CodingKey>(
        for key: Key, byte: Int, storedKeys: StoredKeyCache, table: ArchiveObjectTable
    ) -> ArchiveSlot {
        let slot = storedKeys.slot(for: key.stringValue, in: table)
        // A stored key's id is below `UInt64.max` (the cache's mark for none yet).
        if slot.kind == .storedKey && slot.bits < UInt64.max { known[byte] = slot.bits + 1 }
        return slot
    }
}
