internal import CKeyedArchiveShims

/// Reads object graphs from NSKeyedArchiver archives (the role of `NSKeyedUnarchiver`), with
/// secure decoding always on.
///
/// Every decode names the classes it accepts (``KeyedArchiveClass``); any other class in the
/// graph stops decoding with ``KeyedArchiveError/Code/classNotAllowed``, naming the class and
/// where it was met. A `$classname` never selects code the caller did not allow: user classes
/// are found only among the allowed types and the names registered with
/// ``setClass(_:forClassName:)``; unknown names fall back along `$classes` (a private NSArray
/// subclass reads as an array) and, if the caller allows ``KeyedArchiveClass/archivedObject``,
/// decode as inert ``ArchivedObject`` values. (One part of a graph is checked but not decoded:
/// a value an NSDictionary drops because its key repeats. Its class must be allowed; its fields
/// are not read.)
///
/// Objects are decoded once per UID (and allowed-class set), so shared objects come back as
/// one instance and an object referenced a million times costs one decode. Cycles are built
/// with the two-phase protocol described on ``KeyedArchiving``. Nothing here traps on bad
/// input, nesting included (recursion stops at `maximumDepth`, or earlier when the thread's
/// stack runs short: see Security.md, "Recursion"): malformed archives give
/// ``KeyedArchiveError``s with a path such as
/// `$objects[12] (NSDictionary) NS.keys[3]: expected UID`.
///
/// The unarchiver is also the coder passed to ``KeyedArchiving/init(coder:)``: its keyed
/// `decode` calls read the object being decoded, or `$top` outside any object.
public final class KeyedUnarchiver {
    /// The parsed archive (for layers built on this one).
    package let document: ArchiveDocument
    @exclusivity(unchecked) private var classMap: [String: any KeyedArchiving.Type] = [:]

    // Decoding state.
    /// The object being decoded (or `$top`); the ones it interrupted are in `savedContexts`.
    /// Kept out of the stack so that key lookups read it without copying an array element.
    @exclusivity(unchecked) private var current: Context
    @exclusivity(unchecked) private var savedContexts: [Context] = []
    /// Per UID (index = UID; sized on first use): the class instance made for it, if any.
    /// An array, not a dictionary: every reference to an object looks here.
    @exclusivity(unchecked) private var slots: [Slot] = []
    /// Per UID: bit 0 = `values` may hold entries for it, bit 1 = a value is being built from it.
    @exclusivity(unchecked) private var valueFlags: [UInt8] = []
    @exclusivity(unchecked) private var values: [CacheKey: Any] = [:]
    @exclusivity(unchecked) private var pending: [PendingPhase2] = []
    /// Per job in `pending`: its object's UID and, when they are read in place, where its
    /// fields lie in the file, for ``prefetchReferences(ofJob:instances:)``. A list of plain
    /// values: reading a job itself copies its references.
    @exclusivity(unchecked) private var pendingFields: [FieldsAhead] = []
    /// What the current top-level decode added to `instances` and `values`, so that a failed
    /// decode can take it back (see ``rollBack()``).
    @exclusivity(unchecked) private var addedInstances: [UInt32] = []
    @exclusivity(unchecked) private var addedValues: [CacheKey] = []
    @exclusivity(unchecked) private var pendingIndex = 0
    @exclusivity(unchecked) private var depth = 0
    @exclusivity(unchecked) private var allowedSets: [Set<KeyedArchiveClass>: Allowed] = [:]
    @exclusivity(unchecked) private var allowedLists: [[KeyedArchiveClass]: Allowed] = [:]
    /// Every allowed set made, by id (``Allowed/id`` counts them from 0).
    @exclusivity(unchecked) private var allowedByID: [Allowed] = []
    /// The id of the allowed set of a Swift type, for ``decodeObject(of:forKey:)``.
    @exclusivity(unchecked) private var allowedIDByType = AllowedIDsByType()
    /// The id of the allowed set of an array of a Swift type (NSArray and the type's class), for
    /// ``decodeArrayOfObjects(ofClass:forKey:)``.
    @exclusivity(unchecked) private var allowedArrayIDByType = AllowedIDsByType()
    /// Class descriptions met so far, by the UID of the description, with how they resolved
    /// under each allowed set.
    @exclusivity(unchecked) private var classInfos: [UInt32: ClassInfo] = [:]
    @exclusivity(unchecked) private var lastClassInfo: ClassInfo?
    /// The user class and allowed-set id that last passed ``passesCheck(_:allowed:uid:)``.
    @exclusivity(unchecked) private var lastPassedCheck: (ObjectIdentifier, Int)?
    @exclusivity(unchecked) private var path: [PathSegment] = []

    private struct Context {
        var uid: UInt32
        var className: String?
        /// A `let`: ``inPlace`` is worked out from it once and points at what it holds.
        let fields: ArchiveFields
        var unkeyedIndex = 0
        /// The fields read in place, unretained (``fields`` holds them): a key lookup through
        /// this costs no retain and release of them, as one through ``fields`` does.
        let inPlace: Unmanaged<InPlaceFields>?

        init(uid: UInt32, className: String?, fields: ArchiveFields) {
            self.uid = uid
            self.className = className
            self.fields = fields
            if case .inPlace(let inPlace) = fields { self.inPlace = Unmanaged.passUnretained(inPlace) } else { inPlace = nil }
        }
    }

    /// A class description of the archive and its resolutions (few: one per allowed set).
    private final class ClassInfo {
        let uid: UInt32
        let description: ArchivedClassDescription
        @exclusivity(unchecked) var resolutions: [(allowed: Int, resolved: Resolved)] = []

        init(uid: UInt32, description: ArchivedClassDescription) {
            self.uid = uid
            self.description = description
        }

        func resolution(for allowed: Int) -> Resolved? {
            for entry in resolutions where entry.allowed == allowed { return entry.resolved }
            return nil
        }
    }

    private enum Slot {
        case empty
        case initializing(ClassInfo)
        /// A made instance, how its class resolved, and the id of the last allowed set it was
        /// checked against (the check is a pure function of the two, so it is not repeated).
        case ready(AnyObject, Resolved, checked: Int)
    }

    private enum PendingPhase2 {
        case user(UInt32, any KeyedArchiving, ArchiveFields, String)
        case generic(UInt32, ArchivedObject, ArchiveFields, Allowed)
        /// A job already taken out of the list (``drainPhase2()`` moves each out, so that its
        /// references are neither copied nor released twice).
        case taken
    }

    private struct CacheKey: Hashable {
        var uid: UInt32
        var allowed: Int
    }

    private enum PathSegment {
        case top(String)
        case object(UInt32, String?)
        case key(String)
        case element(String, Int)
        /// An element of a reference list, named as ``ArchiveReferenceList/elementName(_:)``
        /// names it; kept apart so that the name is only built when an error needs it.
        case listElement(String, numbered: Bool, Int)
    }

    /// An unarchiver over archive bytes (binary or XML). Throws for bytes that are not a
    /// property list or not a keyed archive (see Docs/KeyedArchiveFormat.md for what is accepted).
    ///
    /// The unarchiver outlives this call, so it keeps its own copy of a binary archive's bytes
    /// (as much memory again as the archive, for as long as the unarchiver lives). The static
    /// ``unarchivedObject(ofClass:from:limits:)`` and ``unarchivedObject(ofClasses:from:limits:)``
    /// read a binary archive from the caller's bytes in place instead; map class names for
    /// them with the static ``setClass(_:forClassName:)``.
    public convenience init(data: Data, limits: DecodingLimits = .default) throws {
        // Read by index: each entry is read from the file when it is decoded, and an object's
        // fields in place (building and freeing the tree of the whole archive was about 30% of
        // a W2 unarchive).
        try self.init(document: ArchiveDocument(data: data, limits: limits, byIndex: true))
    }

    /// An unarchiver over an already decoded property list.
    public convenience init(propertyList: PropertyListValue, limits: DecodingLimits = .default) throws {
        try self.init(document: ArchiveDocument(propertyList: propertyList, limits: limits))
    }

    /// An unarchiver over a parsed document.
    package init(document: ArchiveDocument) {
        self.document = document
        self.current = Context(uid: 0, className: nil, fields: .whole(document.top))
    }

    /// The `$archiver` name of the archive.
    public var archiverName: String { document.archiverName }
    /// The `$top` keys (unescaped), e.g. `["root"]`.
    public var topLevelKeys: [String] { document.topKeys }
    /// The limits in force.
    public var limits: DecodingLimits { document.limits }

    // MARK: Class names

    /// Decodes objects whose class name (or fallback) is `name` as `type` with this unarchiver
    /// (`nil` removes the mapping). The type must still be allowed by each decode call.
    public func setClass(_ type: (any KeyedArchiving.Type)?, forClassName name: String) {
        classMap[name] = type
        for info in classInfos.values { info.resolutions.removeAll() }
    }

    /// The type mapped to a class name on this unarchiver, if any.
    public func `class`(forClassName name: String) -> (any KeyedArchiving.Type)? { classMap[name] }

    /// Maps a class name to a type for every unarchiver (`nil` removes it).
    public static func setClass(_ type: (any KeyedArchiving.Type)?, forClassName name: String) {
        ClassRegistry.shared.setClass(type, forClassName: name)
    }

    /// The process-wide type mapped to a class name, if any.
    public static func `class`(forClassName name: String) -> (any KeyedArchiving.Type)? {
        ClassRegistry.shared.type(forClassName: name)
    }

    // MARK: Top-level entry points

    /// Decodes the root object of an archive, allowing only `classes`.
    public static func unarchivedObject(
        ofClasses classes: [KeyedArchiveClass], from data: Data, limits: DecodingLimits = .default
    ) throws -> Any? {
        try withUnarchiver(data, limits) { try $0.decodeTopLevelObject(of: classes) }
    }

    /// Decodes the root object as `T` (a ``KeyedArchiving`` class or a value type with a
    /// built-in class, e.g. `String`, `Date`, `URL`), allowing only that class.
    public static func unarchivedObject<T>(ofClass type: T.Type, from data: Data, limits: DecodingLimits = .default) throws -> T? {
        try withUnarchiver(data, limits) { try $0.decodeTopLevelObject(of: type) }
    }

    /// Runs `body` with an unarchiver that reads a binary archive in place, from the `Data`'s
    /// own bytes, until `body` returns (an unarchiver kept beyond that throws on every read).
    private static func withUnarchiver<T>(_ data: Data, _ limits: DecodingLimits, _ body: (KeyedUnarchiver) throws -> T) throws -> T {
        try ArchiveDocument.withBinaryArchive(
            data, limits: limits, notAnArchive: { $0 },
            body: { document in try body(KeyedUnarchiver(document: document)) },
            orElse: { try body(KeyedUnarchiver(data: data, limits: limits)) })
    }

    /// Decodes a `$top` object (the root by default), allowing only `classes`. Throws
    /// ``KeyedArchiveError/Code/missingTopLevelKey`` when `$top` has no such key.
    public func decodeTopLevelObject(of classes: [KeyedArchiveClass], forKey key: String = "root") throws -> Any? {
        if savedContexts.isEmpty && document.topValue(forKey: key) == nil {
            throw KeyedArchiveError(
                .missingTopLevelKey, "$top has no key \"\(key)\" (keys: \(document.topKeys.joined(separator: ", ")))",
                path: "$top")
        }
        return try decodeObject(of: classes, forKey: key)
    }

    /// Decodes a `$top` object (the root by default) as `T`.
    public func decodeTopLevelObject<T>(of type: T.Type, forKey key: String = "root") throws -> T? {
        let value = try decodeTopLevelObject(of: [try Self.archiveClass(for: type, key: key)], forKey: key)
        guard let value else { return nil }
        return try convertingDecoded { try cast(value, to: type, key: key) }
    }

    // MARK: Keyed decoding of objects

    /// Decodes the object under a key of the current object (or `$top`), allowing only
    /// `classes`. Missing key or UID 0: `nil`.
    public func decodeObject(of classes: [KeyedArchiveClass], forKey key: String) throws -> Any? {
        guard let value = try storedValue(forKey: key) else { return nil }
        return try decodeStored(value, allowed: allowed(classes), key: key)
    }

    /// Shared by ``decodeStoredValue(_:classes:key:)``.
    fileprivate func decodeObject(of classes: [KeyedArchiveClass], stored value: PropertyListValue, key: String) throws -> Any? {
        try decodeStored(value, allowed: allowed(classes), key: key)
    }

    /// Decodes the object under a key as `T` (a ``KeyedArchiving`` class or a value type with a
    /// built-in class), allowing only that class. Missing key or UID 0: `nil`.
    public func decodeObject<T>(of type: T.Type, forKey key: String) throws -> T? {
        let allowedID = try allowedID(for: type, key: key)
        guard let stored = try storedValue(forKey: key) else { return nil }
        switch valueAtHand(stored, allowedID: allowedID, of: type) {
        // `T` is the instance's own class: a reference to it is a `T` as it is. Cast from the
        // unretained reference, the copy made as `T` is the one retain.
        case .instance(let object): return unsafeBitCast(object, to: T.self)
        case .string(let text): return unsafeBitCast(text, to: T.self)
        case nil: break
        }
        let allowed = allowedByID[allowedID]
        let value = try decodeStored(stored, allowed: allowed, key: key)
        guard let value else { return nil }
        return try convertingDecoded { try cast(value, to: type, key: key) }
    }

    /// What ``decodeStored(_:allowed:key:)`` would return for a reference inside an object
    /// being decoded, when it needs neither its bookkeeping nor a cast: an instance already
    /// made and checked against `allowed` whose class is exactly `T` (a W2 person's friends,
    /// back references), or a short ASCII string read as `String` (names, titles). Anything
    /// else, and any top-level reference (its decode has more to do), is `nil`: the full path
    /// decodes it.
    ///
    /// The caller makes the `T` (see ``AtHand``): a `T?` in the frame of a generic function
    /// that is not specialized (these are called from the user's module) makes the runtime
    /// look up `Optional<T>`'s metadata at every call, about 380 instructions (13.7% of a W2
    /// NSCoding-style unarchive, session 33).
    @inline(__always)
    private func valueAtHand<T>(_ stored: PropertyListValue, allowedID: Int, of type: T.Type) -> AtHand? {
        guard !savedContexts.isEmpty, case .uid(let uid) = stored, uid != 0 else { return nil }
        guard Int(uid) < slots.count else { return nil }
        // Read in place, unretained: `slots` keeps the instance alive, and the one retain is
        // that of the returned reference.
        let ready: (object: Unmanaged<AnyObject>, resolved: Resolved, checked: Int)? = slots.withUnsafeBufferPointer { slots in
            guard case .ready(let object, let resolved, let checked) = slots[Int(uid)] else { return nil }
            return (Unmanaged.passUnretained(object), resolved, checked)
        }
        if let ready {
            guard ObjectIdentifier(Swift.type(of: ready.object.takeUnretainedValue())) == ObjectIdentifier(type) else { return nil }
            if ready.checked != allowedID {
                // Made under another allowed set (a W2 person as an element of the root array,
                // then as a friend): checked once for this set, as `decodeUID` would. A failed
                // check goes the full way, which reports it.
                guard passesCheck(ready.resolved, allowed: allowedByID[allowedID], uid: uid) else { return nil }
                slots[Int(uid)] = .ready(ready.object.takeUnretainedValue(), ready.resolved, checked: allowedID)
            }
            return .instance(ready.object)
        }
        // A string entry is a leaf: allowed for `String`, and never kept in `slots`.
        if type == String.self, let text = document.shortASCIIString(uid) { return .string(text) }
        return nil
    }

    /// What ``valueAtHand(_:allowedID:of:)`` found, for the caller to make the `T` from.
    private enum AtHand {
        /// An instance of exactly `T`, unretained (`slots` keeps it alive).
        case instance(Unmanaged<AnyObject>)
        /// A short ASCII string, asked for as `String`.
        case string(String)
    }

    /// What ``decodeArrayOfObjects(ofClass:forKey:)`` returns for an array inside an object
    /// being decoded (or, with `isTopLevel`, under a `$top` key: see
    /// ``topLevelArrayInPlace(_:allowedID:of:key:)``), read in place from the array's
    /// `NS.objects` straight into a `[T]`: each
    /// element taken as it is when it is at hand (``valueAtHand(_:allowedID:of:)``: an instance
    /// of exactly `T` already made, as a W2 person's friends are in phase 2, or a short ASCII
    /// string), decoded the full way otherwise (an object not made yet, in an `init(coder:)`),
    /// with the path, depth and cycle mark the full path gives it. The full path makes an
    /// `[Any]` of the elements, caches it, casts it and then each element: four allocations and
    /// a dynamic cast per element more (a W2 unarchive with its friends in arrays took 1.85
    /// times as long). `nil` for anything else, for an element that is not a `T` and for
    /// anything irregular, checked before an element is decoded: the full path then decodes the
    /// array (its elements already made are found made) and reports what it finds. An error
    /// thrown while an element is decoded is the one the full path would throw there. The
    /// array is not cached: a second reference reads it again, as the full path casts its
    /// cached elements again at every reference.
    private func arrayInPlace<T>(_ stored: PropertyListValue, allowedID: Int, of type: T.Type, key: String, isTopLevel: Bool = false) throws -> [T]? {
        guard var collection = collectionInPlace(stored, allowedID: allowedID, kind: .array, key: key, isTopLevel: isTopLevel),
            let list = members(of: &collection.fields, FoundationClassNames.objectsKey)
        else { return nil }
        defer { endDecoding(collection) }
        let reader = collection.fields.reader
        prefetchMembers(reader, list)
        var elements: [T] = []
        elements.reserveCapacity(list.count)
        for index in 0..<list.count {
            guard let reference = memberReference(reader, list, index),
                try appendMember(reference, of: type, allowedID: allowedID, in: &collection, list: FoundationClassNames.objectsKey, index: index, to: &elements)
            else { return nil }
        }
        return elements
    }

    /// What ``decodeDictionary(withKeyClass:objectClass:forKey:)`` returns for a dictionary
    /// inside an object being decoded, read in place from its `NS.keys` and `NS.objects` straight
    /// into a `[K: V]`, as ``arrayInPlace(_:allowedID:of:key:)`` reads an array: the keys first,
    /// then the values; a repeated key keeps its last value, and the values it drops are checked
    /// but not decoded, as on the full path. `nil` where the array reader returns `nil`, and for
    /// a key not equal to itself (a NaN): the full path then decodes the dictionary. (An ad-hoc
    /// graph of 100,000 people with three friends each in a `[String: Person]`: 0.70 -> 0.37 s.)
    private func dictionaryInPlace<K: Hashable, V>(
        _ stored: PropertyListValue, allowedID: Int, keyType: K.Type, objectType: V.Type, key: String
    ) throws -> [K: V]? {
        guard var collection = collectionInPlace(stored, allowedID: allowedID, kind: .dictionary, key: key),
            let keyList = members(of: &collection.fields, FoundationClassNames.keysKey),
            let objectList = members(of: &collection.fields, FoundationClassNames.objectsKey),
            keyList.count == objectList.count
        else { return nil }
        defer { endDecoding(collection) }
        let reader = collection.fields.reader
        var keys: [K] = []
        keys.reserveCapacity(keyList.count)
        var lastIndexOfKey: [K: Int] = [:]
        lastIndexOfKey.reserveCapacity(keyList.count)
        var isKept = [Bool](repeating: true, count: keyList.count)
        for index in 0..<keyList.count {
            guard let reference = memberReference(reader, keyList, index),
                try appendMember(reference, of: keyType, allowedID: allowedID, in: &collection, list: FoundationClassNames.keysKey, index: index, to: &keys),
                keys[index] == keys[index]
            else { return nil }
            if let earlier = lastIndexOfKey.updateValue(index, forKey: keys[index]) { isKept[earlier] = false }
        }
        var result: [K: V] = [:]
        result.reserveCapacity(lastIndexOfKey.count)
        // Holds each value between its decode and its entry (see appendMember).
        var decodedValue: [V] = []
        decodedValue.reserveCapacity(1)
        for index in 0..<objectList.count {
            guard let reference = memberReference(reader, objectList, index) else { return nil }
            if isKept[index] {
                guard try appendMember(reference, of: objectType, allowedID: allowedID, in: &collection, list: FoundationClassNames.objectsKey, index: index, to: &decodedValue)
                else { return nil }
                result[keys[index]] = decodedValue.removeLast()
            } else {
                beginDecoding(&collection)
                path.append(.listElement(FoundationClassNames.objectsKey, numbered: false, index))
                defer { path.removeLast() }
                try checkClass(ofObjectAt: reference, allowed: allowedByID[allowedID])
            }
        }
        return result
    }

    /// ``arrayInPlace(_:allowedID:of:key:isTopLevel:)`` for an array under a `$top` key (W2's
    /// root array: the full path's `[Any]` of 100,000 elements, its cache entry and the casts of
    /// every element), run as every top-level decode is (``decoding(_:isTopLevel:_:)``): all of
    /// it taken back when it fails, and before the full path takes over when it returns `nil`.
    private func topLevelArrayInPlace<T>(_ stored: PropertyListValue, allowedID: Int, of type: T.Type, key: String) throws -> [T]? {
        guard document.isReadByIndex else { return nil }
        sizeSlots()
        return try decoding(.top(key), isTopLevel: true) {
            try arrayInPlace(stored, allowedID: allowedID, of: type, key: key, isTopLevel: true)
        }
    }

    /// A Foundation collection inside an object (or under a `$top` key), as the in-place readers
    /// above read it.
    private struct CollectionInPlace {
        let uid: UInt32
        /// Its class name, for the path.
        let name: String
        /// Under which key of the current object it was found; `nil` for a `$top` key, which the
        /// top-level wrapper puts in the path.
        let key: String?
        var fields: InPlaceLookup
        /// Whether the full path's state for decoding its members is set up
        /// (``beginDecoding(_:)``).
        var isDecoding = false
    }

    /// The collection `stored` refers to, when it is an object read in place, inside an object
    /// being decoded (or under a `$top` key when `isTopLevel`), not decoded or being decoded
    /// already, below the depth limit, and of built-in class `kind` under the allowed set; `nil`
    /// otherwise (the full path decides).
    private func collectionInPlace(
        _ stored: PropertyListValue, allowedID: Int, kind: KeyedArchiveClass.Kind, key: String, isTopLevel: Bool = false
    ) -> CollectionInPlace? {
        guard savedContexts.isEmpty == isTopLevel, case .uid(let uid) = stored, uid != 0, Int(uid) < slots.count,
            case .empty = slots[Int(uid)], valueFlags[Int(uid)] == 0, depth < document.limits.maximumDepth,
            let (lookup, classUID) = try? document.objectInPlace(uid, path: ""),
            let info = try? classInfo(classUID, objectUID: uid),
            case .builtin(let resolved)? = try? resolution(of: info, allowed: allowedByID[allowedID], uid: uid), resolved == kind
        else { return nil }
        return CollectionInPlace(uid: uid, name: info.description.name, key: isTopLevel ? nil : key, fields: lookup)
    }

    /// The list of member references stored under `listKey` in a collection's `fields` (not the
    /// numbered form), when every member is a UID of an object (not nil), as the full path checks
    /// them all before it decodes one; `nil` otherwise.
    private func members(of fields: inout InPlaceLookup, _ listKey: String) -> BinaryPropertyListObjectReader.ContainerSpan? {
        guard let list = memberList(of: &fields, listKey) else { return nil }
        let reader = fields.reader
        for member in 0..<list.count where memberReference(reader, list, member) == nil { return nil }
        return list
    }

    /// The array stored under `listKey` in a collection's `fields`, its members not checked.
    private func memberList(of fields: inout InPlaceLookup, _ listKey: String) -> BinaryPropertyListObjectReader.ContainerSpan? {
        guard let index = (try? fields.index(ofStoredKey: listKey)) ?? nil else { return nil }
        return try? fields.reader.arraySpan(ofObject: fields.valueObject(at: index))
    }

    /// The references under `listKey` (`NS.objects`, `NS.keys`) of a Foundation collection whose
    /// fields are in place, read from the file: what ``ArchiveDocument/referenceList(in:key:legacyPrefix:path:)``
    /// gives for the object's dictionary when they are all UIDs of objects, without reading that
    /// whole dictionary into a value tree first (42% of the instructions of an untyped unarchive
    /// of nested arrays, session 33). `nil` for fields not in place and for anything irregular
    /// (no such key, a value that is not an array of UIDs, a nil member): the dictionary's path
    /// then reads and reports it.
    private func referenceListInPlace(_ fields: ArchiveFields, _ listKey: String) -> ArchiveReferenceList? {
        guard case .inPlace(let inPlace) = fields else { return nil }
        var lookup = inPlace.lookup
        guard let list = memberList(of: &lookup, listKey) else { return nil }
        var items: [PropertyListValue] = []
        items.reserveCapacity(list.count)
        for member in 0..<list.count {
            guard let reference = memberReference(lookup.reader, list, member) else { return nil }
            items.append(.uid(reference))
        }
        return ArchiveReferenceList(name: listKey, isNumbered: false, items: items)
    }

    /// The UID of member `index` of `list`, when it is one of an object (not nil).
    @inline(__always)
    private func memberReference(_ reader: BinaryPropertyListObjectReader, _ list: BinaryPropertyListObjectReader.ContainerSpan, _ index: Int) -> UInt32? {
        guard case .uid(let reference)? = try? reader.value(ofObject: reader.element(index, of: list)),
            reference != 0, Int(reference) < slots.count
        else { return nil }
        return reference
    }

    /// Appends the member at `reference` (number `index` of the list `list` of `collection`) to
    /// `elements` as a `T`: at hand, or decoded the full way. `false`, with nothing appended,
    /// when it is not exactly a `T`. (It appends rather than returning a `T?`, which would make
    /// the runtime look up `Optional<T>` at every member: see ``valueAtHand(_:allowedID:of:)``.)
    private func appendMember<T>(
        _ reference: UInt32, of type: T.Type, allowedID: Int, in collection: inout CollectionInPlace, list: String, index: Int,
        to elements: inout [T]
    ) throws -> Bool {
        switch valueAtHand(.uid(reference), allowedID: allowedID, of: type) {
        case .instance(let object): elements.append(unsafeBitCast(object, to: T.self)); return true
        case .string(let text): elements.append(unsafeBitCast(text, to: T.self)); return true
        case nil: break
        }
        beginDecoding(&collection)
        path.append(.listElement(list, numbered: false, index))
        defer { path.removeLast() }
        let decoded = try decodeUID(reference, allowed: allowedByID[allowedID])
        // The unconditional cast below cannot trap whatever the archive holds: the value's
        // dynamic type is compared equal to `T` first (as in ``cast(_:to:key:)``).
        guard Swift.type(of: decoded) == type else { return false }
        elements.append(decoded as! T)
        return true
    }

    /// Sets up, once, the state in which the full path decodes a collection's members: the
    /// collection's key and object in the path, one level deeper, and its value-cycle mark.
    private func beginDecoding(_ collection: inout CollectionInPlace) {
        guard !collection.isDecoding else { return }
        collection.isDecoding = true
        depth += 1
        if let key = collection.key { path.append(.key(key)) }
        path.append(.object(collection.uid, collection.name))
        valueFlags[Int(collection.uid)] |= 2
    }

    /// Takes down what ``beginDecoding(_:)`` set up.
    private func endDecoding(_ collection: CollectionInPlace) {
        guard collection.isDecoding else { return }
        valueFlags[Int(collection.uid)] &= ~2
        path.removeLast(collection.key == nil ? 1 : 2)
        depth -= 1
    }

    /// The id of the allowed set of an array of `T` (NSArray and `T`'s class).
    private func arrayAllowedID<T>(for type: T.Type, key: String) throws -> Int {
        try allowedArrayIDByType.id(for: type) { allowed([.array, try Self.archiveClass(for: type, key: key)]).id }
    }

    /// Converts what a decode returned to the caller's type. When that fails at the top level,
    /// the decode is taken back like one that failed inside (``rollBack()``): otherwise the
    /// objects it made would stay cached, and ArchivedObjects among them that refer to each
    /// other, which the caller never received, could never be freed.
    private func convertingDecoded<R>(_ conversion: () throws -> R) throws -> R {
        do {
            return try conversion()
        } catch {
            if savedContexts.isEmpty { rollBack() }
            throw error
        }
    }

    /// Decodes the next unkeyed object (`$0`, `$1`, ...) of the current object.
    public func decodeObject(of classes: [KeyedArchiveClass]) throws -> Any? {
        let key = "$" + String(currentUnkeyedIndex)
        advanceUnkeyed()
        guard let value = try field(storedKey: key) else { return nil }
        return try decodeStored(value, classes: classes, segment: .key(key))
    }

    /// Decodes an array whose elements are all `T` (Apple's `decodeArrayOfObjects(ofClass:forKey:)`).
    public func decodeArrayOfObjects<T>(ofClass type: T.Type, forKey key: String) throws -> [T]? {
        let allowedID = try arrayAllowedID(for: type, key: key)
        guard let stored = try storedValue(forKey: key) else { return nil }
        if savedContexts.isEmpty {
            if let elements = try topLevelArrayInPlace(stored, allowedID: allowedID, of: type, key: key) { return elements }
        } else if let elements = try arrayInPlace(stored, allowedID: allowedID, of: type, key: key) {
            return elements
        }
        guard let value = try decodeStored(stored, allowed: allowedByID[allowedID], key: key) else { return nil }
        return try convertingDecoded {
            guard let array = value as? [Any] else {
                throw error(.typeMismatch, "expected an array of \(type), found \(Swift.type(of: value))", key: key)
            }
            return try array.map { try cast($0, to: type, key: key) }
        }
    }

    /// Decodes a dictionary with keys `K` and values `V` (Apple's
    /// `decodeDictionary(withKeyClass:objectClass:forKey:)`).
    public func decodeDictionary<K: Hashable, V>(withKeyClass keyType: K.Type, objectClass: V.Type, forKey key: String) throws -> [K: V]? {
        let classes = [.dictionary, try Self.archiveClass(for: keyType, key: key), try Self.archiveClass(for: objectClass, key: key)]
        let allowedSet = allowed(classes)
        guard let stored = try storedValue(forKey: key) else { return nil }
        if let result = try dictionaryInPlace(stored, allowedID: allowedSet.id, keyType: keyType, objectType: objectClass, key: key) {
            return result
        }
        guard let value = try decodeStored(stored, allowed: allowedSet, key: key) else { return nil }
        return try convertingDecoded {
            guard let dictionary = value as? [AnyHashable: Any] else {
                throw error(.typeMismatch, "expected a dictionary, found \(Swift.type(of: value))", key: key)
            }
            var result: [K: V] = [:]
            for (entryKey, entryValue) in dictionary {
                result[try cast(entryKey.base, to: keyType, key: key)] = try cast(entryValue, to: objectClass, key: key)
            }
            return result
        }
    }

    // MARK: Keyed decoding of primitives (stored inline)

    /// True when the current object (or `$top`) has a value under the key.
    public func containsValue(forKey key: String) -> Bool {
        // A field the file cannot give is absent here; decoding it reports why.
        ((try? storedValue(forKey: key)) ?? nil) != nil
    }

    /// The user keys of the current object (or `$top`), unescaped, without `$class`.
    public var allKeys: [String] {
        ((try? current.fields.dictionary())?.entries ?? []).compactMap { entry in
            guard let key = entry.key.stringValue, !ArchiveKeys.isReserved(key) else { return nil }
            return ArchiveKeys.unescape(key)
        }
    }

    /// A boolean; `false` when the key is missing. Integers read as `value != 0`.
    public func decodeBool(forKey key: String) throws -> Bool {
        guard let value = try primitive(forKey: key) else { return false }
        switch value {
        case .bool(let bool): return bool
        case .integer(let integer): return integer.bitPattern != 0
        default: throw error(.typeMismatch, "expected a boolean, found \(value.typeName)", key: key)
        }
    }

    /// An integer; 0 when the key is missing; an error when it does not fit `Int`.
    public func decodeInt(forKey key: String) throws -> Int {
        let value = try decodeInt64(forKey: key)
        guard let result = Int(exactly: value) else {
            throw error(.valueOutOfRange, "\(value) does not fit Int", key: key)
        }
        return result
    }

    /// A 32-bit integer; 0 when missing; an error when out of range (Apple raises NSRangeException).
    public func decodeInt32(forKey key: String) throws -> Int32 {
        let value = try decodeInt64(forKey: key)
        guard let result = Int32(exactly: value) else {
            throw error(.valueOutOfRange, "\(value) does not fit Int32", key: key)
        }
        return result
    }

    /// A 64-bit integer; 0 when missing. Booleans read as 0/1, integral reals are accepted.
    public func decodeInt64(forKey key: String) throws -> Int64 {
        guard let value = try primitive(forKey: key) else { return 0 }
        switch value {
        case .integer(let integer):
            guard let result = integer.int64Value else {
                throw error(.valueOutOfRange, "\(integer) does not fit Int64", key: key)
            }
            return result
        case .bool(let bool): return bool ? 1 : 0
        case .real(let real):
            guard let result = Int64(exactly: real.value) else {
                throw error(.valueOutOfRange, "\(real.value) is not an Int64", key: key)
            }
            return result
        default: throw error(.typeMismatch, "expected an integer, found \(value.typeName)", key: key)
        }
    }

    /// A double; 0 when missing. Integers are converted, booleans read as 0/1.
    public func decodeDouble(forKey key: String) throws -> Double {
        guard let value = try primitive(forKey: key) else { return 0 }
        switch value {
        case .real(let real): return real.value
        case .integer(let integer):
            if let signed = integer.int64Value { return Double(signed) }
            return Double(integer.bitPattern)
        case .bool(let bool): return bool ? 1 : 0  // as `decodeInt64` reads one, and NSNumber's `doubleValue`
        default: throw error(.typeMismatch, "expected a real, found \(value.typeName)", key: key)
        }
    }

    /// A float; 0 when missing; an error for a finite double beyond `Float`'s range.
    public func decodeFloat(forKey key: String) throws -> Float {
        let double = try decodeDouble(forKey: key)
        let float = Float(double)
        if double.isFinite && !float.isFinite {
            throw error(.valueOutOfRange, "\(double) does not fit Float", key: key)
        }
        return float
    }

    /// Raw bytes stored with `encodeBytes`; `nil` when missing.
    public func decodeBytes(forKey key: String) throws -> Data? {
        guard let value = try primitive(forKey: key) else { return nil }
        guard case .data(let data) = value else {
            throw error(.typeMismatch, "expected data, found \(value.typeName)", key: key)
        }
        return data
    }

    /// The NSDecimalNumber under a key as a `Decimal` (Apple's fields, or corelibs'; see
    /// ``DecimalNumberFields``), or a number as NSNumber's `decimalValue` gives it; `nil` when
    /// the key is missing or nil. Apple's `decodeObject(of: NSDecimalNumber.self, forKey:)`.
    public func decodeDecimal(forKey key: String) throws -> Decimal? {
        guard let value = try storedValue(forKey: key) else { return nil }
        if case .uid(let uid) = value {
            if uid == 0 { return nil }
            let path = self.pathString(adding: .key(key))
            if case .object(let fields, let description, _) = try document.entry(uid, path: path) {
                guard DecimalNumberFields.describes(fields, className: description.name) else {
                    throw error(.typeMismatch, "expected an NSDecimalNumber, found \(description.name)", key: key)
                }
                return try document.decimalValue(ofObject: fields, path: path + " > $objects[\(uid)] (\(description.name))")
            }
        }
        guard let number = try primitive(forKey: key) else { return nil }
        if let decimal = DecimalNumberFields.decimal(ofNumber: number) { return decimal }
        if case .real(let real) = number { throw error(.valueOutOfRange, "\(real.value) is outside the range of Decimal", key: key) }
        throw error(.typeMismatch, "expected a decimal number, found \(number.typeName)", key: key)
    }

    /// The inline value under a key; a UID is followed to a leaf in `$objects` (some writers
    /// store numbers by reference).
    private func primitive(forKey key: String) throws -> PropertyListValue? {
        guard let value = try storedValue(forKey: key) else { return nil }
        guard case .uid(let uid) = value else { return value }
        if uid == 0 { return nil }
        let target = try document.object(uid, path: self.pathString(adding: .key(key)))
        switch target {
        case .integer, .real, .bool, .data, .string: return target
        default:
            throw error(.typeMismatch, "expected an inline value, found a reference to an object", key: key)
        }
    }

    // MARK: Context

    /// The stored value of a user key in the current object (``ArchiveKeys/lookup(_:in:)``).
    private func storedValue(forKey key: String) throws(KeyedArchiveError) -> PropertyListValue? {
        do {
            if let inPlace = current.inPlace {
                return try inPlace._withUnsafeGuaranteedRef { fields in try ArchiveFields.lookup(key) { try fields.value(forStoredKey: $0) } }
            }
            return try current.fields.lookup(key)
        } catch {
            throw unreadable(error, key: key)
        }
    }

    /// The value stored under a key as stored (`$0`, ...) in the current object.
    private func field(storedKey key: String) throws(KeyedArchiveError) -> PropertyListValue? {
        do {
            return try current.fields.value(forStoredKey: key)
        } catch {
            throw unreadable(error, key: key)
        }
    }

    /// All the fields of an object, as a dictionary (read from the file for fields in place).
    private func dictionary(of fields: ArchiveFields) throws(KeyedArchiveError) -> PropertyListDictionary {
        do {
            return try fields.dictionary()
        } catch {
            throw unreadable(error, key: nil)
        }
    }

    /// A damaged field (fields read in place), as an error at the current path.
    private func unreadable(_ error: any Error, key: String?) -> KeyedArchiveError {
        if let error = error as? KeyedArchiveError { return self.error(error.code, error.description, key: key) }
        return KeyedArchiveError(
            .propertyList, "unreadable field: \(error)", path: pathString(adding: key.map { .key($0) }), underlying: error as? PropertyListError)
    }

    private var currentUnkeyedIndex: Int { current.unkeyedIndex }

    private func advanceUnkeyed() {
        current.unkeyedIndex += 1
    }

    /// Makes `context` the current object until the matching ``popContext()``.
    private func pushContext(_ context: consuming Context) {
        // Swapped, not copied: the contexts' fields move without a retain and a release.
        swap(&context, &current)
        savedContexts.append(context)
    }

    private func popContext() {
        if let saved = savedContexts.popLast() { current = saved }
    }

    // MARK: The decoding core

    /// The allowed classes, interned so that decoded values can be cached per set.
    /// A class, not a struct: it is passed down every decode, and one reference is cheaper to
    /// pass than a set, an array, a dictionary and a string.
    private final class Allowed {
        let id: Int
        let kinds: Set<KeyedArchiveClass.Kind>
        let userTypes: [KeyedArchiveClass]
        let names: [String: any KeyedArchiving.Type]
        let description: String

        /// The built-in kinds of ``kinds`` as bits (``bit(of:)``), so that the per-value test
        /// does not hash.
        private let builtinBits: UInt32

        init(id: Int, kinds: Set<KeyedArchiveClass.Kind>, userTypes: [KeyedArchiveClass], names: [String: any KeyedArchiving.Type], description: String) {
            self.id = id
            self.kinds = kinds
            var bits: UInt32 = 0
            for kind in kinds { if let bit = Self.bit(of: kind) { bits |= bit } }
            self.builtinBits = bits
            self.userTypes = userTypes
            self.names = names
            self.description = description
        }

        /// Whether `kind` is allowed (``kinds`` contains it).
        func allows(_ kind: KeyedArchiveClass.Kind) -> Bool {
            if let bit = Self.bit(of: kind) { return builtinBits & bit != 0 }
            return kinds.contains(kind)
        }

        private static func bit(of kind: KeyedArchiveClass.Kind) -> UInt32? {
            switch kind {
            case .string: 1 << 0
            case .number: 1 << 1
            case .data: 1 << 2
            case .date: 1 << 3
            case .array: 1 << 4
            case .dictionary: 1 << 5
            case .set: 1 << 6
            case .orderedSet: 1 << 7
            case .null: 1 << 8
            case .url: 1 << 9
            case .uuid: 1 << 10
            case .archivedObject: 1 << 11
            case .type: nil
            }
        }
    }

    /// The id of the allowed set of one Swift type (the set is `allowedByID[id]`), cached by
    /// type: decoding calls this for every field, and the conformance test and set building
    /// behind it are not free.
    private func allowedID<T>(for type: T.Type, key: String) throws -> Int {
        try allowedIDByType.id(for: type) { allowed([try Self.archiveClass(for: type, key: key)]).id }
    }

    private func allowed(_ classes: [KeyedArchiveClass]) -> Allowed {
        if let existing = allowedLists[classes] { return existing }
        let result = allowedSet(classes)
        allowedLists[classes] = result
        return result
    }

    private func allowedSet(_ classes: [KeyedArchiveClass]) -> Allowed {
        let set = Set(classes)
        if let existing = allowedSets[set] { return existing }
        var names: [String: any KeyedArchiving.Type] = [:]
        let userTypes = classes.filter { $0.type != nil }
        for entry in userTypes {
            if let type = entry.type {
                // The type's own name, and the name a process-wide mapping now writes for it:
                // archives made before `KeyedArchiver.setClassName(_:for:)` still read, as
                // NSKeyedArchiver's mapping affects only writing.
                names[type.archivedClassName] = type
                if let mapped = ClassRegistry.shared.className(for: type) { names[mapped] = type }
            }
        }
        // Each name once: `decodeDictionary(withKeyClass: Int.self, objectClass: Int.self, ...)`
        // listed "NSDictionary, NSNumber, NSNumber".
        var listed = Set<String>()
        let result = Allowed(
            id: allowedByID.count, kinds: Set(set.map(\.kind)), userTypes: userTypes, names: names,
            description: classes.map(\.name).filter { listed.insert($0).inserted }.joined(separator: ", "))
        allowedSets[set] = result
        allowedByID.append(result)
        return result
    }

    private enum Resolved {
        case builtin(KeyedArchiveClass.Kind)
        case user(any KeyedArchiving.Type)
        case generic
    }

    private func decodeStored(_ value: PropertyListValue, classes: [KeyedArchiveClass], segment: PathSegment) throws -> Any? {
        try decodeStored(value, allowed: allowed(classes), segment: segment)
    }

    /// ``decodeStored(_:allowed:segment:)`` for a value found under `key` of the current object
    /// (or `$top`), which names the path segment.
    private func decodeStored(_ value: PropertyListValue, allowed: Allowed, key: String) throws -> Any? {
        let isTopLevel = savedContexts.isEmpty
        return try decodeStored(value, allowed: allowed, segment: isTopLevel ? .top(key) : .key(key), isTopLevel: isTopLevel)
    }

    private func decodeStored(_ value: PropertyListValue, allowed: Allowed, segment: PathSegment) throws -> Any? {
        try decodeStored(value, allowed: allowed, segment: segment, isTopLevel: savedContexts.isEmpty)
    }

    private func decodeStored(_ value: PropertyListValue, allowed: Allowed, segment: PathSegment, isTopLevel: Bool) throws -> Any? {
        try decoding(segment, isTopLevel: isTopLevel) { try decodeReference(value, allowed: allowed) }
    }

    /// Runs `body` with `segment` last in the path, and takes it out again however `body`
    /// ends: a decode that failed and was caught (in an `init(coder:)`) left its segment, and
    /// every later error's path named it.
    @inline(__always)
    private func inPath<Value>(_ segment: PathSegment, _ body: () throws -> Value) rethrows -> Value {
        path.append(segment)
        defer { path.removeLast() }
        return try body()
    }

    /// Runs `body`, the decode of what lies under `segment`, with `segment` in the path and, at
    /// the top level, as a decode of its own: a new path and record of what it makes, phase 2
    /// after it, and all it made taken back when it throws or returns `nil` (nothing decoded, or
    /// an in-place reader that gave up before the full path takes over).
    @inline(__always)
    private func decoding<Value>(_ segment: PathSegment, isTopLevel: Bool, _ body: () throws -> Value?) throws -> Value? {
        if isTopLevel {
            path = []
            addedInstances.removeAll()
            addedValues.removeAll()
        }
        path.append(segment)
        defer { path.removeLast() }
        do {
            guard let result = try body() else {
                if isTopLevel { rollBack() }
                return nil
            }
            if isTopLevel { try drainPhase2() }
            return result
        } catch {
            if isTopLevel { rollBack() }
            throw error
        }
    }

    /// After a failed top-level decode: forgets the objects and values it made, so a later call
    /// never returns an object whose phase 2 did not run, drops the phase-2 work it queued for
    /// them (a later decode ran it, and failed with this one's error), and empties the fields of the
    /// ArchivedObjects it made, whose references may form cycles that ARC would never free
    /// (the caller never receives them and cannot break them). User objects linked into a cycle
    /// by their own `decodeReferences(with:)` before the failure are theirs to break.
    private func rollBack() {
        for uid in addedInstances {
            let index = Int(uid)
            guard index < slots.count else { continue }
            if case .ready(let object as ArchivedObject, _, _) = slots[index] { object.fields = [] }
            slots[index] = .empty
        }
        for key in addedValues { values[key] = nil }
        addedInstances.removeAll()
        addedValues.removeAll()
        pending.removeAll()
        pendingFields.removeAll()
        pendingIndex = 0
    }

    private func decodeReference(_ value: PropertyListValue, allowed: Allowed) throws -> Any? {
        let uid = try document.reference(value, path: self.pathString())
        if uid == 0 { return nil }
        return try decodeUID(uid, allowed: allowed)
    }

    /// The class description at a UID (with its resolutions), cached here so that an object
    /// costs no copy of the description and usually no hashing.
    private func classInfo(_ classUID: UInt32, objectUID uid: UInt32) throws -> ClassInfo {
        if let last = lastClassInfo, last.uid == classUID { return last }
        let info: ClassInfo
        if let known = classInfos[classUID] {
            info = known
        } else {
            info = ClassInfo(uid: classUID, description: try document.classDescription(classUID, path: "$objects[\(uid)] $class"))
            classInfos[classUID] = info
        }
        lastClassInfo = info
        return info
    }

    /// Throws what ``decodeUID(_:allowed:)`` throws when the class of the entry at `uid` is not
    /// allowed, without decoding it.
    private func checkClass(ofObjectAt uid: UInt32, allowed: Allowed) throws {
        switch try document.storedEntry(uid, path: self.pathString()) {
        case .leaf(let leaf):
            try checkLeafAllowed(leaf, allowed: allowed, uid: uid)
        case .object(_, let classUID):
            _ = try resolution(of: try classInfo(classUID, objectUID: uid), allowed: allowed, uid: uid)
        }
    }

    private func checkLeafAllowed(_ leaf: PropertyListValue, allowed: Allowed, uid: UInt32) throws {
        let kind = Self.kind(ofLeaf: leaf)
        guard allowed.allows(kind) else {
            throw error(
                .classNotAllowed,
                "\(Self.className(of: kind)) at $objects[\(uid)] is not among the allowed classes (\(allowed.description))")
        }
    }

    /// How the class in `info` decodes for `allowed` (cached per allowed set).
    private func resolution(of info: ClassInfo, allowed: Allowed, uid: UInt32) throws -> Resolved {
        if let known = info.resolution(for: allowed.id) { return known }
        let resolved = try resolve(info.description, allowed: allowed, uid: uid)
        info.resolutions.append((allowed.id, resolved))
        return resolved
    }

    private func decodeUID(_ uid: UInt32, allowed: Allowed) throws -> Any {
        let index = Int(uid)
        sizeSlots()
        switch slots[index] {
        case .empty:
            break
        case .initializing(let info):
            throw error(
                .unsupportedCycle,
                "reference back to $objects[\(uid)] (\(info.description.name)) while its init(coder:) is running; "
                    + "decode references that form cycles in decodeReferences(with:)")
        case .ready(let object, let resolved, let checked):
            if checked != allowed.id {
                try check(resolved, allowed: allowed, uid: uid)
                slots[index] = .ready(object, resolved, checked: allowed.id)
            }
            return object
        }
        let cacheKey = CacheKey(uid: uid, allowed: allowed.id)
        let flags = valueFlags[index]
        if flags & 1 != 0, let cached = values[cacheKey] { return cached }
        if flags & 2 != 0 {
            throw error(
                .unsupportedCycle,
                "$objects[\(uid)] contains itself through value types (arrays, dictionaries, sets); "
                    + "such a cycle can only be decoded through reference types")
        }
        switch try document.storedEntry(uid, path: self.pathString()) {
        case .leaf(let leaf):
            try checkLeafAllowed(leaf, allowed: allowed, uid: uid)
            return Self.swiftValue(ofLeaf: leaf)
        case .object(let fields, let classUID):
            let info = try classInfo(classUID, objectUID: uid)
            let resolved = try resolution(of: info, allowed: allowed, uid: uid)
            depth += 1
            defer { depth -= 1 }
            guard depth <= document.limits.maximumDepth else {
                throw error(.depthLimitExceeded, "nesting deeper than \(document.limits.maximumDepth)")
            }
            if StackSpace.runsShort(atDepth: depth) {
                throw error(.depthLimitExceeded, StackSpace.exhaustedMessage(depth: depth))
            }
            let name = info.description.name
            path.append(.object(uid, name))
            defer { path.removeLast() }
            switch resolved {
            case .user(let type):
                slots[index] = .initializing(info)
                pushContext(Context(uid: uid, className: name, fields: fields))
                let object: any KeyedArchiving
                do {
                    defer { popContext() }
                    object = try type.init(coder: self)
                } catch {
                    slots[index] = .empty
                    throw error
                }
                slots[index] = .ready(object, resolved, checked: allowed.id)
                addedInstances.append(uid)
                pending.append(.user(uid, object, fields, name))
                pendingFields.append(Self.fieldsAhead(of: fields, uid: uid))
                return object
            case .generic:
                let object = ArchivedObject(classDescription: info.description)
                slots[index] = .ready(object, resolved, checked: allowed.id)
                addedInstances.append(uid)
                pending.append(.generic(uid, object, fields, allowed))
                pendingFields.append(Self.noFields(uid: uid))
                return object
            case .builtin(let kind):
                valueFlags[index] |= 2
                defer { valueFlags[index] &= ~2 }
                let value = try decodeBuiltin(kind, fields: fields, uid: uid, allowed: allowed)
                values[cacheKey] = value
                valueFlags[index] |= 1
                addedValues.append(cacheKey)
                return value
            }
        }
    }

    /// Sizes ``slots`` and ``valueFlags`` to the archive's object count, once (every UID is
    /// checked against that count before it indexes them).
    @inline(__always)
    private func sizeSlots() {
        guard slots.isEmpty else { return }
        slots = Array(repeating: .empty, count: document.objectCount)
        valueFlags = Array(repeating: 0, count: document.objectCount)
    }

    private func resolve(_ description: ArchivedClassDescription, allowed: Allowed, uid: UInt32) throws -> Resolved {
        for name in description.candidates {
            if FoundationClassNames.stopNames.contains(name) { break }
            if let type = classMap[name] ?? ClassRegistry.shared.type(forClassName: name) ?? allowed.names[name] {
                let resolved = Resolved.user(type)
                try check(resolved, allowed: allowed, uid: uid, className: description.name)
                return resolved
            }
            if let kind = FoundationClassNames.kinds[name] {
                let resolved = Resolved.builtin(kind)
                try check(resolved, allowed: allowed, uid: uid, className: description.name)
                return resolved
            }
        }
        guard allowed.allows(.archivedObject) else {
            throw error(
                .classNotAllowed,
                "class \(description.name) (chain \(description.chain.joined(separator: ", "))) at $objects[\(uid)] "
                    + "is not among the allowed classes (\(allowed.description))")
        }
        return .generic
    }

    /// Whether ``check(_:allowed:uid:className:)`` passes, without its error; the last user
    /// class and set that passed are remembered (the check is a pure function of the two, and
    /// a W2 unarchive asks it once per object for the same pair).
    private func passesCheck(_ resolved: Resolved, allowed: Allowed, uid: UInt32) -> Bool {
        guard case .user(let type) = resolved else { return (try? check(resolved, allowed: allowed, uid: uid)) != nil }
        let pair = (ObjectIdentifier(type), allowed.id)
        if let last = lastPassedCheck, last == pair { return true }
        guard (try? check(resolved, allowed: allowed, uid: uid)) != nil else { return false }
        lastPassedCheck = pair
        return true
    }

    private func check(_ resolved: Resolved, allowed: Allowed, uid: UInt32, className: String? = nil) throws {
        let permitted: Bool
        let name: String
        switch resolved {
        case .builtin(let kind):
            permitted = allowed.allows(kind)
            name = className ?? Self.className(of: kind)
        case .generic:
            permitted = allowed.allows(.archivedObject)
            name = className ?? "an unknown class"
        case .user(let type):
            permitted = allowed.userTypes.contains { $0.matches?(type) ?? false }
            name = className ?? type.archivedClassName
        }
        guard permitted else {
            throw error(
                .classNotAllowed, "class \(name) at $objects[\(uid)] is not among the allowed classes (\(allowed.description))")
        }
    }

    private func drainPhase2() throws {
        let savedPath = path
        defer {
            pending.removeAll()
            pendingFields.removeAll()
            pendingIndex = 0
            path = savedPath
        }
        while pendingIndex < pending.count {
            prefetchReferences(ofJob: pendingIndex &+ Self.slotLookahead, instances: false)
            prefetchReferences(ofJob: pendingIndex &+ Self.instanceLookahead, instances: true)
            var job = PendingPhase2.taken
            swap(&job, &pending[pendingIndex])
            pendingIndex += 1
            switch consume job {
            case .user(let uid, let object, let fields, let name):
                // Reuses the path's storage: an array literal here would allocate per object.
                path.removeAll(keepingCapacity: true)
                path.append(.object(uid, name))
                pushContext(Context(uid: uid, className: name, fields: consume fields))
                defer { popContext() }
                try object.decodeReferences(with: self)
            case .generic(let uid, let object, let fields, let allowed):
                path.removeAll(keepingCapacity: true)
                path.append(.object(uid, object.className))
                let fields = try dictionary(of: fields)
                var decoded: [(key: String, value: ArchivedField)] = []
                decoded.reserveCapacity(fields.count)
                for entry in fields.entries {
                    guard let key = entry.key.stringValue else {
                        throw error(.invalidObject, "object has a \(entry.key.typeName) key")
                    }
                    if key == ArchiveKeys.classReference { continue }
                    path.append(.key(key))
                    defer { path.removeLast() }
                    decoded.append((key, try field(entry.value, allowed: allowed, level: 0)))
                }
                object.fields = decoded
            case .taken:
                break
            }
        }
    }

    /// How many objects ahead of phase 2 the slots of an object's references start loading.
    private static var slotLookahead: Int { 8 }
    /// How many objects ahead of phase 2 the instances in those slots start loading.
    private static var instanceLookahead: Int { 4 }
    /// The most values of one object looked at ahead.
    private static var lookaheadEntries: Int { 16 }

    /// Starts loading what phase-2 job `index` will read: the slots of its object and of the
    /// UIDs among its values, or (`instances`) the instances those slots hold, whose type and
    /// reference count a reference reads. A W2 person's friends are random objects of a table
    /// of megabytes: two dependent misses each, which were most of
    /// ``decodeObject(of:forKey:)``'s time. The job's own object, made in phase 1 a whole
    /// graph earlier, had left the caches too: the call of its `decodeReferences(with:)` waited
    /// for its type (about 5% of a W2 unarchive). Reads nothing out of range and changes
    /// nothing.
    @inline(__always)
    private func prefetchReferences(ofJob index: Int, instances: Bool) {
        guard index < pendingFields.count else { return }
        let job = pendingFields[index]
        slots.withUnsafeBufferPointer { slots in
            Self.prefetch(job.uid, in: slots, instance: instances)
            guard job.count > 0 else { return }
            let span = BinaryPropertyListObjectReader.ContainerSpan(object: 0, count: Int(job.count), start: Int(job.start))
            document.forEachUIDValue(ofFieldsAt: span, maximumEntries: Self.lookaheadEntries) { uid in
                Self.prefetch(uid, in: slots, instance: instances)
            }
        }
    }

    /// Starts loading the slot of `uid`, or (`instance`) the instance it holds, if any.
    @inline(__always)
    private static func prefetch(_ uid: UInt32, in slots: UnsafeBufferPointer<Slot>, instance: Bool) {
        guard Int(uid) < slots.count, let base = slots.baseAddress else { return }
        if !instance {
            keyed_archive_prefetch(base + Int(uid))
        } else if case .ready(let object, _, _) = slots[Int(uid)] {
            keyed_archive_prefetch(Unmanaged.passUnretained(object).toOpaque())
        }
    }

    /// The longest list of members ``prefetchMembers(_:_:)`` looks at.
    private static var prefetchedMembers: Int { 32 }

    /// Starts loading the slots of the members of `list`, then the instances they hold: in two
    /// passes over a short list (a W2 person's friends in an array), so that its members'
    /// misses overlap instead of following one another in the loop that takes them.
    private func prefetchMembers(_ reader: BinaryPropertyListObjectReader, _ list: BinaryPropertyListObjectReader.ContainerSpan) {
        guard list.count > 1, list.count <= Self.prefetchedMembers else { return }
        slots.withUnsafeBufferPointer { slots in
            for pass in 0..<2 {
                for member in 0..<list.count {
                    guard let uid = memberReference(reader, list, member) else { continue }
                    Self.prefetch(uid, in: slots, instance: pass == 1)
                }
            }
        }
    }

    /// A phase-2 job's object and where its fields lie in the file: where its dictionary's
    /// references start and its entries. Twelve bytes, not the UID and a whole span (32): one
    /// per object of a decode, and the span's object index is needed only for errors, which
    /// the look-ahead never reports.
    private struct FieldsAhead {
        var start: UInt32
        var count: UInt32
        var uid: UInt32
    }

    /// An entry of ``pendingFields`` with no fields to look ahead at.
    private static func noFields(uid: UInt32) -> FieldsAhead { FieldsAhead(start: 0, count: 0, uid: uid) }

    /// Object `uid` and where its `fields` lie in the file; ``noFields(uid:)`` for fields not
    /// read in place and for a file past 4 GiB (whose fields are decoded without the look-ahead).
    @inline(__always)
    private static func fieldsAhead(of fields: ArchiveFields, uid: UInt32) -> FieldsAhead {
        guard case .inPlace(let fields) = fields else { return noFields(uid: uid) }
        let span = fields.lookup.span
        guard let start = UInt32(exactly: span.start), let count = UInt32(exactly: span.count) else { return noFields(uid: uid) }
        return FieldsAhead(start: start, count: count, uid: uid)
    }

    /// An ArchivedObject field: references decoded, inline values kept.
    private func field(_ value: PropertyListValue, allowed: Allowed, level: Int) throws -> ArchivedField {
        guard level < document.limits.maximumDepth else {
            throw error(.depthLimitExceeded, "inline values nested deeper than \(document.limits.maximumDepth)")
        }
        if StackSpace.runsShort(atDepth: depth + level) {
            throw error(.depthLimitExceeded, StackSpace.exhaustedMessage(depth: depth + level))
        }
        switch value {
        case .uid:
            // The object is as deep as the inline values around it: counted from 0 (its depth
            // in phase 2), 15 objects below 200 inline levels went unchecked and overflowed a
            // 512 KiB stack in a debug build.
            depth += level
            defer { depth -= level }
            return .object(try decodeReference(value, allowed: allowed))
        case .array(let items), .set(let items):
            var fields: [ArchivedField] = []
            fields.reserveCapacity(items.count)
            var allInline = true
            for (index, item) in items.enumerated() {
                path.append(.element("", index))
                defer { path.removeLast() }
                let converted = try field(item, allowed: allowed, level: level + 1)
                if case .inline = converted {} else { allInline = false }
                fields.append(converted)
            }
            if allInline { return .inline(value) }
            if case .set = value { return .set(fields) }
            return .array(fields)
        case .dictionary(let dictionary):
            var entries: [(key: PropertyListValue, value: ArchivedField)] = []
            var allInline = true
            for entry in dictionary.entries {
                path.append(.key(entry.key.stringValue ?? entry.key.typeName))
                defer { path.removeLast() }
                let converted = try field(entry.value, allowed: allowed, level: level + 1)
                if case .inline = converted {} else { allInline = false }
                entries.append((entry.key, converted))
            }
            return allInline ? .inline(value) : .dictionary(entries)
        default:
            return .inline(value)
        }
    }

    // MARK: Built-in Foundation classes

    private func decodeBuiltin(_ kind: KeyedArchiveClass.Kind, fields: ArchiveFields, uid: UInt32, allowed: Allowed) throws -> Any {
        typealias Names = FoundationClassNames
        switch kind {
        case .string:
            return try document.stringValue(ofObject: try dictionary(of: fields), path: self.pathString())
        case .data:
            return try document.dataValue(ofObject: try dictionary(of: fields), path: self.pathString())
        case .date:
            return try ArchiveDocument.dateValue(ofObject: try dictionary(of: fields), path: self.pathString())
        case .number:
            throw error(.invalidObject, "NSNumber objects are stored inline, not as dictionaries")
        case .null:
            return ArchivedNull.null
        case .uuid:
            return try ArchiveDocument.uuidValue(ofObject: try dictionary(of: fields), path: self.pathString())
        case .url:
            return try document.urlValue(ofObject: try dictionary(of: fields), path: self.pathString())
        case .array:
            return try elements(of: fields, allowed: allowed)
        case .orderedSet:
            return ArchivedOrderedSet(try elements(of: fields, allowed: allowed))
        case .set:
            let members = try elements(of: fields, allowed: allowed)
            var set = Set<AnyHashable>()
            set.reserveCapacity(members.count)
            for member in members {
                guard let hashable = member as? AnyHashable else {
                    throw error(.typeMismatch, "set member of type \(type(of: member)) is not Hashable")
                }
                set.insert(hashable)
            }
            return set
        case .dictionary:
            // The keys, then the values, as Foundation's NSDictionary decodes them. A repeated key
            // keeps its last value, as there; the values it drops are checked (below) but not
            // decoded. Decoded, they would be objects no caller can reach, and an ArchivedObject
            // among them that refers to itself would leak: nothing could break its cycle. A key
            // that equals no other (a NaN among them) keeps its value.
            let keys: ArchiveReferenceList, objects: ArchiveReferenceList
            if let inPlaceKeys = referenceListInPlace(fields, Names.keysKey), let inPlaceObjects = referenceListInPlace(fields, Names.objectsKey),
                inPlaceKeys.items.count == inPlaceObjects.items.count
            {
                (keys, objects) = (inPlaceKeys, inPlaceObjects)
            } else {
                (keys, objects) = try document.dictionaryReferences(in: try dictionary(of: fields), path: self.pathString())
            }
            var hashableKeys: [AnyHashable] = []
            hashableKeys.reserveCapacity(keys.items.count)
            var isKept = [Bool](repeating: true, count: keys.items.count)
            var lastIndexOfKey: [AnyHashable: Int] = [:]
            lastIndexOfKey.reserveCapacity(keys.items.count)
            for index in keys.items.indices {
                let key = try inPath(.listElement(keys.name, numbered: keys.isNumbered, index)) {
                    try decodeReference(keys.items[index], allowed: allowed)
                }
                guard let key, let hashable = key as? AnyHashable else {
                    throw error(.typeMismatch, "dictionary key at \(index) is nil or not Hashable")
                }
                hashableKeys.append(hashable)
                if let earlier = lastIndexOfKey.updateValue(index, forKey: hashable) { isKept[earlier] = false }
            }
            var dictionary: [AnyHashable: Any] = [:]
            dictionary.reserveCapacity(lastIndexOfKey.count)
            for index in objects.items.indices {
                try inPath(.listElement(objects.name, numbered: objects.isNumbered, index)) {
                    let isNil: Bool
                    if isKept[index] {
                        let value = try decodeReference(objects.items[index], allowed: allowed)
                        if let value { dictionary[hashableKeys[index]] = value }
                        isNil = value == nil
                    } else {
                        // Checked as far as it can be without making the object: a reference,
                        // not nil, and of an allowed class.
                        let uid = try document.reference(objects.items[index], path: self.pathString())
                        if uid != 0 { try checkClass(ofObjectAt: uid, allowed: allowed) }
                        isNil = uid == 0
                    }
                    if isNil {
                        throw error(.invalidObject, "dictionary value for a key at \(index) is nil (UID 0)")
                    }
                }
            }
            return dictionary
        case .archivedObject, .type:
            throw error(.invalidObject, "not a built-in class")
        }
    }

    /// The decoded elements of an NSArray, NSSet or NSOrderedSet (`NS.objects`, or the numbered
    /// `NS.object.N` keys).
    private func elements(of fields: ArchiveFields, allowed: Allowed) throws -> [Any] {
        typealias Names = FoundationClassNames
        let list = try referenceListInPlace(fields, Names.objectsKey)
            ?? document.referenceList(in: try dictionary(of: fields), key: Names.objectsKey, legacyPrefix: Names.objectPrefix, path: self.pathString())
        var result: [Any] = []
        result.reserveCapacity(list.items.count)
        for (index, item) in list.items.enumerated() {
            path.append(.listElement(list.name, numbered: list.isNumbered, index))
            defer { path.removeLast() }
            guard let element = try decodeReference(item, allowed: allowed) else {
                throw error(.invalidObject, "collection element is nil (UID 0)")
            }
            result.append(element)
        }
        return result
    }

    // MARK: Leaves and casts

    private static func kind(ofLeaf value: PropertyListValue) -> KeyedArchiveClass.Kind {
        switch value {
        case .string: .string
        case .data: .data
        case .date: .date
        default: .number
        }
    }

    private static func className(of kind: KeyedArchiveClass.Kind) -> String {
        switch kind {
        case .string: "NSString"
        case .number: "NSNumber"
        case .data: "NSData"
        case .date: "NSDate"
        case .array: "NSArray"
        case .dictionary: "NSDictionary"
        case .set: "NSSet"
        case .orderedSet: "NSOrderedSet"
        case .null: "NSNull"
        case .url: "NSURL"
        case .uuid: "NSUUID"
        case .archivedObject: "ArchivedObject"
        case .type: "a user class"
        }
    }

    /// The Swift value of a leaf: `String`, `Data`, `Date`, `Bool`, `Int` (or `UInt64` above
    /// `Int64.max`), `Double` (or `Float` for a 4-byte real).
    package static func swiftValue(ofLeaf value: PropertyListValue) -> Any {
        switch value {
        case .string(let string): return string.value
        case .data(let data): return data
        case .date(let date): return date
        case .bool(let bool): return bool
        case .integer(let integer):
            if let signed = integer.int64Value { return Int(signed) }
            return integer.bitPattern
        case .real(let real): return real.isSinglePrecision ? Float(real.value) as Any : real.value as Any
        default: return value
        }
    }

    private static func archiveClass<T>(for type: T.Type, key: String) throws -> KeyedArchiveClass {
        guard let result = KeyedArchiveClass.forType(type) else {
            throw KeyedArchiveError(
                .unsupportedValue, "no archive class decodes \(type); list the classes with decodeObject(of: [...])", path: key)
        }
        return result
    }

    private func cast<T>(_ value: Any, to type: T.Type, key: String) throws -> T {
        // A value of exactly T (the usual case) is cast unconditionally: its dynamic type was
        // just compared equal to T, so the cast cannot fail whatever the archive holds. The
        // conditional cast is in a function of its own because an Optional<T> in this frame
        // made the runtime look up its metadata at every call, which cost as much as the cast
        // itself (W2: five casts an object).
        if Swift.type(of: value) == type { return value as! T }
        return try converted(value, to: type, key: key)
    }

    /// ``cast(_:to:key:)`` for a value not exactly of type `T`: a subclass or a conforming type,
    /// an exact number conversion, or a type mismatch.
    @inline(never)
    private func converted<T>(_ value: Any, to type: T.Type, key: String) throws -> T {
        if let result = value as? T { return result }
        if let converted = Self.convertNumber(value, to: type) { return converted }
        throw error(.typeMismatch, "expected \(type), found \(Swift.type(of: value))", key: key)
    }

    /// Exact conversions between decoded numbers (an archived `Int` asked for as `Double`...).
    private static func convertNumber<T>(_ value: Any, to type: T.Type) -> T? {
        let double: Double?
        let integer: Int64?
        switch value {
        case let value as Int: integer = Int64(value); double = Double(exactly: value)
        case let value as UInt64: integer = Int64(exactly: value); double = Double(exactly: value)
        case let value as Double: integer = Int64(exactly: value); double = value
        case let value as Float: integer = Int64(exactly: value); double = Double(value)
        default: return nil
        }
        switch type {
        case is Double.Type: return double as? T
        case is Float.Type: return double.flatMap { Float(exactly: $0) ?? (($0.isNaN) ? Float.nan : nil) } as? T
        case is Int.Type: return integer.flatMap { Int(exactly: $0) } as? T
        case is Int64.Type: return integer as? T
        case is Int32.Type: return integer.flatMap { Int32(exactly: $0) } as? T
        case is Int16.Type: return integer.flatMap { Int16(exactly: $0) } as? T
        case is Int8.Type: return integer.flatMap { Int8(exactly: $0) } as? T
        case is UInt64.Type: return (value as? UInt64 ?? integer.flatMap { UInt64(exactly: $0) }) as? T
        case is UInt32.Type: return integer.flatMap { UInt32(exactly: $0) } as? T
        case is UInt.Type: return integer.flatMap { UInt(exactly: $0) } as? T
        default: return nil
        }
    }

    // MARK: Errors with paths

    private func error(_ code: KeyedArchiveError.Code, _ message: String, key: String? = nil) -> KeyedArchiveError {
        KeyedArchiveError(code, message, path: pathString(adding: key.map { .key($0) }))
    }

    /// The path to where decoding is: the last few objects and the keys inside them, e.g.
    /// `$top.root > $objects[3] (Person) friends > $objects[12] (NSDictionary) NS.keys[3]`.
    private func pathString(adding extra: PathSegment? = nil) -> String {
        var segments = path
        if let extra { segments.append(extra) }
        if segments.isEmpty, !savedContexts.isEmpty {
            segments.append(.object(current.uid, current.className))
        }
        var groups: [String] = []
        for segment in segments {
            switch segment {
            case .top(let key): groups.append("$top." + key)
            case .object(let uid, let name): groups.append("$objects[\(uid)]" + (name.map { " (\($0))" } ?? ""))
            case .key(let key):
                if groups.isEmpty { groups.append(key) } else { groups[groups.count - 1] += " " + key }
            case .listElement(let name, let numbered, let index):
                let key = ArchiveReferenceList(name: name, isNumbered: numbered, items: []).elementName(index)
                if groups.isEmpty { groups.append(key) } else { groups[groups.count - 1] += " " + key }
            case .element(let key, let index):
                let text = key.isEmpty ? "[\(index)]" : "\(key)[\(index)]"
                if groups.isEmpty { groups.append(text) } else { groups[groups.count - 1] += key.isEmpty ? text : " " + text }
            }
        }
        if groups.count > 4 { groups = ["…"] + groups.suffix(3) }
        return groups.joined(separator: " > ")
    }
}

extension KeyedUnarchiver {
    /// Decodes a stored value (a UID, as found in an object's fields or in `$top`) allowing
    /// `classes`, with the same caching, identity and cycle rules as ``decodeObject(of:forKey:)``.
    /// For layers built on this one (the Codable bridge), which read fields themselves.
    package func decodeStoredValue(_ value: PropertyListValue, classes: [KeyedArchiveClass], key: String) throws -> Any? {
        try decodeObject(of: classes, stored: value, key: key)
    }
}

/// Ids of allowed sets by Swift type, with the last two types asked for (most recent first) in
/// front of the table: decoders alternate between a few types, and this saves the hashing of a
/// dictionary lookup. Ids, not sets: reading one costs no retain.
private struct AllowedIDsByType {
    private var table: [ObjectIdentifier: Int] = [:]
    private var recent: (ObjectIdentifier?, Int, ObjectIdentifier?, Int) = (nil, 0, nil, 0)

    /// The id for `type`, made by `make` the first time.
    @inline(__always)
    mutating func id<T>(for type: T.Type, _ make: () throws -> Int) rethrows -> Int {
        let typeID = ObjectIdentifier(type)
        if recent.0 == typeID { return recent.1 }
        if recent.2 == typeID {
            let existing = recent.3
            recent = (typeID, existing, recent.0, recent.1)
            return existing
        }
        let result: Int
        if let existing = table[typeID] {
            result = existing
        } else {
            result = try make()
            table[typeID] = result
        }
        recent = (typeID, result, recent.0, recent.1)
        return result
    }
}
