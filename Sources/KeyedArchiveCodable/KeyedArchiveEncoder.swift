/// Encodes `Encodable` values as NSKeyedArchiver archives (the role `PropertyListEncoder` plays
/// for property lists).
///
/// Keyed values become archived objects that an Objective-C class with the same name and keys
/// reads with `decodeObjectForKey:`, `decodeFloatForKey:`..., class instances referenced from
/// several places are stored once, and `encodeConditional(_:forKey:)` is honoured. See
/// Docs/CodableBridge.md for the representation.
///
/// ```swift
/// let encoder = KeyedArchiveEncoder()
/// encoder.outputFormat = .xml
/// encoder.setClassName("LegacyProfile", for: Profile.self)
/// let data = try encoder.encode(profile)
/// ```
public final class KeyedArchiveEncoder {
    // The options are read at every encode; their dynamic exclusivity checks (about 75
    // instructions each) were a hundredth of a small archive. Unchecked, as the coders' own
    // state is: an encoder is one thread's at a time, and nothing here holds an access open.
    /// The property-list format of the archive: binary (default) or XML.
    @exclusivity(unchecked) public var outputFormat: PropertyListFormat = .binary
    /// Values for `Encodable` implementations to read through `encoder.userInfo`.
    @exclusivity(unchecked) public var userInfo: [CodingUserInfoKey: any Sendable] = [:]
    /// The deepest nesting of values encoded; deeper values throw `EncodingError.invalidValue`
    /// instead of exhausting the stack. Defaults to ``DecodingLimits/maximumDepth`` of the
    /// default limits, so whatever encodes also decodes with default limits.
    @exclusivity(unchecked) public var maximumDepth: Int = DecodingLimits.default.maximumDepth
    /// The `$archiver` name written. Default `NSKeyedArchiver`.
    @exclusivity(unchecked) public var archiverName: String = "NSKeyedArchiver"
    @exclusivity(unchecked) private(set) var classNameOverrides: [ObjectIdentifier: String] = [:]
    /// For tests: how many keyed containers (coding-key types times recursion depth) one encode
    /// keeps for reuse; `nil` is the default (``KeptContainers/limit``), 0 makes every container
    /// anew. The bytes are the same either way.
    package static let keptContainerLimitOverride = AtomicOptionalInt()

    /// An encoder with default options (binary output).
    public init() {}

    /// Archives values of `type` under `name` instead of their default name (`nil` removes the
    /// override). Takes precedence over ``KeyedArchiveClassNaming``.
    public func setClassName(_ name: String?, for type: Any.Type) {
        classNameOverrides[ObjectIdentifier(type)] = name
    }

    /// The `$classname` this encoder writes for a type.
    public func className(for type: Any.Type) -> String {
        ClassNames.archiveName(of: type, overrides: classNameOverrides)
    }

    /// Archives `value` as the root object.
    ///
    /// Throws `EncodingError.invalidValue` (with the coding path) for a cycle among class
    /// instances, nesting deeper than ``maximumDepth``, or a value the format cannot hold.
    public func encode<T: Encodable>(_ value: T) throws -> Data {
        let state = ArchiveEncodingState(
            classNames: classNameOverrides, userInfo: userInfo, maximumDepth: maximumDepth)
        let root = try state.boxRoot(value)
        var top = PropertyListDictionary()
        top.entries.append((PropertyListValue("root"), root))
        state.finishDeferredConditionals()
        try state.checkConditionalCycles()
        do {
            return try state.table.encodedData(top: top, format: outputFormat, archiverName: archiverName)
        } catch {
            throw EncodingError.invalidValue(
                value, EncodingError.Context(codingPath: [], debugDescription: "cannot write the archive: \(error)", underlyingError: error))
        }
    }
}

/// Decodes `Decodable` values from NSKeyedArchiver archives (the role `PropertyListDecoder`
/// plays for property lists).
///
/// The caller's type decides what is decoded; the archive's `$classname` for a keyed value is
/// accepted when it is the type's archive name, that name qualified by a module
/// (`MyApp.ArchivingData`, whatever the module), its Swift name, or a name mapped with ``setType(_:forClassName:)``; with
/// ``isStrict`` other names are an error. Shared class instances decode to one instance. Every
/// failure is a `DecodingError` with the coding path; hostile archives (cycles, deep nesting,
/// wrong types) throw, never trap.
///
/// ```swift
/// let decoder = KeyedArchiveDecoder()
/// decoder.setType(Profile.self, forClassName: "OldProfile")   // renamed class
/// let profile = try decoder.decode(Profile.self, from: data)
/// ```
public final class KeyedArchiveDecoder {
    // Unchecked, as the encoder's options are (see there).
    /// Values for `Decodable` implementations to read through `decoder.userInfo`.
    @exclusivity(unchecked) public var userInfo: [CodingUserInfoKey: any Sendable] = [:]
    /// Bounds on the work and memory spent on the input (depth, objects, expanded size).
    @exclusivity(unchecked) public var limits: DecodingLimits = .default
    /// When true, a keyed value whose `$classname` is not one of the names accepted for its type
    /// is an error (`DecodingError.typeMismatch`). When false (default) any name is accepted.
    @exclusivity(unchecked) public var isStrict: Bool = false
    @exclusivity(unchecked) private(set) var classNameOverrides: [ObjectIdentifier: String] = [:]
    @exclusivity(unchecked) private(set) var mappedNames: [String: [ObjectIdentifier]] = [:]

    /// A decoder with default options.
    public init() {}

    /// Accepts `name` as the class name of `type` (old class names, other modules). Several
    /// names may map to one type; one name may map to several types.
    public func setType(_ type: Any.Type, forClassName name: String) {
        let id = ObjectIdentifier(type)
        if !(mappedNames[name]?.contains(id) ?? false) { mappedNames[name, default: []].append(id) }
    }

    /// Accepts each `old name -> type` pair (see ``setType(_:forClassName:)``).
    public func setTypes(_ mapping: [String: Any.Type]) {
        for (name, type) in mapping { setType(type, forClassName: name) }
    }

    /// Expects `name` as the archive name of `type` (as ``KeyedArchiveEncoder/setClassName(_:for:)``
    /// writes it); `nil` removes the override.
    public func setClassName(_ name: String?, for type: Any.Type) {
        classNameOverrides[ObjectIdentifier(type)] = name
    }

    /// The names accepted for keyed values of `type`: its archive name, its module-qualified
    /// Swift name and the mapped names, in that order. (The archive name qualified by any one
    /// module, `OldApp.ArchivingData`, is accepted too.)
    public func acceptedClassNames(for type: Any.Type) -> [String] {
        var names = [ClassNames.archiveName(of: type, overrides: classNameOverrides), ClassNames.qualifiedName(of: type)]
        let id = ObjectIdentifier(type)
        for (name, types) in mappedNames.sorted(by: { $0.key < $1.key }) where types.contains(id) && !names.contains(name) {
            names.append(name)
        }
        return names
    }

    /// Decodes the root object of an archive (binary or XML) as `type`.
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try decode(type, from: data, topLevelKey: "root")
    }

    /// Decodes the `$top` object under `key` as `type` (archives written with other top keys).
    public func decode<T: Decodable>(_ type: T.Type, from data: Data, topLevelKey key: String) throws -> T {
        // A binary archive is read by index, in place: each entry is read from the file when
        // it is decoded (building the tree of the whole archive first, and freeing it after,
        // was about half of a decode), from the `Data`'s own bytes (a copy of a 400 MB archive
        // took a second).
        try ArchiveDocument.withBinaryArchive(
            data, limits: limits, notAnArchive: { Self.notAnArchive($0) },
            body: { document in try ArchiveDecodingState(document: document, options: self).decodeRoot(type, key: key) },
            orElse: { try ArchiveDecodingState(document: try document(data), options: self).decodeRoot(type, key: key) })
    }

    /// The document of an archive read whole (formats other than binary).
    private func document(_ data: Data) throws -> ArchiveDocument {
        do {
            return try ArchiveDocument(data: data, limits: limits)
        } catch {
            throw Self.notAnArchive(error)
        }
    }

    static func notAnArchive(_ error: any Error) -> DecodingError {
        DecodingError.dataCorrupted(
            DecodingError.Context(codingPath: [], debugDescription: "not a keyed archive: \(error)", underlyingError: error))
    }
}

extension KeyedArchiver {
    /// Archives an `Encodable` value as the root object, in the binary format, the way
    /// ``KeyedArchiveEncoder`` does with default options.
    public static func archivedData<T: Encodable>(withRootObject value: T) throws -> Data {
        try KeyedArchiveEncoder().encode(value)
    }
}

extension KeyedUnarchiver {
    /// Decodes the root object of an archive as a `Decodable` type, the way
    /// ``KeyedArchiveDecoder`` does with default options (or the given limits).
    public static func unarchivedObject<T: Decodable>(
        ofType type: T.Type, from data: Data, limits: DecodingLimits = .default
    ) throws -> T {
        let decoder = KeyedArchiveDecoder()
        decoder.limits = limits
        return try decoder.decode(type, from: data)
    }
}
