#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The reader side of an archive: a validated envelope with checked access to `$objects`.
///
/// Parsing is tolerant where real archives vary and strict where a reader could be misled:
/// - `$archiver` must be a string ending in `KeyedArchiver` (Apple's `NSKeyedArchiver`, and
///   subclasses that write their own name such as `NRKeyedArchiver`); anything else, including
///   `NSArchiver`, is rejected.
/// - `$version` must be the integer 100000.
/// - `$top` must be a dictionary with string keys (any keys: `root`, `$0`, custom names).
/// - `$objects` must be an array, at most ``DecodingLimits/maximumObjectCount`` long.
///
/// Access to objects is by UID with range checks; class descriptions are validated and cached.
/// Errors carry the path given by the caller.
package final class ArchiveDocument {
    /// The `$archiver` name.
    package let archiverName: String
    /// `$top`, keys as stored (escaped), in file order.
    package let top: PropertyListDictionary
    /// `$objects`, when the whole archive was read as one tree (empty when it is read by index).
    private let tree: [PropertyListValue]
    /// The reader of a binary archive read by index, where its `$objects` references are, and
    /// the key objects of the file already matched (shared by every object's fields read in
    /// place; made only for archives read by index).
    private let byIndex: ByIndex?
    private typealias ByIndex = (reader: BinaryPropertyListObjectReader, objects: BinaryPropertyListObjectReader.ContainerSpan, keyCache: InPlaceKeyCache)
    /// A lookup in the file read by index (over `$objects` until it is restarted), copied for
    /// each object read in place: the copy's two retains are the ones the result needs, where
    /// binding the reader and the key cache out of `byIndex` retained each twice.
    private let lookupTemplate: InPlaceLookup?
    /// The number of entries in `$objects`.
    package let objectCount: Int
    /// The length of the bytes the archive was read from (0 when made from a property list):
    /// with ``objectCount``, the input's size that ``DecodingLimits/maximumExpansionFactor``
    /// scales by.
    package private(set) var inputByteCount = 0
    /// The limits in force.
    package let limits: DecodingLimits
    /// The class descriptions read, by UID.
    @exclusivity(unchecked) private var classCache = UIDValues<ArchivedClassDescription>()
    /// Whether class descriptions of the usual shape are read where they lie in the file
    /// (``classDescriptionInPlace(_:)``); tests turn it off to hold that path to the general one.
    package var readsClassDescriptionsInPlace = true
    /// Strings and data of ``sharedLeafBytes`` bytes or more already read by index, by UID, so
    /// that every reference to one shares a single copy as it did in the tree (a small archive
    /// referring a million times to one large entry would otherwise allocate a copy at each).
    @exclusivity(unchecked) private var sharedLeaves = UIDValues<PropertyListValue>()
    /// Below this, a string or data entry is read again at each reference: the copy costs
    /// about what a cache entry would, and each reference holds at least as much (a result
    /// element, 32 bytes or more).
    private static let sharedLeafBytes = 64

    /// Reads and validates an archive from bytes (binary or XML, detected).
    ///
    /// With `byIndex`, a binary archive is not read as a whole: only its envelope is, and each
    /// `$objects` entry is read when ``object(_:path:)`` asks for it (for readers that visit
    /// each entry about once; see ``BinaryPropertyListObjectReader``). Other formats are read
    /// whole either way.
    package convenience init(data: Data, limits: DecodingLimits = .default, byIndex: Bool = false) throws(KeyedArchiveError) {
        if byIndex, PropertyList.detectFormat(data) == .binary {
            try self.init(binary: { try BinaryPropertyListObjectReader(data, limits: limits) }, limits: limits)
            inputByteCount = data.count
            return
        }
        let value: PropertyListValue
        do {
            value = try PropertyList.decode(data, limits: limits)
        } catch let error as PropertyListError {
            throw KeyedArchiveError(.propertyList, "not a readable property list: \(error)", underlying: error)
        } catch {
            throw KeyedArchiveError(.propertyList, "not a readable property list: \(error)")
        }
        try self.init(propertyList: value, limits: limits)
        inputByteCount = data.count
    }

    /// Validates the envelope of an already decoded property list.
    package convenience init(propertyList: PropertyListValue, limits: DecodingLimits = .default) throws(KeyedArchiveError) {
        guard case .dictionary(let envelope) = propertyList else {
            throw KeyedArchiveError(.invalidEnvelope, "an archive is a dictionary, found \(propertyList.typeName)")
        }
        try self.init(envelope: envelope, byIndex: nil, limits: limits)
    }

    /// Reads a binary archive by index from the caller's bytes, in place: the caller keeps them
    /// alive and unchanged until it calls ``close()`` (see
    /// ``withBinaryArchive(_:limits:notAnArchive:body:orElse:)``).
    package convenience init(borrowingBinary bytes: UnsafeRawBufferPointer, limits: DecodingLimits) throws(KeyedArchiveError) {
        try self.init(binary: { try BinaryPropertyListObjectReader(borrowing: bytes, limits: limits) }, limits: limits)
        inputByteCount = bytes.count
    }

    /// Runs `body` over the archive in `data`: a binary one read by index in place, from the
    /// `Data`'s own bytes (no copy) and closed when `body` returns, so that a decoder kept
    /// beyond it throws instead of reading freed memory; any other format through `orElse`.
    /// An envelope that is not a keyed archive's throws `notAnArchive` of the error.
    package static func withBinaryArchive<T>(
        _ data: Data, limits: DecodingLimits, notAnArchive: (KeyedArchiveError) -> any Error,
        body: (ArchiveDocument) throws -> T, orElse: () throws -> T
    ) throws -> T {
        guard PropertyList.detectFormat(data) == .binary else { return try orElse() }
        return try data.withUnsafeBytes { bytes in
            let document: ArchiveDocument
            do throws(KeyedArchiveError) {
                document = try ArchiveDocument(borrowingBinary: bytes, limits: limits)
            } catch {
                throw notAnArchive(error)
            }
            defer { document.close() }
            return try body(document)
        }
    }

    /// Ends reading a document that borrows its bytes (a no-op for others): every later read of
    /// the file throws.
    package func close() {
        byIndex?.reader.close()
    }

    /// Reads the envelope of a binary archive, leaving the `$objects` entries in the file.
    private convenience init(binary makeReader: () throws -> BinaryPropertyListObjectReader, limits: DecodingLimits) throws(KeyedArchiveError) {
        do {
            let reader = try makeReader()
            guard let root = try reader.dictionarySpan(ofObject: reader.topObject) else {
                let value = try reader.value(ofObject: reader.topObject)
                throw KeyedArchiveError(.invalidEnvelope, "an archive is a dictionary, found \(value.typeName)")
            }
            // The envelope with `$objects` as an empty array when it is one: its entries stay
            // where they are. Anything else is read whole, for the same errors as a whole read.
            // `$top`, a small dictionary of UIDs, is read without the decoder when it can be.
            // Room for the four entries an envelope has, not for the count the file declares.
            var envelope = PropertyListDictionary()
            envelope.entries.reserveCapacity(Swift.min(root.count, 4))
            var objects: BinaryPropertyListObjectReader.ContainerSpan?
            for entry in 0..<root.count {
                let key = try reader.value(ofObject: try reader.keyObject(entry, of: root))
                let valueObject = try reader.valueObject(entry, of: root)
                if objects == nil, case .string(let name) = key, name.hasText(ArchiveKeys.objects),
                    let span = try reader.arraySpan(ofObject: valueObject)
                {
                    objects = span
                    envelope.entries.append((key, .array([])))
                } else if let flat = reader.flatDictionary(ofObject: valueObject) {
                    envelope.entries.append((key, .dictionary(flat)))
                } else {
                    envelope.entries.append((key, try reader.value(ofObject: valueObject)))
                }
            }
            try self.init(envelope: envelope, byIndex: objects.map { (reader, $0, InPlaceKeyCache(objectCount: reader.objectCount)) }, limits: limits)
        } catch let error as KeyedArchiveError {
            throw error
        } catch let error as PropertyListError {
            throw KeyedArchiveError(.propertyList, "not a readable property list: \(error)", underlying: error)
        } catch {
            throw KeyedArchiveError(.propertyList, "not a readable property list: \(error)")
        }
    }

    /// Validates the envelope; `$objects` is its entry, or when `byIndex` is given, that span
    /// of the file (the entry is then an empty placeholder).
    private init(
        envelope: PropertyListDictionary,
        byIndex: ByIndex?,
        limits: DecodingLimits
    ) throws(KeyedArchiveError) {
        guard let archiver = Self.value(ArchiveKeys.envelopeKeyStrings.archiver, in: envelope) else {
            throw KeyedArchiveError(.invalidEnvelope, "missing $archiver")
        }
        guard let archiverName = archiver.stringValue, Self.isKeyedArchiverName(archiverName) else {
            throw KeyedArchiveError(.invalidEnvelope, "$archiver \(Self.describe(archiver)) is not a keyed archiver")
        }
        guard let version = Self.value(ArchiveKeys.envelopeKeyStrings.version, in: envelope) else {
            throw KeyedArchiveError(.invalidEnvelope, "missing $version")
        }
        guard version.int64Value == Int64(ArchiveKeys.formatVersion) else {
            throw KeyedArchiveError(.unsupportedVersion, "$version \(Self.describe(version)) is not 100000")
        }
        guard let topValue = Self.value(ArchiveKeys.envelopeKeyStrings.top, in: envelope) else {
            throw KeyedArchiveError(.invalidEnvelope, "missing $top")
        }
        guard case .dictionary(let top) = topValue else {
            throw KeyedArchiveError(.invalidEnvelope, "$top is a \(topValue.typeName), expected a dictionary")
        }
        for entry in top.entries {
            // Told by the case: `stringValue` made a `String` of each key only to test it.
            if case .string = entry.key { continue }
            throw KeyedArchiveError(.invalidEnvelope, "$top has a \(entry.key.typeName) key; keys must be strings")
        }
        guard let objectsValue = Self.value(ArchiveKeys.envelopeKeyStrings.objects, in: envelope) else {
            throw KeyedArchiveError(.invalidEnvelope, "missing $objects")
        }
        guard case .array(let tree) = objectsValue else {
            throw KeyedArchiveError(.invalidEnvelope, "$objects is a \(objectsValue.typeName), expected an array")
        }
        let objectCount = byIndex?.objects.count ?? tree.count
        guard objectCount <= limits.maximumObjectCount, objectCount <= Int(UInt32.max) else {
            throw KeyedArchiveError(
                .objectLimitExceeded, "$objects has \(objectCount) entries, more than the limit \(limits.maximumObjectCount)")
        }
        self.archiverName = archiverName
        self.top = top
        self.tree = tree
        self.byIndex = byIndex
        self.lookupTemplate = byIndex.map { InPlaceLookup(reader: $0.reader, span: $0.objects, keyCache: $0.keyCache) }
        self.objectCount = objectCount
        self.limits = limits
    }

    /// The value of the first entry of `envelope` whose key is the string `probe`: the string
    /// subscript's own lookup, given a probe made once (the subscript makes one from its
    /// `String`, copying its bytes, at each lookup).
    private static func value(_ probe: PropertyListString, in envelope: PropertyListDictionary) -> PropertyListValue? {
        PropertyListDictionary.index(ofStringKey: probe, in: envelope.entries).flatMap { PropertyListDictionary.value(at: $0, in: envelope.entries) }
    }

    /// Whether an `$archiver` name ends in `KeyedArchiver`, as `hasSuffix` says. The bytes are
    /// compared first: when they end in the suffix after an ASCII byte (or nothing), its
    /// characters are those bytes and `hasSuffix` is true; anything else asks `hasSuffix`
    /// (canonically equivalent forms, such as a Kelvin sign for the K). `hasSuffix` alone was
    /// about 240 instructions of every archive read.
    private static func isKeyedArchiverName(_ name: String) -> Bool {
        let suffix = "KeyedArchiver"
        let endsInSuffix = name.utf8.withContiguousStorageIfAvailable { bytes in
            suffix.utf8.withContiguousStorageIfAvailable { wanted -> Bool in
                guard bytes.count >= wanted.count else { return false }
                let start = bytes.count &- wanted.count
                guard start == 0 || bytes[start &- 1] < 0x80 else { return false }
                guard let end = bytes.baseAddress, let suffix = wanted.baseAddress else { return false }
                return memcmp(end + start, suffix, wanted.count) == 0
            }
        }
        return endsInSuffix == true || name.hasSuffix(suffix)
    }

    /// The stored `$top` value for a user key (see ``ArchiveKeys/lookup(_:in:)``), if present.
    package func topValue(forKey key: String) -> PropertyListValue? {
        ArchiveKeys.lookup(key, in: top)
    }

    /// The `$top` keys as user keys (unescaped), in file order.
    package var topKeys: [String] {
        top.entries.compactMap { $0.key.stringValue.map(ArchiveKeys.unescape) }
    }

    /// `value` as a UID in range, or a typed error `expected UID` / `UID n out of range`.
    package func reference(_ value: PropertyListValue, path: @autoclosure () -> String) throws(KeyedArchiveError) -> UInt32 {
        guard case .uid(let uid) = value else {
            throw KeyedArchiveError(.invalidReference, "expected UID, found \(value.typeName)", path: path())
        }
        guard Int(uid) < objectCount else {
            throw KeyedArchiveError(
                .invalidReference, "UID \(uid) is out of range ($objects has \(objectCount) entries)", path: path())
        }
        return uid
    }

    /// The entry at a UID (range-checked).
    package func object(_ uid: UInt32, path: @autoclosure () -> String) throws(KeyedArchiveError) -> PropertyListValue {
        let index = Int(uid)
        guard index < objectCount else {
            throw KeyedArchiveError(
                .invalidReference, "UID \(uid) is out of range ($objects has \(objectCount) entries)", path: path())
        }
        // The reader alone is bound: binding the whole tuple retained and released the key
        // cache too, at every entry read.
        guard let reader = byIndex?.reader, let objects = byIndex?.objects else { return tree[index] }
        if let shared = sharedLeaves.value(at: uid) { return shared }
        let value = try Self.reading(path: path()) { () throws in
            try reader.value(ofObject: try reader.element(index, of: objects))
        }
        switch value {
        case .string(let string) where string.utf8Count >= Self.sharedLeafBytes: sharedLeaves.insert(value, at: uid)
        case .data(let data) where data.count >= Self.sharedLeafBytes: sharedLeaves.insert(value, at: uid)
        default: break
        }
        return value
    }

    /// The entry at `uid` when the archive is read by index and the entry is a string stored as
    /// ASCII, shorter than ``sharedLeafBytes`` (longer ones are shared through
    /// ``object(_:path:)``); `nil` otherwise, errors included (``object(_:path:)`` reads those
    /// entries, and reports them). No `PropertyListValue` is made: for the Codable decoder's
    /// string fields.
    @inline(__always)
    package func shortASCIIString(_ uid: UInt32) -> String? {
        // The reader is used where it is stored: bound to a local, it was retained and released
        // at every string field.
        guard Int(uid) < objectCount, let objects = byIndex?.objects,
            let object = try? byIndex?.reader.element(Int(uid), of: objects)
        else { return nil }
        return byIndex?.reader.asciiString(ofObject: object, maximumLength: Self.sharedLeafBytes - 1)
    }

    /// Calls `body` with the UIDs among the first `maximumEntries` values of the dictionary at
    /// `span` in the file read by index (nothing for an archive read whole), skipping anything
    /// else: for looking ahead (see
    /// ``BinaryPropertyListObjectReader/forEachUIDValue(of:maximumEntries:_:)``).
    @inline(__always)
    package func forEachUIDValue(ofFieldsAt span: BinaryPropertyListObjectReader.ContainerSpan, maximumEntries: Int, _ body: (UInt32) -> Void) {
        byIndex?.reader.forEachUIDValue(of: span, maximumEntries: maximumEntries, body)
    }

    /// Runs a read of the file, reporting a property-list error as a typed archive error at `path`.
    @inline(__always)
    package static func reading<T>(path: @autoclosure () -> String, _ body: () throws -> T) throws(KeyedArchiveError) -> T {
        do {
            return try body()
        } catch let error as KeyedArchiveError {
            throw error
        } catch let error as PropertyListError {
            throw KeyedArchiveError(.propertyList, "unreadable entry: \(error)", path: path(), underlying: error)
        } catch {
            throw KeyedArchiveError(.propertyList, "unreadable entry: \(error)", path: path())
        }
    }

    /// What the entry at a UID is: a leaf stored inline in `$objects`, or an object with a class.
    package enum Entry {
        /// A string, number, boolean, data or date stored directly (NSString, NSNumber, NSData;
        /// GNUstep stores NSDate as a plain date).
        case leaf(PropertyListValue)
        /// An object dictionary (with `$class`), its validated class description and the UID of
        /// that description (shared by all objects of the class, so a good cache key).
        case object(PropertyListDictionary, ArchivedClassDescription, classUID: UInt32)
    }

    /// Classifies the entry at a UID, validating `$class` and its description.
    /// UID 0 is not an entry (it means nil): callers check for it first.
    package func entry(_ uid: UInt32, path: @autoclosure () -> String) throws(KeyedArchiveError) -> Entry {
        switch try storedEntry(uid, path: path()) {
        case .leaf(let value):
            return .leaf(value)
        case .object(let fields, let classUID):
            let dictionary = try Self.reading(path: path()) { () throws in try fields.dictionary() }
            return .object(dictionary, try classDescription(classUID, path: "$objects[\(uid)] $class"), classUID: classUID)
        }
    }

    /// ``Entry`` without the class description: for readers that cache descriptions by
    /// `classUID` themselves and so need not copy one per object.
    package enum StoredEntry {
        /// A string, number, boolean, data or date stored directly.
        case leaf(PropertyListValue)
        /// An object's fields (in place when the archive is read by index) and the UID (in
        /// range) its `$class` names; the description there is not validated yet
        /// (``classDescription(_:path:)`` does that).
        case object(ArchiveFields, classUID: UInt32)
    }

    /// Classifies the entry at a UID like ``entry(_:path:)``, with the same errors, except that
    /// the class description is left to the caller (``classDescription(_:path:)`` with the path
    /// `$objects[uid] $class`).
    package func storedEntry(_ uid: UInt32, path: @autoclosure () -> String) throws(KeyedArchiveError) -> StoredEntry {
        // Object dictionaries of an archive read by index stay in the file; anything else is
        // read as a value.
        if let (lookup, classUID) = try objectInPlace(uid, path: path()) {
            return .object(.inPlace(InPlaceFields(lookup)), classUID: classUID)
        }
        let value = try object(uid, path: path())
        switch value {
        case .string, .integer, .real, .bool, .data, .date:
            return .leaf(value)
        case .dictionary(let dictionary):
            let classValue = dictionary[ArchiveKeys.classReference]
            return .object(.whole(dictionary), classUID: try classReference(classValue, uid: uid))
        default:
            throw KeyedArchiveError(
                .invalidObject, "a \(value.typeName) cannot be an entry of $objects", path: "$objects[\(uid)]")
        }
    }

    /// The fields of the object dictionary at a UID where they lie in the file, and the UID of
    /// its `$class` (checked as ``storedEntry(_:path:)`` checks it), when the archive is read by
    /// index and the entry is a dictionary; `nil` otherwise (``storedEntry(_:path:)`` then
    /// reads the entry as a value). The lookup's cursor is just past `$class`.
    @inline(__always)
    package func objectInPlace(_ uid: UInt32, path: @autoclosure () -> String) throws(KeyedArchiveError) -> (lookup: InPlaceLookup, classUID: UInt32)? {
        guard Int(uid) < objectCount, var lookup = lookupTemplate else { return nil }
        guard let classUID = try restartInPlace(&lookup, at: uid, path: path()) else { return nil }
        return (lookup, classUID)
    }

    /// ``objectInPlace(_:path:)`` on a lookup the caller keeps: makes `lookup` (one this document
    /// gave, or a copy of one) a lookup over the fields of the object dictionary at `uid` and
    /// returns the UID of its `$class`; `nil`, with `lookup` left over some other dictionary or
    /// as it was, when ``objectInPlace(_:path:)`` gives `nil`. A reader that keeps a lookup per
    /// nesting level restarts it in place: copying one out of the template retained the reader and
    /// the key cache, and storing it released the old ones (a twentieth of a W5 decode).
    @inline(__always)
    package func restartInPlace(_ lookup: inout InPlaceLookup, at uid: UInt32, path: @autoclosure () -> String) throws(KeyedArchiveError) -> UInt32? {
        guard Int(uid) < objectCount, let objects = byIndex?.objects else { return nil }
        let span = try Self.reading(path: path()) { () throws in
            try lookup.reader.dictionarySpan(ofObject: try lookup.reader.element(Int(uid), of: objects))
        }
        guard let span else { return nil }
        lookup.restart(at: span)
        let classValue = try Self.reading(path: "$objects[\(uid)]") { () throws in try lookup.value(forStoredKey: ArchiveKeys.classReference) }
        return try classReference(classValue, uid: uid)
    }

    /// Whether the entry at `uid` (in range) is a dictionary, from its marker alone, when the
    /// archive is read by index (no lookup is copied); nil otherwise or when it cannot be read.
    package func isDictionaryInPlace(_ uid: UInt32) -> Bool? {
        guard Int(uid) < objectCount, let byIndex, let index = try? byIndex.reader.element(Int(uid), of: byIndex.objects) else { return nil }
        // (Not `try?`: it would fold "not a dictionary" into "cannot be read".)
        do {
            return try byIndex.reader.dictionarySpan(ofObject: index) != nil
        } catch {
            return nil
        }
    }

    /// A lookup in the file when the archive is read by index, for ``restartInPlace(_:at:path:)``.
    package var inPlaceLookup: InPlaceLookup? { lookupTemplate }

    /// Whether the archive is read by index (its objects' fields can be read in place).
    package var isReadByIndex: Bool { lookupTemplate != nil }

    /// The UID (in range) of an object's `$class`, given the value stored under `$class`.
    @inline(__always)
    private func classReference(_ classValue: PropertyListValue?, uid: UInt32) throws(KeyedArchiveError) -> UInt32 {
        // The usual case here; the checks that throw out of line (inlined, their errors gave
        // every object read in place a large frame to set up).
        if case .uid(let classUID)? = classValue, Int(classUID) < objectCount { return classUID }
        return try checkedClassReference(classValue, uid: uid)
    }

    @inline(never)
    private func checkedClassReference(_ classValue: PropertyListValue?, uid: UInt32) throws(KeyedArchiveError) -> UInt32 {
        guard let classValue else {
            throw KeyedArchiveError(.invalidClass, "object dictionary has no $class", path: "$objects[\(uid)]")
        }
        return try reference(classValue, path: "$objects[\(uid)] $class")
    }

    /// The validated class description at a UID (cached: descriptions are shared).
    package func classDescription(_ uid: UInt32, path: @autoclosure () -> String) throws(KeyedArchiveError) -> ArchivedClassDescription {
        if let cached = classCache.value(at: uid) { return cached }
        guard uid != 0 else { throw KeyedArchiveError(.invalidClass, "$class is UID 0 (nil)", path: path()) }
        if readsClassDescriptionsInPlace, let description = classDescriptionInPlace(uid) {
            classCache.insert(description, at: uid)
            return description
        }
        let value = try object(uid, path: path())
        guard case .dictionary(let description) = value else {
            throw KeyedArchiveError(
                .invalidClass, "$class points at $objects[\(uid)], a \(value.typeName), not a class description", path: path())
        }
        if description[ArchiveKeys.classReference] != nil {
            throw KeyedArchiveError(
                .invalidClass, "$class points at $objects[\(uid)], an object with its own $class, not a class description",
                path: path())
        }
        guard let name = description[ArchiveKeys.className]?.stringValue else {
            throw KeyedArchiveError(.invalidClass, "class description $objects[\(uid)] has no string $classname", path: path())
        }
        var chain = [name]
        if let classes = description[ArchiveKeys.classes] {
            guard case .array(let names) = classes else {
                throw KeyedArchiveError(
                    .invalidClass, "$classes of $objects[\(uid)] is a \(classes.typeName), expected an array", path: path())
            }
            for item in names {
                guard let string = item.stringValue else {
                    throw KeyedArchiveError(.invalidClass, "$classes of $objects[\(uid)] holds a \(item.typeName)", path: path())
                }
                if !chain.contains(string) { chain.append(string) }
            }
        }
        var hints: [String] = []
        if let hintsValue = description[ArchiveKeys.classHints], case .array(let names) = hintsValue {
            hints = names.compactMap(\.stringValue)
        }
        let result = ArchivedClassDescription(name: name, chain: chain, hints: hints)
        classCache.insert(result, at: uid)
        return result
    }

    /// The longest class name and the most `$classes` names ``classDescriptionInPlace(_:)``
    /// reads; longer ones go the general way.
    private static let inPlaceNameLength = 128
    private static let inPlaceChainLength = 16

    /// ``classDescription(_:path:)`` read where the description lies in the file, for the
    /// shape archivers write: a dictionary of `$classname` (an ASCII string) and `$classes`
    /// (an array of ASCII strings), nothing else. `nil` for any other shape, regular or not,
    /// and for limits so tight that a whole read of the description could exceed them: the
    /// general path then reads it whole (and reports what is wrong), so both paths give the
    /// same description for every file. Reading the dictionary whole, as a value, and looking
    /// its keys up was about 7,000 instructions of a one-object unarchive (W1's default profile).
    private func classDescriptionInPlace(_ uid: UInt32) -> ArchivedClassDescription? {
        // A whole read of the largest description taken here: depth 2, at most 21 values and
        // 18 strings of at most 128 bytes.
        guard Int(uid) < objectCount, let reader = byIndex?.reader, let objects = byIndex?.objects,
            limits.maximumDepth >= 2, limits.maximumExpandedNodeCount >= 64, limits.maximumExpandedByteCount >= 4096,
            let object = try? reader.element(Int(uid), of: objects),
            let span = try? reader.dictionarySpan(ofObject: object), span.count <= 2
        else { return nil }
        var name: String?
        var classes: BinaryPropertyListObjectReader.ContainerSpan?
        for entry in 0..<span.count {
            guard let key = try? reader.keyObject(entry, of: span), let keyText = reader.asciiBytes(ofObject: key),
                let value = try? reader.valueObject(entry, of: span)
            else { return nil }
            if name == nil, Self.isStoredKey(keyText, ArchiveKeys.className) {
                guard let text = reader.asciiString(ofObject: value, maximumLength: Self.inPlaceNameLength) else { return nil }
                name = text
            } else if classes == nil, Self.isStoredKey(keyText, ArchiveKeys.classes) {
                guard let span = try? reader.arraySpan(ofObject: value), span.count <= Self.inPlaceChainLength else { return nil }
                classes = span
            } else {
                return nil
            }
        }
        guard let name else { return nil }
        var chain: [String] = []
        chain.reserveCapacity(classes.map { $0.count &+ 1 } ?? 1)
        chain.append(name)
        if let classes {
            for member in 0..<classes.count {
                guard let element = try? reader.element(member, of: classes),
                    let text = reader.asciiString(ofObject: element, maximumLength: Self.inPlaceNameLength)
                else { return nil }
                if !chain.contains(text) { chain.append(text) }
            }
        }
        return ArchivedClassDescription(name: name, chain: chain)
    }

    /// Whether the bytes of a key stored as ASCII are the text of `key`.
    @inline(__always)
    private static func isStoredKey(_ stored: UnsafeRawBufferPointer, _ key: String) -> Bool {
        InPlaceLookup.withUTF8(key) { $0.elementsEqual(stored) }
    }

    private static func describe(_ value: PropertyListValue) -> String {
        switch value {
        case .string(let string): "\"\(string.value)\""
        case .integer(let integer): integer.description
        default: "(a \(value.typeName))"
        }
    }
}

/// A class description read from an archive: `$classname`, the `$classes` chain (starting with
/// the class name itself) and any `$classhints`.
public struct ArchivedClassDescription: Sendable, Hashable, CustomStringConvertible {
    /// `$classname`.
    public var name: String
    /// The chain, most derived first, starting with ``name`` (duplicates dropped).
    public var chain: [String]
    /// `$classhints` (rare), as fallbacks after the chain.
    public var hints: [String]

    /// Creates a description; `chain` should start with `name`.
    public init(name: String, chain: [String], hints: [String] = []) {
        self.name = name
        self.chain = chain.first == name ? chain : [name] + chain
        self.hints = hints
    }

    /// The names to try, in order: the chain, then the hints.
    public var candidates: [String] { chain + hints.filter { !chain.contains($0) } }

    /// `$classname`.
    public var description: String { name }
}

/// Values by UID for a document's caches (class descriptions, shared leaves): the first kept
/// apart, the others in a dictionary made only for a second. Most archives have one class and
/// at most one large leaf, and a dictionary's first insert (its storage) was about 800-1,000
/// instructions of a one-object unarchive.
private struct UIDValues<Value> {
    private var first: (uid: UInt32, value: Value)?
    private var others: [UInt32: Value] = [:]

    /// The value at `uid`, if one was inserted.
    func value(at uid: UInt32) -> Value? {
        if let first, first.uid == uid { return first.value }
        if !others.isEmpty, let other = others[uid] { return other }
        return nil
    }

    /// Keeps `value` for `uid` (one not inserted before).
    mutating func insert(_ value: Value, at uid: UInt32) {
        if first == nil {
            first = (uid, value)
        } else {
            others[uid] = value
        }
    }
}
