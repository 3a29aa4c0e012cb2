internal import CKeyedArchiveShims
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The state of one decoding run over a validated archive (the graph layer's
/// ``ArchiveDocument``): coding path, depth and expansion counters, the objects being decoded
/// (cycle detection) and the class instances already decoded (identity).
///
/// It is the `Decoder` itself; ``decodeValue(_:from:checkCycle:)`` saves and restores the value
/// the decoder stands on, so no decoder is allocated per value.
final class ArchiveDecodingState: Decoder {
    let document: ArchiveDocument
    /// The number of `$objects` entries.
    let objectCount: Int
    let limits: DecodingLimits
    /// The values this decode may build (``DecodingLimits/expandedNodeLimit(inputSize:)``).
    private let expandedLimit: Int
    private let isStrict: Bool
    private let classNameOverrides: [ObjectIdentifier: String]
    private let mappedNames: [String: [ObjectIdentifier]]
    private let sendableUserInfo: [CodingUserInfoKey: any Sendable]

    /// The coding path as a stack.
    @exclusivity(unchecked) var keys = CodingPathStack()
    @exclusivity(unchecked) private var depth = 0
    @exclusivity(unchecked) private var expanded = 0
    @exclusivity(unchecked) private var expandedBytes = 0
    /// Objects whose decoding is running (a reference back to one is a cycle): a flag per
    /// object, zeroed by `calloc` and freed in `deinit`. Not a `[Bool]`: that array was a
    /// one-object decode's only allocation of its state, about 1,000 instructions of W1's
    /// default-profile unarchive with its metadata lookup and teardown; and not a word for
    /// the first 64 objects either, whose test added 0.3% to a large decode (W5, W2).
    /// Indexed only below `objectCount`, checked where the UID is read.
    private let active: UnsafeMutablePointer<Bool>
    /// Decoded class instances by UID and type. A class value is one reference, kept as
    /// `AnyObject` by reinterpreting it (`as AnyObject` on a generic value goes through the
    /// Objective-C bridging entry point, thousands of instructions on Linux, and keeping it as
    /// `Any` meant a conditional cast back at every reference, hundreds). The first instance
    /// made from an entry is in `instances`, its type in `instanceTypes`, at the position
    /// `instanceSlots` holds for its UID (plus one; 0 for none): array reads where a
    /// dictionary keyed by UID and type hashed at every reference (a sixth of the instructions
    /// of a W2 Codable unarchive, and more of its time once the table outgrew the cache). The
    /// same entry decoded as another type too (rare) is in `moreInstances`. The slots are made
    /// at the first instance, so decodes without classes never pay for them.
    @exclusivity(unchecked) private var instanceSlots: [UInt32] = []
    @exclusivity(unchecked) private var instanceTypes: [ObjectIdentifier] = []
    @exclusivity(unchecked) private var instances: [AnyObject] = []
    @exclusivity(unchecked) private var moreInstances: [InstanceKey: AnyObject] = [:]
    /// Class descriptions met so far, by UID: a short list scanned linearly (archives have few
    /// classes), then a dictionary, so archives with many classes stay linear.
    @exclusivity(unchecked) private var knownClasses: [(uid: UInt32, info: ClassInfo)] = []
    @exclusivity(unchecked) private var moreClassInfo: [UInt32: ClassInfo] = [:]
    @exclusivity(unchecked) private var accepted: [AcceptKey: Bool] = [:]
    @exclusivity(unchecked) private var typeKinds = TypeKindCache(decoding: true)
    /// In-place storages made by this decode, for reuse once no container refers to them (see
    /// ``keyedStorageInPlace(_:expected:keyType:depth:nestedPath:)``). Each refers to this state, so the list is
    /// emptied when the decode ends (``decodeRoot(_:key:)``).
    @exclusivity(unchecked) private var spareStorages: [InPlaceKeyedStorage] = []
    /// The most storages kept for reuse: nesting levels deeper than this make their own.
    private static let spareStorageLimit = 8
    /// Keyed containers kept for reuse with their in-place storages, found by coding-key type:
    /// a `KeyedDecodingContainer` made for a type costs three generic-metadata lookups (its
    /// box, our container type, the conformance) at every keyed value. One is reused when no
    /// copy of it is left (its value's `init(from:)` has returned), so an outer object's, or
    /// one kept by its type, goes on reading its own object. Emptied when the decode ends, as
    /// ``spareStorages`` is.
    @exclusivity(unchecked) private var keptContainers: [KeptContainer] = []

    /// A keyed container kept for reuse (``keptContainers``).
    private struct KeptContainer {
        var keyType: ObjectIdentifier
        /// A `KeyedDecodingContainer` of the coding-key type `keyType`, stored as what it is:
        /// one reference to the standard library's box (kept only when ``KeptContainers`` found
        /// it so), whose uniqueness tells whether a copy of the container is left.
        var box: AnyObject
        /// The storage the container reads (referred to by nothing else).
        let storage: InPlaceKeyedStorage
    }

    /// The value the `Decoder` methods read, and the type being decoded from it (for the class
    /// name check; cleared once a container is made).
    @exclusivity(unchecked) private var current: PropertyListValue = .uid(0)
    /// The last entry found to be an NSNull (an archive usually has one), or 0.
    @exclusivity(unchecked) private var knownNullUID: UInt32 = 0
    @exclusivity(unchecked) private var currentType: Any.Type?

    private struct InstanceKey: Hashable {
        var uid: UInt32
        var type: ObjectIdentifier
    }
    private struct AcceptKey: Hashable {
        var classUID: UInt32
        var type: ObjectIdentifier
    }

    /// What a class description means to this decoder.
    struct ClassInfo {
        enum Kind { case keyed, dictionary, array, set, string, data, date, url, uuid, null, other }
        var name: String
        var kind: Kind
    }

    init(document: ArchiveDocument, options: KeyedArchiveDecoder) throws {
        self.document = document
        self.objectCount = document.objectCount
        self.limits = document.limits
        self.expandedLimit = document.limits.expandedNodeLimit(inputSize: max(document.objectCount, document.inputByteCount))
        self.isStrict = options.isStrict
        self.classNameOverrides = options.classNameOverrides
        self.mappedNames = options.mappedNames
        self.sendableUserInfo = options.userInfo
        // calloc's zeroes are `false`. The count is the archive's, within the limits; out of
        // memory is an error, not a trap.
        let flagCount = Swift.max(document.objectCount, 1)
        guard let flags = calloc(flagCount, MemoryLayout<Bool>.stride) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: [], debugDescription: "out of memory for the cycle flags of \(document.objectCount) objects"))
        }
        self.active = flags.bindMemory(to: Bool.self, capacity: flagCount)
    }

    deinit { free(active) }

    // MARK: Decoder

    var codingPath: [any CodingKey] { visiblePath(keys.path) }
    var userInfo: [CodingUserInfoKey: Any] { sendableUserInfo }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        let expected = currentType
        currentType = nil
        return try keyedContainer(for: current, expected: expected, keyedBy: type, depth: keys.count)
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        currentType = nil
        return try unkeyedContainer(for: current, depth: keys.count)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueArchiveDecodingContainer(state: self, value: current, depth: keys.count)
    }

    // MARK: Entry

    func decodeRoot<T: Decodable>(_ type: T.Type, key: String) throws -> T {
        guard let root = document.topValue(forKey: key) else {
            throw DecodingError.valueNotFound(
                type, DecodingError.Context(
                    codingPath: [], debugDescription: "the archive's $top has no \"\(key)\" (keys: \(document.topKeys.joined(separator: ", ")))"))
        }
        keys.append(NameKey(stringValue: key))
        defer {
            keys.removeLast()
            // The storages refer to this state: kept, they would keep it alive.
            spareStorages.removeAll()
            keptContainers.removeAll()
        }
        return try decodeValue(type, from: root, checkCycle: true)
    }

    // MARK: Errors

    /// The coding path users see for a path of the key stack: without its first key, the
    /// `$top` key the decode started from, since Foundation's decoders start from `[]` (so did
    /// our encoder).
    func visiblePath(_ stackPath: [any CodingKey]) -> [any CodingKey] {
        Array(stackPath.dropFirst())
    }

    /// The visible coding path of the container at `depth` (the first `depth` keys on the
    /// stack), or of a nested container, which knows its own (see ``withPath(_:_:)``).
    func containerPath(depth: Int, nestedPath: [any CodingKey]?) -> [any CodingKey] {
        if let nestedPath { return visiblePath(nestedPath) }
        return keys.elements(from: 1, upTo: depth)
    }

    func path(adding key: (any CodingKey)?) -> [any CodingKey] {
        var path = keys.elements(from: 1, upTo: keys.count)
        if let key { path.append(key) }
        return path
    }

    /// Runs `body` with the key stack holding `path`, the stack path of a container made by
    /// `nestedContainer`, `nestedUnkeyedContainer` or `superDecoder`. Such a container outlives
    /// the call that made it, whose key was popped when it returned; without its key on the
    /// stack, its errors and the values it decodes left the key out of their coding paths
    /// (`[circle, radius]` came out as `[radius]` for an enum's payload). Usually the stack holds
    /// the container's parent's path (its length and last key say so), and the key is pushed;
    /// otherwise (a container used after its parent moved on) the stack is set to `path` and
    /// put back after.
    /// A nil `path` (a container a decode made, on the stack already) runs `body` as it is.
    @inline(__always)
    func withPath<R>(_ path: [any CodingKey]?, _ body: () throws -> R) rethrows -> R {
        guard let path else { return try body() }
        return try withNestedPath(path, body)
    }

    private func withNestedPath<R>(_ path: [any CodingKey], _ body: () throws -> R) rethrows -> R {
        if keys.count == path.count - 1, let last = path.last, Self.sameKey(keys.top, path.count >= 2 ? path[path.count - 2] : nil) {
            keys.append(last)
            defer { keys.removeLast() }
            return try body()
        }
        let saved = keys.path
        keys.replaceAll(with: path)
        defer { keys.replaceAll(with: saved) }
        return try body()
    }

    func corrupted(_ message: String, key: (any CodingKey)? = nil) -> DecodingError {
        .dataCorrupted(DecodingError.Context(codingPath: path(adding: key), debugDescription: message))
    }

    /// Whether two keys are the same step of a path (the same name or index; both absent).
    static func sameKey(_ a: (any CodingKey)?, _ b: (any CodingKey)?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        return a.intValue == b.intValue && a.stringValue == b.stringValue
    }

    /// The error for a stored value that is not the leaf type asked for: `valueNotFound` for an
    /// NSNull (nil, as `$null` is), as Foundation's decoders report a null; else `typeMismatch`.
    func leafMismatch(_ type: Any.Type, expected: String, _ value: PropertyListValue, key: (any CodingKey)? = nil) -> DecodingError {
        if isNil(value) { return notFound(type, key: key) }
        return mismatch(type, "expected \(expected), found \(describe(value))", key: key)
    }

    func mismatch(_ type: Any.Type, _ message: String, key: (any CodingKey)? = nil) -> DecodingError {
        .typeMismatch(type, DecodingError.Context(codingPath: path(adding: key), debugDescription: message))
    }

    /// A field the file cannot give (an archive read by index, damaged where the field is).
    func unreadable(_ error: any Error, key: (any CodingKey)?) -> DecodingError {
        if let error = error as? DecodingError { return error }
        return .dataCorrupted(DecodingError.Context(codingPath: path(adding: key), debugDescription: "unreadable field: \(error)", underlyingError: error))
    }

    func notFound(_ type: Any.Type, key: (any CodingKey)? = nil) -> DecodingError {
        .valueNotFound(type, DecodingError.Context(codingPath: path(adding: key), debugDescription: "expected \(type), found nil ($null)"))
    }

    // MARK: Objects

    /// The entry at a UID, range-checked (read from the file when the archive is read by index).
    @inline(__always)
    func object(_ uid: UInt32, key: (any CodingKey)? = nil) throws -> PropertyListValue {
        guard Int(uid) < objectCount else {
            throw corrupted("UID \(uid) is out of range ($objects has \(objectCount) entries)", key: key)
        }
        return try checked(key: key) { () throws(KeyedArchiveError) in try document.object(uid, path: "$objects[\(uid)]") }
    }

    /// The entry at a UID when it is a plain string, else `nil` (errors too: callers that need
    /// them take the full path).
    @inline(__always)
    private func plainString(_ uid: UInt32) -> String? {
        guard uid != 0, Int(uid) < objectCount else { return nil }
        // Short ASCII text straight from the file, with no property-list value made for it.
        if let text = document.shortASCIIString(uid) { return text }
        guard case .string(let string)? = try? document.object(uid, path: "") else { return nil }
        return string.value
    }

    /// An archived object whose class is a keyed one, read in place when the archive is read by
    /// index: the fields are looked up in the file, with no dictionary built (see
    /// ``KeyedStorage``). `nil` sends the caller to the general path (other classes, malformed
    /// entries, archives read whole), which also reports any error.
    ///
    /// Not generic over the coding-key type: returning an optional container of it made two
    /// generic-metadata lookups at every object.
    private func keyedStorageInPlace(
        _ uid: UInt32, expected: Any.Type?, keyType: ObjectIdentifier, depth: Int, nestedPath: [any CodingKey]?
    ) throws -> StorageInPlace? {
        var kept = -1
        for index in keptContainers.indices where keptContainers[index].keyType == keyType {
            // (Through the buffer: `&keptContainers[index].box` checks a temporary copy.)
            let free = keptContainers.withUnsafeMutableBufferPointer { isKnownUniquelyReferenced(&$0[index].box) }
            if free {
                kept = index
                break
            }
        }
        let storage: InPlaceKeyedStorage
        if kept >= 0 {
            storage = keptContainers[kept].storage
        } else if let spare = spareStorage() {
            storage = spare
        } else {
            return nil
        }
        guard let classUID = (try? document.restartInPlace(&storage.lookup, at: uid, path: "")) ?? nil,
            try kind(ofClass: classUID, uid: uid) == .keyed
        else { return nil }
        storage.reuse(depth: depth, nestedPath: nestedPath)
        if isStrict {
            // Described when the storage was made; looked up only here, in strict mode (never
            // skipped: an unknown class is described again).
            let info = try knownClass(classUID) ?? describeClass(classUID, uid: uid, key: nil).0
            try checkAccepted(info, classUID: classUID, expected: expected)
        }
        return kept >= 0 ? .kept(keptContainers[kept].box) : .storage(storage)
    }

    /// What ``keyedStorageInPlace(_:expected:keyType:depth:nestedPath:)`` found.
    private enum StorageInPlace {
        /// A kept container's box (see ``KeptContainer``), its storage restarted.
        case kept(AnyObject)
        /// A storage for a new container.
        case storage(InPlaceKeyedStorage)
    }

    /// A new container of `storage`, kept for reuse while there is room.
    private func keep<Key: CodingKey>(_ container: KeyedDecodingContainer<Key>, storage: InPlaceKeyedStorage) {
        guard keptContainers.count < KeptContainers.limit,
            KeptContainers.canKeep(container)
        else { return }
        // The storage belongs to the kept container from now on.
        spareStorages.removeAll { $0 === storage }
        keptContainers.append(
            KeptContainer(keyType: ObjectIdentifier(Key.self), box: unsafeBitCast(container, to: AnyObject.self), storage: storage))
    }

    /// A storage for an object read in place, its lookup to be restarted (in place: copying a
    /// lookup in retained its references, and the copy's end released them); `nil` when the
    /// archive is not read by index. A storage no container refers to any more (its value's
    /// init(from:) has returned) is used again: making and freeing one per object was a tenth
    /// of what a keyed container cost. A storage still referred to (an outer object's, one kept
    /// by its type, or one a member list is being read with) is left alone, so the pool holds
    /// at most one per nesting level in use.
    @inline(__always)
    private func spareStorage() -> InPlaceKeyedStorage? {
        for index in spareStorages.indices where isKnownUniquelyReferenced(&spareStorages[index]) {
            return spareStorages[index]
        }
        guard let lookup = document.inPlaceLookup else { return nil }
        let storage = InPlaceKeyedStorage(lookup, state: self, depth: keys.count)
        if spareStorages.count < Self.spareStorageLimit { spareStorages.append(storage) }
        return storage
    }

    /// The kind of the class at `classUID` (named by the object at `uid`), described at first
    /// use. Only the kind: a ``ClassInfo`` copied here retained and released its name at every
    /// object.
    @inline(__always)
    private func kind(ofClass classUID: UInt32, uid: UInt32) throws -> ClassInfo.Kind {
        try knownKind(classUID) ?? describeClass(classUID, uid: uid, key: nil).0.kind
    }

    /// The members of an NSArray or NSSet (`NS.objects`, an array of UIDs in range) read in
    /// place; `nil` for anything else or anything irregular, which the general path reads (and
    /// reports).
    private func elementsInPlace(_ uid: UInt32) throws -> [PropertyListValue]? {
        try membersInPlace(uid, counted: { _ in }) { element, _ in element }
    }

    /// The members of the NSArray or NSSet at `value` decoded by `decode` (given each member, a
    /// UID, and its index) as they are read in place, counted toward the expansion limit as
    /// ``unkeyedElements(for:)`` counts them: for arrays of leaves, with no list of the members
    /// made first (its allocation and release were a quarter of what W5's two-string arrays
    /// cost). `nil` when the archive is read whole or the entry is anything else or irregular:
    /// the general path then reads it and reports what is wrong. (It checks every member
    /// before it decodes one, so it fails on the member this read gave up at; the counts made
    /// here are taken back all the same, so that no limit depends on that.)
    func leavesInPlace<Leaf>(of value: PropertyListValue, _ decode: (PropertyListValue, Int) throws -> Leaf) throws -> [Leaf]? {
        guard case .uid(let uid) = value, uid != 0 else { return nil }
        let counted = (expanded, expandedBytes)
        // Members are counted before the first is decoded, as the general path does.
        guard let leaves = try membersInPlace(uid, counted: { try countExpansion($0) }, decode) else {
            (expanded, expandedBytes) = counted
            return nil
        }
        return leaves
    }

    /// The members of the NSArray or NSSet at `uid` read in place, each passed to `transform`
    /// with its index (`counted` is given their number once the first is checked); `nil` for
    /// anything else or at the first irregular member (members before it were transformed
    /// already).
    @inline(__always)
    private func membersInPlace<Member>(
        _ uid: UInt32, counted: (Int) throws -> Void, _ transform: (PropertyListValue, Int) throws -> Member
    ) throws -> [Member]? {
        // The fields are read with a spare storage's lookup, restarted and used in place.
        guard let storage = spareStorage(),
            let classUID = (try? document.restartInPlace(&storage.lookup, at: uid, path: "")) ?? nil,
            case let kind = try kind(ofClass: classUID, uid: uid), kind == .array || kind == .set,
            let index = (try? storage.lookup.index(ofStoredKey: FoundationClassNames.objectsKey)) ?? nil,
            let list = try? storage.lookup.reader.arraySpan(ofObject: storage.lookup.valueObject(at: index))
        else { return nil }
        let reader = storage.lookup.reader
        var members: [Member] = []
        members.reserveCapacity(list.count)
        for member in 0..<list.count {
            guard let element = try? reader.value(ofObject: reader.element(member, of: list)),
                case .uid(let reference) = element, Int(reference) < objectCount
            else { return nil }
            if member == 0 { try counted(list.count) }
            members.append(try transform(element, member))
        }
        return members
    }

    /// The class of an object dictionary (cached per class description).
    func classOf(_ fields: PropertyListDictionary, uid: UInt32, key: (any CodingKey)? = nil) throws -> (ClassInfo, UInt32) {
        // The first entry in place (`entries[0].value` copied the whole entry, twice here).
        let classUID = fields.entries.withUnsafeBufferPointer { entries -> UInt32? in
            guard let first = entries.baseAddress, case .uid(let classUID) = PropertyListDictionary.value(of: first).pointee,
                case .string(let name) = PropertyListDictionary.key(of: first).pointee, name.hasText(ArchiveKeys.classReference)
            else { return nil }
            return classUID
        }
        guard let classUID else { return try slowClassOf(fields, uid: uid, key: key) }
        if let info = knownClass(classUID) { return (info, classUID) }
        return try describeClass(classUID, uid: uid, key: key)
    }

    @inline(__always)
    private func knownClass(_ classUID: UInt32) -> ClassInfo? {
        for known in knownClasses where known.uid == classUID { return known.info }
        return moreClassInfo.isEmpty ? nil : moreClassInfo[classUID]
    }

    /// The kind of a class already described (read in place: no copy of its name is made).
    @inline(__always)
    private func knownKind(_ classUID: UInt32) -> ClassInfo.Kind? {
        let kind = knownClasses.withUnsafeBufferPointer { known -> ClassInfo.Kind? in
            for index in known.indices where known[index].uid == classUID { return known[index].info.kind }
            return nil
        }
        return kind ?? (moreClassInfo.isEmpty ? nil : moreClassInfo[classUID]?.kind)
    }

    private func slowClassOf(_ fields: PropertyListDictionary, uid: UInt32, key: (any CodingKey)?) throws -> (ClassInfo, UInt32) {
        guard let classValue = fields[ArchiveKeys.classReference] else {
            throw corrupted("$objects[\(uid)] is a dictionary without $class", key: key)
        }
        guard case .uid(let classUID) = classValue else {
            throw corrupted("$class of $objects[\(uid)] is a \(classValue.typeName), not a UID", key: key)
        }
        if let info = knownClass(classUID) { return (info, classUID) }
        return try describeClass(classUID, uid: uid, key: key)
    }

    private func describeClass(_ classUID: UInt32, uid: UInt32, key: (any CodingKey)?) throws -> (ClassInfo, UInt32) {
        let description: ArchivedClassDescription
        do {
            description = try document.classDescription(classUID, path: "$objects[\(uid)] $class")
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: path(adding: key), debugDescription: "\(error)", underlyingError: error))
        }
        // The same class resolution as the unarchiver and resolver: the first mapped
        // Foundation name along `$classes` (a private NSArray subclass is an array).
        let kind: ClassInfo.Kind
        switch FoundationClassNames.kind(of: description) {
        case .dictionary?: kind = .dictionary
        case .array?, .orderedSet?: kind = .array
        case .set?: kind = .set
        case .string?: kind = .string
        case .data?: kind = .data
        case .date?: kind = .date
        case .url?: kind = .url
        case .uuid?: kind = .uuid
        case .null?: kind = .null
        case .number?: kind = .other
        case .archivedObject?, .type?, nil: kind = .keyed
        }
        let info = ClassInfo(name: description.name, kind: kind)
        if knownClasses.count < 16 {
            knownClasses.append((classUID, info))
        } else {
            moreClassInfo[classUID] = info
        }
        return (info, classUID)
    }

    /// Whether a class name is accepted for a type (strict mode).
    private func accepts(_ info: ClassInfo, classUID: UInt32, for type: Any.Type) -> Bool {
        let key = AcceptKey(classUID: classUID, type: ObjectIdentifier(type))
        if let known = accepted[key] { return known }
        let name = info.name
        let archiveName = ClassNames.archiveName(of: type, overrides: classNameOverrides)
        let result = name == archiveName
            || name == ClassNames.qualifiedName(of: type)
            || ClassNames.isModuleQualified(name, archiveName: archiveName)
            || (mappedNames[name]?.contains(ObjectIdentifier(type)) ?? false)
        accepted[key] = result
        return result
    }

    // MARK: Containers

    /// A keyed container of `value` at `depth`; `nestedPath`, the stack path of a container made
    /// by another (see ``withPath(_:_:)``), nil for one a decode makes.
    func keyedContainer<Key: CodingKey>(
        for value: PropertyListValue, expected: Any.Type?, keyedBy type: Key.Type, depth: Int,
        nestedPath: [any CodingKey]? = nil
    ) throws -> KeyedDecodingContainer<Key> {
        guard case .uid(let uid) = value else {
            throw mismatch([String: Any].self, "expected an archived object, found an inline \(value.typeName)")
        }
        guard uid != 0 else { throw notFound(expected ?? [String: Any].self) }
        switch try keyedStorageInPlace(uid, expected: expected, keyType: ObjectIdentifier(Key.self), depth: depth, nestedPath: nestedPath) {
        case .kept(let box)?:
            // Sound: kept containers are found by `Key`'s identity, and `box` is one made for it.
            return unsafeBitCast(box, to: KeyedDecodingContainer<Key>.self)
        case .storage(let storage)?:
            let container = KeyedDecodingContainer(KeyedArchiveDecodingContainer<Key>(storage: storage))
            keep(container, storage: storage)
            return container
        case nil:
            break
        }
        let entry = try object(uid)
        guard case .dictionary(let fields) = entry else {
            throw mismatch(expected ?? [String: Any].self, "expected an archived object, found a \(entry.typeName)")
        }
        let (info, classUID) = try classOf(fields, uid: uid)
        switch info.kind {
        case .keyed:
            try checkAccepted(info, classUID: classUID, expected: expected)
            let storage = KeyedStorage(entries: fields.entries, state: self, depth: depth)
            storage.nestedPath = nestedPath
            return KeyedDecodingContainer(KeyedArchiveDecodingContainer<Key>(storage: storage))
        case .dictionary:
            let entries = try dictionaryEntries(fields, uid: uid, name: info.name)
            try countExpansion(entries.count)
            let storage = KeyedStorage(map: entries, state: self, depth: depth)
            storage.nestedPath = nestedPath
            return KeyedDecodingContainer(KeyedArchiveDecodingContainer<Key>(storage: storage))
        case .null:
            throw notFound(expected ?? [String: Any].self)
        default:
            throw mismatch(expected ?? [String: Any].self, "expected a keyed object, found \(info.name)")
        }
    }

    /// Throws in strict mode when the class is not accepted for the type expected.
    private func checkAccepted(_ info: ClassInfo, classUID: UInt32, expected: Any.Type?) throws {
        if isStrict, let expected, !accepts(info, classUID: classUID, for: expected) {
            throw mismatch(
                expected,
                "class \"\(info.name)\" is not accepted for \(expected) (accepted: "
                    + "\(KeyedArchiveDecoder.describeAccepted(expected, overrides: classNameOverrides, mapped: mappedNames)))")
        }
    }

    /// An NSDictionary's entries by string key (string keys as they are, integer keys as their
    /// decimal text, as Swift's `[Int: T]` coding expects). A whole real or a boolean key is
    /// the integer it equals: Foundation on Linux archives NSNumbers that compare equal as one
    /// object, so the key `1` after a `1.0` (or a `true`) elsewhere in the archive is stored as
    /// that real (or boolean).
    private func dictionaryEntries(_ fields: PropertyListDictionary, uid: UInt32, name: String) throws -> [String: PropertyListValue] {
        let (keyList, valueList) = try dictionaryLists(fields, uid: uid, name: name)
        var map: [String: PropertyListValue] = [:]
        map.reserveCapacity(keyList.count)
        for (index, keyValue) in keyList.enumerated() {
            let leaf = try resolveLeaf(keyValue, key: IndexKey(index))
            let name: String
            switch leaf {
            case .string(let string): name = string.value
            case .integer(let integer): name = integer.description
            case .real(let real) where Int64(exactly: real.value) != nil: name = Int64(real.value).description
            case .bool(let bool): name = bool ? "1" : "0"
            default: throw corrupted("NSDictionary key \(index) is a \(leaf.typeName); a keyed value needs string or integer keys")
            }
            map[name] = valueList[index]
        }
        return map
    }

    private func dictionaryLists(_ fields: PropertyListDictionary, uid: UInt32, name: String) throws -> ([PropertyListValue], [PropertyListValue]) {
        let (keys, objects) = try checked { () throws(KeyedArchiveError) in
            try document.dictionaryReferences(in: fields, path: "$objects[\(uid)] (\(name))")
        }
        return (keys.items, objects.items)
    }

    /// An unkeyed container of `value` at `depth` (`nestedPath` as for ``keyedContainer(for:expected:keyedBy:depth:nestedPath:)``).
    func unkeyedContainer(for value: PropertyListValue, depth: Int, nestedPath: [any CodingKey]? = nil) throws -> any UnkeyedDecodingContainer {
        let elements = try unkeyedElements(for: value)
        return UnkeyedArchiveDecodingContainer(state: self, elements: elements, depth: depth, nestedPath: nestedPath)
    }

    /// `depth`, the depth of a container a caller makes from another (`nestedContainer`,
    /// `superDecoder`: one more than its parent's), when within the depth limit. A container a
    /// decode makes is at `keys.count`, its nesting counted by
    /// ``decodeValue(_:from:checkCycle:)``; the decode makes none of these, so nothing else
    /// counts them, and a type that follows them through a hostile archive whose objects refer
    /// to themselves (`Self(from: container.superDecoder(forKey: .next))`, a loop over
    /// `nestedContainer`) recursed until the stack overflowed, or ran without end.
    func checkedDepth(_ depth: Int) throws -> Int {
        guard depth <= limits.maximumDepth else {
            throw corrupted("nesting deeper than the maximum depth \(limits.maximumDepth)")
        }
        if StackSpace.runsShort(atDepth: depth) { throw corrupted(StackSpace.exhaustedMessage(depth: depth)) }
        return depth
    }

    /// The elements of the NSArray / NSSet (or interleaved NSDictionary keys and values) a
    /// stored value refers to, counted toward the expansion limit.
    func unkeyedElements(for value: PropertyListValue) throws -> [PropertyListValue] {
        guard case .uid(let uid) = value else {
            throw mismatch([Any].self, "expected an array, found an inline \(value.typeName)")
        }
        guard uid != 0 else { throw notFound([Any].self) }
        if let elements = try elementsInPlace(uid) {
            try countExpansion(elements.count)
            return elements
        }
        let entry = try object(uid)
        guard case .dictionary(let fields) = entry else {
            throw mismatch([Any].self, "expected an array, found a \(entry.typeName)")
        }
        let (info, _) = try classOf(fields, uid: uid)
        let elements: [PropertyListValue]
        switch info.kind {
        case .array, .set:
            elements = try checked { () throws(KeyedArchiveError) in
                try document.referenceList(
                    in: fields, key: FoundationClassNames.objectsKey, legacyPrefix: FoundationClassNames.objectPrefix,
                    path: "$objects[\(uid)] (\(info.name))"
                ).items
            }
        case .dictionary:
            // Swift codes dictionaries with keys other than String and Int as [k0, v0, k1, v1, ...].
            let (keyList, valueList) = try dictionaryLists(fields, uid: uid, name: info.name)
            var interleaved: [PropertyListValue] = []
            interleaved.reserveCapacity(2 * keyList.count)
            for index in keyList.indices {
                interleaved.append(keyList[index])
                interleaved.append(valueList[index])
            }
            elements = interleaved
        case .null:
            throw notFound([Any].self)
        default:
            throw mismatch([Any].self, "expected an array, found \(info.name)")
        }
        // Elements decoded as primitives do not pass through decodeValue: count them here, so an
        // array shared by many containers counts its elements at every use.
        try countExpansion(elements.count)
        return elements
    }

    // MARK: Values

    /// Decodes a value stored in a container (inline or by reference).
    ///
    /// `checkCycle` is false only when a single-value container decodes the value it stands on
    /// again (a wrapper type), which is not a reference back.
    func decodeValue<T: Decodable>(_ type: T.Type, from value: PropertyListValue, checkCycle: Bool) throws -> T {
        let kind = typeKinds.kind(of: T.self)
        if kind.isLeaf { return try decodeLeaf(type, kind: kind, from: value) }
        if case .decimal = kind, let decimal = try decodeDecimalNumber(value) { return try typed(decimal, as: type) }
        depth += 1
        defer { depth -= 1 }
        guard depth <= limits.maximumDepth else {
            throw corrupted("nesting deeper than the maximum depth \(limits.maximumDepth)")
        }
        if StackSpace.runsShort(atDepth: depth) { throw corrupted(StackSpace.exhaustedMessage(depth: depth)) }
        try countExpansion(1)
        let isObject: Bool
        if case .object = kind { isObject = true } else { isObject = false }
        var marked: UInt32 = 0
        // Where the instance is remembered: also when a wrapper (an `Optional`) decodes its
        // value again without the cycle mark, or `[Node?]` and `Node??` fields lost identity.
        var rememberedAt: UInt32 = 0
        if case .uid(let uid) = value, uid != 0 {
            let index = Int(uid)
            guard index < objectCount else {
                throw corrupted("UID \(uid) is out of range ($objects has \(objectCount) entries)")
            }
            if isObject, let instance = instance(at: index, type: ObjectIdentifier(T.self)) {
                // Made by `T(from:)` and kept under `T`'s identifier (see `remember`): a `T`.
                return unsafeBitCast(instance, to: T.self)
            }
            if isObject { rememberedAt = uid }
            if checkCycle {
                if active[index] {
                    throw corrupted("cycle: $objects[\(uid)] refers back to itself through its fields; a Decodable value cannot contain itself")
                }
                active[index] = true
                marked = uid
            }
        }
        defer { if marked != 0 { active[Int(marked)] = false } }
        if case .decodableArray(let arrayType) = kind {
            // What Array.init(from:) does through unkeyedContainer(), without the generic path.
            return try typed(arrayType.decodeArchiveArray(from: value, state: self), as: type)
        }
        // Swapped in and out (moves: saving a copy of the value and assigning it back copied
        // and destroyed it twice per value).
        var saved = value
        swap(&current, &saved)
        let savedType = currentType
        currentType = T.self
        defer {
            swap(&current, &saved)
            currentType = savedType
        }
        let result = try T(from: self)
        // An object kind is a class, whose value is one reference (the size check is for the
        // reinterpretation, and never fails).
        if rememberedAt != 0, MemoryLayout<T>.size == MemoryLayout<AnyObject>.size {
            remember(unsafeBitCast(result, to: AnyObject.self), at: Int(rememberedAt), type: ObjectIdentifier(T.self))
        }
        return result
    }

    /// The instance of `type` already decoded from entry `index` (below the object count), if any.
    @inline(__always)
    private func instance(at index: Int, type: ObjectIdentifier) -> AnyObject? {
        guard !instanceSlots.isEmpty else { return nil }
        let slot = Int(instanceSlots[index])
        // Two lists, not one of pairs: a pair was copied whole through the runtime's generic
        // tuple witnesses.
        if slot != 0, instanceTypes[slot - 1] == type { return instances[slot - 1] }
        return moreInstances.isEmpty ? nil : moreInstances[InstanceKey(uid: UInt32(truncatingIfNeeded: index), type: type)]
    }

    /// The longest array of class instances whose instances ``prefetchInstances(of:as:)``
    /// starts loading all at once (a longer one would push its own first ones out again).
    private static var prefetchedElements: Int { 32 }

    /// Starts loading what decoding `elements`, references to instances of the class `T`,
    /// reads for those already decoded: each one's slot, list entries and instance, loaded in
    /// two passes over the array instead of one after the other in the decode loop. A W2
    /// person's friends are three random people of 100,000: three dependent misses each (its
    /// entry in the slots, then its type and reference in the lists, then the instance, which
    /// the reference handed out is retained in). Reads only inside the lists; changes nothing.
    func prefetchInstances<T>(of elements: [PropertyListValue], as type: T.Type) {
        guard elements.count > 1, elements.count <= Self.prefetchedElements, !instanceSlots.isEmpty,
            case .object = typeKinds.kind(of: type)
        else { return }
        instanceSlots.withUnsafeBufferPointer { slots in
            instances.withUnsafeBufferPointer { instances in
                instanceTypes.withUnsafeBufferPointer { types in
                    guard let instanceBase = instances.baseAddress, let typeBase = types.baseAddress else { return }
                    let count = Swift.min(instances.count, types.count)
                    // The position in the lists of the instance kept for `element`, if any.
                    func listIndex(_ element: PropertyListValue) -> Int? {
                        guard case .uid(let uid) = element, Int(uid) < slots.count else { return nil }
                        let slot = Int(slots[Int(uid)])
                        return slot != 0 && slot <= count ? slot - 1 : nil
                    }
                    // The slots' loads are independent, so they miss together.
                    for element in elements {
                        guard let index = listIndex(element) else { continue }
                        keyed_archive_prefetch(instanceBase + index)
                        keyed_archive_prefetch(typeBase + index)
                    }
                    for element in elements {
                        guard let index = listIndex(element) else { continue }
                        // The reference's bits, read without retaining it.
                        keyed_archive_prefetch(UnsafeRawPointer(instanceBase + index).load(as: UnsafeRawPointer?.self))
                    }
                }
            }
        }
    }

    /// Keeps the instance of `type` decoded from entry `index` (below the object count; each
    /// pair of entry and type is decoded once, so a slot is filled at most once).
    private func remember(_ instance: AnyObject, at index: Int, type: ObjectIdentifier) {
        if instanceSlots.isEmpty { instanceSlots = [UInt32](repeating: 0, count: objectCount) }
        // At most one list element per entry, and the entries are at most UInt32.max.
        if instanceSlots[index] == 0, let slot = UInt32(exactly: instances.count + 1) {
            instanceTypes.append(type)
            instances.append(instance)
            instanceSlots[index] = slot
        } else {
            moreInstances[InstanceKey(uid: UInt32(truncatingIfNeeded: index), type: type)] = instance
        }
    }

    /// Strings, numbers, booleans, Data, Date, URL and UUID (kept out of ``decodeValue`` so its
    /// stack frame stays small: it recurses once per nesting level).
    private func decodeLeaf<T>(_ type: T.Type, kind: CodableTypeKind, from value: PropertyListValue) throws -> T {
        switch kind {
        case .plain, .object, .decodableArray, .dictionary, .set, .encodableArray, .optional, .decimal:
            throw mismatch(type, "internal: \(T.self) is not a leaf type")
        case .string: return try typed(decodeString(value), as: type)
        case .int: return try typed(decodeInteger(Int.self, value), as: type)
        case .double: return try typed(decodeDouble(value), as: type)
        case .bool: return try typed(decodeBool(value), as: type)
        case .float: return try typed(decodeFloat(value), as: type)
        case .int64: return try typed(decodeInteger(Int64.self, value), as: type)
        case .int32: return try typed(decodeInteger(Int32.self, value), as: type)
        case .int16: return try typed(decodeInteger(Int16.self, value), as: type)
        case .int8: return try typed(decodeInteger(Int8.self, value), as: type)
        case .uint: return try typed(decodeInteger(UInt.self, value), as: type)
        case .uint64: return try typed(decodeInteger(UInt64.self, value), as: type)
        case .uint32: return try typed(decodeInteger(UInt32.self, value), as: type)
        case .uint16: return try typed(decodeInteger(UInt16.self, value), as: type)
        case .uint8: return try typed(decodeInteger(UInt8.self, value), as: type)
        case .data: return try typed(decodeData(value), as: type)
        case .date: return try typed(decodeDate(value), as: type)
        case .url: return try typed(decodeURL(value), as: type)
        case .uuid: return try typed(decodeUUID(value), as: type)
        }
    }

    /// A decoded value as the type asked for, which it is whenever the type's kind says so (a
    /// failed cast would be a bug here, reported as a type mismatch rather than a trap).
    /// Reinterpreted after an identity check; the dynamic cast lives out of line in
    /// ``cast(_:to:)``, because an `as? T` anywhere in this unspecialized code fetched the
    /// metadata of `Optional<T>` on every call, used or not (hundreds of instructions a value).
    @inline(__always)
    private func typed<V, T>(_ value: V, as type: T.Type) throws -> T {
        if V.self == T.self { return unsafeBitCast(value, to: T.self) }
        return try cast(value, to: type)
    }

    /// `value` as a `T`, or an internal type mismatch (kept out of line: see ``typed(_:as:)``).
    @inline(never)
    private func cast<V, T>(_ value: V, to type: T.Type) throws -> T {
        if let result = value as? T { return result }
        throw mismatch(type, "internal: decoded a \(Swift.type(of: value)) for \(T.self)")
    }

    /// Follows a reference to a leaf: strings, numbers, booleans, data, or the NSString /
    /// NSData object forms (`NS.string`, `NS.bytes`, `NS.data`).
    func resolveLeaf(_ value: PropertyListValue, key: (any CodingKey)? = nil) throws -> PropertyListValue {
        guard case .uid(let uid) = value else { return value }
        let target = try object(uid, key: key)
        guard case .dictionary(let fields) = target else { return target }
        let (info, _) = try classOf(fields, uid: uid, key: key)
        switch info.kind {
        case .string:
            let text = try checked(key: key) { () throws(KeyedArchiveError) in
                try document.stringValue(ofObject: fields, path: "$objects[\(uid)] (\(info.name))")
            }
            return .string(PropertyListString(text))
        case .data:
            return .data(try checked(key: key) { () throws(KeyedArchiveError) in
                try document.dataValue(ofObject: fields, path: "$objects[\(uid)] (\(info.name))")
            })
        default:
            return target
        }
    }

    /// Runs a shared graph-layer reader, reporting its error (which names the object and
    /// field) as `dataCorrupted` at the current coding path.
    func checked<T>(key: (any CodingKey)? = nil, _ body: () throws(KeyedArchiveError) -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: path(adding: key), debugDescription: "\(error)", underlyingError: error))
        }
    }

    func describe(_ value: PropertyListValue) -> String {
        guard case .uid(let uid) = value else { return "an inline \(value.typeName)" }
        if uid == 0 { return "nil" }
        guard Int(uid) < objectCount else { return "an out-of-range reference" }
        guard let target = try? object(uid) else { return "an unreadable entry" }
        if case .dictionary(let fields) = target, let (info, _) = try? classOf(fields, uid: uid) { return info.name }
        return "a \(target.typeName)"
    }

    /// Whether a stored value is nil: `$null` (UID 0), or a reference to an NSNull object,
    /// which is what NSArray, NSSet and NSDictionary hold for nil (Foundation writes one for a
    /// Swift nil bridged into them, and so does our encoder).
    @inline(__always)
    func isNil(_ value: PropertyListValue) -> Bool {
        guard case .uid(let uid) = value else { return false }
        return uid == 0 || isNullObject(uid)
    }

    /// Whether the entry at `uid` is an NSNull object. A damaged entry is not: the decode that
    /// follows reports it.
    @inline(never)
    private func isNullObject(_ uid: UInt32) -> Bool {
        guard Int(uid) < objectCount else { return false }
        if uid == knownNullUID { return true }
        let classUID: UInt32
        if document.isReadByIndex {
            // Only an object dictionary can be one: other entries (strings, numbers, which most
            // optionals hold) are told by their marker, with no lookup copied.
            guard document.isDictionaryInPlace(uid) == true,
                let found = (try? document.objectInPlace(uid, path: "")) ?? nil
            else { return false }
            classUID = found.classUID
        } else {
            guard case .dictionary(let fields)? = try? object(uid), let (info, _) = try? classOf(fields, uid: uid) else { return false }
            if info.kind == .null { knownNullUID = uid }
            return info.kind == .null
        }
        guard (try? kind(ofClass: classUID, uid: uid)) == .null else { return false }
        knownNullUID = uid
        return true
    }

    // MARK: Quick paths
    //
    // The common stored forms of primitives, decoded without the coding key (an existential
    // per field otherwise). `nil` sends the caller to the full decoder, which also reports the
    // error; nothing is counted unless the quick path succeeds.

    /// A reference to a plain string in `$objects`.
    @inline(__always)
    func quickString(_ value: PropertyListValue) -> String? {
        guard case .uid(let uid) = value, let string = plainString(uid) else { return nil }
        guard addBytes(string.utf8.count) else { return nil }
        return string
    }

    /// An inline integer that fits.
    @inline(__always)
    func quickInteger<I: FixedWidthInteger>(_ type: I.Type, _ value: PropertyListValue) -> I? {
        guard case .integer(let integer) = value else { return nil }
        return integer.isAboveInt64Max ? I(exactly: integer.bitPattern) : I(exactly: Int64(bitPattern: integer.bitPattern))
    }

    /// An inline real.
    @inline(__always)
    func quickDouble(_ value: PropertyListValue) -> Double? {
        guard case .real(let real) = value else { return nil }
        return real.value
    }

    /// An inline boolean.
    @inline(__always)
    func quickBool(_ value: PropertyListValue) -> Bool? {
        guard case .bool(let bool) = value else { return nil }
        return bool
    }

    func decodeString(_ value: PropertyListValue, key: (any CodingKey)? = nil) throws -> String {
        if case .uid(let uid) = value, let string = plainString(uid) {
            try countBytes(string.utf8.count, key: key)
            return string  // the common case
        }
        if case .uid(0) = value { throw notFound(String.self, key: key) }
        let leaf = try resolveLeaf(value, key: key)
        guard case .string(let string) = leaf else {
            throw leafMismatch(String.self, expected: "a string", value, key: key)
        }
        try countBytes(string.utf8Count, key: key)
        return string.value
    }

    /// Counts values toward ``DecodingLimits/maximumExpandedNodeCount`` and
    /// ``DecodingLimits/maximumExpansionFactor``.
    func countExpansion(_ count: Int) throws {
        let (sum, overflow) = expanded.addingReportingOverflow(count)
        guard !overflow, sum <= expandedLimit else { throw expansionError() }
        expanded = sum
    }

    @inline(never)
    private func expansionError() -> DecodingError {
        guard expandedLimit < limits.maximumExpandedNodeCount else {
            return corrupted("more than \(limits.maximumExpandedNodeCount) values once shared references are expanded")
        }
        let size = document.inputByteCount >= objectCount ? "byte of the archive's \(document.inputByteCount)" : "object of the archive's \(objectCount)"
        return corrupted(
            "more than \(expandedLimit) values once shared references are expanded: \(limits.maximumExpansionFactor) per \(size) "
                + "(DecodingLimits.maximumExpansionFactor)")
    }

    /// Counts string and data bytes toward ``DecodingLimits/maximumExpandedByteCount``: values
    /// share storage, but whatever walks the decoded result sees every use.
    func countBytes(_ count: Int, key: (any CodingKey)? = nil) throws {
        guard addBytes(count) else {
            throw corrupted(
                "more than \(limits.maximumExpandedByteCount) bytes of strings and data once shared references are expanded", key: key)
        }
    }

    /// Adds `count` to the expanded bytes and returns true, or returns false (counting nothing)
    /// when that would pass ``DecodingLimits/maximumExpandedByteCount``.
    @inline(__always)
    private func addBytes(_ count: Int) -> Bool {
        let (sum, overflow) = expandedBytes.addingReportingOverflow(count)
        guard !overflow, sum <= limits.maximumExpandedByteCount else { return false }
        expandedBytes = sum
        return true
    }

    func decodeInteger<I: FixedWidthInteger>(_ type: I.Type, _ value: PropertyListValue, key: (any CodingKey)? = nil) throws -> I {
        if case .uid(0) = value { throw notFound(type, key: key) }
        let leaf = try resolveLeaf(value, key: key)
        switch leaf {
        case .integer(let integer):
            let result: I? = integer.isAboveInt64Max ? I(exactly: integer.bitPattern) : I(exactly: Int64(bitPattern: integer.bitPattern))
            guard let result else { throw corrupted("number \(integer) does not fit in \(type)", key: key) }
            return result
        case .real(let real):
            guard let result = I(exactly: real.value) else { throw corrupted("number \(real.value) does not fit in \(type)", key: key) }
            return result
        case .bool(let bool):
            // Foundation on Linux archives NSNumbers that compare equal as one object, so a 0
            // after a `false` (a 1 after a `true`) is stored as that boolean; NSNumber's
            // `intValue` reads it as 0 or 1, as ``KeyedUnarchiver/decodeInt64(forKey:)`` does.
            return bool ? 1 : 0
        default:
            throw leafMismatch(type, expected: "a number", value, key: key)
        }
    }

    func decodeDouble(_ value: PropertyListValue, key: (any CodingKey)? = nil) throws -> Double {
        if case .real(let real) = value { return real.value }
        if case .uid(0) = value { throw notFound(Double.self, key: key) }
        let leaf = try resolveLeaf(value, key: key)
        switch leaf {
        case .real(let real): return real.value
        case .integer(let integer):
            let double = integer.isAboveInt64Max ? Double(exactly: integer.bitPattern) : Double(exactly: Int64(bitPattern: integer.bitPattern))
            guard let double else { throw corrupted("number \(integer) does not fit in Double", key: key) }
            return double
        case .bool(let bool): return bool ? 1 : 0  // a merged NSNumber, as in `decodeInteger`
        default:
            throw leafMismatch(Double.self, expected: "a number", value, key: key)
        }
    }

    func decodeFloat(_ value: PropertyListValue, key: (any CodingKey)? = nil) throws -> Float {
        let double = try decodeDouble(value, key: key)
        let float = Float(double)
        if double.isFinite && !float.isFinite { throw corrupted("number \(double) does not fit in Float", key: key) }
        return float
    }

    func decodeBool(_ value: PropertyListValue, key: (any CodingKey)? = nil) throws -> Bool {
        if case .bool(let bool) = value { return bool }
        if case .uid(0) = value { throw notFound(Bool.self, key: key) }
        let leaf = try resolveLeaf(value, key: key)
        switch leaf {
        case .bool(let bool): return bool
        case .integer(let integer) where integer.bitPattern <= 1 && !integer.isAboveInt64Max:
            return integer.bitPattern == 1  // encodeInt:forKey: of a BOOL in old Objective-C code
        case .real(let real) where real.value == 0 || real.value == 1:
            return real.value == 1  // a `true` Foundation on Linux merged into an earlier 1.0 (see `decodeInteger`)
        default:
            throw leafMismatch(Bool.self, expected: "a boolean", value, key: key)
        }
    }

    func decodeData(_ value: PropertyListValue) throws -> Data {
        if case .uid(0) = value { throw notFound(Data.self) }
        let leaf = try resolveLeaf(value)
        guard case .data(let data) = leaf else { throw leafMismatch(Data.self, expected: "data", value) }
        try countBytes(data.count)
        return data
    }

    /// The fields of the object a value refers to, with its path for errors, when it is of
    /// `kind`; `nil` when the value is not a reference to an object dictionary.
    private func objectFields(
        _ value: PropertyListValue, expecting type: Any.Type, kind: ClassInfo.Kind
    ) throws -> (fields: PropertyListDictionary, path: String)? {
        guard case .uid(let uid) = value else { return nil }
        guard uid != 0 else { throw notFound(type) }
        guard case .dictionary(let fields) = try object(uid) else { return nil }
        let (info, _) = try classOf(fields, uid: uid)
        guard info.kind == kind else {
            if info.kind == .null { throw notFound(type) }
            throw mismatch(type, "expected \(type), found \(info.name)")
        }
        return (fields, "$objects[\(uid)] (\(info.name))")
    }

    func decodeDate(_ value: PropertyListValue) throws -> Date {
        if case .date(let date) = try resolveLeaf(value) { return date }  // GNUstep stores plain dates
        guard let object = try objectFields(value, expecting: Date.self, kind: .date) else {
            throw leafMismatch(Date.self, expected: "a date", value)
        }
        return try checked { () throws(KeyedArchiveError) in try ArchiveDocument.dateValue(ofObject: object.fields, path: object.path) }
    }

    /// NSURL: `NS.relative` against `NS.base` (the shared reader; base chains are bounded).
    func decodeURL(_ value: PropertyListValue) throws -> URL {
        if case .string(let string) = try resolveLeaf(value), let url = URL(string: string.value) { return url }
        guard let object = try objectFields(value, expecting: URL.self, kind: .url) else {
            throw leafMismatch(URL.self, expected: "a URL", value)
        }
        let url = try checked { () throws(KeyedArchiveError) in try document.urlValue(ofObject: object.fields, path: object.path) }
        try countBytes(url.absoluteString.utf8.count)
        return url
    }

    /// A `Decimal` from an NSDecimalNumber object (Apple's or corelibs' fields) or a number (as
    /// NSNumber's `decimalValue`); nil for anything else, which `Decimal(from:)` then reads (the
    /// keyed form this bridge wrote before session 66, an object of class "Decimal").
    @inline(never)
    func decodeDecimalNumber(_ value: PropertyListValue) throws -> Decimal? {
        if case .uid(0) = value { throw notFound(Decimal.self) }
        if case .uid(let uid) = value, case .dictionary(let fields) = try object(uid) {
            let (info, _) = try classOf(fields, uid: uid)
            if info.kind == .null { throw notFound(Decimal.self) }
            guard DecimalNumberFields.describes(fields, className: info.name) else { return nil }
            return try checked { () throws(KeyedArchiveError) in
                try document.decimalValue(ofObject: fields, path: "$objects[\(uid)] (\(info.name))")
            }
        }
        let leaf = try resolveLeaf(value)
        if let decimal = DecimalNumberFields.decimal(ofNumber: leaf) { return decimal }
        if case .real(let real) = leaf { throw corrupted("\(real.value) is outside the range of Decimal") }
        throw leafMismatch(Decimal.self, expected: "a decimal number", leaf)
    }

    func decodeUUID(_ value: PropertyListValue) throws -> UUID {
        if case .string(let string) = try resolveLeaf(value) {
            guard let uuid = UUID(uuidString: string.value) else { throw corrupted("\"\(string.value)\" is not a UUID") }
            return uuid
        }
        guard let object = try objectFields(value, expecting: UUID.self, kind: .uuid) else {
            throw leafMismatch(UUID.self, expected: "a UUID", value)
        }
        return try checked { () throws(KeyedArchiveError) in try ArchiveDocument.uuidValue(ofObject: object.fields, path: object.path) }
    }
}

extension KeyedArchiveDecoder {
    static func describeAccepted(_ type: Any.Type, overrides: [ObjectIdentifier: String], mapped: [String: [ObjectIdentifier]]) -> String {
        let archiveName = ClassNames.archiveName(of: type, overrides: overrides)
        var names = [archiveName, ClassNames.qualifiedName(of: type), "<Module>." + archiveName]
        names += mapped.filter { $0.value.contains(ObjectIdentifier(type)) }.keys.sorted()
        return names.map { "\"\($0)\"" }.joined(separator: ", ")
    }
}
