/// Turns a keyed archive into a plain property list for tools (`karchive unarchive`, `print`),
/// without instantiating anything.
///
/// Rules (see Docs/KeyedArchiveFormat.md):
/// - strings, numbers, data and dates are themselves; NSArray/NSDictionary (and mutable or
///   private subclasses, by `$classes` fallback) become arrays and dictionaries; NSSet and
///   NSOrderedSet become arrays; NSString/NSData objects (`NS.string`, `NS.bytes`, `NS.data`)
///   their value; NSDate a date.
/// - NSNull and nil (UID 0) become the string `"$null"`; NSURL its absolute URL string;
///   NSUUID its uppercase string.
/// - any other class becomes a dictionary of its fields (unescaped keys, references resolved)
///   plus `"$class"`: its class name. So does an object of a mapped class whose fields do not
///   have that class's shape (a private subclass storing other fields, an NSDate outside years
///   0...9999), rather than failing the whole result.
/// - a reference to an object that is still being emitted (a cycle) becomes
///   `{"$ref": <its index in $objects>}`.
/// - dictionary keys that are not strings (Instruments archives key by integers) become their
///   textual form, so the result can be written as XML or JSON; a key met twice in one
///   dictionary gets ` (2)`, ` (3)`..., so that no entry is lost.
/// - shared references are expanded at each use; the total number of values produced
///   is bounded by ``DecodingLimits/maximumExpandedNodeCount`` and their string and data bytes
///   by ``DecodingLimits/maximumExpandedByteCount`` (a reference bomb stops with
///   ``KeyedArchiveError/Code/objectLimitExceeded``), nesting by
///   ``DecodingLimits/maximumDepth`` (one level per object). Each object is resolved once and
///   reused while the objects its `$ref`s name are being emitted, so time stays proportional
///   to the archive plus the output.
public struct ArchiveResolver {
    private let document: ArchiveDocument
    /// The most bytes of one data value counted toward ``DecodingLimits/maximumExpandedByteCount``
    /// at each use: all of them for output that holds them all (`karchive unarchive`); what is
    /// shown for a reader that shows only the start of data (`karchive print`, 24 bytes), so
    /// that a 2 MB blob shared by 600 objects is not counted as 1.2 GB. Strings and keys count
    /// in full whatever this is (each use of a key is hashed and may be renamed).
    package var countedBytesPerData = Int.max

    /// A resolver over archive bytes (binary or XML).
    public init(data: Data, limits: DecodingLimits = .default) throws {
        document = try ArchiveDocument(data: data, limits: limits)
    }

    /// A resolver over a decoded property list.
    public init(propertyList: PropertyListValue, limits: DecodingLimits = .default) throws {
        document = try ArchiveDocument(propertyList: propertyList, limits: limits)
    }

    /// The `$top` keys (unescaped).
    public var topLevelKeys: [String] { document.topKeys }

    /// The `$archiver` name.
    public var archiverName: String { document.archiverName }

    /// The resolved object under a `$top` key (default `root`).
    public func resolve(topLevelKey key: String = "root") throws -> PropertyListValue {
        guard let value = document.topValue(forKey: key) else {
            throw KeyedArchiveError(
                .missingTopLevelKey, "$top has no key \"\(key)\" (keys: \(document.topKeys.joined(separator: ", ")))",
                path: "$top")
        }
        let state = ResolverState(countedBytesPerData: countedBytesPerData)
        return try state.inline(value, document: document, depth: 0, path: "$top." + key).value
    }

    /// The root object when `$top` has `root`; otherwise a dictionary of every `$top` key and
    /// its resolved value (archives written with `encode(_:forKey:)` at the top, e.g. `$0`...).
    public func resolveTopLevel() throws -> PropertyListValue {
        if document.topValue(forKey: "root") != nil { return try resolve() }
        let state = ResolverState(countedBytesPerData: countedBytesPerData)
        var result = PropertyListDictionary()
        for entry in document.top.entries {
            guard let key = entry.key.stringValue else { continue }
            let resolved = try state.inline(entry.value, document: document, depth: 0, path: "$top." + key)
            result.entries.append((PropertyListValue(ArchiveKeys.unescape(key)), resolved.value))
        }
        return .dictionary(result)
    }

    /// Resolves archive bytes with ``resolveTopLevel()`` (what `karchive unarchive` and
    /// `karchive print` show).
    public static func resolve(_ data: Data, limits: DecodingLimits = .default) throws -> PropertyListValue {
        try ArchiveResolver(data: data, limits: limits).resolveTopLevel()
    }
}

private struct Resolved {
    var value: PropertyListValue
    var nodes: Int
    /// The objects still being emitted that `value` refers back to (`{"$ref": uid}`), sorted.
    var backReferences: [UInt32] = []
    /// String and data bytes in `value`, shared values counted at every use.
    var bytes = 0
    /// Levels of containers in `value` (a leaf: 0): a result reused at a depth is refused
    /// when it would reach past `maximumDepth` (250 chains of 400 arrays, each ending in the
    /// one before, resolved to 100,000 levels, and freeing the value overflowed the stack).
    var height = 0

    /// Adds a member's counts, height and back references to a container's. Back references
    /// can only name objects being emitted, at most one per level of nesting, so every one is
    /// tracked and a result is never given up for reuse (a fixed bound of 8, then 1,024, let
    /// more references back make every use anew: 24 s and 1.6 GB for a 1 KB file).
    mutating func absorb(_ member: Resolved) {
        nodes += member.nodes
        bytes += member.bytes
        height = max(height, member.height + 1)
        let (mine, theirs) = (backReferences, member.backReferences)
        guard !theirs.isEmpty, theirs != mine else { return }
        if mine.isEmpty, pending.isEmpty { backReferences = theirs; return }
        for reference in theirs where !Self.contains(mine, reference) { pending.append(reference) }
    }

    /// Back references of members not yet in `backReferences` (unsorted, repeats allowed).
    var pending: [UInt32] = []

    /// Folds `pending` into `backReferences`: once per container, not once per member.
    mutating func finish() {
        guard !pending.isEmpty else { return }
        pending.sort()
        var unique: [UInt32] = []
        unique.reserveCapacity(pending.count)
        for reference in pending where unique.last != reference { unique.append(reference) }
        backReferences = Self.merge(backReferences, unique)
        pending = []
    }

    /// Whether the sorted list `list` holds `value`.
    private static func contains(_ list: [UInt32], _ value: UInt32) -> Bool {
        var (low, high) = (0, list.count)
        while low < high {
            let middle = (low + high) / 2
            if list[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low < list.count && list[low] == value
    }

    /// The union of two sorted lists without repeats, sorted.
    private static func merge(_ a: [UInt32], _ b: [UInt32]) -> [UInt32] {
        guard !a.isEmpty else { return b }
        var result: [UInt32] = []
        result.reserveCapacity(a.count + b.count)
        var (i, j) = (0, 0)
        while i < a.count || j < b.count {
            let next = j == b.count || (i < a.count && a[i] <= b[j]) ? a[i] : b[j]
            if i < a.count, a[i] == next { i += 1 }
            if j < b.count, b[j] == next { j += 1 }
            result.append(next)
        }
        return result
    }
}

/// Dictionary keys made unique: a key met again gets ` (2)`, ` (3)`... (an NSDictionary may
/// hold the integer 1 and the string "1", or two data keys), so that no entry is lost where
/// JSON, XML and every reader keep one value per key. Every key as it is is reserved first,
/// so a suffix never takes the name of a real key (`a`, `a`, `a (2)`: the second `a` becomes
/// `a (3)`).
private struct UniqueKeys {
    private var reserved: Set<String>
    private var used: Set<String> = []
    /// The next suffix to try for each key met again: counting from 2 each time, 20,000 copies
    /// of one key took 40 s (quadratic).
    private var nextNumber: [String: Int] = [:]

    init(_ keys: some Sequence<String>) {
        reserved = Set(keys)
    }

    mutating func unique(_ key: String) -> String {
        if used.insert(key).inserted { return key }
        var number = nextNumber[key, default: 2]
        while reserved.contains(key + " (\(number))") || !used.insert(key + " (\(number))").inserted { number += 1 }
        nextNumber[key] = number + 1
        return key + " (\(number))"
    }
}

private final class ResolverState {
    var emitting: Set<UInt32> = []
    var memo: [UInt32: Resolved] = [:]
    var expanded = 0
    var expandedBytes = 0
    /// Back references kept in `memo`, bounded by `maximumExpandedNodeCount`: a chain of D
    /// objects whose last refers back to all of them keeps D²/2 (an 11 MB file held 468 MB).
    var rememberedReferences = 0
    /// See ``ArchiveResolver/countedBytesPerData``.
    let countedBytesPerData: Int

    init(countedBytesPerData: Int) {
        self.countedBytesPerData = countedBytesPerData
    }

    /// The string or data bytes of a leaf, as counted toward the limit.
    func bytes(of value: PropertyListValue) -> Int {
        switch value {
        case .string(let string): string.utf8Count
        case .data(let data): min(data.count, countedBytesPerData)
        default: 0
        }
    }

    func count(_ nodes: Int, bytes: Int = 0, document: ArchiveDocument, path: @autoclosure () -> String) throws {
        let (byteSum, byteOverflow) = expandedBytes.addingReportingOverflow(bytes)
        guard !byteOverflow, byteSum <= document.limits.maximumExpandedByteCount else {
            throw KeyedArchiveError(
                .objectLimitExceeded,
                "expanding shared references would produce more than \(document.limits.maximumExpandedByteCount) bytes of strings and data",
                path: path())
        }
        expandedBytes = byteSum
        let (sum, overflow) = expanded.addingReportingOverflow(nodes)
        guard !overflow, sum <= document.limits.maximumExpandedNodeCount else {
            throw KeyedArchiveError(
                .objectLimitExceeded,
                "expanding shared references would produce more than \(document.limits.maximumExpandedNodeCount) values",
                path: path())
        }
        expanded = sum
    }

    /// Counts a dictionary key of the output toward the limits, and into `total`, so that a
    /// reused result is charged for its keys too (a 600 KB key in a dictionary reached 2^20
    /// times through shared references resolved at no cost: 630 GB of output).
    func countKey(_ key: String, into total: inout Resolved, document: ArchiveDocument, path: @autoclosure () -> String) throws {
        let bytes = key.utf8.count
        try count(1, bytes: bytes, document: document, path: path())
        total.nodes += 1
        total.bytes += bytes
    }

    func checkDepth(_ depth: Int, document: ArchiveDocument, path: @autoclosure () -> String) throws {
        guard depth <= document.limits.maximumDepth else {
            throw KeyedArchiveError(.depthLimitExceeded, "nesting deeper than \(document.limits.maximumDepth)", path: path())
        }
        if StackSpace.runsShort(atDepth: depth) {
            throw KeyedArchiveError(.depthLimitExceeded, StackSpace.exhaustedMessage(depth: depth), path: path())
        }
    }

    /// A stored value: UIDs are followed, inline containers mapped. An object is one level
    /// deeper than the value that refers to it (its fields one more), so `maximumDepth` counts
    /// objects as the unarchiver does; each NSArray counted two levels, and 256 nested arrays
    /// were refused.
    func inline(_ value: PropertyListValue, document: ArchiveDocument, depth: Int, path: String) throws -> Resolved {
        try checkDepth(depth, document: document, path: path)
        switch value {
        case .uid:
            let uid = try document.reference(value, path: path)
            return try object(uid, document: document, depth: depth, path: path)
        case .array(let items), .set(let items):
            var result: [PropertyListValue] = []
            result.reserveCapacity(items.count)
            var total = Resolved(value: .null, nodes: 1)
            try count(1, document: document, path: path)
            for (index, item) in items.enumerated() {
                let resolved = try inline(item, document: document, depth: depth + 1, path: path + "[\(index)]")
                result.append(resolved.value)
                total.absorb(resolved)
            }
            total.finish()
            total.value = .array(result)
            return total
        case .dictionary(let dictionary):
            var result = PropertyListDictionary()
            result.entries.reserveCapacity(dictionary.count)
            var total = Resolved(value: .null, nodes: 1)
            let names = dictionary.entries.map { Self.keyString($0.key) }
            var keys = UniqueKeys(names)
            try count(1, document: document, path: path)
            for (entry, name) in zip(dictionary.entries, names) {
                let key = keys.unique(name)
                try countKey(key, into: &total, document: document, path: path)
                let resolved = try inline(entry.value, document: document, depth: depth + 1, path: path + " " + key)
                result.entries.append((PropertyListValue(key), resolved.value))
                total.absorb(resolved)
            }
            total.finish()
            total.value = .dictionary(result)
            return total
        default:
            let bytes = self.bytes(of: value)
            try count(1, bytes: bytes, document: document, path: path)
            return Resolved(value: value, nodes: 1, bytes: bytes)
        }
    }

    func object(_ uid: UInt32, document: ArchiveDocument, depth: Int, path: String) throws -> Resolved {
        try checkDepth(depth, document: document, path: path)
        if uid == 0 {
            let bytes = self.bytes(of: ArchiveKeys.nullValue)
            try count(1, bytes: bytes, document: document, path: path)
            return Resolved(value: ArchiveKeys.nullValue, nodes: 1, bytes: bytes)
        }
        if emitting.contains(uid) {
            // The dictionary, its key "$ref" and the number.
            try count(3, bytes: 4, document: document, path: path)
            return Resolved(value: ["$ref": PropertyListValue(Int(uid))], nodes: 3, backReferences: [uid], bytes: 4, height: 1)
        }
        // Reused when every object it refers back to is being emitted again, so that each
        // `$ref` still names an object on the way here. Results with back references were
        // made anew at every use: one reference back to the root of a 30-level doubling chain
        // (643 bytes) took 20 s and 1.85 GB before the expansion limit stopped it.
        if let memoized = memo[uid], memoized.backReferences.allSatisfy(emitting.contains) {
            try checkDepth(depth + memoized.height, document: document, path: path)
            try count(memoized.nodes, bytes: memoized.bytes, document: document, path: path)
            return memoized
        }
        emitting.insert(uid)
        defer { emitting.remove(uid) }
        var result: Resolved
        switch try document.entry(uid, path: path) {
        case .leaf(let leaf):
            let bytes = self.bytes(of: leaf)
            try count(1, bytes: bytes, document: document, path: path)
            result = Resolved(value: leaf, nodes: 1, bytes: bytes)
        case .object(let fields, let description, _):
            result = try classObject(uid, fields: fields, description: description, document: document, depth: depth, path: path)
        }
        // References back to this object are to this occurrence wherever it is reused.
        result.backReferences.removeAll { $0 == uid }
        let (remembered, overflow) = rememberedReferences.addingReportingOverflow(result.backReferences.count)
        guard !overflow, remembered <= document.limits.maximumExpandedNodeCount else {
            throw KeyedArchiveError(
                .objectLimitExceeded,
                "remembering the references back to enclosing objects would take more than \(document.limits.maximumExpandedNodeCount) entries",
                path: path)
        }
        rememberedReferences = remembered
        memo[uid] = result
        return result
    }

    private func classObject(
        _ uid: UInt32, fields: PropertyListDictionary, description: ArchivedClassDescription,
        document: ArchiveDocument, depth: Int, path: String
    ) throws -> Resolved {
        typealias Names = FoundationClassNames
        // Errors name this object after the step that led to it (the last object and key),
        // as the unarchiver's do: `$objects[4] (Holder) child > $objects[2] (NSURL) ...`.
        let lastStep = path.ranges(of: " > ").last.map { String(path[$0.upperBound...]) } ?? path
        let here = lastStep + " > $objects[\(uid)] (\(description.name))"
        let kind = Names.kind(of: description)
        func leaf(_ value: PropertyListValue) throws -> Resolved {
            let bytes = self.bytes(of: value)
            try count(1, bytes: bytes, document: document, path: here)
            return Resolved(value: value, nodes: 1, bytes: bytes)
        }
        // The shape a mapped class's fields must have is checked before anything inside is
        // resolved; an object without it (a private subclass that stores other fields, such as
        // NSSharedKeyDictionary's `NS.keys` by reference or NSLocalizableString's `NSKey`; an
        // NSDate outside years 0...9999; `NS.object.N` with a gap) is shown as its fields and
        // class, as an unmapped class is, instead of failing the whole output. Only this
        // object's own checks fall back: a failure inside what it holds stays a failure (a
        // retry at every enclosing level would repeat the work once per level).
        let mapped: Mapped?
        do {
            mapped = try mappedShape(kind, fields: fields, document: document, here: here)
        } catch {
            guard Self.fallsBackToFields(error) else { throw error }
            mapped = nil
        }
        switch mapped {
        case .list(let list)?:
            return try inline(.array(list.items), document: document, depth: depth, path: here + " " + list.name)
        case .dictionary(let keyList, let objectList)?:
            let keys = keyList.items
            let objects = objectList.items
            var result = PropertyListDictionary()
            result.entries.reserveCapacity(keys.count)
            var total = Resolved(value: .null, nodes: 1)
            try count(1, document: document, path: here)
            // The keys first, so that every key's own text is reserved before any is renamed.
            var names: [String] = []
            names.reserveCapacity(keys.count)
            for index in keys.indices {
                let key = try inline(keys[index], document: document, depth: depth + 1, path: here + " " + keyList.elementName(index))
                names.append(Self.keyString(key.value))
                // The key becomes a string (counted below); its back references carry over.
                total.absorb(Resolved(value: .null, nodes: 0, backReferences: key.backReferences))
            }
            var uniqueKeys = UniqueKeys(names)
            for index in keys.indices {
                let name = uniqueKeys.unique(names[index])
                try countKey(name, into: &total, document: document, path: here)
                let value = try inline(objects[index], document: document, depth: depth + 1, path: here + " " + objectList.elementName(index))
                result.entries.append((PropertyListValue(name), value.value))
                total.absorb(value)
            }
            total.finish()
            total.value = .dictionary(result)
            return total
        case .leaf(let value)?:
            return try leaf(value)
        case nil:
            var result = PropertyListDictionary()
            result.entries.reserveCapacity(fields.count)
            let classKeyBytes = ArchiveKeys.classReference.utf8.count
            var total = Resolved(value: .null, nodes: 2, bytes: classKeyBytes)
            // `$class` is the class name's; a user field of that name (stored `$$class`)
            // keeps its stored spelling rather than collide with it. A key that is not a
            // string (which no archiver writes) is shown in its textual form, as an
            // NSDictionary's is.
            let userFields = fields.entries.compactMap { entry -> (name: String, value: PropertyListValue)? in
                guard let key = entry.key.stringValue else { return (Self.keyString(entry.key), entry.value) }
                if key == ArchiveKeys.classReference { return nil }
                let unescaped = ArchiveKeys.unescape(key)
                return (unescaped == ArchiveKeys.classReference ? key : unescaped, entry.value)
            }
            var uniqueKeys = UniqueKeys(userFields.map(\.name) + [ArchiveKeys.classReference])
            _ = uniqueKeys.unique(ArchiveKeys.classReference)
            try count(2, bytes: classKeyBytes, document: document, path: here)
            for field in userFields {
                let name = uniqueKeys.unique(field.name)
                try countKey(name, into: &total, document: document, path: here)
                let value = try inline(field.value, document: document, depth: depth + 1, path: here + " " + name)
                result.entries.append((PropertyListValue(name), value.value))
                total.absorb(value)
            }
            // The class name is written at every use too: a 100 KB name in an object reached
            // 2^20 times resolved at no cost.
            try countKey(description.name, into: &total, document: document, path: here)
            result.entries.append((ArchiveKeys.classReferenceValue, PropertyListValue(description.name)))
            total.finish()
            total.value = .dictionary(result)
            return total
        }
    }

    /// What a mapped class's fields hold, read without resolving anything inside them.
    private enum Mapped {
        case list(ArchiveReferenceList)
        case dictionary(ArchiveReferenceList, ArchiveReferenceList)
        case leaf(PropertyListValue)
    }

    /// The fields of an object of a mapped Foundation class in that class's shape; nil for an
    /// unmapped class; an error when they do not have it.
    private func mappedShape(
        _ kind: KeyedArchiveClass.Kind?, fields: PropertyListDictionary, document: ArchiveDocument, here: String
    ) throws(KeyedArchiveError) -> Mapped? {
        typealias Names = FoundationClassNames
        switch kind {
        case .array?, .set?, .orderedSet?:
            return .list(try document.referenceList(in: fields, key: Names.objectsKey, legacyPrefix: Names.objectPrefix, path: here))
        case .dictionary?:
            let (keyList, objectList) = try document.dictionaryReferences(in: fields, path: here)
            return .dictionary(keyList, objectList)
        case .string?:
            return .leaf(PropertyListValue(try document.stringValue(ofObject: fields, path: here)))
        case .data?:
            return .leaf(.data(try document.dataValue(ofObject: fields, path: here)))
        case .date?:
            // The result is a property-list date, so it must be one the readers could produce
            // and the writers accept: the shared rule (years 0...9999, finite), narrower than
            // NSDate's (any time, which the unarchivers return).
            let date = try ArchiveDocument.dateValue(ofObject: fields, path: here)
            guard BinaryPropertyListReader.validDateRange.contains(date.timeIntervalSinceReferenceDate) else {
                throw KeyedArchiveError(
                    .invalidObject, "NS.time \(date.timeIntervalSinceReferenceDate) is not a property-list date (years 0...9999)",
                    path: here + " " + FoundationClassNames.timeKey)
            }
            return .leaf(.date(date))
        case .null?:
            return .leaf(ArchiveKeys.nullValue)
        case .uuid?:
            return .leaf(PropertyListValue(try ArchiveDocument.uuidValue(ofObject: fields, path: here).uuidString.uppercased()))
        case .url?:
            return .leaf(PropertyListValue(try document.urlValue(ofObject: fields, path: here).absoluteString))
        case .number?, .archivedObject?, .type?, nil:
            return nil
        }
    }

    /// Whether a failed shape check shows the object as its fields: a field of the wrong kind
    /// or shape, not a limit (which the fields would pass as well) or a broken reference (which
    /// showing the fields would meet again).
    private static func fallsBackToFields(_ error: KeyedArchiveError) -> Bool {
        error.code == .invalidObject
    }

    /// A dictionary key as a string: strings themselves, numbers and booleans their textual
    /// form, dates as `defaults` prints them, data as hex (`<0fbd>`), anything else (an
    /// array, a dictionary, an object's fields) as one line of OpenStep text; each used to be
    /// `<data>` or `<dictionary>`, so that two such keys became one.
    static func keyString(_ key: PropertyListValue) -> String {
        switch key {
        case .string(let string): return string.value
        case .integer(let integer): return integer.description
        case .real(let real): return String(real.value)
        case .bool(let bool): return bool ? "true" : "false"
        case .date(let date): return OpenStepDate.format(date)
        default:
            let options = OpenStepPropertyListWriter.Options(trailingNewline: false, sortsKeys: true, maximumOutputLength: 4096)
            guard let text = try? OpenStepPropertyListWriter.string(key, options: options) else { return "<\(key.typeName)>" }
            return text.split(whereSeparator: \.isNewline).map { $0.trimmingPrefix(while: \.isWhitespace) }.joined(separator: " ")
        }
    }
}
