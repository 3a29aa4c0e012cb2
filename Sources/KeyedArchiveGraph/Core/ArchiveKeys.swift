import KeyedArchivePropertyList

/// The reserved keys and names of the NSKeyedArchiver format, and key escaping.
package enum ArchiveKeys {
    /// `$archiver`: the writer's class name, "NSKeyedArchiver" (subclasses write their own).
    package static let archiver = "$archiver"
    /// `$version`: always 100000.
    package static let version = "$version"
    /// `$top`: the top-level keys (root object under ``rootKey``).
    package static let top = "$top"
    /// `$objects`: the object table; index 0 is the string `$null`.
    package static let objects = "$objects"
    /// `$class`: in an object dictionary, the UID of its class description.
    package static let classReference = "$class"
    /// `$classname`: in a class description, the class name.
    package static let className = "$classname"
    /// `$classes`: in a class description, the class chain, most derived first.
    package static let classes = "$classes"
    /// `$classhints`: in a class description, fallback class names (rare, e.g. PyObjC).
    package static let classHints = "$classhints"
    /// `$null`: the string at `$objects[0]`.
    package static let null = "$null"
    /// The `$top` key of the root object (`NSKeyedArchiveRootObjectKey`).
    package static let rootKey = "root"
    /// The archiver name Apple writes.
    package static let defaultArchiverName = "NSKeyedArchiver"
    /// The only `$version` there is.
    package static let formatVersion = 100_000

    // The reserved keys as property-list values, made once: a ``PropertyListValue`` built from
    // the `String` copies its bytes (about 115 instructions), and every archive of an object
    // used several (session 60).
    /// ``classReference`` as a value.
    package static let classReferenceValue = PropertyListValue(classReference)
    /// ``className`` as a value.
    package static let classNameValue = PropertyListValue(className)
    /// ``classes`` as a value.
    package static let classesValue = PropertyListValue(classes)
    /// ``classHints`` as a value.
    package static let classHintsValue = PropertyListValue(classHints)
    /// ``null`` as a value.
    package static let nullValue = PropertyListValue(null)
    /// The envelope's keys as property-list strings: looked up by every reader, written by
    /// every writer.
    package static let envelopeKeyStrings = (
        archiver: PropertyListString(archiver), version: PropertyListString(version),
        top: PropertyListString(top), objects: PropertyListString(objects))

    /// A user key as stored: keys beginning with `$` get one more `$`, so they never collide
    /// with `$class` or the `$0, $1, ...` keys of unkeyed values.
    @inline(__always)
    package static func escape(_ key: String) -> String {
        startsWithDollar(key) ? "$" + key : key
    }

    /// Whether `key` starts with `$`, read from its bytes in place: `utf8.first` went through
    /// the generic collection path, 23 instructions at every field a decoder looked up.
    @inline(__always)
    package static func startsWithDollar(_ key: String) -> Bool {
        key.utf8.withContiguousStorageIfAvailable { $0.first == UInt8(ascii: "$") } ?? (key.utf8.first == UInt8(ascii: "$"))
    }

    /// The user key of a stored key: `$$x` becomes `$x`. Reserved keys (`$class`, `$0`) are
    /// returned unchanged; use ``isReserved(_:)`` to tell them apart.
    package static func unescape(_ stored: String) -> String {
        let utf8 = stored.utf8
        if utf8.count >= 2, utf8.first == UInt8(ascii: "$"), utf8.dropFirst().first == UInt8(ascii: "$") {
            return String(stored.dropFirst())
        }
        return stored
    }

    /// True for stored keys that are not escaped user keys: `$class` and `$0, $1, ...`.
    package static func isReserved(_ stored: String) -> Bool {
        let utf8 = stored.utf8
        return utf8.first == UInt8(ascii: "$") && utf8.dropFirst().first != UInt8(ascii: "$")
    }

    /// The value stored for a user key: under its escaped form, or, for a key spelled like an
    /// unkeyed value's (`$0`), under that raw key, so that the keys ``unescape(_:)`` lists (including
    /// the `$0, $1, ...` of unkeyed values at the top level) can all be looked up.
    package static func lookup(_ key: String, in fields: PropertyListDictionary) -> PropertyListValue? {
        if let value = value(forStoredKey: escape(key), in: fields) { return value }
        return isReadRaw(key) ? value(forStoredKey: key, in: fields) : nil
    }

    /// Whether a user key missing in its escaped form is looked up as it is: reserved keys
    /// but `$class`, which is every object's and never a user key's (Foundation escapes a user
    /// key `$class` to `$$class`; it used to be found in every object).
    package static func isReadRaw(_ key: String) -> Bool {
        isReserved(key) && key != classReference
    }

    /// `fields[key]`: the first entry whose key is the string `key`, byte for byte
    /// (``PropertyListDictionary/index(ofStringKey:in:before:)``).
    package static func value(forStoredKey key: String, in fields: PropertyListDictionary) -> PropertyListValue? {
        fields[key]
    }
}
