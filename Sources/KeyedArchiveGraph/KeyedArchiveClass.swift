/// A class a caller allows in secure decoding (Apple's `allowedClasses`).
///
/// Decoding never instantiates anything that the caller did not name: each object's
/// `$classname` (or, for unknown names, its `$classes` fallbacks) must map to one of the allowed
/// classes, else decoding stops with ``KeyedArchiveError/Code/classNotAllowed``. There is no
/// "any object" wildcard; ``archivedObject`` allows unknown classes only as inert
/// ``ArchivedObject`` values that run no code.
///
/// ```swift
/// let people = try KeyedUnarchiver.unarchivedObject(
///     ofClasses: [.array, .string, .type(Person.self)], from: data)
/// ```
public struct KeyedArchiveClass: @unchecked Sendable, Hashable, CustomStringConvertible {
    // @unchecked: the non-Sendable members are a metatype and a pure closure over one; both immutable.

    /// The built-in kinds and user types.
    package enum Kind: Sendable, Hashable {
        case string, number, data, date, array, dictionary, set, orderedSet, null, url, uuid
        case archivedObject
        case type(ObjectIdentifier)
    }

    package let kind: Kind
    private let builtinName: String
    /// The name shown in messages (`NSString`, `MyApp.Person`).
    public var name: String { type?.archivedClassName ?? builtinName }
    /// For user types: the type itself.
    package let type: (any KeyedArchiving.Type)?
    /// For user types: whether a decoded type is this type or a subclass of it.
    package let matches: ((any KeyedArchiving.Type) -> Bool)?

    private init(_ kind: Kind, _ name: String) {
        self.kind = kind
        self.builtinName = name
        self.type = nil
        self.matches = nil
    }

    /// A user class (and its subclasses registered for decoding).
    public static func type<T: KeyedArchiving>(_ type: T.Type) -> KeyedArchiveClass {
        KeyedArchiveClass(userType: type)
    }

    package init(userType: any KeyedArchiving.Type) {
        self.kind = .type(ObjectIdentifier(userType))
        self.builtinName = ""
        self.type = userType
        self.matches = Self.matcher(for: userType)
    }

    private static func matcher<T: KeyedArchiving>(for type: T.Type) -> (any KeyedArchiving.Type) -> Bool {
        { candidate in candidate is T.Type }
    }

    /// NSString / NSMutableString, decoded as `String`.
    public static let string = KeyedArchiveClass(.string, "NSString")
    /// NSNumber (integers, reals, booleans), decoded as `Int`, `UInt64`, `Double`, `Float` or `Bool`.
    public static let number = KeyedArchiveClass(.number, "NSNumber")
    /// NSData / NSMutableData, decoded as `Data`.
    public static let data = KeyedArchiveClass(.data, "NSData")
    /// NSDate, decoded as `Date`.
    public static let date = KeyedArchiveClass(.date, "NSDate")
    /// NSArray / NSMutableArray, decoded as `[Any]` (elements must be allowed too).
    public static let array = KeyedArchiveClass(.array, "NSArray")
    /// NSDictionary / NSMutableDictionary, decoded as `[AnyHashable: Any]`.
    public static let dictionary = KeyedArchiveClass(.dictionary, "NSDictionary")
    /// NSSet / NSMutableSet, decoded as `Set<AnyHashable>`.
    public static let set = KeyedArchiveClass(.set, "NSSet")
    /// NSOrderedSet / NSMutableOrderedSet, decoded as ``ArchivedOrderedSet``.
    public static let orderedSet = KeyedArchiveClass(.orderedSet, "NSOrderedSet")
    /// NSNull, decoded as ``ArchivedNull``.
    public static let null = KeyedArchiveClass(.null, "NSNull")
    /// NSURL, decoded as `URL`.
    public static let url = KeyedArchiveClass(.url, "NSURL")
    /// NSUUID, decoded as `UUID`.
    public static let uuid = KeyedArchiveClass(.uuid, "NSUUID")
    /// Objects of classes nobody registered, decoded as inert ``ArchivedObject`` values.
    public static let archivedObject = KeyedArchiveClass(.archivedObject, "ArchivedObject")

    /// The classes a property list can hold: string, number, data, date, array, dictionary.
    public static let propertyListClasses: [KeyedArchiveClass] = [.string, .number, .data, .date, .array, .dictionary]
    /// Every built-in Foundation class this library maps (not ``archivedObject``).
    public static let foundationClasses: [KeyedArchiveClass] = [
        .string, .number, .data, .date, .array, .dictionary, .set, .orderedSet, .null, .url, .uuid,
    ]

    /// The class's name.
    public var description: String { name }

    /// The same class (a Swift type by identity).
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.kind == rhs.kind }
    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) { hasher.combine(kind) }

    /// The class that decodes values of a Swift type, or `nil` when there is none (collections:
    /// use `decodeArrayOfObjects` / `decodeDictionary` or list the classes).
    package static func forType<T>(_ type: T.Type) -> KeyedArchiveClass? {
        if let user = type as? any KeyedArchiving.Type { return KeyedArchiveClass(userType: user) }
        switch type {
        case is String.Type: return .string
        case is Int.Type, is Int64.Type, is Int32.Type, is Int16.Type, is Int8.Type, is UInt64.Type, is UInt32.Type,
            is UInt16.Type, is UInt8.Type, is UInt.Type, is Double.Type, is Float.Type, is Bool.Type:
            return .number
        case is Data.Type: return .data
        case is Date.Type: return .date
        case is URL.Type: return .url
        case is UUID.Type: return .uuid
        case is ArchivedNull.Type: return .null
        case is ArchivedObject.Type: return .archivedObject
        case is ArchivedOrderedSet.Type: return .orderedSet
        default: return nil
        }
    }
}
