@_spi(KeyedArchiveInternals) import KeyedArchiveGraph

/// The state of one encoding run: the shared object table of the graph layer, the coding path,
/// the identities of class instances, and the containers being filled.
///
/// It is the `Encoder` itself (one instance per run, no encoder allocated per value); each
/// value is encoded by ``box(_:inline:)``, which saves and restores the per-value ``Level``.
final class ArchiveEncodingState: Encoder {
    /// The graph layer's object table: UIDs, leaf uniquing, class descriptions, conditionals.
    let table: ArchiveObjectTable
    /// `$class` as a slot of `table`, interned once.
    let classKey: ArchiveSlot
    /// `NS.objects` as a slot of `table`, interned by the first array (``objectsKeySlot``).
    @exclusivity(unchecked) private var internedObjectsKey: ArchiveSlot?
    private let classNames: [ObjectIdentifier: String]
    private let sendableUserInfo: [CodingUserInfoKey: any Sendable]
    private let maximumDepth: Int

    /// The coding path as a stack (copied into arrays only when asked for).
    @exclusivity(unchecked) var keys = CodingPathStack()
    @exclusivity(unchecked) private var depth = 0
    /// What the value being encoded at this level produced.
    @exclusivity(unchecked) var level = Level()
    /// Containers opened with `nestedContainer`/`superEncoder` at the current level.
    @exclusivity(unchecked) var nestedBuilders: [ContainerBuilder] = []
    /// Finished builders no container refers to, for ``makeBuilder(kind:uid:classUID:capacity:)``:
    /// a builder and its two lists were three allocations for every object.
    @exclusivity(unchecked) private var spareBuilders = CoderStack<ContainerBuilder>()
    /// Keyed containers kept for reuse, each with its builder: a `KeyedEncodingContainer` made
    /// for a coding-key type costs three generic-metadata lookups (its box, our container type,
    /// the conformance), about 55 ns, at every keyed value; a kept one is found by a short
    /// scan. An entry is in use while the value that took it is being encoded (recursion takes
    /// one per level), and for good once a copy of its container outlives that value (a
    /// container kept past `encode(to:)` must not write into later objects). The entries refer
    /// to this state, so ``boxRoot(_:)`` drops them at the end.
    @exclusivity(unchecked) private var keptContainers: [KeptContainer] = []
    /// Past this many entries (types times recursion depth) containers are made each time.
    private let keptContainerLimit: Int
    /// Class-description UIDs by type: a short list scanned linearly, then a dictionary.
    @exclusivity(unchecked) private var classTypes: [(id: ObjectIdentifier, uid: UInt32, fields: Int)] = []
    @exclusivity(unchecked) private var moreClassUIDs: [ObjectIdentifier: UInt32] = [:]
    @exclusivity(unchecked) private var dictionaryClassUID: UInt32 = 0
    @exclusivity(unchecked) private var arrayClassUID: UInt32 = 0
    @exclusivity(unchecked) private var nullUID: UInt32 = 0
    @exclusivity(unchecked) private var typeKinds = TypeKindCache(decoding: false)
    /// Class instances whose `encode(to:)` is running (the cycle check).
    @exclusivity(unchecked) private var inProgress = InstancesInProgress()
    /// Conditional references not yet resolved (target not encoded when they were met).
    @exclusivity(unchecked) var forwardConditionals: [ForwardConditional] = []
    /// The stored form of the keys used recently (every value of a type repeats its keys).
    let storedKeys = StoredKeyCache()
    /// The coding-key types met, each with its stored keys by value (nil: found by text).
    @exclusivity(unchecked) private var codingKeyTypes: [(id: ObjectIdentifier, slots: CodingKeySlots?)] = []

    struct Level {
        var type: Any.Type?
        var reservedUID: UInt32 = 0
        var builder: ContainerBuilder?
        /// Where `builder` came from in ``keptContainers`` (-1: not from there).
        var keptContainerIndex = -1
        var single: PropertyListValue?
        /// A fixed message (no `String` to release when the level ends: every value ends one).
        var misuse: StaticString?
    }

    /// A keyed container kept for reuse (``keptContainers``).
    struct KeptContainer {
        var keyType: ObjectIdentifier
        /// A `KeyedEncodingContainer` of the coding-key type `keyType`, stored as what it is:
        /// one reference to the standard library's box (kept only when ``KeptContainers`` found
        /// it so). Held as that reference, its uniqueness tells whether a copy of the container
        /// is still around when its value is done.
        var box: AnyObject
        var builder: ContainerBuilder
        var inUse: Bool
    }

    /// A conditional reference whose target had no UID yet.
    struct ForwardConditional {
        var sourceUID: UInt32
        /// For NSDictionary-form containers: the UID of the key string to add at the end.
        var dictionaryKeyUID: UInt32?
        var object: AnyObject
        var codingPath: [any CodingKey]
    }

    init(classNames: [ObjectIdentifier: String], userInfo: [CodingUserInfoKey: any Sendable], maximumDepth: Int) {
        let table = ArchiveObjectTable()
        self.table = table
        classKey = table.internStoredKey(ArchiveKeys.classReferenceValue)
        self.classNames = classNames
        self.sendableUserInfo = userInfo
        self.maximumDepth = maximumDepth
        keptContainerLimit = KeyedArchiveEncoder.keptContainerLimitOverride.value ?? KeptContainers.limit
    }

    // MARK: Encoder

    var codingPath: [any CodingKey] { keys.path }
    var userInfo: [CodingUserInfoKey: Any] { sendableUserInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if let builder = level.builder {
            if builder.kind != .object && builder.kind != .dictionary {
                level.misuse = "asked for a keyed container after an unkeyed one"
            }
            retireKeptContainer(of: builder)
            return KeyedEncodingContainer(KeyedArchiveEncodingContainer<Key>(state: self, builder: builder))
        }
        // Matched, not compared: `!= nil` copied the stored value (a retain and a release).
        if case .some = level.single { level.misuse = "asked for a keyed container after encoding a single value" }
        let kind: ContainerBuilder.Kind
        let uid: UInt32
        let classUID: UInt32
        var capacity = 1
        var hintSlot = -1
        var hint = 0
        if let type = level.type {
            // The UID first, then the class description (the order of `$objects` entries).
            kind = .object
            uid = takeUID()
            let slot = classSlot(for: type)
            classUID = slot.uid
            // As many entries as the last object of this type had: no regrowth, no slack. The
            // first object of a type gets room for eight (grown from one, W1's took four
            // allocations).
            capacity = slot.fields > 0 ? slot.fields : 8
            hintSlot = slot.index
            hint = slot.fields
        } else {
            kind = .dictionary
            uid = takeUID()
            classUID = dictionaryClass()
        }
        let keyType = ObjectIdentifier(Key.self)
        for index in keptContainers.indices where keptContainers[index].keyType == keyType && !keptContainers[index].inUse {
            let builder = keptContainers[index].builder
            builder.reuse(kind: kind, uid: uid, classUID: classUID, classKey: classKey, depth: keys.count, capacity: capacity)
            builder.fieldHintSlot = hintSlot
            builder.fieldHint = hint
            keptContainers[index].inUse = true
            level.builder = builder
            level.keptContainerIndex = index
            // Sound: entries are found by `Key`'s identity, and `box` is a container made for it.
            return unsafeBitCast(keptContainers[index].box, to: KeyedEncodingContainer<Key>.self)
        }
        let builder = makeBuilder(kind: kind, uid: uid, classUID: classUID, capacity: capacity)
        builder.fieldHintSlot = hintSlot
        builder.fieldHint = hint
        level.builder = builder
        let container = KeyedEncodingContainer(KeyedArchiveEncodingContainer<Key>(state: self, builder: builder))
        if keptContainers.count < keptContainerLimit
            && KeptContainers.canKeep(container) {
            keptContainers.append(
                KeptContainer(keyType: keyType, box: unsafeBitCast(container, to: AnyObject.self), builder: builder, inUse: true))
            level.keptContainerIndex = keptContainers.count - 1
        }
        return container
    }

    /// Called when something besides its kept container gets hold of `builder` (a second
    /// container of the value, a super encoder), which could outlive the value unseen: the
    /// kept entry is left in use for good, so the builder is never reused.
    func retireKeptContainer(of builder: ContainerBuilder) {
        if level.keptContainerIndex >= 0 && level.builder === builder { level.keptContainerIndex = -1 }
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedArchiveEncodingContainer(state: self, builder: unkeyedBuilder())
    }

    /// The builder of the unkeyed container at the current level (made on first use).
    func unkeyedBuilder() -> ContainerBuilder {
        if let builder = level.builder {
            if builder.kind != .array && builder.kind != .set {
                level.misuse = "asked for an unkeyed container after a keyed one"
            }
            return builder
        }
        if case .some = level.single { level.misuse = "asked for an unkeyed container after encoding a single value" }
        let builder = makeBuilder(kind: .array, uid: takeUID(), classUID: arrayClass())
        level.builder = builder
        return builder
    }

    /// `NS.objects` as a slot of the table, interned the first time an array or set is
    /// finished: many small archives have none, and interning it (and `NS.keys`, which the
    /// dictionary form now writes as a value) up front cost each archive about 840 instructions
    /// (session 60).
    var objectsKeySlot: ArchiveSlot {
        if let internedObjectsKey { return internedObjectsKey }
        let slot = table.internStoredKey(FoundationClassNames.objectsKeyValue)
        internedObjectsKey = slot
        return slot
    }

    /// A builder for an array encoded by ``ArchiveArrayEncodable`` (no level, no container):
    /// its entry is reserved now, before its elements'.
    func arrayBuilder() -> ContainerBuilder {
        makeBuilder(kind: .array, uid: table.reserveUID(), classUID: arrayClass())
    }

    /// Finishes an ``arrayBuilder()`` whose elements are all set, and keeps it for reuse (no
    /// container ever held it); returns the array's UID.
    func finishArray(_ builder: consuming ContainerBuilder) -> UInt32 {
        builder.finish(into: self)
        let uid = builder.uid
        spareBuilders.append(builder)
        return uid
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        if level.builder != nil { level.misuse = "asked for a single-value container after a keyed or unkeyed one" }
        return SingleValueArchiveEncodingContainer(state: self)
    }

    /// A builder for a container at the current coding-path depth: a spare one when there is one.
    private func makeBuilder(kind: ContainerBuilder.Kind, uid: UInt32, classUID: UInt32, capacity: Int = 1) -> ContainerBuilder {
        if let builder = spareBuilders.popLast() {
            builder.reuse(kind: kind, uid: uid, classUID: classUID, classKey: classKey, depth: keys.count, capacity: capacity)
            return builder
        }
        return ContainerBuilder(kind: kind, uid: uid, classUID: classUID, classKey: classKey, depth: keys.count, capacity: capacity)
    }

    private func takeUID() -> UInt32 {
        if level.reservedUID != 0 {
            defer { level.reservedUID = 0 }
            return level.reservedUID
        }
        return table.reserveUID()
    }

    /// The stored keys of `Key` by value, for its containers (see ``CodingKeySlots``); nil
    /// for a type whose keys are found by their text, and past 64 key types in one run.
    func codingKeySlots<Key: CodingKey>(for type: Key.Type) -> CodingKeySlots? {
        let id = ObjectIdentifier(type)
        for entry in codingKeyTypes where entry.id == id { return entry.slots }
        guard codingKeyTypes.count < 64 else { return nil }
        let slots = CodingKeySlots(for: type)
        codingKeyTypes.append((id, slots))
        return slots
    }

    // MARK: Class descriptions

    func classUID(for type: Any.Type) -> UInt32 { classSlot(for: type).uid }

    /// The class-description UID of a type, with where it is cached (`index`, -1 past the
    /// short list) and how many entries the last object of the type had (`fields`).
    private func classSlot(for type: Any.Type) -> (uid: UInt32, index: Int, fields: Int) {
        let id = ObjectIdentifier(type)
        for index in classTypes.indices where classTypes[index].id == id {
            return (classTypes[index].uid, index, classTypes[index].fields)
        }
        if let uid = moreClassUIDs[id] { return (uid, -1, 0) }
        let name = ClassNames.archiveName(of: type, overrides: classNames)
        let uid = table.classUID(chain: name == "NSObject" ? ["NSObject"] : [name, "NSObject"])
        if classTypes.count < 16 {
            classTypes.append((id, uid, 0))
            return (uid, classTypes.count - 1, 0)
        }
        moreClassUIDs[id] = uid
        return (uid, -1, 0)
    }

    /// Remembers the entry count of a finished object for the next one of its type.
    private func noteFieldCount(of builder: ContainerBuilder) {
        let slot = builder.fieldHintSlot
        if slot >= 0 && slot < classTypes.count { classTypes[slot].fields = min(builder.fields.count, 64) }
    }

    func dictionaryClass() -> UInt32 {
        if dictionaryClassUID == 0 { dictionaryClassUID = table.classUID(chain: FoundationClassNames.dictionaryChain) }
        return dictionaryClassUID
    }

    func arrayClass() -> UInt32 {
        if arrayClassUID == 0 { arrayClassUID = table.classUID(chain: FoundationClassNames.arrayChain) }
        return arrayClassUID
    }

    /// A new NSDictionary-form or NSArray-form container referenced from a parent container.
    func nestedBuilder(_ kind: ContainerBuilder.Kind) -> ContainerBuilder {
        let classUID = kind == .dictionary ? dictionaryClass() : arrayClass()
        let builder = makeBuilder(kind: kind, uid: table.reserveUID(), classUID: classUID)
        nestedBuilders.append(builder)
        return builder
    }

    // MARK: Values

    /// Encodes the root value: its stored form is always a reference.
    func boxRoot<T: Encodable>(_ value: T) throws -> PropertyListValue {
        // The kept containers refer to this state (a cycle until they are dropped).
        defer { keptContainers.removeAll() }
        let result = try box(value, inline: false)
        finishNested(from: 0)
        return result
    }

    /// ``box(_:inline:)`` for a value read where it is stored, such as an array's element:
    /// `inout` only because passing an element straight out of memory copies it in generic
    /// code, while an inout access passes its address. The value is never written.
    func box<T: Encodable>(inPlace value: inout T, inline: Bool) throws -> PropertyListValue {
        try box(value, inline: inline)
    }

    /// Encodes one value and returns what its container stores: an inline number or boolean
    /// (when `inline`, i.e. directly in an object's dictionary), or a UID.
    func box<T: Encodable>(_ value: T, inline: Bool) throws -> PropertyListValue {
        let kind = typeKinds.kind(of: T.self)
        if kind.isLeaf || kind.isSpecial, let stored = try boxLeaf(value, kind: kind, inline: inline) { return stored }
        // An instance already in the archive is a reference, found before any level is made:
        // two in three W2 friends are, and saving and restoring the level for each cost about
        // 200 instructions (callgrind, session 44).
        if case .object = kind, let uid = table.uid(forAddress: Self.address(of: value)) {
            if inProgress.contains(uid) {
                throw cycleError(value, uid: uid) { startedAt in
                    "this \(T.self) instance is being encoded at \(startedAt) and is referenced again inside itself at \(Self.describe(keys.path))"
                }
            }
            return .uid(uid)
        }
        depth += 1
        defer { depth -= 1 }
        guard depth <= maximumDepth else {
            throw EncodingError.invalidValue(
                value, EncodingError.Context(
                    codingPath: keys.path, debugDescription: "nesting deeper than the maximum depth \(maximumDepth)"))
        }
        if case .encodableArray(let arrayType) = kind, ObjectIdentifier(arrayType) == ObjectIdentifier(T.self) {
            // What Array.encode(to:) does through unkeyedContainer(), without the generic path
            // and without a level of its own: nothing but the array's elements is encoded at
            // it, each at a level of its own, so the level's swaps, checks and builder
            // bookkeeping were all overhead (about 230 instructions an array: W2's friends).
            // (The kind was cached for `T`, so the types always match; the comparison is what
            // makes the array's reinterpretation inside safe.)
            return .uid(try arrayType.encodeArchiveArray(value, state: self))
        }
        // Swapped, not copied: a copy of the caller's level retained its builder and copied
        // its stored value, and putting it back released them again, at every value.
        var saved = Level(type: T.self)
        let nestedStart = nestedBuilders.count
        swap(&level, &saved)
        defer { swap(&level, &saved) }
        var identity: UInt32?
        if case .object = kind {
            let uid = table.reserveUID(for: Self.instance(value))
            level.reservedUID = uid
            inProgress.begin(uid, pathLength: keys.count)
            identity = uid
        }
        let reserved = level.reservedUID
        defer { if let identity { inProgress.end(identity) } }
        try value.encode(to: self)
        if let misuse = level.misuse {
            throw EncodingError.invalidValue(value, EncodingError.Context(codingPath: keys.path, debugDescription: "\(misuse)"))
        }
        finishNested(from: nestedStart)
        // Taken out of the level (a move, no retain).
        if var builder = level.builder.take() {
            if builder.fieldHintSlot >= 0 && builder.fields.count != builder.fieldHint { noteFieldCount(of: builder) }
            builder.finish(into: self)
            let uid = builder.uid
            if level.keptContainerIndex >= 0 {
                // Free for the next value of its type, unless a copy of the container outlived
                // this value: then the entry stays in use, and no other value writes into its
                // builder. (Checked through the buffer: `&keptContainers[index].box` checked
                // a temporary copy.)
                let index = level.keptContainerIndex
                let unique = keptContainers.withUnsafeMutableBufferPointer { entries in
                    index < entries.count && isKnownUniquelyReferenced(&entries[index].box)
                }
                if unique { keptContainers[index].inUse = false }
            } else if isKnownUniquelyReferenced(&builder) {
                // Reused when no container still refers to it (none can write to it then).
                // Moved in: a copy was retained and the local released, at every container.
                spareBuilders.append(consume builder)
            }
            return .uid(uid)
        }
        if let single = level.single {
            let stored = store(single, inline: inline && reserved == 0)
            guard reserved != 0 else { return stored }
            // A class instance encoded as a single value: its reserved entry holds that value;
            // for a nil, an NSNull (an entry must be an object, and every reference to the
            // instance shares it), which decodes as nil.
            guard case .uid(let target) = stored else {
                throw EncodingError.invalidValue(
                    value, EncodingError.Context(codingPath: keys.path, debugDescription: "internal: a single value stored inline"))
            }
            table.setObject(copyOf: target != 0 ? target : nullObjectUID(), at: reserved)
            return .uid(reserved)
        }
        // Nothing encoded: an empty object of the type's class (Foundation writes an empty dictionary).
        let uid = reserved != 0 ? reserved : table.reserveUID()
        table.setObject(fields: [ArchiveField(key: classKey, value: .uid(classUID(for: T.self)))], at: uid)
        return .uid(uid)
    }

    /// Primitives, and the values ``boxSpecial(_:)`` stores itself (kept out of ``box(_:inline:)``
    /// so its stack frame stays small: it recurses once per nesting level).
    private func boxLeaf<T: Encodable>(_ value: T, kind: CodableTypeKind, inline: Bool) throws -> PropertyListValue? {
        switch kind {
        case .string, .int, .double, .bool, .float, .int64, .int32, .int16, .int8, .uint, .uint64, .uint32, .uint16, .uint8:
            if let primitive = Self.primitive(value) { return store(primitive, inline: inline) }
            return nil
        default:
            return try boxSpecial(value)
        }
    }

    /// Whether `type` is encoded as an object of its own, by identity (a class).
    func isObjectKind<T: Encodable>(_ type: T.Type) -> Bool {
        if case .object = typeKinds.kind(of: type) { return true }
        return false
    }

    /// The UID of the class instance at `address` (its reference's bits) if it is in the archive
    /// already and not being encoded: what ``box(_:inline:)`` returns for it, found without the
    /// element's coding-path key, the box or the slot conversion (two in three W2 friends). Nil
    /// sends the caller to the full path (which also reports a cycle).
    @inline(__always)
    func knownReference(atAddress address: UInt) -> UInt32? {
        guard let uid = table.uid(forAddress: address), !inProgress.contains(uid) else { return nil }
        return uid
    }

    /// The coding path at which the instance at `uid` (in progress) started: the start of the
    /// current path, as the instance is being encoded (its encoding is still on the stack).
    private func startPath(of uid: UInt32) -> [any CodingKey] {
        guard let length = inProgress.pathLength(at: uid) else { return [] }
        return keys.prefix(length)
    }

    /// The address of a class instance (kind `.object`), read without retaining it: an
    /// instance met again needs only its identity, and the retain and release of
    /// ``instance(_:)`` each touched the object (a random cache miss per reference in a
    /// graph). A value of another size takes ``instance(_:)``.
    @inline(__always)
    private static func address<T: Encodable>(of value: T) -> UInt {
        if MemoryLayout<T>.size == MemoryLayout<UInt>.size {
            // Reinterpreted (the sizes match): `withUnsafeBytes(of:)` was a call and a closure
            // in this unspecialized code.
            return unsafeBitCast(value, to: UInt.self)
        }
        return UInt(bitPattern: ObjectIdentifier(instance(value)))
    }

    /// A class instance as `AnyObject`; only called for class types (kind `.object`: `T.self is
    /// AnyObject.Type`). A class type's value is one reference, reinterpreted as it is: the
    /// conditional cast to a class-bound existential this did first took 560 instructions at
    /// every reference (a tenth of a W2 Codable archive), and `as AnyObject` on a generic value
    /// goes through the Objective-C bridging entry point, thousands on Linux. (Existentials,
    /// the other types whose metatypes are `AnyObject.Type`, do not conform to `Encodable`, so
    /// they are never `T`; a value of another size would take the cast.) Not inlined, so its
    /// existential temporaries stay out of the recursive ``box(_:inline:)``.
    @inline(never)
    private static func instance<T: Encodable>(_ value: T) -> AnyObject {
        if MemoryLayout<T>.size == MemoryLayout<AnyObject>.size { return unsafeBitCast(value, to: AnyObject.self) }
        return (value as? any Encodable & AnyObject) ?? (value as AnyObject)
    }

    /// Finishes containers opened with `nestedContainer` since `start`. The check is inline:
    /// every object and array ends with it, and almost none opened any (a call each was 20
    /// instructions, W2 Codable archive).
    @inline(__always)
    func finishNested(from start: Int) {
        if nestedBuilders.count > start { finishNestedBuilders(from: start) }
    }

    @inline(never)
    private func finishNestedBuilders(from start: Int) {
        for builder in nestedBuilders[start...] { builder.finish(into: self) }
        nestedBuilders.removeSubrange(start...)
    }

    /// The stored form of a primitive: inline in an object dictionary for numbers and
    /// booleans, else a reference to a uniqued leaf.
    @inline(__always)
    func store(_ value: PropertyListValue, inline: Bool) -> PropertyListValue {
        switch value {
        case .uid: return value
        case .bool, .integer, .real: return inline ? value : .uid(table.leafUID(value))
        default: return .uid(table.leafUID(value))
        }
    }

    /// Numbers, booleans and strings as property-list leaves (checked by type identity, so no
    /// protocol lookups on the hot path). Once the type is known to be `String`, `Int`, ...,
    /// the value is reinterpreted as it: a dynamic cast from a generic value costs a runtime
    /// call per value, and the identity check already says the cast cannot fail.
    @inline(__always)
    static func primitive<T>(_ value: T) -> PropertyListValue? {
        let type = T.self
        if type == String.self { return .string(PropertyListString(unsafeBitCast(value, to: String.self))) }
        if type == Int.self { return .integer(PropertyListInteger(Int64(unsafeBitCast(value, to: Int.self)))) }
        if type == Double.self { return .real(PropertyListReal(unsafeBitCast(value, to: Double.self))) }
        if type == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
        if type == Float.self { return .real(PropertyListReal(unsafeBitCast(value, to: Float.self))) }
        if type == Int64.self { return .integer(PropertyListInteger(unsafeBitCast(value, to: Int64.self))) }
        if type == Int32.self { return .integer(PropertyListInteger(Int64(unsafeBitCast(value, to: Int32.self)))) }
        if type == Int16.self { return .integer(PropertyListInteger(Int64(unsafeBitCast(value, to: Int16.self)))) }
        if type == Int8.self { return .integer(PropertyListInteger(Int64(unsafeBitCast(value, to: Int8.self)))) }
        if type == UInt.self { return .integer(PropertyListInteger(UInt64(unsafeBitCast(value, to: UInt.self)))) }
        if type == UInt64.self { return .integer(PropertyListInteger(unsafeBitCast(value, to: UInt64.self))) }
        if type == UInt32.self { return .integer(PropertyListInteger(UInt64(unsafeBitCast(value, to: UInt32.self)))) }
        if type == UInt16.self { return .integer(PropertyListInteger(UInt64(unsafeBitCast(value, to: UInt16.self)))) }
        if type == UInt8.self { return .integer(PropertyListInteger(UInt64(unsafeBitCast(value, to: UInt8.self)))) }
        return nil
    }

    /// Data, Date, URL, UUID, Decimal, dictionaries and sets: stored as the Foundation objects an
    /// Objective-C reader expects (not through their own `encode(to:)`).
    private func boxSpecial<T: Encodable>(_ value: T) throws -> PropertyListValue? {
        // Reinterpreted after the identity check, as in ``primitive(_:)``.
        if T.self == Data.self { return .uid(table.leafUID(.data(unsafeBitCast(value, to: Data.self)))) }
        if T.self == Date.self { return .uid(try dateUID(unsafeBitCast(value, to: Date.self))) }
        if T.self == URL.self { return .uid(urlUID(unsafeBitCast(value, to: URL.self))) }
        if T.self == UUID.self { return .uid(uuidUID(unsafeBitCast(value, to: UUID.self))) }
        if T.self == Decimal.self { return .uid(decimalUID(unsafeBitCast(value, to: Decimal.self))) }
        if let dictionary = value as? any ArchiveDictionaryEncodable {
            return .uid(try encodeDictionary(dictionary, value))
        }
        if let set = value as? any ArchiveSetEncodable {
            return .uid(try encodeSet(set, value))
        }
        return nil
    }

    private func enterCollection<T>(_ value: T) throws {
        depth += 1
        guard depth <= maximumDepth else {
            depth -= 1
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: keys.path, debugDescription: "nesting deeper than the maximum depth \(maximumDepth)"))
        }
    }

    /// What an NSArray, NSSet or NSDictionary holds for `value`: for a nil (`$null`), which
    /// those collections cannot hold, the archive's NSNull object, as Foundation writes a Swift
    /// nil bridged into one. (With `$null` there, NSKeyedUnarchiver dropped the element from an
    /// NSArray, shifting the rest, and built an NSDictionary that crashed when read.)
    @inline(__always)
    func member(_ value: PropertyListValue) -> PropertyListValue {
        if case .uid(0) = value { return .uid(nullObjectUID()) }
        return value
    }

    /// The archive's NSNull object (one entry, however often it is used), made at first use.
    @inline(never)
    func nullObjectUID() -> UInt32 {
        if nullUID == 0 {
            var fields = PropertyListDictionary()
            fields.entries.append((ArchiveKeys.classReferenceValue, .uid(table.classUID(chain: FoundationClassNames.nullChain))))
            nullUID = table.valueObjectUID(.dictionary(fields))
        }
        return nullUID
    }

    private func encodeDictionary<T>(_ dictionary: any ArchiveDictionaryEncodable, _ original: T) throws -> UInt32 {
        try enterCollection(original)
        defer { depth -= 1 }
        let uid = table.reserveUID()
        var keyUIDs: [PropertyListValue] = []
        var valueUIDs: [PropertyListValue] = []
        try dictionary.encodeEntries(into: self, keys: &keyUIDs, values: &valueUIDs)
        var fields = PropertyListDictionary()
        fields.entries.reserveCapacity(3)
        fields.entries.append((ArchiveKeys.classReferenceValue, .uid(dictionaryClass())))
        fields.entries.append((FoundationClassNames.keysKeyValue, .array(keyUIDs)))
        fields.entries.append((FoundationClassNames.objectsKeyValue, .array(valueUIDs)))
        table.setObject(.dictionary(fields), at: uid)
        return uid
    }

    private func encodeSet<T>(_ set: any ArchiveSetEncodable, _ original: T) throws -> UInt32 {
        try enterCollection(original)
        defer { depth -= 1 }
        let uid = table.reserveUID()
        var members: [PropertyListValue] = []
        try set.encodeMembers(into: self, members: &members)
        var fields = PropertyListDictionary()
        fields.entries.append((ArchiveKeys.classReferenceValue, .uid(table.classUID(chain: FoundationClassNames.setChain))))
        fields.entries.append((FoundationClassNames.objectsKeyValue, .array(members)))
        table.setObject(.dictionary(fields), at: uid)
        return uid
    }

    /// An NSDate. A non-finite time is refused: the decoders refuse it, and an archive must
    /// read back.
    func dateUID(_ date: Date) throws -> UInt32 {
        guard date.timeIntervalSinceReferenceDate.isFinite else {
            throw EncodingError.invalidValue(
                date, EncodingError.Context(codingPath: keys.path, debugDescription: "a date whose time is \(date.timeIntervalSinceReferenceDate) cannot be archived"))
        }
        var fields = PropertyListDictionary()
        fields.entries.append((ArchiveKeys.classReferenceValue, .uid(table.classUID(chain: FoundationClassNames.dateChain))))
        fields.entries.append((PropertyListValue(FoundationClassNames.timeKey), .real(PropertyListReal(date.timeIntervalSinceReferenceDate))))
        return table.valueObjectUID(.dictionary(fields))
    }

    func uuidUID(_ uuid: UUID) -> UInt32 {
        var fields = PropertyListDictionary()
        fields.entries.append((ArchiveKeys.classReferenceValue, .uid(table.classUID(chain: FoundationClassNames.uuidChain))))
        fields.entries.append((PropertyListValue(FoundationClassNames.uuidBytesKey), .data(withUnsafeBytes(of: uuid.uuid) { Data($0) })))
        return table.valueObjectUID(.dictionary(fields))
    }

    /// An NSDecimalNumber, as Apple's archiver writes one (``DecimalNumberFields``): Decimal's
    /// own coding wrote an object of class "Decimal" that no NSKeyedUnarchiver reads.
    func decimalUID(_ decimal: Decimal) -> UInt32 {
        var fields = PropertyListDictionary()
        fields.entries.append((ArchiveKeys.classReferenceValue, .uid(table.classUID(chain: DecimalNumberFields.classChain))))
        for (key, value) in DecimalNumberFields(decimal).archivedFields { fields.entries.append((PropertyListValue(key), value)) }
        return table.valueObjectUID(.dictionary(fields))
    }

    func urlUID(_ url: URL) -> UInt32 {
        let uid = table.reserveUID()
        var fields = PropertyListDictionary()
        fields.entries.append((ArchiveKeys.classReferenceValue, .uid(table.classUID(chain: FoundationClassNames.urlChain))))
        if let base = url.baseURL {
            fields.entries.append((PropertyListValue(FoundationClassNames.baseKey), .uid(urlUID(base))))
            fields.entries.append((PropertyListValue(FoundationClassNames.relativeKey), .uid(table.leafUID(string: url.relativeString))))
        } else {
            fields.entries.append((PropertyListValue(FoundationClassNames.baseKey), .uid(0)))
            fields.entries.append((PropertyListValue(FoundationClassNames.relativeKey), .uid(table.leafUID(string: url.absoluteString))))
        }
        table.setObject(.dictionary(fields), at: uid)
        return uid
    }

    /// The error for a reference back to instance `uid` while it is being encoded: `detail`
    /// says what refers back, given where the instance's encoding started.
    private func cycleError(_ value: Any, uid: UInt32, _ detail: (_ startedAt: String) -> String) -> EncodingError {
        EncodingError.invalidValue(
            value, EncodingError.Context(
                codingPath: keys.path,
                debugDescription: "cycle: \(detail(Self.describe(startPath(of: uid)))); a Decodable graph cannot be rebuilt from a cycle"))
    }

    // MARK: Conditional references

    /// The stored value for a conditional reference from `builder` under `key`.
    func conditionalReference(to object: AnyObject, from builder: ContainerBuilder, keyUID: UInt32?) throws -> PropertyListValue? {
        if let uid = table.uid(for: object) {
            if inProgress.contains(uid) {
                throw cycleError(object, uid: uid) { startedAt in
                    "conditional reference back to the \(type(of: object)) instance being encoded at \(startedAt)"
                }
            }
            return .uid(uid)
        }
        forwardConditionals.append(ForwardConditional(sourceUID: builder.uid, dictionaryKeyUID: keyUID, object: object, codingPath: keys.path))
        if keyUID != nil {
            // NSDictionary entries are added at the end, if at all: the entry waits as a value.
            table.pin(builder.uid)
            return nil
        }
        return table.conditionalReference(to: object, slot: .object(uid: builder.uid))
    }

    /// Adds the NSDictionary entries of conditional references whose targets were encoded
    /// later, and checks that no patched reference closed a cycle. (Object-form references
    /// are patched by the table when it finishes.)
    func finishDeferredConditionals() {
        for conditional in forwardConditionals {
            guard let keyUID = conditional.dictionaryKeyUID, let target = table.uid(for: conditional.object) else { continue }
            guard case .dictionary(var fields) = table.pendingObject(at: conditional.sourceUID) else { continue }
            for position in fields.entries.indices {
                guard case .string(let name) = fields.entries[position].key, case .array(var list) = fields.entries[position].value else {
                    continue
                }
                if name.value == FoundationClassNames.keysKey {
                    list.append(.uid(keyUID))
                } else if name.value == FoundationClassNames.objectsKey {
                    list.append(.uid(target))
                } else {
                    continue
                }
                fields.entries[position].value = .array(list)
            }
            table.setObject(.dictionary(fields), at: conditional.sourceUID)
        }
    }

    /// A cycle closed by a forward conditional reference (A refers conditionally to B, and B,
    /// encoded later, refers to A), as an error naming the conditional's coding path.
    func checkConditionalCycles() throws {
        let patched = forwardConditionals.compactMap { conditional in
            table.uid(for: conditional.object).map { (conditional, $0) }
        }
        guard !patched.isEmpty else { return }
        var extra: [UInt32: [UInt32]] = [:]
        for (conditional, target) in patched { extra[conditional.sourceUID, default: []].append(target) }
        if let (conditional, _) = patched.first(where: { ArchiveGraphCheck.reaches(from: $0.1, to: $0.0.sourceUID, in: table, extra: extra) }) {
            throw EncodingError.invalidValue(
                conditional.object, EncodingError.Context(
                    codingPath: conditional.codingPath,
                    debugDescription: "cycle: the conditional reference to a \(type(of: conditional.object)) here leads back to "
                        + "this object; a Decodable graph cannot be rebuilt from a cycle"))
        }
    }

    static func describe(_ path: [any CodingKey]) -> String {
        path.isEmpty ? "the root" : path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
    }
}

/// Reachability over the UIDs of `$objects` (iterative), for the conditional-cycle check.
enum ArchiveGraphCheck {
    static func reaches(from start: UInt32, to goal: UInt32, in table: ArchiveObjectTable, extra: [UInt32: [UInt32]]) -> Bool {
        var visited = [Bool](repeating: false, count: table.count)
        var stack: [UInt32] = [start]
        while let uid = stack.popLast() {
            if uid == goal { return true }
            let index = Int(uid)
            guard index > 0, index < visited.count, !visited[index] else { continue }
            visited[index] = true
            if let more = extra[uid] { stack.append(contentsOf: more) }
            // Class descriptions are reached too (through `$class`); they refer to nothing.
            stack.append(contentsOf: table.references(from: uid))
        }
        return false
    }
}

/// The entries of one container being encoded; written to the table when its value finishes.
/// Keys and values are slots (``ArchiveSlot``): nothing in them is retained, and the table lays
/// an object out from them without a dictionary value in between.
final class ContainerBuilder {
    enum Kind { case object, dictionary, array, set }
    @exclusivity(unchecked) private(set) var kind: Kind
    @exclusivity(unchecked) private(set) var uid: UInt32
    /// Coding-path depth at creation (the container's own coding path is that prefix).
    @exclusivity(unchecked) private(set) var depth: Int
    /// Object form: `$class` then stored keys and values. Dictionary form: `$class`, then key
    /// UIDs and values. (Lists the builder owns and reuses, not arrays: see ``SlotBuffer``.)
    let fields = SlotBuffer<ArchiveField>()
    /// Array and set forms: element references.
    let elements = SlotBuffer<ArchiveSlot>()
    /// Object form: where the encoder keeps the entry count of this type (-1: nowhere), and
    /// the count it held when this builder was made (updated only when it changes).
    @exclusivity(unchecked) var fieldHintSlot = -1
    @exclusivity(unchecked) var fieldHint = 0

    /// `capacity`: the entries expected, `$class` included (a hint; one allocation when right).
    init(kind: Kind, uid: UInt32, classUID: UInt32, classKey: ArchiveSlot, depth: Int, capacity: Int = 1) {
        self.kind = kind
        self.uid = uid
        self.depth = depth
        start(classUID: classUID, classKey: classKey, capacity: capacity)
    }

    /// Makes a finished builder, no longer referenced by any container, a new one (its lists
    /// keep their capacity).
    func reuse(kind: Kind, uid: UInt32, classUID: UInt32, classKey: ArchiveSlot, depth: Int, capacity: Int = 1) {
        self.kind = kind
        self.uid = uid
        self.depth = depth
        fieldHintSlot = -1
        fieldHint = 0
        start(classUID: classUID, classKey: classKey, capacity: capacity)
    }

    private func start(classUID: UInt32, classKey: ArchiveSlot, capacity: Int) {
        // A reused builder keeps its lists' memory.
        fields.removeAll()
        fields.reserveCapacity(capacity)
        fields.append(ArchiveField(key: classKey, value: .uid(classUID)))
        elements.removeAll()
    }

    /// Writes the container's object to the table.
    func finish(into state: ArchiveEncodingState) {
        let table = state.table
        switch kind {
        case .object:
            fields.withBuffer { table.setObject(fields: $0, array: nil, at: uid) }
        case .array, .set:
            let objectsKey = state.objectsKeySlot
            fields.withBuffer { fields in
                elements.withBuffer { table.setObject(fields: fields, array: (objectsKey, $0), at: uid) }
            }
        case .dictionary:
            // NSDictionary form: `NS.keys` and `NS.objects` arrays (rarer: nested containers).
            // `fields` starts with `$class` (see `start`).
            let entries: [PropertyListDictionary.Entry] = fields.withBuffer { fields in
                var keyValues: [PropertyListValue] = []
                var values: [PropertyListValue] = []
                keyValues.reserveCapacity(fields.count)
                values.reserveCapacity(fields.count)
                for field in fields.dropFirst() {
                    keyValues.append(table.value(of: field.key))
                    values.append(table.value(of: field.value))
                }
                // Always there (`start` appends it); `$null` rather than a trap otherwise.
                let classValue = fields.first.map { table.value(of: $0.value) } ?? .uid(0)
                return [
                    (ArchiveKeys.classReferenceValue, classValue),
                    (FoundationClassNames.keysKeyValue, .array(keyValues)), (FoundationClassNames.objectsKeyValue, .array(values)),
                ]
            }
            table.setObject(.dictionary(PropertyListDictionary(entries)), at: uid)
        }
    }
}

extension ArchiveObjectTable {
    /// ``slot(for:)`` of what ``ArchiveEncodingState/box(_:inline:)`` returned, with a
    /// reference (all but inline numbers and booleans) made here: the graph module's method is
    /// a call from this module, the value's enum copied into it and destroyed after.
    @inline(__always)
    func slot(forBoxed value: PropertyListValue) -> ArchiveSlot {
        if case .uid(let uid) = value { return .uid(uid) }
        return slot(for: value)
    }
}

/// Dictionaries are archived as NSDictionary (`NS.keys`, `NS.objects`) whatever their key type.
protocol ArchiveDictionaryEncodable {
    func encodeEntries(into state: ArchiveEncodingState, keys: inout [PropertyListValue], values: inout [PropertyListValue]) throws
}

extension Dictionary: ArchiveDictionaryEncodable where Key: Encodable, Value: Encodable {
    func encodeEntries(into state: ArchiveEncodingState, keys: inout [PropertyListValue], values: inout [PropertyListValue]) throws {
        keys.reserveCapacity(count)
        values.reserveCapacity(count)
        for (key, value) in self {
            let name: any CodingKey = (key as? String).map { NameKey(stringValue: $0) } ?? NameKey(stringValue: "\(key)")
            state.keys.append(name)
            defer { state.keys.removeLast() }
            keys.append(state.member(try state.box(key, inline: false)))
            values.append(state.member(try state.box(value, inline: false)))
        }
    }
}

/// Sets are archived as NSSet.
protocol ArchiveSetEncodable {
    func encodeMembers(into state: ArchiveEncodingState, members: inout [PropertyListValue]) throws
}

extension Set: ArchiveSetEncodable where Element: Encodable {
    func encodeMembers(into state: ArchiveEncodingState, members: inout [PropertyListValue]) throws {
        members.reserveCapacity(count)
        for (index, member) in enumerated() {
            state.keys.append(IndexKey(index))
            defer { state.keys.removeLast() }
            members.append(state.member(try state.box(member, inline: false)))
        }
    }
}
