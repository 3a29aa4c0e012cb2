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
    /// `$objects`.
    package let objects: [PropertyListValue]
    /// The limits in force.
    package let limits: DecodingLimits
    @exclusivity(unchecked) private var classCache: [UInt32: ArchivedClassDescription] = [:]

    /// Reads and validates an archive from bytes (binary or XML, detected).
    package convenience init(data: Data, limits: DecodingLimits = .default) throws(KeyedArchiveError) {
        let value: PropertyListValue
        do {
            value = try PropertyList.decode(data, limits: limits)
        } catch let error as PropertyListError {
            throw KeyedArchiveError(.propertyList, "not a readable property list: \(error)", underlying: error)
        } catch {
            throw KeyedArchiveError(.propertyList, "not a readable property list: \(error)")
        }
        try self.init(propertyList: value, limits: limits)
    }

    /// Validates the envelope of an already decoded property list.
    package init(propertyList: PropertyListValue, limits: DecodingLimits = .default) throws(KeyedArchiveError) {
        guard case .dictionary(let envelope) = propertyList else {
            throw KeyedArchiveError(.invalidEnvelope, "an archive is a dictionary, found \(propertyList.typeName)")
        }
        guard let archiver = envelope[ArchiveKeys.archiver] else {
            throw KeyedArchiveError(.invalidEnvelope, "missing $archiver")
        }
        guard let archiverName = archiver.stringValue, archiverName.hasSuffix("KeyedArchiver") else {
            throw KeyedArchiveError(.invalidEnvelope, "$archiver \(Self.describe(archiver)) is not a keyed archiver")
        }
        guard let version = envelope[ArchiveKeys.version] else {
            throw KeyedArchiveError(.invalidEnvelope, "missing $version")
        }
        guard version.int64Value == Int64(ArchiveKeys.formatVersion) else {
            throw KeyedArchiveError(.unsupportedVersion, "$version \(Self.describe(version)) is not 100000")
        }
        guard let topValue = envelope[ArchiveKeys.top] else {
            throw KeyedArchiveError(.invalidEnvelope, "missing $top")
        }
        guard case .dictionary(let top) = topValue else {
            throw KeyedArchiveError(.invalidEnvelope, "$top is a \(topValue.typeName), expected a dictionary")
        }
        for entry in top.entries where entry.key.stringValue == nil {
            throw KeyedArchiveError(.invalidEnvelope, "$top has a \(entry.key.typeName) key; keys must be strings")
        }
        guard let objectsValue = envelope[ArchiveKeys.objects] else {
            throw KeyedArchiveError(.invalidEnvelope, "missing $objects")
        }
        guard case .array(let objects) = objectsValue else {
            throw KeyedArchiveError(.invalidEnvelope, "$objects is a \(objectsValue.typeName), expected an array")
        }
        guard objects.count <= limits.maximumObjectCount, objects.count <= Int(UInt32.max) else {
            throw KeyedArchiveError(
                .objectLimitExceeded, "$objects has \(objects.count) entries, more than the limit \(limits.maximumObjectCount)")
        }
        self.archiverName = archiverName
        self.top = top
        self.objects = objects
        self.limits = limits
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
        guard Int(uid) < objects.count else {
            throw KeyedArchiveError(
                .invalidReference, "UID \(uid) is out of range ($objects has \(objects.count) entries)", path: path())
        }
        return uid
    }

    /// The entry at a UID (range-checked).
    package func object(_ uid: UInt32, path: @autoclosure () -> String) throws(KeyedArchiveError) -> PropertyListValue {
        let index = Int(uid)
        guard index < objects.count else {
            throw KeyedArchiveError(
                .invalidReference, "UID \(uid) is out of range ($objects has \(objects.count) entries)", path: path())
        }
        return objects[index]
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
            return .object(fields, try classDescription(classUID, path: "$objects[\(uid)] $class"), classUID: classUID)
        }
    }

    /// ``Entry`` without the class description: for readers that cache descriptions by
    /// `classUID` themselves and so need not copy one per object.
    package enum StoredEntry {
        /// A string, number, boolean, data or date stored directly.
        case leaf(PropertyListValue)
        /// An object dictionary and the UID (in range) its `$class` names; the description
        /// there is not validated yet (``classDescription(_:path:)`` does that).
        case object(PropertyListDictionary, classUID: UInt32)
    }

    /// Classifies the entry at a UID like ``entry(_:path:)``, with the same errors, except that
    /// the class description is left to the caller (``classDescription(_:path:)`` with the path
    /// `$objects[uid] $class`).
    package func storedEntry(_ uid: UInt32, path: @autoclosure () -> String) throws(KeyedArchiveError) -> StoredEntry {
        let value = try object(uid, path: path())
        switch value {
        case .string, .integer, .real, .bool, .data, .date:
            return .leaf(value)
        case .dictionary(let fields):
            guard let classValue = fields[ArchiveKeys.classReference] else {
                throw KeyedArchiveError(
                    .invalidClass, "object dictionary has no $class", path: "$objects[\(uid)]")
            }
            let classUID = try reference(classValue, path: "$objects[\(uid)] $class")
            return .object(fields, classUID: classUID)
        default:
            throw KeyedArchiveError(
                .invalidObject, "a \(value.typeName) cannot be an entry of $objects", path: "$objects[\(uid)]")
        }
    }

    /// The validated class description at a UID (cached: descriptions are shared).
    package func classDescription(_ uid: UInt32, path: @autoclosure () -> String) throws(KeyedArchiveError) -> ArchivedClassDescription {
        if let cached = classCache[uid] { return cached }
        guard uid != 0 else { throw KeyedArchiveError(.invalidClass, "$class is UID 0 (nil)", path: path()) }
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
        classCache[uid] = result
        return result
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
