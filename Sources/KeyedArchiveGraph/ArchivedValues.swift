/// NSNull: the null object that can sit in collections (nil cannot).
public struct ArchivedNull: Sendable, Hashable, CustomStringConvertible {
    /// The null value.
    public init() {}
    /// The null value.
    public static let null = ArchivedNull()
    /// The class it stands for.
    public var description: String { "NSNull" }
}

/// NSOrderedSet: members in order (duplicates are not removed on decode, so a re-archive
/// writes what was read).
public struct ArchivedOrderedSet {
    /// The members, in order.
    public var elements: [Any]
    /// An ordered set of the given members.
    public init(_ elements: [Any]) { self.elements = elements }
}

/// An object of a class nobody registered, kept as its class description and raw fields so
/// that tools can read, edit and re-archive archives of unknown classes without loss.
///
/// It is a reference type, so graphs of unknown objects keep their identity and cycles. Its
/// fields are filled in phase 2 of decoding (see ``KeyedArchiving``): when decoding returns,
/// they are complete. Fields are keyed by their stored keys (escaped, `$0` for unkeyed values)
/// in file order, without `$class`.
public final class ArchivedObject: Hashable, CustomStringConvertible {
    /// `$classname`, `$classes` and `$classhints`, written back unchanged.
    public var classDescription: ArchivedClassDescription
    /// The fields, by stored key, in order.
    public var fields: [(key: String, value: ArchivedField)]

    /// An object with a class description and fields.
    public init(classDescription: ArchivedClassDescription, fields: [(key: String, value: ArchivedField)] = []) {
        self.classDescription = classDescription
        self.fields = fields
    }

    /// An object of a class with a chain (most derived first) and fields.
    public convenience init(className: String, classChain: [String] = [], fields: [(key: String, value: ArchivedField)] = []) {
        self.init(classDescription: ArchivedClassDescription(name: className, chain: classChain.isEmpty ? [className, "NSObject"] : classChain), fields: fields)
    }

    /// `$classname`.
    public var className: String { classDescription.name }

    /// The field under a user key (escaped before lookup); setting `nil` removes it.
    public subscript(key: String) -> ArchivedField? {
        get {
            let stored = ArchiveKeys.escape(key)
            return fields.first { $0.key == stored }?.value
        }
        set {
            let stored = ArchiveKeys.escape(key)
            let index = fields.firstIndex { $0.key == stored }
            switch (index, newValue) {
            case (let index?, let value?): fields[index].value = value
            case (let index?, nil): fields.remove(at: index)
            case (nil, let value?): fields.append((stored, value))
            case (nil, nil): break
            }
        }
    }

    /// Identity.
    public static func == (lhs: ArchivedObject, rhs: ArchivedObject) -> Bool { lhs === rhs }
    /// Identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
    /// `<ClassName: n fields>`.
    public var description: String { "<\(className): \(fields.count) fields>" }
}

/// One field of an ``ArchivedObject``.
public enum ArchivedField {
    /// A value stored inline in the object's dictionary with no references in it (a primitive
    /// from `encodeInt`/`encodeBool`/`encodeBytes`..., or an inline container of such values).
    case inline(PropertyListValue)
    /// A reference to another object (`nil` for UID 0).
    case object(Any?)
    /// An inline array holding references.
    case array([ArchivedField])
    /// An inline set holding references.
    case set([ArchivedField])
    /// An inline dictionary holding references (keys are stored as they are).
    case dictionary([(key: PropertyListValue, value: ArchivedField)])

    /// The referenced object, for ``object(_:)``.
    public var objectValue: Any? {
        if case .object(let object) = self { return object }
        return nil
    }
    /// The inline value, for ``inline(_:)``.
    public var inlineValue: PropertyListValue? {
        if case .inline(let value) = self { return value }
        return nil
    }
}
