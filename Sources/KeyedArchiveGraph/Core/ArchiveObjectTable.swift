@_spi(KeyedArchiveInternals) import KeyedArchivePropertyList

/// The writer side of an archive: the `$objects` table being built, with UIDs assigned once per
/// object, shared class descriptions, uniqued leaves and back-patched conditional references.
///
/// This is the low-level core the archiver and the Codable bridge build on. A typical writer:
///
/// ```swift
/// let table = ArchiveObjectTable()
/// let uid = table.reserveUID(for: object)          // before encoding fields: cycles see it
/// var fields = ArchiveObjectFields(classUID: table.classUID(chain: ["Person", "NSObject"]))
/// fields.set(.uid(table.leafUID(.string("Ada"))), forKey: "name")
/// table.setObject(fields.value, at: uid)
/// let data = try table.encodedData(top: [(ArchiveKeys.rootKey, .uid(uid))], format: .binary)
/// ```
///
/// Rules it enforces (see Docs/KeyedArchiveFormat.md):
/// - `$objects[0]` is `"$null"`; UID 0 means nil. An entry reserved and never set is `"$null"`.
/// - A reference-type object gets one UID, found again by `ObjectIdentifier`; the table keeps
///   the object alive until it is done so that identifiers are not reused.
/// - Leaves (strings, integers, reals, booleans, data, dates) are uniqued by exact value, as
///   Apple does, but never across types or widths: `1` and `true`, `2` and `2.0`, a 4-byte and
///   an 8-byte real stay apart.
/// - A class description `{$classname, $classes}` is written once per distinct chain.
/// - A conditional reference to an object that is encoded unconditionally at any time before
///   ``encodedData(top:format:archiverName:)`` is patched to that object's UID; otherwise it
///   stays UID 0.
///
/// Entries go straight into the binary writer's flat object list as they are set (laid out
/// while they are still in the cache, and freed then): the table holds no tree of the archive.
/// Past ``pipelineThreshold`` entries, on a machine with a spare core, they are laid out on a
/// second thread while the caller goes on (``ArchiveLayoutPipeline``), with the same bytes.
/// Only objects whose conditional references are patched later (``pin(_:)``) wait as values.
/// Other formats than binary are made from the binary bytes.
package final class ArchiveObjectTable {
    /// The entries laid out so far, in the binary writer's object list.
    @exclusivity(unchecked) private var layout = ArchiveLayout()
    /// While the layout is made on a second thread: that thread and the steps recorded for it
    /// (``ArchiveLayoutPipeline``); `layout` is then an empty stand-in.
    @exclusivity(unchecked) private var pipeline: ArchiveLayoutPipeline?
    /// The steps recorded for the pipeline since its last hand-over (kept here, not in the
    /// pipeline object: reaching them through it retained and released it at every step).
    /// Made when the pipeline starts: most tables never start it, and a batch is three
    /// allocations.
    @exclusivity(unchecked) private var batch: ArchiveLayoutBatch?
    /// The table's copy of the layout's slot values while the layout is pipelined.
    @exclusivity(unchecked) private var pipelinedSlotValues = ArchiveSlotValues()
    /// The number of entries in `$objects`, `$null` included (the layout's count, kept here
    /// too so that it can be read while the layout is on the other thread).
    @exclusivity(unchecked) private var entryCount = 0
    /// The entry count from which the layout is made on a second thread, on a machine with a
    /// spare core (see ``ArchiveLayoutPipeline``); `Int.max`: never.
    @exclusivity(unchecked) private var pipelineThreshold: Int
    /// Entries kept as values until the end: pinned objects (their conditional references are
    /// patched after they are set), by UID.
    @exclusivity(unchecked) private var pending: [UInt32: PropertyListValue] = [:]
    @exclusivity(unchecked) private var pinned: Set<UInt32> = []
    /// Pinned copies of pinned entries (``setObject(copyOf:at:)``): copied again once patched.
    @exclusivity(unchecked) private var aliases: [UInt32: UInt32] = [:]
    /// Whether the table has been written (or its writing has failed: see ``writeFailure``;
    /// or encoding failed: see ``abandon()``).
    @exclusivity(unchecked) package private(set) var isFinished = false
    /// Why writing failed: ``encodedData(top:format:archiverName:)`` throws it again.
    @exclusivity(unchecked) package private(set) var writeFailure: KeyedArchiveError?
    /// UIDs by object address (the objects are retained in `retained`, so addresses stay unique).
    @exclusivity(unchecked) private var identities = AddressTable()
    @exclusivity(unchecked) private var retained: [AnyObject] = []
    /// Uniqued leaves: numbers, booleans and dates by bits and kind, strings by exact text
    /// (within a window while they recur, see ``StringLeafSharing``), the rest (data) by value.
    @exclusivity(unchecked) private var numberLeaves = NumberTable()
    @exclusivity(unchecked) private var stringLeaves = StringLeafSharing()
    @exclusivity(unchecked) private var dataLeaves = LiteralDataTable()
    @exclusivity(unchecked) private var otherLeaves: [PropertyListValue: UInt32] = [:]
    @exclusivity(unchecked) private var valueObjects: [PropertyListValue: UInt32] = [:]
    /// Class descriptions written, by chain (and hints): the first few in a list compared in
    /// turn, the rest by hash. An archive names few classes, and a dictionary's first insert
    /// (its storage, and hashing an array of strings) cost a small archive (W1) 7,500
    /// instructions for its one class.
    @exclusivity(unchecked) private var firstClassDescriptions: [(key: [String], uid: UInt32)] = []
    @exclusivity(unchecked) private var moreClassDescriptions: [[String]: UInt32] = [:]
    /// Forward conditional references by target: where each sits, and the placeholder UID
    /// stored there until the table is written (see ``conditionalReference(to:slot:)``).
    @exclusivity(unchecked) private var conditionalSlots: [ObjectIdentifier: [(slot: ConditionalSlot, placeholder: UInt32)]] = [:]
    /// How many placeholders have been handed out (the next is `UInt32.max` minus this).
    @exclusivity(unchecked) private var placeholderCount: UInt32 = 0

    /// Where a conditional reference sits, to be patched when the table is written.
    package enum ConditionalSlot: Sendable, Hashable {
        /// In the object at a UID.
        case object(uid: UInt32)
        /// In `$top`.
        case top
    }

    /// An empty table (just `$null`).
    package init() {
        pipelineThreshold = Self.pipelineThresholdOverride.value ?? (SecondThread<Void>.hasSpareCore ? Self.pipelineThreshold : .max)
        let null = newEntry()
        layOut(ArchiveKeys.nullValue, at: null)
    }

    /// Entries from which a table lays its entries out on a second thread: a small archive is
    /// written before a thread would pay for its start.
    static let pipelineThreshold = 1 << 14

    /// When set, the entry count from which every table made from then on uses a second
    /// thread, on any machine (tests and fuzzing: the bytes are the same either way).
    package static let pipelineThresholdOverride = AtomicOptionalInt()

    /// Second threads started for layouts so far, and those not joined yet (tests: that the
    /// second thread was used, and that every path joins it).
    package static let pipelineCounts = Protected((started: 0, running: 0))

    /// The number of entries in `$objects`, including `$null`.
    package var count: Int { entryCount }

    // MARK: Layout, here or on the second thread

    /// A new entry's UID; starts the second thread once there are ``pipelineThreshold`` entries.
    /// Inline, with the layout done here out of line: every object and string takes an entry,
    /// and with the layout on the second thread all it does is count (a call was about 26
    /// instructions, W2 Codable archive).
    @inline(__always)
    private func newEntry() -> UInt32 {
        let uid = UInt32(truncatingIfNeeded: entryCount)
        entryCount += 1
        if isPipelined { batch?.appendNewEntry() } else { layOutNewEntry() }
        return uid
    }

    @inline(never)
    private func layOutNewEntry() {
        _ = layout.newEntry()
        startPipelineIfDue()
    }

    /// Starts the second thread once there are ``pipelineThreshold`` entries (after an entry
    /// laid out here).
    @inline(__always)
    private func startPipelineIfDue() {
        if entryCount >= pipelineThreshold && !isFinished { startPipeline() }
    }

    /// Whether the layout is on the second thread.
    private var isPipelined: Bool { pipeline != nil }

    private func startPipeline() {
        let slotValues = layout.slotValues
        guard let started = ArchiveLayoutPipeline(layout: &layout) else {
            // No thread: laid out here from now on.
            pipelineThreshold = .max
            return
        }
        pipelinedSlotValues = slotValues
        pipeline = started
        batch = ArchiveLayoutBatch()
    }

    /// Records a step for the pipeline.
    @inline(__always)
    private func record(_ step: ArchiveLayoutStep) {
        if batch?.append(step) == true { pipeline?.handOver(&batch) }
    }

    /// Takes the layout back from the second thread (for good: a table that needed its
    /// layout once lays out the rest itself).
    private func stopPipeline() {
        guard let pipeline else { return }
        self.pipeline = nil
        pipelineThreshold = .max
        pipelinedSlotValues = ArchiveSlotValues()
        let last = batch ?? ArchiveLayoutBatch()
        batch = nil
        guard let finished = pipeline.finish(last: last) else {
            // Not reached (the layout is handed back once): reported rather than written wrong.
            writeFailure = KeyedArchiveError(.unsupportedValue, "internal error: the archive's layout was lost")
            return
        }
        layout = finished
    }

    private func layOut(_ value: PropertyListValue, at uid: UInt32) {
        if isPipelined { record(.value(value, uid: uid)) } else { layout.layOut(value, at: uid) }
    }

    private func layOut(fields: UnsafeBufferPointer<ArchiveField>, array: (key: ArchiveSlot, elements: UnsafeBufferPointer<ArchiveSlot>)?, at uid: UInt32) {
        if isPipelined {
            if batch?.appendObject(fields: fields, array: array, at: uid) == true { pipeline?.handOver(&batch) }
        } else {
            layout.layOut(fields: fields, array: array, at: uid)
        }
    }

    /// The UID an object was given by ``reserveUID(for:)``, if any.
    package func uid(for object: AnyObject) -> UInt32? {
        uid(forAddress: UInt(bitPattern: ObjectIdentifier(object)))
    }

    /// The UID of the object at `address` (its `ObjectIdentifier`'s bit pattern), if it has
    /// one: for callers that know an instance's address without holding a reference to it.
    package func uid(forAddress address: UInt) -> UInt32? {
        identities.find(UInt64(address)).map { UInt32(truncatingIfNeeded: $0) }
    }

    /// How many elements ahead of its lookups an array of objects has the identity table
    /// load their slots (``prefetchIdentity(ofElement:in:count:)``).
    package static var identityLookahead: Int { 4 }

    /// Called at element `index` of a loop over an array of `count` objects whose addresses
    /// are the words at `addresses`: starts loading the identity slot of the element
    /// ``identityLookahead`` further on, if there is one, so that it is in the cache when the
    /// loop gets there; at `index` 0, those of the elements before it too. Reads only words
    /// of the array (none for an index or count out of range). The table is megabytes, probed
    /// at random: most lookups of a large graph miss the caches, and a missing load holds up
    /// what follows it once the processor's window fills, where a prefetch does not (W2's root
    /// array and each person's friends: the lookup was a fifth of a Codable archive of
    /// 100,000 people).
    @inline(__always)
    package func prefetchIdentity(ofElement index: Int, in addresses: UnsafeRawPointer, count: Int) {
        let word = MemoryLayout<UInt>.stride
        if index == 0 {
            for first in 0..<Swift.max(0, Swift.min(Self.identityLookahead, count)) {
                identities.prefetch(UInt64(addresses.load(fromByteOffset: first &* word, as: UInt.self)))
            }
        }
        guard index >= 0, count > Self.identityLookahead, index < count &- Self.identityLookahead else { return }
        identities.prefetch(UInt64(addresses.load(fromByteOffset: (index &+ Self.identityLookahead) &* word, as: UInt.self)))
    }

    private static func address(of identifier: ObjectIdentifier) -> UInt64 {
        UInt64(UInt(bitPattern: identifier))
    }

    /// The UID of an object: the one it already has (`isNew` false), or a new one reserved as
    /// ``reserveUID(for:)`` does (`isNew` true). One lookup where ``uid(for:)`` then
    /// ``reserveUID(for:)`` would take two.
    /// Generic, so that an object found in the table is looked up by its identity alone (as
    /// `AnyObject`, each was retained and released around the lookup).
    package func uidOrReserve<Object: AnyObject>(for object: Object) -> (uid: UInt32, isNew: Bool) {
        if let found = identities.findOrInsert(Self.address(of: ObjectIdentifier(object)), entryCount) {
            return (UInt32(truncatingIfNeeded: found), false)
        }
        retained.append(object)
        return (newEntry(), true)
    }

    /// Makes room for `additional` more objects' identities (the elements of an array about to
    /// be referenced), so that the identity table does not grow through every doubling on the
    /// way (W2: 13 growths, 22 M instructions of a 100,000-person archive, callgrind).
    ///
    /// So many objects that they will take the table past ``pipelineThreshold`` entries also
    /// start the layout's second thread now rather than there: the entries before it are laid
    /// out on the encoder's thread (W2 Codable archive: 3% of that thread's instructions).
    package func reserveIdentities(_ additional: Int) {
        guard additional > 0 else { return }
        let (needed, overflow) = identities.count.addingReportingOverflow(additional)
        guard !overflow else { return }
        identities.reserveCapacity(needed)
        if retained.capacity < needed { retained.reserveCapacity(Swift.max(needed, retained.capacity * 2)) }
        if !isPipelined && !isFinished && additional >= pipelineThreshold &- entryCount { startPipeline() }
    }

    /// How far the archive has grown (its entries, and its layout's objects and references),
    /// for ``reserveForRepeats(since:times:)``; nil while the layout is on the second thread.
    package var growthMark: ArchiveGrowthMark? {
        guard !isPipelined, !isFinished else { return nil }
        return ArchiveGrowthMark(entries: entryCount, objects: layout.list.count, references: layout.list.references.count)
    }

    /// The room the layout's lists have (for entries, objects and references), as a mark:
    /// what ``reserveForRepeats(since:times:)`` sets, for tests; nil while the layout is on
    /// the second thread.
    package var layoutRoom: ArchiveGrowthMark? {
        guard !isPipelined, !isFinished else { return nil }
        return layout.room
    }

    /// Makes room for `repeats` more times what the archive grew by since `mark`: called
    /// partway through a long array, with the growth of its first elements, so that the
    /// layout's lists are allocated once for the whole array rather than grown through every
    /// doubling on the way (each a `realloc` that copies them, in a heap that keeps its freed
    /// memory: W5 encode of 1,000 records copied about 0.6 M instructions' worth). At most
    /// ``ArchiveGrowthMark/reservationLimit`` of each is reserved ahead, plus, for the
    /// references, one for each entry (`$objects` refers to every entry when the archive is
    /// finished): past that the lists are large blocks of their own, which `realloc` moves
    /// without copying, and an estimate from a few elements cannot make the archiver ask for
    /// much more memory than its input needs.
    package func reserveForRepeats(since mark: ArchiveGrowthMark, times repeats: Int) {
        guard repeats > 0, let now = growthMark else { return }
        let limit = ArchiveGrowthMark.reservationLimit
        func more(_ count: Int, grownFrom start: Int) -> Int {
            let grown = count &- start
            guard grown > 0 else { return 0 }
            // An eighth more than the sample's growth: elements vary, and falling short by
            // one element meant a last doubling, the largest copy of all.
            let (product, overflow) = grown.multipliedReportingOverflow(by: repeats)
            return overflow || product > Int.max / 2 ? limit : Swift.min(product + product / 8, limit)
        }
        let moreEntries = more(now.entries, grownFrom: mark.entries)
        // `$objects` refers to every entry, added when the archive is finished. (Counts and
        // the limit are far below `Int.max`: no overflow.)
        layout.reserve(
            moreEntries: moreEntries, moreObjects: more(now.objects, grownFrom: mark.objects),
            moreReferences: more(now.references, grownFrom: mark.references) &+ now.entries &+ moreEntries)
    }

    /// Appends an entry for an object whose contents come later (``setObject(_:at:)``) and
    /// returns its UID; with `object`, registers its identity first so that references to it
    /// met while encoding its fields (cycles) get the same UID. `object` is taken, not
    /// borrowed: the table keeps it, and a borrowed one was retained again to be kept.
    package func reserveUID(for object: consuming AnyObject? = nil) -> UInt32 {
        let uid = newEntry()
        if let kept = consume object {
            _ = identities.findOrInsert(Self.address(of: ObjectIdentifier(kept)), Int(uid))
            retained.append(consume kept)
        }
        return uid
    }

    /// Keeps the entry at `uid` as a value until the table is written, so that conditional
    /// references in it can still be patched (``pendingObject(at:)``). Set before the entry is.
    package func pin(_ uid: UInt32) {
        pinned.insert(uid)
    }

    /// Marks the table spent without writing it: encoding failed part way, and an entry was
    /// reserved that will never be set.
    package func abandon() {
        isFinished = true
    }

    /// The value of a pinned entry, if it has been set.
    package func pendingObject(at uid: UInt32) -> PropertyListValue? {
        pending[uid]
    }

    /// Stores the contents of a reserved entry (normally an object dictionary from
    /// ``ArchiveObjectFields``). Setting an entry again replaces it (what the first setting
    /// added stays in the file, unreferenced).
    package func setObject(_ value: PropertyListValue, at uid: UInt32) {
        let index = Int(uid)
        guard index > 0, index < entryCount, !isFinished else { return }
        if !pinned.isEmpty && pinned.contains(uid) {
            pending[uid] = value
        } else {
            layOut(value, at: uid)
        }
    }

    /// Stores an object dictionary given as slots at a reserved entry: `fields` in order, then,
    /// with `array`, one more entry whose value is an array of `array.elements` (the `NS.objects`
    /// of an NSArray or NSSet). What ``setObject(_:at:)`` does with the same dictionary as a
    /// value, byte for byte, without building it.
    package func setObject(fields: [ArchiveField], array: (key: ArchiveSlot, elements: [ArchiveSlot])? = nil, at uid: UInt32) {
        fields.withUnsafeBufferPointer { fields in
            if let array {
                array.elements.withUnsafeBufferPointer { setObject(fields: fields, array: (array.key, $0), at: uid) }
            } else {
                setObject(fields: fields, array: nil, at: uid)
            }
        }
    }

    /// ``setObject(fields:array:at:)`` with the fields and elements in buffers, for callers that
    /// keep them in lists of their own (``SlotBuffer``): passed as arrays, each was retained and released again,
    /// and retains cost the encoder's thread more while the layout runs beside it (W5 encode:
    /// 81 samples of retains and releases an encode with the layout on one thread, 112 on two).
    package func setObject(fields: UnsafeBufferPointer<ArchiveField>, array: (key: ArchiveSlot, elements: UnsafeBufferPointer<ArchiveSlot>)?, at uid: UInt32) {
        let index = Int(uid)
        guard index > 0, index < entryCount, !isFinished else { return }
        if !pinned.isEmpty && pinned.contains(uid) {
            pending[uid] = objectValue(fields: fields, array: array)
        } else {
            layOut(fields: fields, array: array, at: uid)
        }
    }

    /// The dictionary ``setObject(fields:array:at:)`` lays out, as a value.
    private func objectValue(fields: UnsafeBufferPointer<ArchiveField>, array: (key: ArchiveSlot, elements: UnsafeBufferPointer<ArchiveSlot>)?) -> PropertyListValue {
        var entries: [PropertyListDictionary.Entry] = []
        entries.reserveCapacity(fields.count + 1)
        for field in fields { entries.append((value(of: field.key), value(of: field.value))) }
        if let array { entries.append((value(of: array.key), .array(array.elements.map { value(of: $0) }))) }
        return .dictionary(PropertyListDictionary(entries))
    }

    /// A stored key (an object's field name, escaped) as a slot: interned, so that each key is
    /// flattened once and every later use is an array lookup. One id per text: interning the
    /// same key again gives the same slot (callers cache it: ``StoredKeyCache/slot(for:in:)``).
    package func internStoredKey(_ key: PropertyListValue) -> ArchiveSlot {
        guard isPipelined else { return layout.intern(key) }
        let (slot, isNew) = pipelinedSlotValues.intern(key)
        if isNew { record(.intern(key)) }
        return slot
    }

    /// `value` as a slot: inline when it needs no table, else kept aside until the table is
    /// written.
    package func slot(for value: PropertyListValue) -> ArchiveSlot {
        if let plain = ArchiveSlot(plain: value) { return plain }
        guard isPipelined else { return layout.keepAside(value) }
        record(.keepAside(value))
        return pipelinedSlotValues.keepAside(value)
    }

    /// The value a slot stands for.
    package func value(of slot: ArchiveSlot) -> PropertyListValue {
        isPipelined ? pipelinedSlotValues.value(of: slot) : layout.value(of: slot)
    }

    /// Stores a copy of the entry at `source` (set already) at `uid`.
    package func setObject(copyOf source: UInt32, at uid: UInt32) {
        let from = Int(source), to = Int(uid)
        guard from >= 0, from < entryCount, to > 0, to < entryCount, !isFinished else { return }
        if pinned.contains(source) {
            // A copy of an entry still to be patched is patched with it: copied again at the end.
            pin(uid)
            aliases[uid] = source
            pending[uid] = pending[source]
        } else {
            // The source is final: so is the copy.
            pinned.remove(uid)
            pending[uid] = nil
            if isPipelined { record(.copyEntry(from: from, to: to)) } else { layout.copyEntry(from: from, to: to) }
        }
    }

    /// The UIDs the entry at `uid` refers to (its fields, and the members of arrays stored in
    /// it), for reachability checks.
    package func references(from uid: UInt32) -> [UInt32] {
        let index = Int(uid)
        guard index >= 0, index < entryCount else { return [] }
        if let value = pending[uid] {
            guard case .dictionary(let fields) = value else { return [] }
            var found: [UInt32] = []
            for entry in fields.entries {
                switch entry.value {
                case .uid(let target): found.append(target)
                case .array(let items), .set(let items):
                    for case .uid(let target) in items { found.append(target) }
                default: break
                }
            }
            return found
        }
        // The lists themselves are read: the layout comes back to this thread.
        stopPipeline()
        guard let objectIndex = layout.objectIndex(ofEntry: index) else { return [] }
        return layout.list.uids(reachableFrom: objectIndex).map { UInt32(truncatingIfNeeded: $0) }
    }

    /// A string leaf is shared with an equal one stored since the string table last started
    /// over, which it does after this many new strings (or after ``stringLeafVerdict``).
    ///
    /// Strings that recur (names of kinds, states, tags in use) are stored about once per
    /// window; one equal to a string thousands of strings back is an entry of its own. A table
    /// of every string grew past the cache and cost the archiver a miss per new string (W5's
    /// names, emails, streets and cities; W2's names): W5 encode 1.146x, W2 archives 1.048x /
    /// 1.076x in alternating rounds (session 36), for a 2% larger W5 archive (its tags, four
    /// letters each, recur far apart). Foundation's archiver on Linux shares every equal
    /// string (its object map is keyed by value); what is shared changes no decoded value (a
    /// `String` has no identity; NSKeyedUnarchiver makes one object per entry, equal either
    /// way). Windows in which strings rarely recur make the next ones skip the lookups
    /// (``StringLeafSharing``).
    package static let stringLeafWindow = 4_096

    /// A window looking strings up that has found fewer than one in
    /// ``StringLeafSharing/rareRepeats`` of its first this many new strings again ends there,
    /// as one of rare repeats.
    package static let stringLeafVerdict = 512

    /// The UID of a leaf value (string, integer, real, boolean, data, date), stored once per
    /// exact value (strings: within ``stringLeafWindow``). Other values are stored without
    /// uniquing.
    package func leafUID(_ value: PropertyListValue) -> UInt32 {
        let next = entryCount
        let found: Int?
        switch value {
        case .string(let string):
            found = stringLeaves.findOrInsert(string, next)
        case .integer(let integer):
            found = integer.isNegative || integer.isAboveInt64Max
                ? numberLeaves.findOrInsert(integer.bitPattern, integer.isAboveInt64Max ? 0x11 : 0x10, next)
                : numberLeaves.findOrInsert(integer: integer.bitPattern, tag: 0x10, next)
        case .real(let real):
            found = numberLeaves.findOrInsert(real.value.bitPattern, real.isSinglePrecision ? 0x22 : 0x23, next)
        case .bool(let bool):
            found = numberLeaves.findOrInsert(bool ? 1 : 0, 0x08, next)
        case .date(let date):
            found = numberLeaves.findOrInsert(date.timeIntervalSinceReferenceDate.bitPattern, 0x33, next)
        case .data(let data):
            found = dataLeaves.findOrInsert(data, next)
        default:
            if let uid = otherLeaves[value] { return uid }
            otherLeaves[value] = UInt32(truncatingIfNeeded: next)
            found = nil
        }
        if let found { return UInt32(truncatingIfNeeded: found) }
        let uid = newEntry()
        layOut(value, at: uid)
        return uid
    }

    /// The UID of a string leaf, stored once per exact text (within ``stringLeafWindow``):
    /// ``leafUID(_:)`` for a caller that has a `String`, with no ``PropertyListString`` made
    /// of it (a long one is boxed).
    package func leafUID(string: String) -> UInt32 {
        if let found = stringLeaves.findOrInsert(string, entryCount) { return UInt32(truncatingIfNeeded: found) }
        // The entry is appended already holding the string: a placeholder set afterwards was
        // counted, stored, measured again and replaced (about 270 instructions a string, 8% of
        // a W5 encode of 1,000 records).
        let uid = UInt32(truncatingIfNeeded: entryCount)
        entryCount += 1
        if isPipelined {
            record(.newString(string))
        } else {
            layout.newEntry(string: string)
            startPipelineIfDue()
        }
        return uid
    }

    /// The UID of an object dictionary with value semantics (an NSDate, NSUUID, NSNull...),
    /// stored once per equal dictionary.
    package func valueObjectUID(_ value: PropertyListValue) -> UInt32 {
        if let uid = valueObjects[value] { return uid }
        let uid = newEntry()
        layOut(value, at: uid)
        valueObjects[value] = uid
        return uid
    }

    /// The UID of the class description for a chain (most derived first, e.g.
    /// `["NSMutableArray", "NSArray", "NSObject"]`), written once per chain. A chain of one
    /// name writes `$classes` with that one name.
    package func classUID(chain: [String], hints: [String]? = nil) -> UInt32 {
        let key = hints.map { chain + ["\u{0}hints"] + $0 } ?? chain
        for known in firstClassDescriptions where known.key == key { return known.uid }
        if !moreClassDescriptions.isEmpty, let uid = moreClassDescriptions[key] { return uid }
        let uid = newEntry()
        if isPipelined {
            record(.classDescription(chain: chain, hints: hints, uid: uid))
        } else {
            layout.layOutClassDescription(chain: chain, hints: hints, at: uid)
        }
        if firstClassDescriptions.count < 16 {
            firstClassDescriptions.append((key, uid))
        } else {
            moreClassDescriptions[key] = uid
        }
        return uid
    }

    /// The value to store for a conditional reference: the object's UID when it already has
    /// one, else a placeholder UID, with the slot remembered for patching when the table is
    /// written (an object slot pins its entry). Each placeholder is distinct and far past any
    /// entry's UID, so the patch finds exactly this reference: a later write of the same key
    /// (a subclass and its superclass both writing it, or `nil` written over it) replaced it
    /// and wins, as the last write of a key does in Foundation. Every placeholder becomes the
    /// target's UID, or 0 (nil) when the target was never encoded.
    package func conditionalReference(to object: AnyObject, slot: ConditionalSlot) -> PropertyListValue {
        if let uid = uid(for: object) { return .uid(uid) }
        let identifier = ObjectIdentifier(object)
        if conditionalSlots[identifier] == nil { retained.append(object) }
        // Wrapping would take 2^32 conditional references, memory first.
        placeholderCount &+= 1
        let placeholder = UInt32.max &- placeholderCount
        conditionalSlots[identifier, default: []].append((slot, placeholder))
        if case .object(let uid) = slot { pin(uid) }
        return .uid(placeholder)
    }

    /// Patches the conditional references recorded so far (in pinned entries and in `top`):
    /// each placeholder still in place becomes its target's UID, or 0.
    private func patchConditionals(_ top: PropertyListDictionary) -> PropertyListDictionary {
        var top = top
        for (identifier, slots) in conditionalSlots {
            let target = uid(forAddress: UInt(bitPattern: identifier)) ?? 0
            for (slot, placeholder) in slots {
                switch slot {
                case .top:
                    Self.replace(placeholder, with: target, in: &top)
                case .object(let uid):
                    guard case .dictionary(var fields) = pending[uid] else { continue }
                    pending[uid] = nil  // drop the reference so the patch does not copy
                    Self.replace(placeholder, with: target, in: &fields)
                    pending[uid] = .dictionary(fields)
                }
            }
        }
        conditionalSlots = [:]
        return top
    }

    /// Replaces the value `.uid(placeholder)` wherever it is in `fields` (a Codable container
    /// may hold one key twice; each placeholder is under one key at most).
    private static func replace(_ placeholder: UInt32, with target: UInt32, in fields: inout PropertyListDictionary) {
        for index in fields.entries.indices where fields.entries[index].value == .uid(placeholder) {
            fields.entries[index].value = .uid(target)
        }
    }

    /// The archive written in a property-list format (binary by default): the envelope
    /// `{$archiver, $version: 100000, $top, $objects}`, with conditional references patched.
    /// `top` holds stored keys and values. The table is consumed: a second call throws.
    package func encodedData(
        top: PropertyListDictionary, format: PropertyListFormat = .binary,
        archiverName: String = ArchiveKeys.defaultArchiverName
    ) throws(KeyedArchiveError) -> Data {
        if let writeFailure { throw writeFailure }
        do {
            let binary = try finishedBinary(top: top, archiverName: archiverName)
            if format == .binary { return binary }
            return try PropertyList.encode(PropertyList.decode(binary, limits: .ownOutput), format: format)
        } catch {
            let failure: KeyedArchiveError
            switch error {
            case let error as KeyedArchiveError: failure = error
            case let error as PropertyListError: failure = KeyedArchiveError(.propertyList, "cannot write the archive: \(error)", underlying: error)
            default: failure = KeyedArchiveError(.propertyList, "cannot write the archive: \(error)")
            }
            if isFinished { writeFailure = failure }
            throw failure
        }
    }

    /// Lays out what is left (pinned entries, entries never set, `$top`, `$objects`, the
    /// envelope) and writes the list.
    private func finishedBinary(top: PropertyListDictionary, archiverName: String) throws -> Data {
        guard !isFinished else { throw KeyedArchiveError(.unsupportedValue, "the archive table has been written already") }
        isFinished = true
        stopPipeline()
        if let writeFailure { throw writeFailure }
        let top = patchConditionals(top)
        for (uid, source) in aliases { pending[uid] = pending[source] }
        for uid in pending.keys.sorted() {
            if let value = pending.removeValue(forKey: uid) { layout.layOut(value, at: uid) }
        }
        // A small archive is written in place and its parts freed with the table: new empty
        // tables and a stand-in layout cost it more than they free (about 3,700 instructions,
        // W1's default profile).
        guard entryCount >= Self.pipelineThreshold else { return try layout.finish(top: top, archiverName: archiverName) }
        // Done with everything but the layout: free it before the output is allocated, and
        // the layout once it is written (before an XML archive is made from its bytes).
        identities = AddressTable()
        numberLeaves = NumberTable()
        stringLeaves = StringLeafSharing()
        dataLeaves = LiteralDataTable()
        otherLeaves = [:]
        valueObjects = [:]
        // Swapped out, not copied: a copy retained every list of the layout, and replacing
        // the table's own released them again (about 6,000 instructions an archive, W1).
        var layout = ArchiveLayout.standIn
        swap(&layout, &self.layout)
        return try layout.finish(top: top, archiverName: archiverName)
    }
}

/// The `$objects` entries laid out in the binary writer's flat object list as they are set:
/// 0 the envelope, 1-4 its keys, 5 the archiver name, 6 `$objects`, 7 `$top`, 8 the version
/// (filled by ``finish(top:archiverName:)``); then entries, and the keys and inline values
/// inside them, in the order they were set; the UID objects are the list's implicit ones.
///
/// A struct, so that the table's calls work on it in place: as class properties, the list and
/// the scratch references cost a retain, a release and a uniqueness check at every access.
struct ArchiveLayout {
    private static let envelopeSize = 9
    /// The objects and references a new layout has room for.
    private static let smallArchiveObjects = 64
    /// The envelope dictionary's references (its four keys, then its four values) and its
    /// keys, made once: as literals they were two arrays a small archive made and freed.
    private static let envelopeReferences = Array(1..<envelopeSize)
    private static let envelopeKeys = [
        ArchiveKeys.envelopeKeyStrings.archiver, ArchiveKeys.envelopeKeyStrings.objects, ArchiveKeys.envelopeKeyStrings.top,
        ArchiveKeys.envelopeKeyStrings.version,
    ].map(PropertyListValue.string)

    /// The objects so far.
    var list = BinaryPropertyListObjects()
    /// The list index of each `$objects` entry, by UID, complemented (`~index`, negative)
    /// until the entry is laid out: a reserved entry never set is `"$null"`. (A second list,
    /// of flags, was one more allocation an archive and one more append an entry.)
    private var entryIndices: [Int] = []
    /// Key references reused from the previous object of each class, and a scratch list.
    private var keys = KeyReferenceCache()
    private var scratch: [Int] = []
    private var members: [Int] = []
    /// The stored keys and kept-aside values that slots refer to.
    private(set) var slotValues = ArchiveSlotValues()
    /// The reference of each interned key once it is flattened (-1 before), by id.
    private var internedKeyReferences: [Int] = []
    /// The first error met laying out an entry (a date out of range, a key a binary property
    /// list cannot hold), thrown by ``finish(top:archiverName:)``.
    private var error: (any Error)?

    /// A layout with nothing in it, not even the envelope's placeholders: the table's
    /// stand-in while its layout is on the second thread or being written (one is made for
    /// every archive, so it reserves nothing).
    static var standIn: ArchiveLayout { ArchiveLayout(reserving: false) }

    init() {
        self.init(reserving: true)
    }

    private init(reserving: Bool) {
        guard reserving else { return }
        // An archive's numbers are its objects' fields: shared only with equal ones nearby.
        list.numberSharing = .nearby
        // Room for a small archive's objects and references: grown from the envelope's nine
        // (and from no references), W1's default profile (41 objects) reallocated both lists
        // twice, about 1,000 instructions (session 60).
        _ = list.reserve(Self.envelopeSize, moreObjects: Self.smallArchiveObjects - Self.envelopeSize, references: Self.smallArchiveObjects)
        // Room for a small archive's entries and an object's references: grown from one, a
        // small archive (W1: eight entries, objects of up to eight fields) reallocated them
        // about a dozen times.
        entryIndices.reserveCapacity(16)
        scratch.reserveCapacity(32)
        // And for the names of a class description's chain (every archive of an object has
        // one): grown from empty, two allocations.
        members.reserveCapacity(16)
    }

    /// The room the lists have for entries, objects and references.
    var room: ArchiveGrowthMark {
        ArchiveGrowthMark(entries: entryIndices.capacity, objects: list.objects.capacity, references: list.references.capacity)
    }

    /// Room for `moreEntries` entries, and `moreObjects` objects and `moreReferences`
    /// references in the list, beyond those there are (nothing changes where there is room).
    mutating func reserve(moreEntries: Int, moreObjects: Int, moreReferences: Int) {
        entryIndices.reserveCapacity(entryIndices.count &+ moreEntries)
        _ = list.reserve(0, moreObjects: moreObjects, references: moreReferences)
    }

    /// A new entry (a placeholder in the list) and its UID.
    mutating func newEntry() -> UInt32 {
        let uid = UInt32(truncatingIfNeeded: entryIndices.count)
        entryIndices.append(~list.appendPlaceholder())
        return uid
    }

    /// A new entry holding `string` (laid out), with no placeholder set afterwards.
    mutating func newEntry(string: consuming String) {
        entryIndices.append(list.appendString(string))
        list.implicitUIDCount = entryIndices.count
    }

    /// Makes entry `target` a copy of entry `source`.
    mutating func copyEntry(from source: Int, to target: Int) {
        guard entryIndices.indices.contains(source), entryIndices.indices.contains(target) else { return }
        let from = entryIndices[source], to = entryIndices[target]
        list.copyObject(from: Self.objectIndex(from), to: Self.objectIndex(to))
        // Laid out as the source is.
        entryIndices[target] = from < 0 ? ~Self.objectIndex(to) : Self.objectIndex(to)
    }

    /// The object index of an ``entryIndices`` element, laid out or not.
    @inline(__always)
    private static func objectIndex(_ entry: Int) -> Int {
        entry < 0 ? ~entry : entry
    }

    /// The object index of the entry at `uid` (`nil` for no such entry).
    func objectIndex(ofEntry uid: Int) -> Int? {
        entryIndices.indices.contains(uid) ? Self.objectIndex(entryIndices[uid]) : nil
    }

    /// Lays out the entry at `uid`: a dictionary's keys and values (a reference to another
    /// entry is that entry's implicit UID object), an array's members, or a leaf.
    mutating func layOut(_ value: PropertyListValue, at uid: UInt32) {
        guard let index = claim(uid) else { return }
        do {
            switch value {
            case .dictionary(let fields):
                scratch.removeAll(keepingCapacity: true)
                try appendDictionaryReferences(fields)
                list.setContainer(kind: 0xD0, references: scratch, at: index)
            case .array(let items), .set(let items):
                scratch.removeAll(keepingCapacity: true)
                for item in items { scratch.append(try list.add(item)) }
                let kind: UInt8
                if case .array = value { kind = 0xA0 } else { kind = 0xC0 }
                list.setContainer(kind: kind, references: scratch, at: index)
            default:
                try list.setLeaf(value, at: index)
            }
        } catch {
            if self.error == nil { self.error = error }
        }
    }

    /// Lays out the entry at `uid` as the class description of `chain` (most derived first)
    /// and `hints`, `{$classname, $classes[, $classhints]}`, adding its objects in the order
    /// ``layOut(_:at:)`` adds those of the same dictionary (the keys, the class name, then each
    /// list before its names), so the bytes are those of session 57's archives; without
    /// building the dictionary and without the key cache, since each description is laid out
    /// once (about 5,000 instructions of a one-class archive, W1).
    mutating func layOutClassDescription(chain: [String], hints: [String]?, at uid: UInt32) {
        guard let index = claim(uid) else { return }
        do {
            scratch.removeAll(keepingCapacity: true)
            scratch.append(try list.add(ArchiveKeys.classNameValue))
            scratch.append(try list.add(ArchiveKeys.classesValue))
            if hints != nil { scratch.append(try list.add(ArchiveKeys.classHintsValue)) }
            scratch.append(try list.add(PropertyListValue(chain.first ?? "NSObject")))
            scratch.append(try addStringList(chain))
            if let hints { scratch.append(try addStringList(hints)) }
            list.setContainer(kind: 0xD0, references: scratch, at: index)
        } catch {
            if self.error == nil { self.error = error }
        }
    }

    /// Adds an array of strings as ``BinaryPropertyListObjects/add(_:)`` adds it (the array
    /// object, then its strings, each uniqued) and returns its reference.
    private mutating func addStringList(_ strings: [String]) throws -> Int {
        let arrayIndex = list.appendPlaceholder()
        members.removeAll(keepingCapacity: true)
        for string in strings { members.append(try list.add(PropertyListValue(string))) }
        list.setContainer(kind: 0xA0, references: members, at: arrayIndex)
        return arrayIndex
    }

    /// Lays out the entry at `uid` as an object dictionary given as slots (see
    /// ``ArchiveObjectTable/setObject(fields:array:at:)``): the references of its keys, then
    /// of its values, as ``layOut(_:at:)`` adds them for the same dictionary.
    mutating func layOut(
        fields: UnsafeBufferPointer<ArchiveField>, array: (key: ArchiveSlot, elements: UnsafeBufferPointer<ArchiveSlot>)?, at uid: UInt32
    ) {
        guard let index = claim(uid) else { return }
        do {
            var references = scratch
            scratch = []
            defer { scratch = references }
            // Filled by position, not appended: an append checked the array's uniqueness and
            // capacity for every key and value.
            let keyCount = fields.count + (array == nil ? 0 : 1)
            let total = 2 * keyCount
            if references.count < total { references.append(contentsOf: repeatElement(0, count: total - references.count)) }
            try references.withUnsafeMutableBufferPointer { references in
                var position = 0
                for field in fields {
                    references[position] = try keyReference(field.key)
                    position += 1
                }
                if let array {
                    references[position] = try keyReference(array.key)
                    position += 1
                }
                let uidCount = UInt64(entryIndices.count)
                for field in fields {
                    let value = field.value
                    if value.kind == .uid, value.bits < uidCount {
                        references[position] = binaryListImplicitUIDReference(Int(truncatingIfNeeded: value.bits))
                    } else {
                        references[position] = try list.addScalar(self.value(of: value))
                    }
                    position += 1
                }
                if let array {
                    references[position] = try arrayReference(array.elements, uidCount: uidCount)
                }
                list.setContainer(kind: 0xD0, references: UnsafeBufferPointer(rebasing: references[..<total]), at: index)
            }
        } catch {
            if self.error == nil { self.error = error }
        }
    }

    /// The reference of an object's array member list (`NS.objects`): an array of the
    /// entries' UID objects, or, when a member is not one of the entries, flattened as the
    /// value would be.
    private mutating func arrayReference(_ elements: UnsafeBufferPointer<ArchiveSlot>, uidCount: UInt64) throws -> Int {
        guard elements.allSatisfy({ $0.kind == .uid && $0.bits < uidCount }) else {
            return try list.add(.array(elements.map { self.value(of: $0) }))
        }
        members.removeAll(keepingCapacity: true)
        for element in elements {
            members.append(binaryListImplicitUIDReference(Int(truncatingIfNeeded: element.bits)))
        }
        return list.addContainer(kind: 0xA0, references: members)
    }

    /// The reference of a key slot: an interned stored key is flattened once.
    private mutating func keyReference(_ slot: ArchiveSlot) throws -> Int {
        guard slot.kind == .storedKey, slot.bits < UInt64(internedKeyReferences.count) else {
            let key = value(of: slot)
            try BinaryPropertyListObjects.checkKey(key)
            return try list.add(key)
        }
        let id = Int(truncatingIfNeeded: slot.bits)
        let known = internedKeyReferences[id]
        if known >= 0 { return known }
        let key = slotValues.value(of: slot)
        try BinaryPropertyListObjects.checkKey(key)
        let reference = try list.add(key)
        internedKeyReferences[id] = reference
        return reference
    }

    /// Interns a stored key (see ``ArchiveObjectTable/internStoredKey(_:)``).
    mutating func intern(_ key: PropertyListValue) -> ArchiveSlot {
        let (slot, isNew) = slotValues.intern(key)
        if isNew {
            if internedKeyReferences.capacity == 0 { internedKeyReferences.reserveCapacity(16) }
            internedKeyReferences.append(-1)
        }
        return slot
    }

    /// Keeps a value that has no slot of its own (see ``ArchiveObjectTable/slot(for:)``).
    mutating func keepAside(_ value: PropertyListValue) -> ArchiveSlot {
        slotValues.keepAside(value)
    }

    /// The value a slot stands for (`$null` for an id that was never given out).
    func value(of slot: ArchiveSlot) -> PropertyListValue {
        slotValues.value(of: slot)
    }

    /// Marks the entry at `uid` laid out and returns its object index (`nil` for no such entry).
    private mutating func claim(_ uid: UInt32) -> Int? {
        let position = Int(uid)
        guard position >= 0, position < entryIndices.count else { return nil }
        let index = Self.objectIndex(entryIndices[position])
        entryIndices[position] = index
        list.implicitUIDCount = entryIndices.count
        return index
    }

    /// Lays out entries never set as `"$null"`, then `$objects`, `$top` and the envelope, and
    /// writes the list.
    mutating func finish(top: PropertyListDictionary, archiverName: String) throws -> Data {
        for uid in entryIndices.indices where entryIndices[uid] < 0 {
            layOut(ArchiveKeys.nullValue, at: UInt32(truncatingIfNeeded: uid))
        }
        if let error { throw error }
        list.implicitUIDCount = entryIndices.count
        list.setContainer(kind: 0xD0, references: Self.envelopeReferences, at: 0)
        for (offset, key) in Self.envelopeKeys.enumerated() {
            try list.setLeaf(key, at: 1 + offset)
        }
        try list.setLeaf(.string(PropertyListString(archiverName)), at: 5)
        list.setContainer(kind: 0xA0, references: entryIndices, at: 6)
        scratch.removeAll(keepingCapacity: true)
        // Without the key cache: `$top` is laid out once.
        try Self.appendDictionaryReferences(top, to: &scratch, list: &list, keys: &keys, cachingKeys: false, uidCount: entryIndices.count)
        list.setContainer(kind: 0xD0, references: scratch, at: 7)
        try list.setLeaf(PropertyListValue(ArchiveKeys.formatVersion), at: 8)
        keys = KeyReferenceCache()
        slotValues = ArchiveSlotValues()
        internedKeyReferences = []
        entryIndices = []
        return try list.takeSerializedData()
    }

    /// Appends the references of a dictionary's keys, then of its values, to `scratch`.
    private mutating func appendDictionaryReferences(_ fields: PropertyListDictionary) throws {
        try Self.appendDictionaryReferences(fields, to: &scratch, list: &list, keys: &keys, cachingKeys: true, uidCount: entryIndices.count)
    }

    /// The work of ``appendDictionaryReferences(_:)`` on its parts passed `inout`: on the
    /// struct's own properties, each append checked the array's uniqueness again (+4% of W5
    /// encode's instructions).
    ///
    /// Without `cachingKeys` (a dictionary laid out once), `keys` is left alone and every key
    /// is added to the list, which uniques it: the same reference as a cache hit, without the
    /// cache's lists for it.
    private static func appendDictionaryReferences(
        _ fields: PropertyListDictionary, to references: inout [Int], list: inout BinaryPropertyListObjects,
        keys: inout KeyReferenceCache, cachingKeys: Bool, uidCount: Int
    ) throws {
        if cachingKeys { keys.select(for: fields) }
        // Read in place, through pointers to the keys and values themselves: `entries[i].value`
        // copied the whole (key, value) pair first (two retains and releases, about 190
        // instructions, for each entry of each object).
        try fields.entries.withUnsafeBufferPointer { entries in
            guard let first = entries.baseAddress else { return }
            for position in entries.indices {
                let key = PropertyListDictionary.key(of: first + position)
                if cachingKeys, let known = keys.reference(forKey: key, at: position) {
                    references.append(known)
                    continue
                }
                try BinaryPropertyListObjects.checkKey(key.pointee)
                let reference = try list.add(key.pointee)
                if cachingKeys { keys.remember(key.pointee, reference, at: position) }
                references.append(reference)
            }
            for position in entries.indices {
                let value = PropertyListDictionary.value(of: first + position)
                // A reference into `$objects` is the list's implicit UID object `uid`; made
                // here, it skips a call into the flattener.
                // Compared as UInt64: `Int(uid)` traps above Int32.max on 32-bit platforms.
                if case .uid(let uid) = value.pointee, UInt64(uid) < UInt64(uidCount) {
                    references.append(binaryListImplicitUIDReference(Int(uid)))
                } else {
                    references.append(try list.add(value.pointee))
                }
            }
        }
    }
}

/// The values behind a table's slots that are not plain values: the stored keys interned by
/// ``ArchiveObjectTable/internStoredKey(_:)`` and the values kept aside by
/// ``ArchiveObjectTable/slot(for:)``, by id. The layout keeps one; while the layout is made on
/// a second thread, the table keeps a copy that it changes in the same order, so that both
/// give the same ids and values.
struct ArchiveSlotValues {
    /// Stored keys, by id, each with ``fingerprint(of:)``.
    private var internedKeys: [(key: PropertyListValue, fingerprint: UInt64)] = []
    /// The id of each interned key, by its text (equal by bytes), once there are more than
    /// ``linearInternedKeys``; until then `internedKeys` is searched in turn (hashing the
    /// first keys into a new dictionary cost a small archive, W1, 2,500 instructions a key).
    private var internedIDs: [PropertyListValue: UInt64] = [:]
    private static let linearInternedKeys = 16

    /// Equal for equal keys, and for strings mostly different for different ones (their
    /// length and first and last bytes): the linear search compares whole keys only where
    /// these agree. Comparing each new key with every one before it through `==` was about
    /// 4,000 instructions of a small archive (W1's ten keys, 45 comparisons).
    private static func fingerprint(of key: PropertyListValue) -> UInt64 {
        guard case .string(let string) = key else { return .max }
        return string.withUTF8 { bytes in
            UInt64(truncatingIfNeeded: bytes.count) | UInt64(bytes.first ?? 0) << 48 | UInt64(bytes.last ?? 0) << 56
        }
    }
    /// Values without a slot of their own, by ``keepAside(_:)`` index.
    private var keptAside: [PropertyListValue] = []

    /// The slot of a stored key, and whether it is new (one id per text).
    mutating func intern(_ key: PropertyListValue) -> (slot: ArchiveSlot, isNew: Bool) {
        let fingerprint = Self.fingerprint(of: key)
        if internedKeys.count <= Self.linearInternedKeys {
            for (index, known) in internedKeys.enumerated() where known.fingerprint == fingerprint && known.key == key {
                return (ArchiveSlot(.storedKey, UInt64(index)), false)
            }
        } else if let id = internedIDs[key] {
            return (ArchiveSlot(.storedKey, id), false)
        }
        if internedKeys.capacity == 0 {
            // Room for a few types' keys at once: growing from one cost a small archive (W1)
            // six allocations.
            internedKeys.reserveCapacity(16)
        }
        let id = UInt64(internedKeys.count)
        internedKeys.append((key, fingerprint))
        if internedKeys.count > Self.linearInternedKeys {
            if internedIDs.isEmpty {
                internedIDs.reserveCapacity(internedKeys.count * 2)
                for (index, known) in internedKeys.enumerated() { internedIDs[known.key] = UInt64(index) }
            } else {
                internedIDs[key] = id
            }
        }
        return (ArchiveSlot(.storedKey, id), true)
    }

    /// The slot of a value kept aside (one id per call).
    mutating func keepAside(_ value: PropertyListValue) -> ArchiveSlot {
        keptAside.append(value)
        return ArchiveSlot(.boxed, UInt64(keptAside.count - 1))
    }

    /// The value a slot stands for (`$null` for an id that was never given out).
    func value(of slot: ArchiveSlot) -> PropertyListValue {
        if let plain = slot.plainValue { return plain }
        let position = Int(truncatingIfNeeded: slot.bits)
        switch slot.kind {
        case .storedKey: return position >= 0 && position < internedKeys.count ? internedKeys[position].key : .null
        default: return position >= 0 && position < keptAside.count ? keptAside[position] : .null
        }
    }
}

/// The flattened references of the keys of the last object dictionary of each class, by
/// position: objects of one class store the same keys in the same order, so a key usually equals
/// the one at its position in the previous object of its class, and its reference is reused
/// without hashing it again. Kept per class (by the UID in `$class`): with one list for all
/// classes, objects of different classes laid out in turn (a record, its nested struct, its
/// array) overwrote each other's keys, and 7 of a W5 record's 17 keys missed.
/// A hit requires the same bytes and the same storage hint, the two things the flattener's
/// string uniquing looks at, so the reference is the one `add` would return.
private struct KeyReferenceCache {
    private static let positions = 64
    private static let classLimit = 16
    /// The lists of all classes back to back, each as long as the first object of its class had
    /// entries (at most `positions`): a small archive pays for the keys it has. A reference of
    /// -1 is an empty entry. The keys are held (retained) here, which is what makes the bitwise
    /// test in ``reference(forKey:at:)`` sound: two live strings with the same bits share
    /// their storage (or are the same small string).
    private var keys: [PropertyListValue] = []
    /// The reference of each key in `keys`.
    private var references: [Int] = []
    /// Each class's UID (`UInt32.max` for dictionaries without `$class`) and list.
    private var classes: [(uid: UInt32, start: Int, count: Int)] = []
    /// The current object's class, as an index into `classes`.
    private var current = 0

    /// Selects the list of the class of the object dictionary `fields` (its first entry is
    /// `$class` for archived objects). Classes past the limit share the last list: still correct,
    /// since a hit compares the key.
    mutating func select(for fields: PropertyListDictionary) {
        let classUID = fields.entries.withUnsafeBufferPointer { entries -> UInt32 in
            guard let first = entries.baseAddress, case .uid(let uid) = first.pointee.value else { return .max }
            return uid
        }
        // Most objects are of the class of the one before.
        if current < classes.count, classes[current].uid == classUID { return }
        if let slot = classes.firstIndex(where: { $0.uid == classUID }) {
            current = slot
        } else if classes.count < Self.classLimit {
            let count = min(fields.count, Self.positions)
            classes.append((classUID, keys.count, count))
            keys.append(contentsOf: repeatElement(PropertyListValue.null, count: count))
            references.append(contentsOf: repeatElement(-1, count: count))
            current = classes.count - 1
        } else {
            current = Self.classLimit - 1
            classes[current].uid = classUID
        }
    }

    /// Where `position` of the current class's list is in `keys`, if the list is that long.
    private func index(of position: Int) -> Int? {
        guard current < classes.count, position < classes[current].count else { return nil }
        return classes[current].start + position
    }

    /// The cached reference of `key` (an entry's key, in place), if the previous object of the
    /// class had the same key at `position`. Keys of Codable and NSCoding objects are usually the
    /// very same `String` (a literal, or a small string held inline) object after object, so the
    /// bits of the two values decide most hits without copying (retaining) the key and comparing
    /// its text.
    func reference(forKey key: UnsafePointer<PropertyListValue>, at position: Int) -> Int? {
        guard let index = index(of: position) else { return nil }
        return keys.withUnsafeBufferPointer { keys -> Int? in
            guard index < keys.count, index < references.count, references[index] >= 0,
                let cached = keys.baseAddress.map({ $0 + index })
            else { return nil }
            if PropertyListValue.haveSameBits(cached, key) { return references[index] }
            guard case .string(let string) = key.pointee, case .string(let known) = cached.pointee,
                known.storage == string.storage, known == string
            else { return nil }
            return references[index]
        }
    }

    mutating func remember(_ key: PropertyListValue, _ reference: Int, at position: Int) {
        guard let index = index(of: position), index < keys.count, index < references.count, case .string = key else { return }
        keys[index] = key
        references[index] = reference
    }
}

/// The dictionary of one archived object: `$class` first, then fields in the order encoded.
///
/// Keys passed to ``set(_:forKey:)`` are user keys and get `$`-escaped; ``appendUnkeyed(_:)``
/// stores under `$0, $1, ...`. Setting a key twice keeps the last value (Apple logs and does
/// the same).
package struct ArchiveObjectFields {
    /// The entries so far, with stored (escaped) keys.
    package private(set) var dictionary: PropertyListDictionary
    /// Positions by key once an object has ``indexThreshold`` entries. Keyed by the stored
    /// property-list string (equal by bytes), not `String` (equal by canonical equivalence: two
    /// spellings of "é" are two keys in an archive, as in Apple's).
    private var index: [PropertyListValue: Int] = [:]
    private var unkeyedCount = 0

    /// An object of the class whose description has `classUID`.
    package init(classUID: UInt32) {
        dictionary = PropertyListDictionary([(ArchiveKeys.classReferenceValue, .uid(classUID))])
    }

    /// An object of the class whose description has `classUID`, with room for `capacity`
    /// entries (`$class` included), so that filling it does not regrow the entry array.
    package init(classUID: UInt32, capacity: Int) {
        var entries: [PropertyListDictionary.Entry] = []
        entries.reserveCapacity(max(1, capacity))
        entries.append((ArchiveKeys.classReferenceValue, .uid(classUID)))
        dictionary = PropertyListDictionary(entries)
    }

    /// The number of entries, `$class` included.
    package var count: Int { dictionary.entries.count }

    /// Fields for `$top` (no `$class`).
    package init() {
        dictionary = PropertyListDictionary()
    }

    /// The object dictionary as a value.
    package var value: PropertyListValue { .dictionary(dictionary) }

    /// Stores a value under a user key (escaped when it begins with `$`).
    package mutating func set(_ value: PropertyListValue, forKey key: String) {
        setStored(value, forStoredKey: ArchiveKeys.escape(key))
    }

    /// Stores a value under an already stored key (no escaping).
    package mutating func setStored(_ value: PropertyListValue, forStoredKey key: String) {
        setStored(value, forStoredKey: PropertyListValue(key))
    }

    /// Stores a value under an already stored key given as its property-list string
    /// (`PropertyListValue(key)`, as a ``StoredKeyCache`` hands it out).
    package mutating func setStored(_ value: PropertyListValue, forStoredKey storedKey: PropertyListValue) {
        if let position = position(of: storedKey) {
            dictionary.entries[position].value = value
        } else {
            if !index.isEmpty || dictionary.entries.count >= Self.indexThreshold { index[storedKey] = dictionary.entries.count }
            dictionary.entries.append((storedKey, value))
            if index.isEmpty && dictionary.entries.count == Self.indexThreshold {
                // Big objects (many unkeyed values) switch from scanning to a hash index.
                for (offset, entry) in dictionary.entries.enumerated() { index[entry.key] = offset }
            }
        }
    }

    private static let indexThreshold = 16

    /// The entry whose key is `storedKey`, made by `PropertyListValue(_: String)`. Every key here
    /// was made that way (no storage hint), so a short key is found by its bits alone, read in
    /// place: matching the string case out of each entry's key copied the key (an outlined copy
    /// and destroy per entry, callgrind), the larger part of an NSCoding-style encode's lookups.
    private func position(of storedKey: PropertyListValue) -> Int? {
        if !index.isEmpty { return index[storedKey] }
        guard storedKey.isInlineString else {
            guard case .string(let probe) = storedKey else { return nil }
            return PropertyListDictionary.index(ofStringKey: probe, in: dictionary.entries)
        }
        return withUnsafePointer(to: storedKey) { probe in
            dictionary.entries.withUnsafeBufferPointer { entries -> Int? in
                guard let first = entries.baseAddress else { return nil }
                for position in entries.indices where PropertyListValue.haveSameBits(PropertyListDictionary.key(of: first + position), probe) {
                    return position
                }
                return nil
            }
        }
    }

    /// Stores a value under the next unkeyed key (`$0`, `$1`, ...) and returns that key.
    @discardableResult
    package mutating func appendUnkeyed(_ value: PropertyListValue) -> String {
        let key = "$" + String(unkeyedCount)
        unkeyedCount += 1
        setStored(value, forStoredKey: key)
        return key
    }

    /// True when a user key has been stored.
    package func contains(key: String) -> Bool {
        position(of: PropertyListValue(ArchiveKeys.escape(key))) != nil
    }
}

/// How far an archive had grown at some point (see ``ArchiveObjectTable/growthMark``).
package struct ArchiveGrowthMark: Sendable, Equatable {
    /// `$objects` entries.
    package var entries: Int
    /// Objects in the layout's list (the entries' own and the values inside them).
    package var objects: Int
    /// Member references in the layout's list.
    package var references: Int

    /// A mark of these counts.
    package init(entries: Int, objects: Int, references: Int) {
        self.entries = entries
        self.objects = objects
        self.references = references
    }

    /// The most of each that ``ArchiveObjectTable/reserveForRepeats(since:times:)`` reserves
    /// ahead (a million: 24 MB of objects, 4 MB of references).
    package static let reservationLimit = 1 << 20
}
