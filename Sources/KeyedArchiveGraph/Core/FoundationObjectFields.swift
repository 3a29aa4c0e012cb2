/// Reading the fields of Foundation's archived classes, in one place for the three readers
/// built on ``ArchiveDocument`` (``KeyedUnarchiver``, ``ArchiveResolver`` and the Codable
/// decoder), so that they accept and refuse the same archives.
///
/// Every function takes the path of the object being read (e.g. `$objects[5] (NSDate)`) and
/// throws ``KeyedArchiveError`` with that path plus the field (`... NS.time`).

/// The element references of a collection, each checked to be a UID in range.
package struct ArchiveReferenceList {
    /// The field the references came from, for paths: `NS.objects`, or `NS.object.` for the
    /// numbered form (elements are then named `NS.object.3`).
    package var name: String
    /// Whether the list came from numbered keys (`NS.object.0, NS.object.1, ...`).
    package var isNumbered: Bool
    /// The references (all `.uid`, all in range; UID 0 means nil).
    package var items: [PropertyListValue]

    /// The name of element `index` in a path: `NS.objects[3]` or `NS.object.3`.
    package func elementName(_ index: Int) -> String {
        isNumbered ? name + String(index) : name + "[\(index)]"
    }
}

extension FoundationClassNames {
    /// The built-in kind of a class: the first name of the chain (then the hints) that is a
    /// mapped Foundation class, so a private subclass (`__NSArrayM`, with NSArray in
    /// `$classes`) reads as its public superclass. The walk stops at ``stopNames``.
    package static func kind(of description: ArchivedClassDescription) -> KeyedArchiveClass.Kind? {
        // The chain, then the hints not in it: `candidates` without the array it makes.
        for name in description.chain where mayBeMapped(name) {
            if stopNames.contains(name) { return nil }
            if let kind = kinds[name] { return kind }
        }
        for name in description.hints where mayBeMapped(name) && !description.chain.contains(name) {
            if stopNames.contains(name) { return nil }
            if let kind = kinds[name] { return kind }
        }
        return nil
    }

    /// False for names that are in neither ``kinds`` nor ``stopNames``, decided without
    /// hashing them: all of those start with `NS`, and none is `NSObject`, which ends nearly
    /// every chain. (Hashing a model class's chain, its own name and `NSObject`, for the two
    /// tables was about 1,400 instructions of a one-object unarchive.)
    @inline(__always)
    package static func mayBeMapped(_ name: String) -> Bool {
        var bytes = name.utf8.makeIterator()
        return bytes.next() == UInt8(ascii: "N") && bytes.next() == UInt8(ascii: "S") && name != "NSObject"
    }
}

extension ArchiveDocument {
    /// How many references a value may be followed through to reach a string, data or URL
    /// (`NS.string` → NSString object → ..., `NS.base` chains): bounds work and breaks cycles.
    package static let maximumFieldIndirection = 16

    // MARK: Collections

    /// The element references of a collection: `key` (`NS.objects`, `NS.keys`), an array of
    /// UIDs, or else the older numbered keys `legacyPrefix0, legacyPrefix1, ...` (`NS.object.`),
    /// which must run from 0 without gaps. Every item must be a UID in range.
    package func referenceList(
        in fields: PropertyListDictionary, key: String, legacyPrefix: String, path: @autoclosure () -> String
    ) throws(KeyedArchiveError) -> ArchiveReferenceList {
        if let value = fields[key] {
            guard case .array(let items) = value else {
                throw KeyedArchiveError(.invalidObject, "\(key) is a \(value.typeName), expected an array", path: path() + " " + key)
            }
            let list = ArchiveReferenceList(name: key, isNumbered: false, items: items)
            try checkReferences(list, path: path())
            return list
        }
        var numbered: [Int: PropertyListValue] = [:]
        for entry in fields.entries {
            guard case .string(let name) = entry.key, name.value.hasPrefix(legacyPrefix),
                let index = Self.canonicalIndex(name.value.utf8.dropFirst(legacyPrefix.utf8.count))
            else { continue }
            numbered[index] = entry.value
        }
        var items: [PropertyListValue] = []
        items.reserveCapacity(numbered.count)
        while let item = numbered[items.count] { items.append(item) }
        guard items.count == numbered.count else {
            throw KeyedArchiveError(
                .invalidObject, "\(legacyPrefix)N keys are not numbered 0 to \(numbered.count - 1)", path: path())
        }
        let list = ArchiveReferenceList(name: legacyPrefix, isNumbered: true, items: items)
        try checkReferences(list, path: path())
        return list
    }

    /// The index a numbered key's digits spell, when they spell it as Foundation writes and
    /// looks it up (`NS.object.12`): decimal digits, no sign, no leading zero. `Int("00")` and
    /// `Int("+1")` read other spellings as 0 and 1, and an entry under `NS.object.00` replaced
    /// the one under `NS.object.0` that Foundation reads.
    static func canonicalIndex(_ digits: Substring.UTF8View) -> Int? {
        guard let first = digits.first, digits.count <= 18, first != UInt8(ascii: "0") || digits.count == 1 else { return nil }
        var index = 0
        for digit in digits {
            guard digit >= UInt8(ascii: "0"), digit <= UInt8(ascii: "9") else { return nil }
            index = index * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return index
    }

    private func checkReferences(_ list: ArchiveReferenceList, path: @autoclosure () -> String) throws(KeyedArchiveError) {
        let count = objectCount
        for (index, item) in list.items.enumerated() {
            // Inline fast path; `reference` builds the message.
            if case .uid(let uid) = item, Int(uid) < count { continue }
            _ = try reference(item, path: path() + " " + list.elementName(index))
        }
    }

    /// An NSDictionary's keys and objects (`NS.keys` / `NS.objects` or their numbered forms),
    /// of equal length.
    package func dictionaryReferences(
        in fields: PropertyListDictionary, path: @autoclosure () -> String
    ) throws(KeyedArchiveError) -> (keys: ArchiveReferenceList, objects: ArchiveReferenceList) {
        let keys = try referenceList(
            in: fields, key: FoundationClassNames.keysKey, legacyPrefix: FoundationClassNames.keyPrefix, path: path())
        let objects = try referenceList(
            in: fields, key: FoundationClassNames.objectsKey, legacyPrefix: FoundationClassNames.objectPrefix, path: path())
        guard keys.items.count == objects.items.count else {
            throw KeyedArchiveError(
                .invalidObject, "\(keys.items.count) keys but \(objects.items.count) objects", path: path())
        }
        return (keys, objects)
    }

    // MARK: Leaf classes

    /// NSString / NSMutableString: `NS.string` (a string, or a reference to one), else
    /// `NS.bytes` (UTF-8 data).
    package func stringValue(ofObject fields: PropertyListDictionary, path: @autoclosure () -> String) throws(KeyedArchiveError) -> String {
        try stringValue(ofObject: fields, path: path(), remaining: Self.maximumFieldIndirection)
    }

    private func stringValue(ofObject fields: PropertyListDictionary, path: @autoclosure () -> String, remaining: Int) throws(KeyedArchiveError) -> String {
        typealias Names = FoundationClassNames
        if let value = fields[Names.stringKey] {
            return try string(value, path: path() + " " + Names.stringKey, remaining: remaining)
        }
        if let value = fields[Names.bytesKey] {
            guard case .data(let bytes) = value else {
                throw KeyedArchiveError(.invalidObject, "NS.bytes is a \(value.typeName), expected data", path: path() + " " + Names.bytesKey)
            }
            guard let string = String(validating: bytes, as: UTF8.self) else {
                throw KeyedArchiveError(.invalidObject, "NS.bytes is not valid UTF-8", path: path() + " " + Names.bytesKey)
            }
            return string
        }
        throw KeyedArchiveError(.invalidObject, "string object has neither NS.string nor NS.bytes", path: path())
    }

    /// A field holding a string: inline, or a reference to a string entry or NSString object.
    package func string(_ value: PropertyListValue, path: @autoclosure () -> String) throws(KeyedArchiveError) -> String {
        try string(value, path: path(), remaining: Self.maximumFieldIndirection)
    }

    private func string(_ value: PropertyListValue, path: @autoclosure () -> String, remaining: Int) throws(KeyedArchiveError) -> String {
        switch try followed(value, kind: .string, path: path(), remaining: remaining) {
        case .inline(.string(let string)): return string.value
        case .inline(let other):
            throw KeyedArchiveError(.invalidObject, "expected a string, found \(other.typeName)", path: path())
        case .object(let fields, let objectPath):
            return try stringValue(ofObject: fields, path: objectPath, remaining: remaining - 1)
        }
    }

    /// NSData / NSMutableData: `NS.data` (data, or a reference to data).
    package func dataValue(ofObject fields: PropertyListDictionary, path: @autoclosure () -> String) throws(KeyedArchiveError) -> Data {
        try dataValue(ofObject: fields, path: path(), remaining: Self.maximumFieldIndirection)
    }

    private func dataValue(ofObject fields: PropertyListDictionary, path: @autoclosure () -> String, remaining: Int) throws(KeyedArchiveError) -> Data {
        let key = FoundationClassNames.dataKey
        guard let value = fields[key] else {
            throw KeyedArchiveError(.invalidObject, "data object has no NS.data", path: path())
        }
        switch try followed(value, kind: .data, path: path() + " " + key, remaining: remaining) {
        case .inline(.data(let data)): return data
        case .inline(let other):
            throw KeyedArchiveError(.invalidObject, "NS.data is a \(other.typeName), expected data", path: path() + " " + key)
        case .object(let fields, let objectPath):
            return try dataValue(ofObject: fields, path: objectPath, remaining: remaining - 1)
        }
    }

    /// NSDate: `NS.time`, seconds since 2001 as a real or an integer (or a plain date). Any
    /// finite time is a date, as NSDate takes any: a date outside the property-list range
    /// (years 0...9999) is refused only where it would become a property-list date
    /// (``ArchiveResolver``). NaN and infinities are refused (a `Date` of NaN traps in
    /// FoundationEssentials' `description`), and so are integers beyond `Int64`.
    package static func dateValue(ofObject fields: PropertyListDictionary, path: @autoclosure () -> String) throws(KeyedArchiveError) -> Date {
        let key = FoundationClassNames.timeKey
        let seconds: Double
        switch fields[key] {
        case .real(let real)?:
            seconds = real.value
        case .integer(let integer)?:
            guard let value = integer.int64Value else {
                throw KeyedArchiveError(.invalidObject, "NS.time \(integer) is outside the 64-bit integers", path: path() + " " + key)
            }
            seconds = Double(value)
        case .date(let date)?:
            seconds = date.timeIntervalSinceReferenceDate
        case let other?:
            throw KeyedArchiveError(.invalidObject, "NS.time is a \(other.typeName), expected a real", path: path() + " " + key)
        case nil:
            throw KeyedArchiveError(.invalidObject, "date object has no NS.time", path: path())
        }
        guard seconds.isFinite else {
            throw KeyedArchiveError(.invalidObject, "NS.time \(seconds) is not a finite time", path: path() + " " + key)
        }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    /// NSUUID: `NS.uuidbytes`, exactly 16 bytes of data.
    package static func uuidValue(ofObject fields: PropertyListDictionary, path: @autoclosure () -> String) throws(KeyedArchiveError) -> UUID {
        let key = FoundationClassNames.uuidBytesKey
        guard case .data(let bytes)? = fields[key], bytes.count == 16 else {
            let found = fields[key].map { value -> String in
                if case .data(let bytes) = value { return "\(bytes.count) bytes" }
                return "a \(value.typeName)"
            } ?? "nothing"
            throw KeyedArchiveError(.invalidObject, "NS.uuidbytes must be 16 bytes of data, found \(found)", path: path() + " " + key)
        }
        let b = [UInt8](bytes)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// NSURL: `NS.relative` (a string, inline or by reference) against `NS.base` (absent,
    /// UID 0, or a reference to another NSURL object; chains are bounded). The relative
    /// string must parse as a URL.
    package func urlValue(ofObject fields: PropertyListDictionary, path: @autoclosure () -> String) throws(KeyedArchiveError) -> URL {
        try urlValue(ofObject: fields, path: path(), remaining: Self.maximumFieldIndirection)
    }

    private func urlValue(ofObject fields: PropertyListDictionary, path: @autoclosure () -> String, remaining: Int) throws(KeyedArchiveError) -> URL {
        typealias Names = FoundationClassNames
        var base: URL?
        if let baseValue = fields[Names.baseKey], baseValue != .uid(0) {
            switch try followed(baseValue, kind: .url, path: path() + " " + Names.baseKey, remaining: remaining) {
            case .inline(let other):
                throw KeyedArchiveError(
                    .invalidObject, "NS.base is a \(other.typeName), expected a reference to an NSURL", path: path() + " " + Names.baseKey)
            case .object(let baseFields, let objectPath):
                base = try urlValue(ofObject: baseFields, path: objectPath, remaining: remaining - 1)
            }
        }
        guard let relativeValue = fields[Names.relativeKey] else {
            throw KeyedArchiveError(.invalidObject, "URL object has no NS.relative", path: path())
        }
        let relative = try string(relativeValue, path: path() + " " + Names.relativeKey, remaining: remaining)
        guard let url = URL(string: relative, relativeTo: base) else {
            throw KeyedArchiveError(.invalidObject, "NS.relative \"\(relative)\" is not a URL", path: path() + " " + Names.relativeKey)
        }
        return url
    }

    // MARK: Following references

    enum Followed {
        case inline(PropertyListValue)
        case object(PropertyListDictionary, path: String)
    }

    /// A field value: inline values as they are; a UID followed to a leaf entry, or to an object
    /// whose class is of `kind` (any other class is an error). UID 0 is an error (nil).
    func followed(
        _ value: PropertyListValue, kind: KeyedArchiveClass.Kind, path: @autoclosure () -> String, remaining: Int
    ) throws(KeyedArchiveError) -> Followed {
        guard case .uid = value else { return .inline(value) }
        let uid = try reference(value, path: path())
        guard uid != 0 else { throw KeyedArchiveError(.invalidObject, "is nil (UID 0)", path: path()) }
        switch try entry(uid, path: path()) {
        case .leaf(let leaf):
            return .inline(leaf)
        case .object(let fields, let description, _):
            guard FoundationClassNames.kind(of: description) == kind else {
                throw KeyedArchiveError(
                    .invalidObject, "refers to $objects[\(uid)], a \(description.name), not a \(Self.className(of: kind))", path: path())
            }
            guard remaining > 0 else {
                throw KeyedArchiveError(
                    .invalidObject, "more than \(Self.maximumFieldIndirection) references to follow (or a cycle)", path: path())
            }
            return .object(fields, path: path() + " > $objects[\(uid)] (\(description.name))")
        }
    }

    private static func className(of kind: KeyedArchiveClass.Kind) -> String {
        switch kind {
        case .string: "NSString"
        case .data: "NSData"
        case .url: "NSURL"
        default: "\(kind)"
        }
    }
}
