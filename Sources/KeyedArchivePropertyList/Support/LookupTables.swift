internal import CKeyedArchiveShims
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The writers' uniquing tables: maps from a number's bits, a string's exact text or a data's
/// bytes to an object index, without `Hasher` (SipHash) on the hot path, which made up a large share of
/// writing an archive or a binary property list.
///
/// Both tables are open-addressing with a multiplicative hash mixed with a per-process random
/// seed, so that values chosen by whoever supplies the data cannot be aimed at one probe
/// chain. Long strings and data are hashed by their ends (see ``LiteralBytesTable``); keys whose
/// hashes collide, such as keys alike at both ends, fall back to a `Dictionary` that hashes
/// them in full (seeded SipHash), at a cost linear in their length.
///
/// Each ``WordPairTable`` copies the seed when it is made and hashes with its copy (the tables
/// built on one read its copy): on Linux every read of a global `static let` calls
/// `swift_once`, a call on every probe (about 600,000 an archive of W2's 100,000 people).
enum LookupSeed {
    /// Chosen once per process.
    static let value: UInt64 = UInt64.random(in: UInt64.min...UInt64.max) | 1

    /// The hash of a key of two words under `seed` (a table's copy of ``value``); tables take
    /// a slot from its low bits.
    @inline(__always)
    static func hash(_ a: UInt64, _ b: UInt64, seed: UInt64) -> UInt64 {
        var mixed = (a ^ seed) &* 0x9E37_79B9_7F4A_7C15
        mixed ^= (b ^ (mixed >> 29)) &* 0xC2B2_AE3D_27D4_EB4F
        return mixed ^ (mixed >> 32)
    }
}

/// An open-addressing map from two 64-bit words to a non-negative `Int`, for tables probed
/// mostly for keys they hold. Keys and values sit together in the slots, so a probe costs one
/// cache line (tables of mostly new keys: ``UniquingWordPairTable``).
package struct WordPairTable {
    private struct Slot {
        var a: UInt64
        var b: UInt64
        /// Value + 1; 0 marks an empty slot.
        var value: Int
    }
    private var slots: [Slot] = []
    /// The number of keys.
    package private(set) var count = 0
    private var mask = 0
    /// ``LookupSeed/value``, read once (the tables built on this one hash with it too).
    fileprivate let seed = LookupSeed.value

    /// An empty table.
    package init() {}

    /// Calls `body` with each key and its value, in no particular order.
    func forEach(_ body: (_ a: UInt64, _ b: UInt64, _ value: Int) -> Void) {
        for slot in slots where slot.value != 0 { body(slot.a, slot.b, slot.value - 1) }
    }

    @inline(__always)
    private func home(_ a: UInt64, _ b: UInt64) -> Int {
        home(a, b, mask: mask)
    }

    @inline(__always)
    private func home(_ a: UInt64, _ b: UInt64, mask: Int) -> Int {
        Int(truncatingIfNeeded: LookupSeed.hash(a, b, seed: seed)) & mask
    }

    /// The value stored for the key `(a, b)`.
    @inline(__always)
    package func find(_ a: UInt64, _ b: UInt64) -> Int? {
        guard count > 0 else { return nil }
        return slots.withUnsafeBufferPointer { slots in
            var index = home(a, b)
            while true {
                let slot = slots[index]
                if slot.value == 0 { return nil }
                if slot.a == a && slot.b == b { return slot.value - 1 }
                index = (index + 1) & mask
            }
        }
    }

    /// The value stored for `(a, b)`, or `nil` after storing `value` for it: one probe sequence
    /// for both (looking up first and inserting after hashed and probed twice per new key).
    @inline(__always)
    package mutating func findOrInsert(_ a: UInt64, _ b: UInt64, _ value: Int) -> Int? {
        // Grown before probing, so that the empty slot the probe ends on is where the key goes.
        if (count + 1) * 2 > slots.count { rehash(capacity: Swift.max(64, slots.count * 2)) }
        let mask = self.mask
        var index = home(a, b)
        // Probed read-only: most calls find the key, and need no uniqueness check.
        let found: Int? = slots.withUnsafeBufferPointer { slots in
            while true {
                let slot = slots[index]
                if slot.value == 0 { return nil }
                if slot.a == a && slot.b == b { return slot.value - 1 }
                index = (index + 1) & mask
            }
        }
        if found != nil { return found }
        slots[index] = Slot(a: a, b: b, value: value + 1)
        count += 1
        return nil
    }

    /// Grows the table, if needed, to hold `minimumCount` keys without growing again: the
    /// growth a caller that knows how many keys are coming would otherwise meet at every
    /// doubling (each a pass over the old slots and fresh memory). Sizes stay powers of two, so
    /// small reserves repeated grow the table no faster than inserts would.
    package mutating func reserveCapacity(_ minimumCount: Int) {
        guard minimumCount > count, minimumCount <= Int.max / 4 else { return }
        var capacity = Swift.max(64, slots.count)
        while capacity < minimumCount * 2 { capacity *= 2 }
        if capacity > slots.count { rehash(capacity: capacity) }
    }

    /// Forgets every key and keeps the slots: a table emptied and then filled to about the
    /// same size again does not grow through every doubling again.
    package mutating func removeAll() {
        guard count > 0 else { return }
        slots.withUnsafeMutableBufferPointer { $0.update(repeating: Slot(a: 0, b: 0, value: 0)) }
        count = 0
    }

    /// Moves every key into a table of `capacity` slots, placing each directly (no lookup).
    private mutating func rehash(capacity: Int) {
        let old = slots
        let mask = capacity - 1
        var moved = 0
        var grown = HugePages.array(repeating: Slot(a: 0, b: 0, value: 0), count: capacity)
        grown.withUnsafeMutableBufferPointer { grown in
            for slot in old where slot.value != 0 {
                var index = home(slot.a, slot.b, mask: mask)
                while grown[index].value != 0 { index = (index + 1) & mask }
                grown[index] = slot
                moved += 1
            }
        }
        slots = grown
        self.mask = mask
        count = moved
    }
}

/// An open-addressing map from one 64-bit word (an object's address) to a non-negative `Int`
/// (its UID): the archivers' identity table. A ``WordPairTable`` with a second word that is
/// always zero took 24 bytes a slot; here a slot is 16, so a slot never straddles two cache
/// lines and a table of 100,000 objects is 4 MiB, not 6: every friend of a random W2 graph is
/// a lookup at a random slot. Its probing repeats ``WordPairTable``'s rather than sharing a
/// generic table with it: called from the graph module, a generic table's methods would run
/// unspecialized there (session 49: a generic list's `append` looked up its metadata at every
/// call).
package struct AddressTable {
    private struct Slot {
        var key: UInt64
        /// Value + 1; 0 marks an empty slot.
        var value: Int
    }
    private var slots: [Slot] = []
    /// The number of keys.
    package private(set) var count = 0
    private var mask = 0
    private let seed = LookupSeed.value

    /// An empty table.
    package init() {}

    @inline(__always)
    private func home(_ key: UInt64, mask: Int) -> Int {
        Int(truncatingIfNeeded: LookupSeed.hash(key, 0, seed: seed)) & mask
    }

    /// The value stored for `key`. `mutating` only so that a table kept in a class is passed
    /// in place: a non-mutating call from another module copies the table out of the class
    /// first, a retain and a release of its slots around every lookup.
    package mutating func find(_ key: UInt64) -> Int? {
        guard count > 0 else { return nil }
        return probe(key).value
    }

    /// Where the probe for `key` ends: its slot and value, or the empty slot where it would
    /// go and `nil`. The table must have slots.
    @inline(__always)
    private func probe(_ key: UInt64) -> (index: Int, value: Int?) {
        let mask = self.mask
        return slots.withUnsafeBufferPointer { slots in
            var index = home(key, mask: mask)
            while true {
                let slot = slots[index]
                if slot.value == 0 { return (index, nil) }
                if slot.key == key { return (index, slot.value &- 1) }
                index = (index &+ 1) & mask
            }
        }
    }

    /// Starts loading the slot where a lookup of `key` begins, for a lookup a little later.
    /// `mutating` for the reason ``find(_:)`` is.
    package mutating func prefetch(_ key: UInt64) {
        guard count > 0 else { return }
        let index = home(key, mask: mask)
        slots.withUnsafeBufferPointer { keyed_archive_prefetch($0.baseAddress.map { UnsafeRawPointer($0 + index) }) }
    }

    /// The value stored for `key`, or `nil` after storing `value` (non-negative) for it.
    package mutating func findOrInsert(_ key: UInt64, _ value: Int) -> Int? {
        if (count &+ 1) &* 2 > slots.count { rehash(capacity: Swift.max(64, slots.count &* 2)) }
        let (index, found) = probe(key)
        if found != nil { return found }
        slots[index] = Slot(key: key, value: value &+ 1)
        count &+= 1
        return nil
    }

    /// Grows the table, if needed, to hold `minimumCount` keys without growing again (see
    /// ``WordPairTable/reserveCapacity(_:)``).
    package mutating func reserveCapacity(_ minimumCount: Int) {
        guard minimumCount > count, minimumCount <= Int.max / 4 else { return }
        var capacity = Swift.max(64, slots.count)
        while capacity < minimumCount &* 2 { capacity &*= 2 }
        if capacity > slots.count { rehash(capacity: capacity) }
    }

    /// Moves every key into a table of `capacity` slots, placing each directly (no lookup).
    private mutating func rehash(capacity: Int) {
        let old = slots
        let mask = capacity &- 1
        var moved = 0
        var grown = HugePages.array(repeating: Slot(key: 0, value: 0), count: capacity)
        grown.withUnsafeMutableBufferPointer { grown in
            for slot in old where slot.value != 0 {
                var index = home(slot.key, mask: mask)
                while grown[index].value != 0 { index = (index &+ 1) & mask }
                grown[index] = slot
                moved &+= 1
            }
        }
        slots = grown
        self.mask = mask
        count = moved
    }
}

/// An open-addressing map from two 64-bit words to a non-negative `Int`, for the writers'
/// uniquing of strings and numbers: most values of a large document are written once, so most
/// probes of a large table are for keys it does not hold.
///
/// Up to ``inlineLimit`` keys (16,384) it is a ``WordPairTable``: keys in the slots, one read a
/// probe, and all of it in the cache. Past that its keys and values move to blocks, in the order
/// they came (24 bytes each, 16,384 to a block), and the open-addressing part holds one 8-byte
/// word per slot: 24 bits of the key's hash (a tag) and the entry's position. A new key's probe
/// ends on an empty slot without reading any entry; at 8 bytes a slot, a third of the memory,
/// more of the table stays in the cache, and growing it moves 8 bytes a key instead of 24. A full
/// block is never copied: a list grown by doubling leaves its smaller copies in glibc's heap
/// (below its mapping threshold, which rises to 32 MiB as large blocks are freed). Measured in
/// session 15 against slots of 24 bytes throughout: W3 write's peak 192 MB against 285 MB,
/// XML -> binary 310 MB against 405 MB, and a C model of both layouts inserting 600,000 new keys
/// 84-96 ns against 159-182 ns a key. Small tables stay as they were: with the tagged layout
/// from the first key, W1 archive took 8% longer (PerformanceHistory.md, "Profile notes,
/// session 15").
///
/// A new key is not placed in its slot at once: reading the slot to find it empty is a cache
/// miss in a table of megabytes (80% of this table's samples in W5 encode were that load), and
/// each miss stalled the caller. A bit array of four bits per slot (a sixteenth of the slots'
/// memory, so more of it in the cache) has each key's bit set; a key whose bit is clear is new
/// without probing, and is only appended and noted as pending. Pending keys are placed
/// ``pendingLimit`` at a time, in a loop whose loads do not depend on each other, so that
/// their misses overlap. A key whose bit is set (a key found again, or another's bit: 6-12%
/// of new keys at the table's load of 1/4 to 1/2) is looked for among the pending keys and
/// then probed as before. Measured against placing every key at once, alternating rounds:
/// W5 encode faster in 30 of 30 rounds (1.10x), W2 archive in 18 of 20 (1.125x), W3 write
/// unchanged; one bit per slot (more false hits) gained less (PerformanceHistory.md,
/// "Profile notes, session 29").
package struct UniquingWordPairTable {
    private struct Entry {
        var a: UInt64
        var b: UInt64
        var value: Int
    }
    /// The table while it has at most ``inlineLimit`` keys.
    private var small = WordPairTable()
    /// Tag (high 24 bits) and entry position + 1 (low 40 bits); 0 marks an empty slot.
    private var slots: [UInt64] = []
    /// The entries, ``blockLength`` to a block.
    private var blocks: [[Entry]] = []
    private var count = 0
    private var mask = 0
    /// The hash bits kept as a slot's tag.
    private let tagMask: UInt64
    /// Keys kept in ``small``.
    private let inlineLimit: Int
    /// ``small``'s copy of ``LookupSeed/value``.
    fileprivate var seed: UInt64 { small.seed }
    /// True once the keys moved to the tagged layout (which always has slots).
    private var isLarge: Bool { !slots.isEmpty }
    /// ``filterBitsPerSlot`` bits per slot, the bit at ``filterBit(_:)`` set for every key in
    /// the tagged layout: a clear bit proves a key new.
    private var filter: [UInt64] = []
    /// `64 - log2(filter bits)`: a key's bit is the top bits of a second mix of its hash.
    private var filterShift: UInt64 = 64
    /// The hashes of the last `pending.count` entries, which have no slot yet.
    private var pending: [UInt64] = []
    /// Filter bits per slot (a power of two).
    private static let filterBitsPerSlot = 4
    /// Pending keys placed at once.
    private static let pendingLimit = 64

    private static let positionBits: UInt64 = 40
    private static let positionMask: UInt64 = (1 << positionBits) - 1
    /// More entries than a slot can name (2^40, 24 TiB of entries) cannot be made: memory runs
    /// out first. New keys past it would not be stored.
    private static let maximumEntries = Int(positionMask) - 1
    private static let blockShift = 14
    /// 16,384 entries, 384 KiB.
    private static let blockLength = 1 << blockShift

    /// An empty table.
    package init() { self.init(tagMask: ~0, inlineLimit: Self.blockLength) }

    /// An empty table that keeps only the tag bits in `tagMask` and moves to the tagged layout
    /// past `inlineLimit` keys. (Tests use a tag mask of 0, with which every occupied slot
    /// matches by tag and only the comparison with its entry tells keys apart, and small
    /// limits.)
    package init(tagMask: UInt64, inlineLimit: Int) {
        self.tagMask = tagMask & ~Self.positionMask
        self.inlineLimit = Swift.max(0, inlineLimit)
    }

    /// Forgets every key; a table still in its small layout keeps its slots (see
    /// ``WordPairTable/removeAll()``).
    package mutating func removeAll() {
        if isLarge {
            self = UniquingWordPairTable(tagMask: tagMask, inlineLimit: inlineLimit)
        } else {
            small.removeAll()
        }
    }

    /// The value stored for the key `(a, b)`.
    @inline(__always)
    package func find(_ a: UInt64, _ b: UInt64) -> Int? {
        guard isLarge else { return small.find(a, b) }
        let hash = LookupSeed.hash(a, b, seed: seed)
        guard isFiltered(hash) else { return nil }
        if let found = findPending(hash, a, b) { return found }
        return slots.withUnsafeBufferPointer { slots in
            blocks.withUnsafeBufferPointer { blocks in
                Self.probe(slots, blocks, mask: mask, tag: hash & tagMask, hash: hash, a, b).value
            }
        }
    }

    /// Where the probe for `(a, b)` ended: the key's value when found, else the empty slot
    /// where it would go.
    @inline(__always)
    private static func probe(
        _ slots: UnsafeBufferPointer<UInt64>, _ blocks: UnsafeBufferPointer<[Entry]>, mask: Int, tag: UInt64,
        hash: UInt64, _ a: UInt64, _ b: UInt64
    ) -> (value: Int?, slot: Int) {
        var index = Int(truncatingIfNeeded: hash) & mask
        while true {
            let slot = slots[index]
            if slot == 0 { return (nil, index) }
            if slot & ~positionMask == tag {
                let position = Int(truncatingIfNeeded: slot & positionMask) &- 1
                let entry = blocks[position &>> blockShift][position & (blockLength &- 1)]
                if entry.a == a && entry.b == b { return (entry.value, index) }
            }
            index = (index &+ 1) & mask
        }
    }

    /// The value stored for `(a, b)`, or `nil` after storing `value` for it: one probe sequence
    /// for both (looking up first and inserting after hashed and probed twice per new key).
    @inline(__always)
    package mutating func findOrInsert(_ a: UInt64, _ b: UInt64, _ value: Int) -> Int? {
        if !isLarge && small.count < inlineLimit { return small.findOrInsert(a, b, value) }
        return findOrInsertLarge(a, b, value)
    }

    /// ``findOrInsert(_:_:_:)`` once ``small`` is full (not inlined: cache misses, not calls,
    /// are what large tables cost).
    @inline(never)
    private mutating func findOrInsertLarge(_ a: UInt64, _ b: UInt64, _ value: Int) -> Int? {
        if !isLarge {
            if let found = small.find(a, b) { return found }
            moveToBlocks()
        }
        // Grown before the key is added (rehashing places the pending keys too).
        if (count &+ 1) &* 2 > slots.count { rehash(capacity: Swift.max(64, slots.count &* 2)) }
        let hash = LookupSeed.hash(a, b, seed: seed)
        let (word, bit) = filterBit(hash)
        if filter[word] & bit != 0 {
            // Maybe a key already here: among the pending ones, or in the slots.
            if let found = findPending(hash, a, b) { return found }
            let mask = self.mask, tag = hash & tagMask
            // Probed read-only: many calls find the key, and need no uniqueness check.
            let found = slots.withUnsafeBufferPointer { slots in
                blocks.withUnsafeBufferPointer { blocks in Self.probe(slots, blocks, mask: mask, tag: tag, hash: hash, a, b).value }
            }
            if found != nil { return found }
        } else {
            filter[word] |= bit
        }
        guard count < Self.maximumEntries else { return nil }
        append(Entry(a: a, b: b, value: value))
        pending.append(hash)
        if pending.count >= Self.pendingLimit { placePending() }
        return nil
    }

    /// The filter word and bit of a key with `hash`.
    @inline(__always)
    private func filterBit(_ hash: UInt64) -> (word: Int, bit: UInt64) {
        // The slot is the hash's low bits and the tag its high ones: a second mix keeps the
        // bit independent of both.
        let index = Int(truncatingIfNeeded: (hash &* 0x9E37_79B9_7F4A_7C15) &>> filterShift)
        return (index &>> 6, 1 &<< UInt64(truncatingIfNeeded: index & 63))
    }

    /// Whether the filter bit of a key with `hash` is set (else the key is not in the table).
    @inline(__always)
    private func isFiltered(_ hash: UInt64) -> Bool {
        let (word, bit) = filterBit(hash)
        return filter[word] & bit != 0
    }

    /// The value of `(a, b)` among the pending keys.
    @inline(__always)
    private func findPending(_ hash: UInt64, _ a: UInt64, _ b: UInt64) -> Int? {
        let first = count &- pending.count
        for (offset, pendingHash) in pending.enumerated() where pendingHash == hash {
            let position = first &+ offset
            let entry = blocks[position &>> Self.blockShift][position & (Self.blockLength &- 1)]
            if entry.a == a && entry.b == b { return entry.value }
        }
        return nil
    }

    /// Gives the pending keys their slots. The loop's loads of the slots do not depend on one
    /// another (a slot is read until an empty one is found, and most are empty), so their
    /// cache misses overlap instead of stalling one at a time.
    @inline(never)
    private mutating func placePending() {
        let first = count &- pending.count
        let mask = self.mask, tagMask = self.tagMask
        slots.withUnsafeMutableBufferPointer { slots in
            for (offset, hash) in pending.enumerated() {
                Self.place(hash, position: first &+ offset, in: slots, mask: mask, tagMask: tagMask)
            }
        }
        pending.removeAll(keepingCapacity: true)
    }

    /// Puts the entry at `position` in the first empty slot from its hash's home (no lookup:
    /// the caller knows the key is not in the table).
    @inline(__always)
    private static func place(
        _ hash: UInt64, position: Int, in slots: UnsafeMutableBufferPointer<UInt64>, mask: Int, tagMask: UInt64
    ) {
        var index = Int(truncatingIfNeeded: hash) & mask
        while slots[index] != 0 { index = (index &+ 1) & mask }
        slots[index] = (hash & tagMask) | UInt64(truncatingIfNeeded: position &+ 1)
    }

    /// Adds `entry` after the others (its position is the old ``count``).
    private mutating func append(_ entry: Entry) {
        if count & (Self.blockLength &- 1) == 0 {
            var block: [Entry] = []
            block.reserveCapacity(Self.blockLength)
            blocks.append(block)
        }
        blocks[blocks.count &- 1].append(entry)
        count &+= 1
    }

    /// Moves the keys of ``small`` to the tagged layout.
    private mutating func moveToBlocks() {
        small.forEach { a, b, value in append(Entry(a: a, b: b, value: value)) }
        small = WordPairTable()
        var capacity = 64
        while capacity < count &* 4 { capacity &*= 2 }
        rehash(capacity: capacity)
    }

    /// Places every entry (the pending ones too) in a table of `capacity` slots, a power of two
    /// (no lookup: the keys are distinct), and sets their bits in a new filter.
    private mutating func rehash(capacity: Int) {
        let mask = capacity - 1, tagMask = self.tagMask
        // Probed at random: large pages spare most probes of a large table a TLB miss.
        var grown = HugePages.array(repeating: UInt64(0), count: capacity)
        let filterBits = capacity &* Self.filterBitsPerSlot
        filterShift = 64 &- UInt64(Swift.max(6, filterBits.trailingZeroBitCount))
        var filter = HugePages.array(repeating: UInt64(0), count: Swift.max(1, filterBits &>> 6))
        grown.withUnsafeMutableBufferPointer { grown in
            filter.withUnsafeMutableBufferPointer { filter in
                var position = 0
                for block in blocks {
                    for entry in block {
                        let hash = LookupSeed.hash(entry.a, entry.b, seed: seed)
                        Self.place(hash, position: position, in: grown, mask: mask, tagMask: tagMask)
                        position &+= 1
                        let (word, bit) = filterBit(hash)
                        filter[word] |= bit
                    }
                }
            }
        }
        self.filter = filter
        slots = grown
        self.mask = mask
        pending.removeAll(keepingCapacity: true)
        if pending.capacity < Self.pendingLimit { pending.reserveCapacity(Self.pendingLimit) }
    }
}

/// The writers' uniquing of numbers: a ``UniquingWordPairTable`` of their bits and kind, with
/// small non-negative integers in their canonical form kept apart in a direct table, one
/// 4-byte entry per value, indexed by the value.
///
/// Many of a large document's integers are small and distinct (identifiers, counts,
/// postcodes), and each distinct key costs the hash table a cache miss at a random place in a
/// large table. The direct table takes at most 16 bytes per key (the hash table 40 or more), and
/// keys near each other (identifiers counting up) are near each other in it. (W5 encode: four
/// of a record's six numbers; see `Docs/PerformanceHistory.md`, "Profile notes, session 28".)
///
/// The direct table covers `0 ..< coverage` (a power of two, grown by doubling up to
/// ``maximumCoverage``), and grows to a key only while it stays at most four entries per
/// distinct integer seen, so that a few large values in a small document do not allocate a
/// large table. An integer past the coverage goes to the hash table and, if the coverage can
/// still grow past it, is noted as pending; when the coverage grows past it, it moves to the
/// direct table. So every integer below the coverage is found there, and only there.
package struct NumberTable {
    /// Numbers other than the small canonical integers, and those past the coverage.
    private var others = UniquingWordPairTable()
    /// Value + 1 per integer below its count; 0 for none.
    private var direct: [UInt32] = []
    /// Integers at or past `direct.count`, and below ``maximumCoverage``, stored in ``others``,
    /// with their values.
    private var pendingIntegers: [(key: UInt64, value: Int)] = []
    /// Distinct integers stored through ``findOrInsert(integer:tag:_:)``.
    private var integerCount = 0
    /// Integers below the coverage whose value did not fit an entry (negative, or at
    /// `UInt32.max - 1` and more objects: memory runs out long before). The coverage stops
    /// growing after the first.
    private var oversized: [UInt64: Int] = [:]
    private var coverageIsFixed = false

    /// The most integers the direct table covers (4 Mi: 16 MiB).
    package static let maximumCoverage = 1 << 22
    /// The least coverage it is given.
    private static let minimumCoverage = 256

    /// An empty table.
    package init() {}

    /// The value stored for the key `(a, b)`, or `nil` after storing `value` for it: any number
    /// but the integers passed to ``findOrInsert(integer:tag:_:)``.
    @inline(__always)
    package mutating func findOrInsert(_ a: UInt64, _ b: UInt64, _ value: Int) -> Int? {
        others.findOrInsert(a, b, value)
    }

    /// The value stored for the integer `integer` of kind `tag`, or `nil` after storing `value`
    /// for it. The direct table is indexed by the integer alone: callers pass an integer's
    /// canonical form here (its kind a function of its value) and any other form to
    /// ``findOrInsert(_:_:_:)``.
    @inline(__always)
    package mutating func findOrInsert(integer: UInt64, tag: UInt64, _ value: Int) -> Int? {
        if integer < UInt64(truncatingIfNeeded: direct.count) {
            let index = Int(truncatingIfNeeded: integer)
            let stored = direct[index]
            if stored != 0 { return Int(stored) &- 1 }
            if Self.fits(value), !coverageIsFixed {
                direct[index] = UInt32(truncatingIfNeeded: value &+ 1)
                integerCount &+= 1
                return nil
            }
        }
        return findOrInsertSlowly(integer: integer, tag: tag, value)
    }

    /// ``findOrInsert(integer:tag:_:)`` for an integer past the coverage, or once the coverage
    /// is fixed.
    @inline(never)
    private mutating func findOrInsertSlowly(integer: UInt64, tag: UInt64, _ value: Int) -> Int? {
        let fits = Self.fits(value)
        if integer < UInt64(truncatingIfNeeded: direct.count) {
            if let found = oversized[integer] { return found }
            integerCount &+= 1
            if fits {
                direct[Int(truncatingIfNeeded: integer)] = UInt32(truncatingIfNeeded: value &+ 1)
            } else {
                oversized[integer] = value
                coverageIsFixed = true
            }
            return nil
        }
        if !fits { coverageIsFixed = true }
        if !coverageIsFixed, integer < UInt64(Self.maximumCoverage) {
            var coverage = Swift.max(Self.minimumCoverage, direct.count)
            while UInt64(coverage) <= integer { coverage &*= 2 }
            if coverage <= Swift.max(Self.minimumCoverage, (integerCount &+ 1) &* 4) {
                grow(to: coverage)
                return findOrInsert(integer: integer, tag: tag, value)
            }
        }
        let found = others.findOrInsert(integer, tag, value)
        if found == nil {
            integerCount &+= 1
            // Past the largest coverage, an integer can never move in (W3's 4-byte integers).
            if !coverageIsFixed, integer < UInt64(Self.maximumCoverage) { pendingIntegers.append((integer, value)) }
        }
        return found
    }

    /// Whether `value` + 1 fits an entry (0 marks an empty one).
    @inline(__always)
    private static func fits(_ value: Int) -> Bool { value >= 0 && value < Int(UInt32.max) }

    /// Covers `0 ..< coverage`, moving the pending integers below it into the direct table.
    private mutating func grow(to coverage: Int) {
        direct.append(contentsOf: repeatElement(0, count: coverage &- direct.count))
        var kept = 0
        for index in pendingIntegers.indices {
            let entry = pendingIntegers[index]
            if entry.key < UInt64(coverage) {
                // Pending integers are distinct, none is in the direct table yet, and their
                // values fit (the coverage is fixed once one does not).
                direct[Int(truncatingIfNeeded: entry.key)] = UInt32(truncatingIfNeeded: entry.value &+ 1)
            } else {
                pendingIntegers[kept] = entry
                kept &+= 1
            }
        }
        pendingIntegers.removeLast(pendingIntegers.count &- kept)
    }
}

/// The numbers added lately, for writers that share a number only with an equal one nearby
/// (see `BinaryPropertyListObjects.NumberSharing.nearby`): a small cache from a number's bits
/// and kind to an object index. Each key has a bucket of two slots, chosen by its hash; a new
/// key takes the first slot, moving the one there to the second, and the one in the second
/// slot is forgotten (two recurring keys that share a bucket do not push each other out).
///
/// Its cost does not grow with the document (at most 4,096 slots of 16 bytes, 64 KiB, in the
/// cache), where a table of every number grows past the cache and costs a miss per new
/// number. Numbers that recur (counts, flags, codes) stay in it; one equal to a number met
/// long before and forgotten since is simply stored again. The hash is not seeded: what is
/// shared, and so the bytes written, is the same in every process. Input chosen to collide
/// only makes more objects, at most one per number added, as with no sharing at all.
package struct RecentNumberCache {
    private struct Slot {
        var bits: UInt64
        /// The object index; truncated past `Int32.max` objects, which no list writes (see
        /// `BinaryPropertyListObjects.maximumObjectCount`).
        var index: Int32
        /// The kind (never 0); 0 marks an empty slot.
        var tag: UInt8

        static let empty = Slot(bits: 0, index: 0, tag: 0)
    }

    /// Empty until the first number; then ``firstSlotCount``, grown to ``maximumSlotCount``
    /// as numbers keep coming (a small archive, W1, should not clear 64 KiB). Buckets are
    /// slots `2b` (the newer) and `2b + 1`.
    private var slots: [Slot] = []
    /// Numbers not found since the last growth.
    private var misses = 0

    private static let firstSlotCount = 64
    /// The most slots: 4,096 of 16 bytes.
    private static let maximumSlotCount = 1 << 12

    /// An empty cache.
    package init() {}

    /// The index stored for the number `bits` of kind `tag` (not 0), or `nil` after storing
    /// `index` for it.
    @inline(__always)
    package mutating func findOrInsert(bits: UInt64, tag: UInt8, _ index: Int) -> Int? {
        if slots.isEmpty { slots = Array(repeating: .empty, count: Self.firstSlotCount) }
        let first = Self.bucket(bits: bits, tag: tag, slotCount: slots.count) &* 2
        let newer = slots[first]
        if newer.tag == tag, newer.bits == bits { return Int(newer.index) }
        let older = slots[first &+ 1]
        if older.tag == tag, older.bits == bits {
            slots[first &+ 1] = newer
            slots[first] = older
            return Int(older.index)
        }
        slots[first &+ 1] = newer
        slots[first] = Slot(bits: bits, index: Int32(truncatingIfNeeded: index), tag: tag)
        misses &+= 1
        if misses > 2 &* slots.count, slots.count < Self.maximumSlotCount { grow() }
        return nil
    }

    /// The bucket of a key among `slotCount / 2` (a power of two): the high bits of a
    /// multiplicative hash, which depend on every bit of the key.
    @inline(__always)
    private static func bucket(bits: UInt64, tag: UInt8, slotCount: Int) -> Int {
        let mixed = (bits ^ (UInt64(tag) &* 0x632B_E59B_D9B4_E019)) &* 0x9E37_79B9_7F4A_7C15
        return Int(truncatingIfNeeded: mixed >> UInt64(65 &- slotCount.trailingZeroBitCount))
    }

    /// Eight times the slots, keeping what they hold: the keys of one bucket go to buckets
    /// whose numbers start with its own (the hash's next bits), two at most to one.
    private mutating func grow() {
        let count = Swift.min(slots.count &* 8, Self.maximumSlotCount)
        var grown = Array(repeating: Slot.empty, count: count)
        // The older slot of a bucket first, so that its newer one stays first in its new bucket.
        func place(_ old: Slot) {
            guard old.tag != 0 else { return }
            let target = Self.bucket(bits: old.bits, tag: old.tag, slotCount: count) &* 2
            grown[target &+ 1] = grown[target]
            grown[target] = old
        }
        for first in stride(from: 0, to: slots.count, by: 2) {
            place(slots[first &+ 1])
            place(slots[first])
        }
        slots = grown
        misses = 0
    }
}

/// A key of a ``LiteralBytesTable``: its bytes, and a `Hashable` form of it that compares the
/// bytes exactly (for the rare keys whose hashes collide).
protocol LiteralBytesKey {
    associatedtype Exact: Hashable
    /// The key, compared byte for byte.
    var exact: Exact { get }
    /// Passes the key's bytes to `body`.
    func withLiteralBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result
}

extension String: LiteralBytesKey {
    /// Property lists compare strings by their text, with no Unicode normalisation.
    var exact: PropertyListString { PropertyListString(self) }

    /// The UTF-8 bytes.
    func withLiteralBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = utf8.withContiguousStorageIfAvailable(body) { return result }
        var native = self
        return native.withUTF8(body)
    }
}

extension Data: LiteralBytesKey {
    /// Hashed in full: the keys that reach the collision map are alike at both ends, and
    /// `Data`'s own hash reads only its first 80 bytes, so they would all collide there too.
    var exact: FullyHashedData { FullyHashedData(data: self) }

    func withLiteralBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        withUnsafeBytes { body($0.bindMemory(to: UInt8.self)) }
    }
}

/// `Data` hashed by all its bytes (SipHash, seeded per process), compared byte for byte.
struct FullyHashedData: Hashable {
    var data: Data

    func hash(into hasher: inout Hasher) {
        data.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}

/// A map from a string's exact text (its UTF-8 bytes, no Unicode normalisation: the way
/// property lists compare strings) or a data's bytes to a non-negative `Int`.
///
/// Keys of up to 15 bytes are keyed by the bytes themselves (two words), longer ones by a
/// seeded 64-bit hash and their length, checked against the stored key. (A `Dictionary` of
/// `Data` hashed up to 80 bytes with SipHash at every lookup: 6% of writing W3.)
///
/// Generic, so internal: other modules use the concrete ``LiteralStringTable`` and
/// ``LiteralDataTable``, which this module compiles specialized (a generic table called from
/// another module looked its metadata up at run time on every use: 3% of a W1 archive).
struct LiteralBytesTable<Key: LiteralBytesKey> {
    private var short = UniquingWordPairTable()
    /// The first long key, its hash and its value, kept apart from ``long``: a document with
    /// one long key (W1's image) makes no table and no lists for it, which were five of an
    /// archive's allocations, about 2,300 instructions to make and free (session 60). Three
    /// fields, not an optional tuple: binding the tuple retained the key at every lookup.
    private var firstLongKey: Key?
    private var firstLongHash: UInt64 = 0
    private var firstLongValue = 0
    /// The other long keys: their hash and length, and their position in ``longKeys``.
    private var long = UniquingWordPairTable()
    private var longKeys: [Key] = []
    private var longValues: [Int] = []
    /// Long keys whose hash and length equal an earlier, different key's.
    private var collisions: [Key.Exact: Int] = [:]
    /// ``long``'s copy of ``LookupSeed/value``.
    private var seed: UInt64 { long.seed }

    /// An empty table.
    init() {}

    /// Forgets every key, keeping the memory of a small table.
    mutating func removeAll() {
        short.removeAll()
        firstLongKey = nil
        long.removeAll()
        longKeys.removeAll(keepingCapacity: true)
        longValues.removeAll(keepingCapacity: true)
        collisions.removeAll()
    }

    /// The value stored for `key`, or `nil` after storing `value` for it.
    mutating func findOrInsert(_ key: Key, _ value: Int) -> Int? {
        key.withLiteralBytes { findOrInsert(bytes: $0, value) { key } }
    }

    /// The value stored for the key whose bytes are `bytes`, or `nil` after storing `value` for
    /// it; `key` makes the key, called only when a long key is stored or collides.
    mutating func findOrInsert(bytes: UnsafeBufferPointer<UInt8>, _ value: Int, key: () -> Key) -> Int? {
        let count = bytes.count
        if count <= 15 {
            var words: (UInt64, UInt64) = (0, 0)
            withUnsafeMutableBytes(of: &words) { raw in
                if let source = bytes.baseAddress, count > 0 { raw.baseAddress?.copyMemory(from: source, byteCount: count) }
                raw[15] = UInt8(truncatingIfNeeded: count)
            }
            return short.findOrInsert(words.0, words.1, value)
        }
        let hash = Self.hash(ofKey: UnsafeRawBufferPointer(bytes), tableSeed: seed)
        if firstLongKey == nil {
            firstLongKey = key()
            firstLongHash = hash
            firstLongValue = value
            return nil
        }
        if firstLongHash == hash, let first = firstLongKey, first.withLiteralBytes({ Self.equal($0, bytes) }) {
            return firstLongValue
        }
        if let position = long.findOrInsert(hash, UInt64(count), longKeys.count) {
            if longKeys[position].withLiteralBytes({ Self.equal($0, bytes) }) { return longValues[position] }
            let exact = key().exact
            if let found = collisions[exact] { return found }
            collisions[exact] = value
            return nil
        }
        longKeys.append(key())
        longValues.append(value)
        return nil
    }

    private static func equal(_ stored: UnsafeBufferPointer<UInt8>, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard stored.count == bytes.count else { return false }
        guard let a = stored.baseAddress, let b = bytes.baseAddress else { return true }
        return memcmp(a, b, stored.count) == 0
    }

    /// A seeded multiply-xorshift hash over eight bytes at a time, of at most the first and the
    /// last 64 bytes (and the length): keys are compared in full when their hashes match anyway,
    /// and hashing all of a 256 KiB image would cost more than writing it. (`Data`'s own
    /// `hash(into:)` reads at most 80 bytes for the same reason.) Keys alike at both ends collide
    /// and are told apart by the collision map, at a cost linear in their length, as hashing them
    /// in full would be.
    private static func hash(ofKey raw: UnsafeRawBufferPointer, tableSeed: UInt64) -> UInt64 {
        let ends = 64
        let seed = tableSeed ^ (UInt64(truncatingIfNeeded: raw.count) &* 0x9E37_79B9_7F4A_7C15)
        guard raw.count > 2 * ends else { return hash(raw, seed: seed) }
        let head = hash(UnsafeRawBufferPointer(rebasing: raw[..<ends]), seed: seed)
        return hash(UnsafeRawBufferPointer(rebasing: raw[(raw.count - ends)...]), seed: head)
    }

    private static func hash(_ raw: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        var hash = seed
        var index = 0
        while index + 8 <= raw.count {
            hash = (hash ^ raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)) &* 0xBF58_476D_1CE4_E5B9
            hash ^= hash >> 29
            index += 8
        }
        if index < raw.count {
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while index < raw.count {
                tail |= UInt64(raw[index]) << shift
                shift += 8
                index += 1
            }
            hash = (hash ^ tail) &* 0x94D0_49BB_1331_11EB
        }
        return hash ^ (hash >> 32)
    }
}

/// A map from a string's exact text (no Unicode normalisation) to a non-negative `Int`, for
/// texts given as a `String` or as a ``PropertyListString`` alike. Long texts are kept as the
/// `String` (a long ``PropertyListString`` hands out its boxed one without copying), so that a
/// caller with a `String` never has a ``PropertyListString`` (a box, for a long text) made.
package struct LiteralStringTable {
    private var table = LiteralBytesTable<String>()

    /// An empty table.
    package init() {}

    /// Forgets every string, keeping the memory of a small table (a writer that starts its
    /// table over every few thousand strings fills it to the same size again).
    package mutating func removeAll() {
        table.removeAll()
    }

    /// The value stored for `string`'s text, or `nil` after storing `value` for it.
    package mutating func findOrInsert(_ string: String, _ value: Int) -> Int? {
        table.findOrInsert(string, value)
    }

    /// The value stored for `string`'s text, or `nil` after storing `value` for it. The
    /// storage hint is not part of the key: callers keep a table per storage.
    package mutating func findOrInsert(_ string: PropertyListString, _ value: Int) -> Int? {
        string.withUTF8 { table.findOrInsert(bytes: $0, value) { string.value } }
    }
}

/// A map from a data's bytes to a non-negative `Int`.
package struct LiteralDataTable {
    private var table = LiteralBytesTable<Data>()

    /// An empty table.
    package init() {}

    /// The value stored for `data`, or `nil` after storing `value` for it.
    package mutating func findOrInsert(_ data: Data, _ value: Int) -> Int? {
        table.findOrInsert(data, value)
    }
}
