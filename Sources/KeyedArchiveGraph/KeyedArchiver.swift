/// Writes object graphs as NSKeyedArchiver archives (the role of `NSKeyedArchiver`).
///
/// Objects of ``KeyedArchiving`` classes are stored once per instance (by identity) and may
/// form cycles; Swift values map to the Foundation classes Apple's archives use (`String` →
/// NSString, `[Any]` → NSArray, `Date` → NSDate, ...; see Docs/KeyedArchiveFormat.md). The
/// archiver itself is the coder passed to ``KeyedArchiving/encode(with:)``: the keyed
/// `encode` calls write into the object being encoded, or into `$top` outside any object.
///
/// Encoding is iterative: an object met by reference gets its UID at once and its fields are
/// written later from a work queue, so deep graphs and long chains never recurse.
///
/// ```swift
/// let data = try KeyedArchiver.archivedData(withRootObject: people, format: .binary)
/// // or, with more control:
/// let archiver = KeyedArchiver()
/// archiver.setClassName("Person", for: Person.self)
/// try archiver.encode(people, forKey: "root")
/// let data = try archiver.finishEncoding()
/// ```
public final class KeyedArchiver {
    /// The property-list format of the archive: binary (the default) or XML.
    public var outputFormat: PropertyListFormat
    /// The `$archiver` name written. Default `NSKeyedArchiver`.
    public var archiverName: String = ArchiveKeys.defaultArchiverName

    /// The object table being built (for layers built on this one).
    package let table = ArchiveObjectTable()
    @exclusivity(unchecked) private var topFields = ArchiveObjectFields()
    /// The fields of the object being encoded, as slots, when `isInObject` (else keyed calls
    /// write into `$top`); reused object after object.
    private let current = ArchiveObjectSlots()
    @exclusivity(unchecked) private var isInObject = false
    /// `$class`, interned in `table`.
    private let classKey: ArchiveSlot
    @exclusivity(unchecked) private var currentUID: UInt32 = 0
    /// The class last found to be ``KeyedArchiving`` and a cast to it (see `keyedArchiving(_:of:)`).
    @exclusivity(unchecked) private var lastArchivingClass: (type: ObjectIdentifier, cast: (Any) -> (any KeyedArchiving)?)?
    @exclusivity(unchecked) private var typeFacts: [(type: ObjectIdentifier, facts: ValueTypeFacts)] = []
    /// The Foundation classes met so far (see `foreignClassKind(of:)`).
    private var foreignClassKinds: [(type: ObjectIdentifier, kind: ForeignClassKind)] = []
    @exclusivity(unchecked) private var queue: [Job] = []
    @exclusivity(unchecked) private var queueIndex = 0
    @exclusivity(unchecked) private var classNames: [ObjectIdentifier: String] = [:]
    /// Per class: the UID of its description, and how many entries its last object had (the
    /// capacity to reserve for the next one).
    @exclusivity(unchecked) private var classUIDs: [ObjectIdentifier: (uid: UInt32, fieldCount: Int)] = [:]
    /// The class of the last object encoded, with what `classUIDs` holds for it: a graph's
    /// objects come in runs of one class, and the dictionary's hash cost about 90
    /// instructions an object (callgrind, W2).
    @exclusivity(unchecked) private var lastClass: (type: ObjectIdentifier, uid: UInt32, fieldCount: Int)?
    /// Counts ``setClassName(_:for:)`` calls: a class's description found before an object's
    /// `encode(with:)` is kept for the next objects only if no mapping changed meanwhile.
    @exclusivity(unchecked) private var classNameChanges = 0
    @exclusivity(unchecked) private var finished: Data?
    /// Why encoding failed (a value that cannot be archived, or an error an object's
    /// `encode(with:)` threw): the failed object's entry was never set, so every later call
    /// throws this again rather than finish an archive without it.
    @exclusivity(unchecked) private var failure: (any Error)?
    /// The stored form of the keys used recently (every object of a class repeats its keys).
    private let storedKeys = StoredKeyCache()

    private enum Job {
        case object(UInt32, QueuedObject)
        case archived(UInt32, ArchivedObject)
        case array(UInt32, [Any])
        /// An array whose elements are ``KeyedArchiving`` instances (see ``KeyedArchivingArray``).
        case objectArray(UInt32, ObjectArrayElements)
        case dictionary(UInt32, [(Any, Any)])
        case set(UInt32, [Any])
        case orderedSet(UInt32, [Any])
        case plistArray(UInt32, [PropertyListValue], set: Bool)
        case plistDictionary(UInt32, PropertyListDictionary)
        case url(UInt32, URL)
    }

    /// An object queued for encoding, held by address without a retain: the table retains every
    /// object it gives a UID for as long as the archiver lives
    /// (``ArchiveObjectTable/uidOrReserve(for:)``), and jobs run while the archiver encodes.
    /// Held strongly, each was retained when queued and released when the queue was emptied;
    /// held `unowned(unsafe)` (session 43), each was still retained and released around its
    /// `encode(with:)`, both misses on a random object of a large graph. By address and class,
    /// `encode(with:)` runs on the instance in place (``KeyedArchiving/encode(instanceAt:with:)``).
    private struct QueuedObject {
        /// The instance (`Unmanaged.toOpaque()`), kept alive by the table, not by the queue.
        let address: UnsafeMutableRawPointer
        /// Its dynamic class, which encodes it.
        let type: any KeyedArchiving.Type
    }

    /// An archiver writing `outputFormat` (binary by default).
    public init(outputFormat: PropertyListFormat = .binary) {
        self.outputFormat = outputFormat
        classKey = table.internStoredKey(ArchiveKeys.classReferenceValue)
    }

    /// Archives a root object (any value ``encode(_:forKey:)`` accepts) under `root`.
    public static func archivedData(withRootObject rootObject: Any?, format: PropertyListFormat) throws -> Data {
        let archiver = KeyedArchiver(outputFormat: format)
        try archiver.encode(rootObject, forKey: ArchiveKeys.rootKey)
        return try archiver.finishEncoding()
    }

    // MARK: Class names

    /// Maps a class to the `$classname` this archiver writes for it (`nil` removes the mapping).
    public func setClassName(_ name: String?, for type: any KeyedArchiving.Type) {
        classNames[ObjectIdentifier(type)] = name
        classUIDs.removeAll()
        lastClass = nil
        classNameChanges += 1
    }

    /// The name set for a class on this archiver, if any.
    public func className(for type: any KeyedArchiving.Type) -> String? {
        classNames[ObjectIdentifier(type)]
    }

    /// Maps a class to the `$classname` every archiver writes for it, unless an archiver has its
    /// own mapping (`nil` removes it).
    public static func setClassName(_ name: String?, for type: any KeyedArchiving.Type) {
        ClassRegistry.shared.setClassName(name, for: type)
    }

    /// The process-wide name set for a class, if any.
    public static func className(for type: any KeyedArchiving.Type) -> String? {
        ClassRegistry.shared.className(for: type)
    }

    /// The class chain written for a type: mapped or default name, fallbacks, `NSObject`.
    package func classChain(for type: any KeyedArchiving.Type) -> [String] {
        let name = classNames[ObjectIdentifier(type)] ?? ClassRegistry.shared.className(for: type) ?? type.archivedClassName
        var chain = [name]
        for fallback in type.archivedClassFallbacks + ["NSObject"] where !chain.contains(fallback) {
            chain.append(fallback)
        }
        return chain
    }

    // MARK: Keyed encoding (into the current object, or $top)

    /// Encodes an object or value by reference (stored in `$objects`, referred to by UID).
    /// `nil` is stored as UID 0. Throws ``KeyedArchiveError/Code/unsupportedValue`` for values
    /// of types this archiver cannot represent. At the top level (outside an object's
    /// `encode(with:)`), the value and everything it refers to are encoded before this
    /// returns, as NSKeyedArchiver does, and an error spends the archiver.
    public func encode(_ object: Any?, forKey key: String) throws {
        try ensureOpen()
        let uid: UInt32
        do { uid = try reference(for: object) } catch { throw Self.error(error, at: isInObject ? key : "$top." + key) }
        setPlainField(.uid(uid), forKey: key)
        if !isInObject { try encodeQueuedObjects() }
    }

    /// Encodes a string by reference (an NSString in `$objects`); the same as the
    /// `Any?` overload without its dynamic type tests.
    public func encode(_ string: String, forKey key: String) throws {
        try ensureOpen()
        setPlainField(.uid(table.leafUID(string: string)), forKey: key)
    }

    /// Encodes an object of a ``KeyedArchiving`` class by reference (`nil`: UID 0); the same as the
    /// `Any?` overload without its dynamic type tests.
    public func encode<T: KeyedArchiving>(_ object: T?, forKey key: String) throws {
        try ensureOpen()
        switch object {
        case .some(let object): setPlainField(.uid(reference(forObject: object)), forKey: key)
        case .none: setPlainField(.uid(0), forKey: key)
        }
        if !isInObject { try encodeQueuedObjects() }
    }

    /// The UID of an instance of a ``KeyedArchiving`` class, queuing it the first time.
    /// Generic, so that an instance already in the table is looked up by identity alone: made
    /// an existential first, each reference was a retain and a release.
    @inline(__always)
    private func reference<Object: KeyedArchiving>(forObject object: Object) -> UInt32 {
        let (uid, isNew) = table.uidOrReserve(for: object)
        // Queued only when the table has just retained it (`isNew`).
        if isNew {
            queue.append(.object(uid, QueuedObject(address: Unmanaged.passUnretained(object).toOpaque(), type: type(of: object))))
        }
        return uid
    }

    /// The UID of an element of an array of `elementType` (or of a subclass), queuing it the
    /// first time, as ``reference(forObject:)`` does.
    private func reference(forElement element: Unmanaged<AnyObject>, of elementType: any KeyedArchiving.Type) -> UInt32 {
        let (uid, isNew) = element._withUnsafeGuaranteedRef { table.uidOrReserve(for: $0) }
        if isNew {
            // A subclass of the element type (rare) is found by a cast; it cannot fail, as a
            // subclass inherits the conformance.
            let objectType: AnyObject.Type = element._withUnsafeGuaranteedRef { type(of: $0) }
            let archivingType = ObjectIdentifier(objectType) == ObjectIdentifier(elementType)
                ? elementType : (objectType as? any KeyedArchiving.Type) ?? elementType
            queue.append(.object(uid, QueuedObject(address: element.toOpaque(), type: archivingType)))
        }
        return uid
    }

    /// Encodes a value without a key, under the next of `$0, $1, ...` of the current object.
    public func encode(_ object: Any?) throws {
        try ensureOpen()
        let uid = try reference(for: object)
        if isInObject {
            let key = current.nextUnkeyedKey()
            current.setStored(.uid(uid), forKey: table.internStoredKey(PropertyListValue(key)))
        } else {
            topFields.appendUnkeyed(.uid(uid))
            try encodeQueuedObjects()
        }
    }

    /// Encodes a reference only if the object is encoded unconditionally somewhere in the archive
    /// (before or after this call); otherwise the key holds UID 0 and decodes as `nil`.
    public func encodeConditionalObject(_ object: AnyObject?, forKey key: String) throws {
        try ensureOpen()
        guard let object else { return setPlainField(.uid(0), forKey: key) }
        guard object is any KeyedArchiving || object is ArchivedObject else {
            throw KeyedArchiveError(
                .unsupportedValue, "conditional objects must be KeyedArchiving classes or ArchivedObject, not \(type(of: object))",
                path: key)
        }
        let reference = table.conditionalReference(to: object, slot: isInObject ? .object(uid: currentUID) : .top)
        if isInObject {
            current.setStored(table.slot(for: reference), forKey: storedKeys.slot(for: key, in: table))
        } else {
            topFields.setStored(reference, forStoredKey: storedKeys.value(for: key))
        }
    }

    /// Encodes a boolean inline.
    public func encode(_ value: Bool, forKey key: String) { setPlainField(.bool(value), forKey: key) }
    /// Encodes an integer inline.
    public func encode(_ value: Int, forKey key: String) { setPlainField(.integer(Int64(value)), forKey: key) }
    /// Encodes a 32-bit integer inline.
    public func encode(_ value: Int32, forKey key: String) { setPlainField(.integer(Int64(value)), forKey: key) }
    /// Encodes a 64-bit integer inline.
    public func encode(_ value: Int64, forKey key: String) { setPlainField(.integer(value), forKey: key) }
    /// Encodes a float inline, as a 4-byte real (as Apple's writer stores a float number).
    public func encode(_ value: Float, forKey key: String) { setPlainField(.float(value), forKey: key) }
    /// Encodes a double inline.
    public func encode(_ value: Double, forKey key: String) { setPlainField(.real(value), forKey: key) }
    /// Encodes raw bytes inline (`encodeBytes(_:length:forKey:)`).
    public func encodeBytes(_ bytes: Data, forKey key: String) { setField(.data(bytes), forKey: key) }
    /// Encodes raw bytes inline.
    public func encodeBytes(_ bytes: UnsafeRawBufferPointer, forKey key: String) { setField(.data(Data(bytes)), forKey: key) }

    /// True when a key has been encoded in the current object (or `$top`).
    public func containsValue(forKey key: String) -> Bool {
        isInObject ? current.contains(key: storedKeys.slot(for: key, in: table)) : topFields.contains(key: key)
    }

    /// Sets a number, boolean or reference: as a slot, made directly (through a
    /// ``PropertyListValue``, each field was a value made, switched over by `table.slot(for:)`
    /// and destroyed, about 40 instructions; callgrind, W2). `slot` is always one of the plain
    /// kinds, which have a `plainValue` for `$top`.
    @inline(__always)
    private func setPlainField(_ slot: ArchiveSlot, forKey key: String) {
        if isInObject {
            current.setStored(slot, forKey: storedKeys.slot(for: key, in: table))
        } else if let value = slot.plainValue {
            topFields.setStored(value, forStoredKey: storedKeys.value(for: key))
        }
    }

    private func setField(_ value: PropertyListValue, forKey key: String) {
        if isInObject {
            current.setStored(table.slot(for: value), forKey: storedKeys.slot(for: key, in: table))
        } else {
            topFields.setStored(value, forStoredKey: storedKeys.value(for: key))
        }
    }

    /// Throws once the archive has been written, or its writing has failed.
    @inline(__always)
    private func ensureOpen() throws {
        // One flag on the common path: the table is finished when the archive is written or
        // its writing has failed. Tested directly, the optional failure and the optional bytes
        // were copied out to be tested, about 90 instructions an encode call.
        if table.isFinished { try throwFinished() }
    }

    private func throwFinished() throws {
        // A failed encode or write spent the table: its error, again.
        if let failure { throw failure }
        if let failure = table.writeFailure { throw failure }
        throw KeyedArchiveError(.unsupportedValue, "the archiver has finished encoding")
    }

    // MARK: Finishing

    /// Encodes everything still queued, patches conditional references and returns the archive.
    /// Further calls return the same bytes (or throw the same error). After it, or after a
    /// failed encode, the encode calls that can throw throw; the ones that cannot (numbers,
    /// booleans, bytes, as NSCoder's) are ignored: the archive no longer changes.
    public func finishEncoding() throws -> Data {
        if let finished { return finished }
        if let failure { throw failure }
        if isInObject {
            // From an object's `encode(with:)`: the archive would be written without that
            // object (its entry still a placeholder) and every later call would return it.
            // No path of its own: uncaught, the object's location is put in front of it.
            throw KeyedArchiveError(
                .unsupportedValue, "finishEncoding() was called while an object was being encoded; call it after the top-level encode calls")
        }
        try encodeQueuedObjects()
        let data = try table.encodedData(top: topFields.dictionary, format: outputFormat, archiverName: archiverName)
        finished = data
        return data
    }

    /// The archive, finishing encoding if needed (``finishEncoding()``).
    public var encodedData: Data {
        get throws { try finishEncoding() }
    }

    /// The archive as a property-list value (the envelope), finishing encoding: the finished
    /// bytes read back (the archiver lays objects out as it goes and keeps no tree of them).
    public func finishedPropertyList() throws -> PropertyListValue {
        let data = try finishEncoding()
        do {
            return try PropertyList.decode(data, limits: .ownOutput)
        } catch let error as PropertyListError {
            throw KeyedArchiveError(.propertyList, "cannot read back the finished archive: \(error)", underlying: error)
        }
    }

    // MARK: References

    /// `object` (a class instance of type `objectType`) as a ``KeyedArchiving`` value, if it is
    /// one. An array of objects is mostly of one class: once an instance of a class has been
    /// found to conform, instances of that very class are cast to it, a check of the class,
    /// where the cast to the protocol looks the conformance up (about 800 instructions an
    /// element of W2's root array, of the 2,100 this function took).
    private func keyedArchiving(_ object: Any, of objectType: Any.Type) -> (any KeyedArchiving)? {
        if let known = lastArchivingClass, known.type == ObjectIdentifier(objectType), let value = known.cast(object) {
            return value
        }
        guard let value = object as? any KeyedArchiving else { return nil }
        lastArchivingClass = (ObjectIdentifier(objectType), Self.cast(toTheClassOf: value))
        return value
    }

    /// A cast from `Any` to the class `T` of `instance` (opened from the existential).
    private static func cast<T: KeyedArchiving>(toTheClassOf instance: T) -> (Any) -> (any KeyedArchiving)? {
        { $0 as? T }
    }

    /// What ``reference(for:)`` asks of a value type that is not a class: two conformance
    /// lookups, about 330 instructions each, made once per type and archiver (an archive of
    /// nested `[Any]` arrays made one per element before).
    private struct ValueTypeFacts {
        /// An `Optional`, to unwrap.
        var isOptional: Bool
        /// An array of ``KeyedArchiving`` instances (`[Person]`, a W2 root array), whose
        /// elements are taken as they are: the `[Any]` path converts the array to `[Any]` and
        /// casts every element back, about 640 instructions an element.
        var archivingArray: (any KeyedArchivingArray.Type)?
    }

    /// The facts of the value types met so far (a few: later ones are looked up every time).
    private func facts(for type: Any.Type) -> ValueTypeFacts {
        let id = ObjectIdentifier(type)
        for entry in typeFacts where entry.type == id { return entry.facts }
        let facts = ValueTypeFacts(isOptional: type is any OptionalProtocol.Type, archivingArray: type as? any KeyedArchivingArray.Type)
        if typeFacts.count < 8 { typeFacts.append((id, facts)) }
        return facts
    }

    /// The UID for any value the archiver can store, queuing its contents for encoding.
    package func reference(for object: Any?) throws -> UInt32 {
        guard var object = object else { return 0 }
        // `flattenOptional` inlined, so that its test of the type serves both: class instances
        // are never optionals, and an optional hidden in `Any` is unwrapped (all the way).
        var objectType = type(of: object)
        var isClassInstance = objectType is AnyObject.Type
        var facts = isClassInstance ? nil : facts(for: objectType)
        if facts?.isOptional == true, let optional = object as? any OptionalProtocol {
            guard let flattened = optional.flattened else { return 0 }
            object = flattened
            objectType = type(of: object)
            isClassInstance = objectType is AnyObject.Type
            facts = isClassInstance ? nil : self.facts(for: objectType)
        }
        // Class casts are tried only on class instances: with Foundation loaded, a failing cast
        // of an Array to a class type bridges the whole array to NSArray first.
        if isClassInstance {
            if let value = keyedArchiving(object, of: objectType) { return reference(forObject: value) }
            if let value = object as? ArchivedObject {
                let (uid, isNew) = table.uidOrReserve(for: value)
                if isNew { queue.append(.archived(uid, value)) }
                return uid
            }
            if let classType = objectType as? AnyObject.Type, let uid = try foundationObjectUID(object, of: classType) { return uid }
        }
        // An array of a ``KeyedArchiving`` class matches none of the casts below before `[Any]`,
        // which would convert it element by element.
        if let arrayType = facts?.archivingArray, let objects = arrayType.archivingElements(of: object) {
            let uid = table.reserveUID()
            queue.append(.objectArray(uid, objects))
            return uid
        }
        switch object {
        case let value as PropertyListValue:
            return try reference(forPropertyList: value)
        case let value as String: return table.leafUID(string: value)
        case let value as Substring: return table.leafUID(string: String(value))
        case let value as Bool: return table.leafUID(.bool(value))
        case let value as Int: return table.leafUID(PropertyListValue(value))
        case let value as Int64: return table.leafUID(PropertyListValue(value))
        case let value as Int32: return table.leafUID(PropertyListValue(Int64(value)))
        case let value as Int16: return table.leafUID(PropertyListValue(Int64(value)))
        case let value as Int8: return table.leafUID(PropertyListValue(Int64(value)))
        case let value as UInt: return table.leafUID(PropertyListValue(UInt64(value)))
        case let value as UInt64: return table.leafUID(PropertyListValue(value))
        case let value as UInt32: return table.leafUID(PropertyListValue(UInt64(value)))
        case let value as UInt16: return table.leafUID(PropertyListValue(UInt64(value)))
        case let value as UInt8: return table.leafUID(PropertyListValue(UInt64(value)))
        case let value as Double: return table.leafUID(PropertyListValue(value))
        case let value as Float: return table.leafUID(PropertyListValue(value))
        case let value as Data: return table.leafUID(.data(value))
        case let value as Date: return try dateUID(value)
        case let value as URL:
            let uid = table.reserveUID()
            queue.append(.url(uid, value))
            return uid
        case let value as UUID: return uuidUID(value)
        case let value as Decimal: return decimalUID(value)
        case is ArchivedNull: return nullUID()
        case let value as ArchivedOrderedSet:
            let uid = table.reserveUID()
            queue.append(.orderedSet(uid, value.elements))
            return uid
        case let value as [Any]:
            let uid = table.reserveUID()
            queue.append(.array(uid, value))
            return uid
        case let value as [AnyHashable: Any]:
            let uid = table.reserveUID()
            queue.append(.dictionary(uid, value.map { ($0.key.base, $0.value) }))
            return uid
        case let value as Set<AnyHashable>:
            let uid = table.reserveUID()
            queue.append(.set(uid, value.map(\.base)))
            return uid
        default:
            throw KeyedArchiveError(.unsupportedValue, "cannot archive a value of type \(type(of: object))")
        }
    }

    /// Throws `lengthLimitExceeded` when the archive of the plain property list `value` would
    /// be longer than `budget`, before archiving it (`karchive archive` passes its output
    /// budget, as `convert` and `print` do).
    ///
    /// A container the input's binary form shares by reference (a 139-byte file can nest 24
    /// arrays that each hold the next twice) is a new NSArray or NSDictionary at every use, so
    /// the archive grows with the containers reached, not with the file, and the archiver holds
    /// all of them before it writes: 16 million arrays, gigabytes of memory. This walks the
    /// value as the archiver will, depth first, keeping only containers on its stack, and stops
    /// as soon as a lower bound of the archive's length passes the budget (leaves are stored
    /// once, so they add nothing):
    /// - binary: each container is at least three objects (its dictionary of two entries or
    ///   three, its member list, and the UID object of its `$objects` entry): 4 + 5r + 3o bytes
    ///   with references r and offsets o bytes wide, widths at least those the counts so far
    ///   need, and r for each member reference;
    /// - XML: at least 100 bytes a container (its `<dict>`, `$class` and list elements) and 50
    ///   a member reference (a `<dict><key>CF$UID</key><integer>` element on lines of its own).
    /// `ArchivedLengthBoundTests` checks both against real archives.
    package static func checkArchivedLength(of value: PropertyListValue, format: PropertyListFormat, budget: OutputBudget) throws {
        var containers = 0
        var references = 0
        func bound() -> Int {
            switch format {
            case .xml:
                return containers &* 100 &+ references &* 50
            case .binary, .openStep:
                let referenceWidth = BinaryPropertyListObjects.byteCount(UInt64(3 &* containers))
                let withoutOffsets = containers &* (4 &+ 5 &* referenceWidth) &+ references &* referenceWidth
                return withoutOffsets &+ 3 &* containers &* BinaryPropertyListObjects.byteCount(UInt64(withoutOffsets))
            }
        }
        func isContainer(_ value: PropertyListValue) -> Bool {
            switch value {
            case .array, .set, .dictionary: true
            case .string, .integer, .real, .bool, .date, .data, .uid, .null: false
            }
        }
        // The counts are of values in memory, far from overflowing, and the budget stops them
        // first (wrapping arithmetic).
        var pending: [PropertyListValue] = isContainer(value) ? [value] : []
        while let next = pending.popLast() {
            switch next {
            case .array(let members), .set(let members):
                containers &+= 1
                references &+= members.count
                for member in members where isContainer(member) { pending.append(member) }
            case .dictionary(let dictionary):
                containers &+= 1
                references &+= 2 &* dictionary.count
                for entry in dictionary.entries where isContainer(entry.value) { pending.append(entry.value) }
            case .string, .integer, .real, .bool, .date, .data, .uid, .null:
                continue
            }
            try budget.check(bound())
        }
    }

    /// The UID of a Foundation object that no Swift cast below recognizes as it should:
    /// an `NSNumber` (see ``foundationNumber(_:kind:)``), `NSNull`, and `NSOrderedSet`, which
    /// bridge to no Swift type. `nil` for any other class instance (`NSString`, `NSArray`, ...:
    /// their casts below are right). An `NSDecimalNumber` is archived as its own class
    /// (mantissa, exponent), as Foundation does: as a number it would be rounded.
    private func foundationObjectUID(_ object: Any, of objectType: AnyObject.Type) throws -> UInt32? {
        let kind = foreignClassKind(of: objectType)
        switch kind {
        case .boolean, .number:
            return foundationNumber(object, kind: kind).map { table.leafUID($0) }
        case .null:
            return nullUID()
        case .orderedSet:
            guard let members = object as? any Sequence else { return nil }
            let uid = table.reserveUID()
            queue.append(.orderedSet(uid, anyElements(of: members)))
            return uid
        case .decimalNumber:
            // Its `Decimal` (Foundation bridges one), written as Apple writes the class.
            guard let decimal = object as? Decimal else {
                throw KeyedArchiveError(.unsupportedValue, "cannot archive an NSDecimalNumber that gives no Decimal")
            }
            return decimalUID(decimal)
        case .other:
            return nil
        }
    }

    /// The Foundation classes ``foundationObjectUID(_:of:)`` tells apart.
    private enum ForeignClassKind {
        case boolean, number, decimalNumber, null, orderedSet, other
    }

    /// A class instance's ``ForeignClassKind``, found from the first Foundation class in its
    /// superclass chain (Apple's concrete classes are private subclasses, `__NSCFNumber`,
    /// `__NSOrderedSetI`) and remembered for a few classes: a class name is a string made at
    /// each call, and a Foundation graph (a `PropertyListSerialization` result) is thousands
    /// of instances of a handful of classes.
    private func foreignClassKind(of objectType: AnyObject.Type) -> ForeignClassKind {
        let id = ObjectIdentifier(objectType)
        for entry in foreignClassKinds where entry.type == id { return entry.kind }
        var kind = ForeignClassKind.other
        var current: AnyClass? = objectType
        chain: while let someClass = current {
            switch Self.foundationClassName(someClass) {
            case "__NSCFBoolean"?: kind = .boolean
            case "NSDecimalNumber"?: kind = .decimalNumber
            case "NSNumber"?: kind = .number
            case "NSNull"?: kind = .null
            case "NSOrderedSet"?: kind = .orderedSet
            default:
                current = _getSuperclass(someClass)
                continue chain
            }
            break chain
        }
        if foreignClassKinds.count < 16 { foreignClassKinds.append((id, kind)) }
        return kind
    }

    /// A class's name when Foundation (or Objective-C) defines it: `NSNumber` for
    /// swift-corelibs-foundation's `Foundation.NSNumber` and for Apple's `NSNumber`; `nil` for
    /// a class of another Swift module (a user's own `MyApp.NSNull` is not Foundation's).
    private static func foundationClassName(_ someClass: AnyClass) -> Substring? {
        let name = _typeName(someClass, qualified: true)
        for prefix in ["Foundation.", "__C."] where name.hasPrefix(prefix) { return name.dropFirst(prefix.count) }
        return name.utf8.contains(UInt8(ascii: ".")) ? nil : name[...]
    }

    /// The number a Foundation `NSNumber` holds.
    ///
    /// Swift's casts cannot tell an NSNumber's type: `NSNumber(value: 1) as? Bool` succeeds
    /// (any 0 or 1 converts), and so does `NSNumber(value: true) as? Int`, so the switch of
    /// ``reference(for:)`` archived every integer 0 and 1 (from `PropertyListSerialization`,
    /// say) as a boolean. Booleans are a class of their own (`__NSCFBoolean`, on Apple
    /// platforms and in swift-corelibs-foundation alike); any other number is the first of
    /// `Int64`, `UInt64` and `Double` that holds it exactly, a negative zero a real. Without
    /// Foundation's `objCType`, an integral real (`NSNumber(value: 2.0)`) is written as the
    /// integer it equals and a `Float` as the 8-byte real of its value.
    private func foundationNumber(_ object: Any, kind: ForeignClassKind) -> PropertyListValue? {
        if kind == .boolean, let value = object as? Bool { return .bool(value) }
        if let value = object as? Int64 {
            if value == 0, let real = object as? Double, real.sign == .minus { return PropertyListValue(real) }
            return PropertyListValue(value)
        }
        if let value = object as? UInt64 { return PropertyListValue(value) }
        if let value = object as? Double { return PropertyListValue(value) }
        return nil
    }

    /// A plain property list as Foundation objects: arrays → NSArray, dictionaries →
    /// NSDictionary, sets → NSSet, dates → NSDate, null → NSNull, leaves inline.
    private func reference(forPropertyList value: PropertyListValue) throws -> UInt32 {
        switch value {
        case .string, .integer, .real, .bool, .data: return table.leafUID(value)
        case .date(let date): return try dateUID(date)
        case .null: return nullUID()
        case .uid(let uid):
            throw KeyedArchiveError(.unsupportedValue, "a plain property list to archive cannot hold UIDs (found UID \(uid))")
        case .array(let elements):
            let uid = table.reserveUID()
            queue.append(.plistArray(uid, elements, set: false))
            return uid
        case .set(let elements):
            let uid = table.reserveUID()
            queue.append(.plistArray(uid, elements, set: true))
            return uid
        case .dictionary(let dictionary):
            let uid = table.reserveUID()
            queue.append(.plistDictionary(uid, dictionary))
            return uid
        }
    }

    /// An NSDate. A non-finite time is refused: the unarchivers refuse it (see
    /// `ArchiveDocument.dateValue(ofObject:path:)`), and an archive must read back.
    private func dateUID(_ date: Date) throws -> UInt32 {
        guard date.timeIntervalSinceReferenceDate.isFinite else {
            throw KeyedArchiveError(.unsupportedValue, "cannot archive a date whose time is \(date.timeIntervalSinceReferenceDate)")
        }
        var fields = ArchiveObjectFields(classUID: table.classUID(chain: FoundationClassNames.dateChain))
        fields.set(PropertyListValue(date.timeIntervalSinceReferenceDate), forKey: FoundationClassNames.timeKey)
        return table.valueObjectUID(fields.value)
    }

    private func uuidUID(_ uuid: UUID) -> UInt32 {
        var fields = ArchiveObjectFields(classUID: table.classUID(chain: FoundationClassNames.uuidChain))
        let bytes = withUnsafeBytes(of: uuid.uuid) { Data($0) }
        fields.set(.data(bytes), forKey: FoundationClassNames.uuidBytesKey)
        return table.valueObjectUID(fields.value)
    }

    /// An NSDecimalNumber, as Apple's archiver writes one (``DecimalNumberFields``).
    private func decimalUID(_ decimal: Decimal) -> UInt32 {
        var fields = ArchiveObjectFields(classUID: table.classUID(chain: DecimalNumberFields.classChain))
        for (key, value) in DecimalNumberFields(decimal).archivedFields { fields.set(value, forKey: key) }
        return table.valueObjectUID(fields.value)
    }

    /// The UID of a collection's member: a nil (`[1, nil] as [Any?]`) is the archive's NSNull,
    /// as Foundation bridges it into an NSArray or NSDictionary. A collection cannot hold nil
    /// (UID 0): the unarchivers refuse one that does, and NSKeyedUnarchiver drops the element
    /// or, in an NSDictionary, makes one that crashes when read.
    private func memberReference(for element: Any?) throws -> UInt32 {
        let uid = try reference(for: element)
        return uid != 0 ? uid : nullUID()
    }

    private func nullUID() -> UInt32 {
        table.valueObjectUID(ArchiveObjectFields(classUID: table.classUID(chain: FoundationClassNames.nullChain)).value)
    }

    // MARK: The work queue

    /// Encodes the objects queued so far. Each top-level encode calls it before it returns,
    /// so that objects are archived as they are when they are passed in (Foundation calls
    /// `encode(with:)` during the encode call; an object changed later used to be archived
    /// changed) and their errors are thrown by that call. A failure spends the archiver.
    private func encodeQueuedObjects() throws {
        do {
            try drain()
        } catch {
            failure = error
            table.abandon()
            throw error
        }
    }

    private func drain() throws {
        while queueIndex < queue.count {
            let job = queue[queueIndex]
            queueIndex += 1
            do { try run(job) } catch { throw Self.error(error, at: location(of: job)) }
        }
        // Kept: every top-level encode drains the queue.
        queue.removeAll(keepingCapacity: true)
        queueIndex = 0
    }

    /// Where a job's entry is, for errors: `$objects[12] (Person)`.
    private func location(of job: Job) -> String {
        let (uid, className): (UInt32, String)
        switch job {
        case .object(let id, let queued): (uid, className) = (id, classChain(for: queued.type)[0])
        case .archived(let id, let object): (uid, className) = (id, object.classDescription.chain.first ?? "?")
        case .array(let id, _), .objectArray(let id, _), .plistArray(let id, _, set: false): (uid, className) = (id, "NSArray")
        case .set(let id, _), .plistArray(let id, _, set: true): (uid, className) = (id, "NSSet")
        case .orderedSet(let id, _): (uid, className) = (id, "NSOrderedSet")
        case .dictionary(let id, _), .plistDictionary(let id, _): (uid, className) = (id, "NSDictionary")
        case .url(let id, _): (uid, className) = (id, "NSURL")
        }
        return "$objects[\(uid)] (\(className))"
    }

    /// `error` with `location` (a key, `$top.key` or `$objects[N] (Class)`) in front of its
    /// path, when it is an archive error.
    private static func error(_ error: any Error, at location: String) -> any Error {
        guard var error = error as? KeyedArchiveError else { return error }
        error.path = error.path.isEmpty ? location : location + " " + error.path
        return error
    }

    private func run(_ job: Job) throws {
        switch job {
        case .object(let uid, let queued):
            let objectType = queued.type
            let typeID = ObjectIdentifier(objectType)
            let classUID: UInt32
            let capacity: Int
            if let last = lastClass, last.type == typeID {
                (classUID, capacity) = (last.uid, last.fieldCount)
            } else if let known = classUIDs[typeID] {
                (classUID, capacity) = known
            } else {
                classUID = table.classUID(chain: classChain(for: objectType))
                capacity = 1
            }
            current.begin(classKey: classKey, classUID: classUID, capacity: capacity)
            isInObject = true
            currentUID = uid
            defer {
                isInObject = false
                currentUID = 0
            }
            let changesBefore = classNameChanges
            try objectType.encode(instanceAt: queued.address, with: self)
            current.withFields { table.setObject(fields: $0, array: nil, at: uid) }
            if classNameChanges == changesBefore {
                if current.count != capacity { classUIDs[typeID] = (classUID, current.count) }
                lastClass = (typeID, classUID, current.count)
            }
        case .archived(let uid, let object):
            let description = object.classDescription
            var fields = ArchiveObjectFields(
                classUID: table.classUID(chain: description.chain, hints: description.hints.isEmpty ? nil : description.hints))
            for field in object.fields where field.key != ArchiveKeys.classReference {
                fields.setStored(try value(for: field.value), forStoredKey: field.key)
            }
            table.setObject(fields.value, at: uid)
        case .array(let uid, let elements):
            try storeCollection(uid, chain: FoundationClassNames.arrayChain, elements: elements, reference: memberReference(for:))
        case .objectArray(let uid, let objects):
            storeCollection(uid, chain: FoundationClassNames.arrayChain) { references in
                objects.withElements { elements in
                    references.reserveCapacity(elements.count)
                    table.reserveIdentities(elements.count)
                    guard let addresses = elements.baseAddress.map(UnsafeRawPointer.init) else { return }
                    for index in elements.indices {
                        table.prefetchIdentity(ofElement: index, in: addresses, count: elements.count)
                        references.append(.uid(reference(forElement: elements[index], of: objects.elementType)))
                    }
                }
            }
        case .set(let uid, let elements):
            try storeCollection(uid, chain: FoundationClassNames.setChain, elements: elements, reference: memberReference(for:))
        case .orderedSet(let uid, let elements):
            // Apple writes NSOrderedSet with NS.object.N keys (Darwin archive OrderedSetTest).
            var fields = ArchiveObjectFields(classUID: table.classUID(chain: FoundationClassNames.orderedSetChain))
            for (index, element) in elements.enumerated() {
                fields.set(.uid(try memberReference(for: element)), forKey: FoundationClassNames.objectPrefix + String(index))
            }
            table.setObject(fields.value, at: uid)
        case .dictionary(let uid, let entries):
            var fields = ArchiveObjectFields(classUID: table.classUID(chain: FoundationClassNames.dictionaryChain))
            var keys: [PropertyListValue] = []
            var values: [PropertyListValue] = []
            keys.reserveCapacity(entries.count)
            values.reserveCapacity(entries.count)
            for (key, value) in entries {
                keys.append(.uid(try memberReference(for: key)))
                values.append(.uid(try memberReference(for: value)))
            }
            fields.set(.array(keys), forKey: FoundationClassNames.keysKey)
            fields.set(.array(values), forKey: FoundationClassNames.objectsKey)
            table.setObject(fields.value, at: uid)
        case .plistArray(let uid, let elements, let isSet):
            try storeCollection(
                uid, chain: isSet ? FoundationClassNames.setChain : FoundationClassNames.arrayChain, elements: elements,
                reference: reference(forPropertyList:))
        case .plistDictionary(let uid, let dictionary):
            var fields = ArchiveObjectFields(classUID: table.classUID(chain: FoundationClassNames.dictionaryChain))
            var keys: [PropertyListValue] = []
            var values: [PropertyListValue] = []
            for entry in dictionary.entries {
                keys.append(.uid(try reference(for: entry.key)))
                values.append(.uid(try reference(for: entry.value)))
            }
            fields.set(.array(keys), forKey: FoundationClassNames.keysKey)
            fields.set(.array(values), forKey: FoundationClassNames.objectsKey)
            table.setObject(fields.value, at: uid)
        case .url(let uid, let url):
            var fields = ArchiveObjectFields(classUID: table.classUID(chain: FoundationClassNames.urlChain))
            if let base = url.baseURL {
                fields.set(.uid(try reference(for: base)), forKey: FoundationClassNames.baseKey)
                fields.set(.uid(table.leafUID(string: url.relativeString)), forKey: FoundationClassNames.relativeKey)
            } else {
                fields.set(.uid(0), forKey: FoundationClassNames.baseKey)
                fields.set(.uid(table.leafUID(string: url.absoluteString)), forKey: FoundationClassNames.relativeKey)
            }
            table.setObject(fields.value, at: uid)
        }
    }

    /// Stores an NSArray or NSSet (`chain`) at `uid` whose `NS.objects` are the UIDs `reference`
    /// gives its elements.
    @inline(__always)
    private func storeCollection<Element>(
        _ uid: UInt32, chain: [String], elements: [Element], reference: (Element) throws -> UInt32
    ) rethrows {
        try storeCollection(uid, chain: chain) { references in
            references.reserveCapacity(elements.count)
            for element in elements { references.append(.uid(try reference(element))) }
        }
    }

    /// Stores the collection at `uid` whose element references `appendReferences` appends.
    /// The class is looked up first: its description's UID comes before the elements'.
    @inline(__always)
    private func storeCollection(
        _ uid: UInt32, chain: [String], appendReferences: (inout [PropertyListValue]) throws -> Void
    ) rethrows {
        var fields = ArchiveObjectFields(classUID: table.classUID(chain: chain))
        var references: [PropertyListValue] = []
        try appendReferences(&references)
        fields.set(.array(references), forKey: FoundationClassNames.objectsKey)
        table.setObject(fields.value, at: uid)
    }

    /// The stored form of an ``ArchivedField``: references become UIDs.
    private func value(for field: ArchivedField) throws -> PropertyListValue {
        switch field {
        case .inline(let value): return value
        case .object(let object): return .uid(try reference(for: object))
        case .array(let items): return .array(try items.map { try value(for: $0) })
        case .set(let items): return .set(try items.map { try value(for: $0) })
        case .dictionary(let entries):
            return .dictionary(PropertyListDictionary(try entries.map { ($0.key, try value(for: $0.value)) }))
        }
    }
}

/// `Optional<Any>.some(nil)` hidden inside `Any` is still nil.
private protocol OptionalProtocol {
    var flattened: Any? { get }
}

extension Optional: OptionalProtocol {
    fileprivate var flattened: Any? {
        switch self {
        case .none: nil
        case .some(let wrapped): flattenOptional(wrapped)
        }
    }
}

/// A sequence's elements as `[Any]`, in order (the sequence opened from `any Sequence`).
private func anyElements<Members: Sequence>(of members: Members) -> [Any] {
    members.map { $0 as Any }
}

package func flattenOptional(_ value: Any?) -> Any? {
    guard let value else { return nil }
    // Class instances are never optionals: skip the protocol conformance test for them.
    if type(of: value) is AnyObject.Type { return value }
    // A metatype check first: cheaper than an existential cast, and never bridges.
    guard type(of: value) is any OptionalProtocol.Type, let optional = value as? any OptionalProtocol else { return value }
    return optional.flattened
}

/// Arrays whose elements are instances of a ``KeyedArchiving`` class, archived as NSArray with
/// no cast per element (see ``KeyedArchiver``'s `ValueTypeFacts`).
protocol KeyedArchivingArray {
    /// `value`, an array of this type, kept typed until its job runs; `nil` when `value` is
    /// not of this type.
    static func archivingElements(of value: Any) -> ObjectArrayElements?
}

/// An array of ``KeyedArchiving`` instances queued for encoding, kept as its own type: copied
/// into `[any KeyedArchiving]`, every element was retained, and released again with the copy.
struct ObjectArrayElements {
    /// The array's static element type.
    let elementType: any KeyedArchiving.Type
    /// Calls its argument with the elements, unretained: the elements of a class-typed array
    /// are single references, laid out as `Unmanaged` ones are (an existential, which is wider,
    /// cannot be the element type: it does not conform to ``KeyedArchiving``). Read so, they
    /// are walked by non-generic code; walked as the generic `Element`, each element's read
    /// allocated, and read as `AnyObject`, each was retained and released.
    let withElements: ((UnsafeBufferPointer<Unmanaged<AnyObject>>) -> Void) -> Void
}

extension Array: KeyedArchivingArray where Element: KeyedArchiving {
    static func archivingElements(of value: Any) -> ObjectArrayElements? {
        guard let array = value as? [Element] else { return nil }
        return ObjectArrayElements(elementType: Element.self) { body in
            array.withUnsafeBufferPointer { elements in elements.withMemoryRebound(to: Unmanaged<AnyObject>.self, body) }
        }
    }
}

extension KeyedArchiving {
    /// Runs ``encode(with:)`` on the instance of this class at `address` without retaining it.
    /// The caller keeps it alive (the keyed archiver's table holds every queued object).
    fileprivate static func encode(instanceAt address: UnsafeMutableRawPointer, with archiver: KeyedArchiver) throws {
        try Unmanaged<Self>.fromOpaque(address)._withUnsafeGuaranteedRef { try $0.encode(with: archiver) }
    }
}
