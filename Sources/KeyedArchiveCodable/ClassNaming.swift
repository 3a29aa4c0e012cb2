/// A `Codable` type that chooses the `$classname` its archives carry.
///
/// Without it a type is archived under its Swift name without the module (`ArchivingData`,
/// `Outer.Inner`), which is what an Objective-C class of that name writes. Adopt it when the
/// Swift type was renamed but old archives (or Objective-C readers) use another name.
///
/// ```swift
/// struct Profile: Codable, KeyedArchiveClassNaming {
///     static let archiveClassName = "ArchivingData"
/// }
/// ```
public protocol KeyedArchiveClassNaming {
    /// The `$classname` written for this type and accepted when decoding it.
    static var archiveClassName: String { get }
}

/// Class-name rules shared by the encoder and the decoder.
enum ClassNames {
    /// The Swift type name without its module: `MyApp.Outer.Inner` -> `Outer.Inner`,
    /// `MyApp.Box<Swift.Int>` -> `Box<Swift.Int>` (private and local types without the
    /// run-dependent part, see ``stableTypeName(_:)``).
    static func unqualifiedName(of type: Any.Type) -> String {
        let full = stableTypeName(type)
        let utf8 = full.utf8
        guard let dot = utf8.firstIndex(of: UInt8(ascii: ".")) else { return full }
        if let angle = utf8.firstIndex(of: UInt8(ascii: "<")), angle < dot { return full }
        return String(full[full.index(after: dot)...])
    }

    /// The module-qualified Swift name (`MyApp.ArchivingData`), which Swift's `NSKeyedArchiver`
    /// writes for classes without `@objc(Name)`.
    static func qualifiedName(of type: Any.Type) -> String {
        stableTypeName(type)
    }

    /// `Module.Name` for an archive name `Name` and any one module (`MyApp.ArchivingData`):
    /// what Swift's `NSKeyedArchiver` writes for a class without `@objc(Name)`, in whatever
    /// module the class lived when the archive was made.
    static func isModuleQualified(_ name: String, archiveName: String) -> Bool {
        let utf8 = name.utf8
        guard utf8.count > archiveName.utf8.count + 1, name.hasSuffix("." + archiveName) else { return false }
        let module = utf8.prefix(utf8.count - archiveName.utf8.count - 1)
        return !module.isEmpty && !module.contains(UInt8(ascii: ".")) && !module.contains(UInt8(ascii: "<"))
    }

    /// The name a type is archived under: an override, else the protocol's name, else the
    /// unqualified Swift name.
    static func archiveName(of type: Any.Type, overrides: [ObjectIdentifier: String]) -> String {
        let id = ObjectIdentifier(type)
        if !overrides.isEmpty, let name = overrides[id] { return name }
        let source: NameSource
        if let known = nameSources.withLock({ $0[id] }) {
            source = known
        } else {
            if let named = type as? any KeyedArchiveClassNaming.Type {
                source = .named(named)
            } else {
                source = .unqualified(unqualifiedName(of: type))
            }
            nameSources.withLock { $0[id] = source }
        }
        switch source {
        case .named(let named): return named.archiveClassName
        case .unqualified(let name): return name
        }
    }

    /// Where a type's archive name comes from. The protocol's name is asked for at each use
    /// (it is the type's own code); whether the type adopts the protocol, and its Swift name,
    /// never change.
    private enum NameSource {
        case named(any KeyedArchiveClassNaming.Type)
        case unqualified(String)
    }

    /// The name source of every type named so far in this process: the conformance lookup and
    /// `String(reflecting:)` cost a small archive (W1) about 2,000 instructions at every run.
    private static let nameSources = Protected<[ObjectIdentifier: NameSource]>([:])

    /// Foundation collection and value classes: never the class of a keyed Swift value.
    static let foundationCollections: Set<String> = [
        "NSArray", "NSMutableArray", "NSSet", "NSMutableSet", "NSOrderedSet", "NSMutableOrderedSet",
        "NSString", "NSMutableString", "NSData", "NSMutableData", "NSDate", "NSURL", "NSUUID", "NSNull",
        "NSNumber",
    ]

    /// Dictionaries: read as keyed containers by key (nested containers, `[String: T]`).
    static let dictionaryNames: Set<String> = ["NSDictionary", "NSMutableDictionary"]
}

/// The coding key of an element of an unkeyed container.
struct IndexKey: CodingKey {
    let index: Int
    init(_ index: Int) { self.index = index }
    init?(stringValue: String) {
        guard let index = Int(stringValue) else { return nil }
        self.index = index
    }
    init(intValue: Int) { self.index = intValue }
    var stringValue: String { "Index \(index)" }
    var intValue: Int? { index }
}

/// A coding key made from a string (the root, `super`, dictionary keys).
struct NameKey: CodingKey {
    let stringValue: String
    let intValue: Int?
    init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }
    init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
    static let `super` = NameKey(stringValue: "super")
}
