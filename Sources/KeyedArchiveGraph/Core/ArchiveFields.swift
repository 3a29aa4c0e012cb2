#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The fields of an archived object: its dictionary read whole, or, in an archive read by
/// index, the dictionary where it lies in the file (``InPlaceFields``).
///
/// Reading fields in place can meet a damaged file: those methods throw the reader's
/// ``PropertyListError``, which callers report with their own path (wrapping every call cost
/// more than the lookups).
package enum ArchiveFields {
    /// A dictionary read whole (archives read as one tree, XML archives, `$top`).
    case whole(PropertyListDictionary)
    /// A dictionary read in place.
    case inPlace(InPlaceFields)

    /// The value of the first entry whose key is `stored` byte for byte (a key as stored:
    /// `$class`, `$0`, or a user key already escaped).
    @inline(__always)
    package func value(forStoredKey stored: String) throws -> PropertyListValue? {
        switch self {
        case .whole(let dictionary): return dictionary[stored]
        case .inPlace(let fields): return try fields.value(forStoredKey: stored)
        }
    }

    /// The value for a user key, as ``ArchiveKeys/lookup(_:in:)`` finds it: stored escaped, or
    /// for an unkeyed value's name (`$0`) also as it is.
    package func lookup(_ key: String) throws -> PropertyListValue? {
        try Self.lookup(key) { try value(forStoredKey: $0) }
    }

    /// ``lookup(_:)`` over any fields, given how to read the value of a key as stored.
    @inline(__always)
    package static func lookup(_ key: String, _ value: (String) throws -> PropertyListValue?) rethrows -> PropertyListValue? {
        if let found = try value(ArchiveKeys.escape(key)) { return found }
        return ArchiveKeys.isReadRaw(key) ? try value(key) : nil
    }

    /// The whole dictionary (read from the file for fields in place: for the rarer readers
    /// that need every entry, such as Foundation collections and unknown classes).
    package func dictionary() throws -> PropertyListDictionary {
        switch self {
        case .whole(let dictionary): return dictionary
        case .inPlace(let fields): return try fields.dictionary()
        }
    }
}

/// An object's fields where they lie in a file read by index, as a class (what
/// ``ArchiveFields/inPlace(_:)`` holds, shared by whoever reads the object): an
/// ``InPlaceLookup`` and its cursor.
package final class InPlaceFields {
    /// The lookup, read and moved in place.
    @exclusivity(unchecked) package private(set) var lookup: InPlaceLookup

    /// Fields of the dictionary at `span` in `reader`'s file; `keyCache` must be this file's.
    package convenience init(reader: BinaryPropertyListObjectReader, span: BinaryPropertyListObjectReader.ContainerSpan, keyCache: InPlaceKeyCache) {
        self.init(InPlaceLookup(reader: reader, span: span, keyCache: keyCache))
    }

    /// Fields over a lookup (its cursor as it is).
    package init(_ lookup: InPlaceLookup) {
        self.lookup = lookup
    }

    /// The value of the first entry whose key is `stored`.
    @inline(__always)
    package func value(forStoredKey stored: String) throws -> PropertyListValue? { try lookup.value(forStoredKey: stored) }

    /// The whole dictionary, read from the file.
    package func dictionary() throws -> PropertyListDictionary { try lookup.dictionary() }
}

/// How an object's fields are looked up where they lie in a file read by index: keys stored
/// as ASCII are compared with the wanted key's bytes in the file (or recognised by the
/// ``InPlaceKeyCache``), and only the value found is read. No dictionary is built for the
/// object, and none is torn down after it: the tree of a large archive, built and freed, was
/// about half of a decode.
///
/// A lookup finds the first entry whose key matches byte for byte, as a dictionary lookup
/// does, but starts where the last one matched, since fields are usually read in the order
/// they were written (scanning from the first entry every time cost more than the match). An
/// entry found past the cursor is the first with its key unless an entry before the cursor has
/// the key too; that can only be one a lookup has looked at before, so a fingerprint of each key
/// looked at (length, first and last bytes, one bit of 64) says when to look back: for repeated keys
/// (damaged or hand-made archives) and fingerprint collisions.
///
/// A value (the cursor moves with it), so that a reader that keeps one per object stores it
/// inline: the Codable decoder's containers hold it in their storage, with no object of its own
/// for each container (an allocation, and the retains of the copies, per archived object).
/// The lookups (`index(ofStoredKey:)`, `value(forStoredKey:)`, and `value(at:)` and
/// `valueObject(at:)`, which only read) are `mutating`: called on a class's stored property they
/// then work in place instead of on a copy (two retains and releases a call).
package struct InPlaceLookup {
    /// The file.
    package let reader: BinaryPropertyListObjectReader
    /// The object's dictionary in it.
    package private(set) var span: BinaryPropertyListObjectReader.ContainerSpan
    /// Key objects of this file already matched.
    package let keyCache: InPlaceKeyCache
    /// Where the next lookup starts: the entry after the last match.
    private var cursor = 0
    /// The fingerprints of every key a lookup has looked at: all those before the cursor, and
    /// maybe more.
    private var seen: UInt64 = 0

    /// A lookup over the dictionary at `span` in `reader`'s file; `keyCache` must be this file's.
    package init(reader: BinaryPropertyListObjectReader, span: BinaryPropertyListObjectReader.ContainerSpan, keyCache: InPlaceKeyCache) {
        self.reader = reader
        self.span = span
        self.keyCache = keyCache
    }

    /// Makes this a lookup over the dictionary at `span` in the same file, from its first
    /// entry.
    @inline(__always)
    package mutating func restart(at span: BinaryPropertyListObjectReader.ContainerSpan) {
        self.span = span
        cursor = 0
        seen = 0
    }

    /// One bit of 64 for a key's length and first and last bytes: readers that remember which
    /// keys they have looked at (the Codable decoder's cursor) use it to know when to look
    /// back. The last byte tells apart numbered keys (`friend0`, `friend1`; `NS.object.0`),
    /// which with the length and first byte alone had one bit: every lookup after the first
    /// looked back over the entries before it. Over the dictionaries of the shared corpus,
    /// 27% of the pairs of different keys in one dictionary had the same bit without the last
    /// byte, 3.1% with it (1.6% would be a random bit).
    @inline(__always)
    package static func fingerprint(length: Int, first: UInt8?, last: UInt8?) -> UInt64 {
        1 &<< UInt64(truncatingIfNeeded: (length &+ Int(first ?? 0) &* 5 &+ Int(last ?? 0) &* 3) & 63)
    }

    /// The object index in the file of entry `index`'s key.
    @inline(__always)
    package func keyObject(at index: Int) throws -> Int {
        try reader.keyObject(index, of: span)
    }

    /// Whether the key of entry `index` (object `key`) is `stored` (whose UTF-8 bytes are
    /// `bytes`), byte for byte, and the key's fingerprint (0 for a key that is no string). A
    /// match is remembered in the cache.
    private func keyMatches(
        _ index: Int, object key: Int, _ bytes: UnsafeBufferPointer<UInt8>, _ stored: String
    ) throws -> (matches: Bool, fingerprint: UInt64) {
        let matches: Bool
        let fingerprint: UInt64
        if let text = reader.asciiBytes(ofObject: key) {
            fingerprint = Self.fingerprint(length: text.count, first: text.first, last: text.last)
            if text.count != bytes.count {
                matches = false
            } else if let a = text.baseAddress, let b = bytes.baseAddress {
                // Equal bytes match only for ASCII text: an ASCII-stored key holds no more.
                matches = memcmp(a, b, bytes.count) == 0 && !bytes.contains(where: { $0 >= 0x80 })
            } else {
                matches = true
            }
        } else if reader.isUTF16String(object: key, unitsCompatibleWithUTF8Length: bytes.count) {
            // A key stored as UTF-16 whose length could match: read it whole (rare).
            guard case .string(let name) = try reader.value(ofObject: key) else { return (false, 0) }
            fingerprint = name.withUTF8 { Self.fingerprint(length: $0.count, first: $0.first, last: $0.last) }
            matches = name.hasText(stored)
        } else if reader.isUTF16String(object: key, unitsCompatibleWithUTF8Length: nil) {
            // A UTF-16 key of another length: not this one, and not read (a long key shared by
            // many objects would be transcoded at every visit). Its fingerprint is unknown, so
            // all bits: a later match past the cursor looks back over the entries before it.
            return (false, UInt64.max)
        } else {
            // No string (a number, or a container, which a whole read rejects as a key): it
            // matches no string key, so it need not be remembered either.
            return (false, 0)
        }
        if matches { keyCache.remember(key, matched: stored, fingerprint: fingerprint) }
        return (matches, fingerprint)
    }

    /// The position of the first entry whose key is `stored`, byte for byte; moves the cursor.
    package mutating func index(ofStoredKey stored: String) throws -> Int? {
        // The usual case: the entry at the cursor is a key object this key matched before, in
        // this object or another, and no entry before the cursor can have it.
        let start = cursor
        if start < span.count, let known = keyCache.known(try keyObject(at: start), stored), known.sameBits,
            start == 0 || seen & known.fingerprint == 0
        {
            seen |= known.fingerprint
            cursor = start + 1
            return start
        }
        return try Self.withUTF8(stored) { bytes in try scan(for: bytes, stored) }
    }

    /// Looks at every entry from the cursor on, wrapping around.
    private mutating func scan(for bytes: UnsafeBufferPointer<UInt8>, _ stored: String) throws -> Int? {
        let count = span.count
        let start = cursor < count ? cursor : 0
        let wanted = Self.fingerprint(length: bytes.count, first: bytes.first, last: bytes.last)
        var index = start
        var looked: UInt64 = 0
        for _ in 0..<count {
            if try isKey(at: index, bytes, stored, wanted: wanted, looked: &looked) {
                var match = index
                if index >= start, start > 0, seen & wanted != 0 {
                    var ignored: UInt64 = 0
                    for earlier in 0..<start where try isKey(at: earlier, bytes, stored, wanted: wanted, looked: &ignored) {
                        match = earlier
                        break
                    }
                }
                seen |= looked
                cursor = match + 1
                return match
            }
            index = index + 1 == count ? 0 : index + 1
        }
        seen |= looked
        return nil
    }

    /// Whether the key of entry `index` is `stored`; adds the key's fingerprint to `looked`.
    /// Key objects the cache knows are decided without their bytes: the same bits match, a
    /// different fingerprint does not.
    @inline(__always)
    private func isKey(at index: Int, _ bytes: UnsafeBufferPointer<UInt8>, _ stored: String, wanted: UInt64, looked: inout UInt64) throws -> Bool {
        let key = try keyObject(at: index)
        if let known = keyCache.known(key, stored) {
            looked |= known.fingerprint
            if known.sameBits { return true }
            if known.fingerprint != wanted { return false }
        }
        let (matches, fingerprint) = try keyMatches(index, object: key, bytes, stored)
        looked |= fingerprint
        return matches
    }

    /// The value of the first entry whose key is `stored`.
    @inline(__always)
    package mutating func value(forStoredKey stored: String) throws -> PropertyListValue? {
        guard let index = try index(ofStoredKey: stored) else { return nil }
        return try value(at: index)
    }

    /// The value of entry `index`.
    @inline(__always)
    package mutating func value(at index: Int) throws -> PropertyListValue {
        try reader.value(ofObject: try reader.valueObject(index, of: span))
    }

    /// The object index in the file of entry `index`'s value.
    package mutating func valueObject(at index: Int) throws -> Int {
        try reader.valueObject(index, of: span)
    }

    /// The whole dictionary, read from the file.
    package func dictionary() throws -> PropertyListDictionary {
        let value = try reader.value(ofObject: span.object)
        guard case .dictionary(let dictionary) = value else {
            throw KeyedArchiveError(.invalidObject, "object entry is a \(value.typeName), not a dictionary")
        }
        return dictionary
    }

    /// `stored`'s UTF-8 bytes.
    @inline(__always)
    package static func withUTF8<T>(_ stored: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> T) rethrows -> T {
        if let result = try stored.utf8.withContiguousStorageIfAvailable(body) { return result }
        var native = stored
        return try native.withUTF8(body)
    }
}

/// Which key objects of one file matched which key strings, across the objects of one decode
/// (one cache per file: object indices mean nothing in another). Writers store each key text
/// once, so every object of a class refers to the same key objects, and a coding key's string
/// has the same bits at every use: a match is then two loads and a compare instead of reading
/// and comparing the key's bytes. Direct-mapped by key object; each slot keeps the string it
/// matched alive, so its bits cannot come back as another string's.
package final class InPlaceKeyCache {
    /// What a slot in use holds besides its key object.
    private struct Entry {
        var fingerprint: UInt64
        /// The bits of `string`, read without touching its reference count.
        var bits: (UInt64, UInt64)
        /// The string matched, kept alive so that its bits cannot come back as another's.
        var string: String
    }
    /// The most slots: a file's key objects rarely number more.
    private static let maximumSize = 256
    /// The number of slots less one (a power of two less one).
    private let mask: Int
    /// Each slot's key object, -1 while the slot is unused.
    private let objects: UnsafeMutablePointer<Int>
    /// Each slot's entry, initialized only where `objects` holds a key object: making the
    /// cache then writes one word a slot, and freeing it visits only the slots in `used`
    /// (slots with an optional string, all initialized and all visited, cost a one-object
    /// unarchive about 700 instructions more to make and free). The lists are in one block:
    /// two arrays cost W1's default profile about 4,700 instructions more, most of it the
    /// generic array code's metadata lookups and per-element copies and destroys.
    private let entries: UnsafeMutablePointer<Entry>
    /// The slots whose entries are initialized, in the order first used (`usedCount` of them).
    private let used: UnsafeMutablePointer<UInt16>
    private var usedCount = 0

    /// An empty cache for a file of `objectCount` objects: with no more slots than objects
    /// (from 16), since no two of a small file's objects then share a slot, and making and
    /// freeing 256 slots was about 4,600 instructions of a one-object unarchive.
    package init(objectCount: Int = InPlaceKeyCache.maximumSize) {
        var size = 16
        while size < Swift.min(objectCount, Self.maximumSize) { size &*= 2 }
        mask = size &- 1
        // The entries, the objects, then the used slots: each list's alignment suits the next.
        let entryBytes = size &* MemoryLayout<Entry>.stride, objectBytes = size &* MemoryLayout<Int>.stride
        let block = UnsafeMutableRawPointer.allocate(
            byteCount: entryBytes &+ objectBytes &+ size &* MemoryLayout<UInt16>.stride, alignment: MemoryLayout<Entry>.alignment)
        entries = block.bindMemory(to: Entry.self, capacity: size)
        objects = (block + entryBytes).bindMemory(to: Int.self, capacity: size)
        used = (block + (entryBytes &+ objectBytes)).bindMemory(to: UInt16.self, capacity: size)
        objects.initialize(repeating: -1, count: size)
    }

    deinit {
        // One entry at a time: `deinitialize(count:)` over a run calls the runtime's generic
        // array destroy (about 80 instructions an entry).
        for index in 0..<usedCount {
            (entries + Int(used[index])).deinitialize(count: 1)
        }
        UnsafeMutableRawPointer(entries).deallocate()
    }

    /// What the cache knows of key object `object`: its fingerprint, and whether the string it
    /// matched had the very bits of `stored` (then their texts are equal; other bits say
    /// nothing, a different fingerprint says they differ).
    @inline(__always)
    package func known(_ object: Int, _ stored: String) -> (fingerprint: UInt64, sameBits: Bool)? {
        #if _pointerBitWidth(_64)
        let bits = unsafeBitCast(stored, to: (UInt64, UInt64).self)
        let slot = object & mask
        // An unused slot's -1 must not match (its entry is not initialized).
        guard objects[slot] == object, object >= 0 else { return nil }
        let entry = entries + slot
        return (entry.pointee.fingerprint, entry.pointee.bits == bits)
        #else
        return nil
        #endif
    }

    /// Notes that key object `object` has the text of `stored`.
    package func remember(_ object: Int, matched stored: String, fingerprint: UInt64) {
        #if _pointerBitWidth(_64)
        // Key objects are file indices, never negative: -1 stays free for unused slots.
        guard object >= 0 else { return }
        let slot = object & mask
        let entry = Entry(fingerprint: fingerprint, bits: unsafeBitCast(stored, to: (UInt64, UInt64).self), string: stored)
        if objects[slot] >= 0 {
            entries[slot] = entry
        } else {
            (entries + slot).initialize(to: entry)
            // At most one entry a slot, and at most 256 slots: `usedCount` stays within them.
            used[usedCount] = UInt16(truncatingIfNeeded: slot)
            usedCount &+= 1
        }
        objects[slot] = object
        #endif
    }
}
