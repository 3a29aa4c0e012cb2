/// The namespace of typed keys. Declare keys as static members of an extension, so they read
/// as `preferences[.nightMode]`:
///
/// ```swift
/// extension PreferenceKeys {
///     static let nightMode = Key<Bool>("NightMode", default: false)
///     static let fontSize = Key<Double>("FontSize", default: 12)
///     static let deadline = Key<Date?>("MembershipDeadline", default: nil)
/// }
/// preferences[.nightMode] = true
/// ```
///
/// `@unchecked Sendable`: a non-final class cannot be checked; it holds one `let` string.
public class PreferenceKeys: @unchecked Sendable {
    /// The key's name in the domain.
    public let name: String

    init(name: String) { self.name = name }

    /// A typed key; `Key<Bool>` inside `extension PreferenceKeys`.
    public typealias Key<Value: PreferenceValue> = PreferenceKey<Value>
}

/// A typed key: a name and the value to read when the key is missing or holds something that
/// does not convert to `Value` (conversions are Apple's, e.g. `Key<Bool>` reads `"YES"` as true).
///
/// `@unchecked` only because the compiler asks a subclass to restate its superclass's conformance;
/// both classes hold nothing but `let`s of `Sendable` types.
public final class PreferenceKey<Value: PreferenceValue>: PreferenceKeys, @unchecked Sendable {
    /// The value read when nothing usable is stored.
    public let defaultValue: Value

    /// A key named `name` with a default.
    public init(_ name: String, default defaultValue: Value) {
        self.defaultValue = defaultValue
        super.init(name: name)
    }
}

/// A type a preference can hold: how it is stored as a property-list value and read back.
public protocol PreferenceValue: Sendable {
    /// Converts a stored value, or `nil` when it does not convert.
    init?(preferenceValue: PropertyListValue)
    /// The value to store; `nil` removes the key (for `Optional.none`).
    var preferenceValue: PropertyListValue? { get }
}

extension Bool: PreferenceValue {
    /// Booleans, numbers (non-zero is true) and strings that say so (`YES`, `true`, `NO`,
    /// `false`, any case, or an integer) convert; other strings (`"maybe"`) do not, so a typed
    /// key gives its default rather than the `false` that `bool(forKey:)` gives.
    public init?(preferenceValue: PropertyListValue) {
        switch preferenceValue {
        case .bool, .integer, .real: self = PreferenceConversions.bool(preferenceValue)
        case .string(let string):
            guard PreferenceConversions.saysBool(string.value) else { return nil }
            self = PreferenceConversions.bool(preferenceValue)
        default: return nil
        }
    }
    /// The value as stored in a preferences file.
    public var preferenceValue: PropertyListValue? { .bool(self) }
}

extension Int: PreferenceValue {
    /// Numbers (truncated), booleans and strings that start with a number (its integer part)
    /// convert; other strings (`"abc"`) do not, so a typed key gives its default rather than
    /// the 0 that `integer(forKey:)` gives.
    public init?(preferenceValue: PropertyListValue) {
        switch preferenceValue {
        case .bool, .integer, .real: self = PreferenceConversions.integer(preferenceValue)
        case .string(let string):
            guard PreferenceConversions.startsWithNumber(string.value) else { return nil }
            self = PreferenceConversions.integer(preferenceValue)
        default: return nil
        }
    }
    /// The value as stored in a preferences file.
    public var preferenceValue: PropertyListValue? { .integer(PropertyListInteger(self)) }
}

extension Double: PreferenceValue {
    /// Numbers, booleans and strings that start with a number convert; other strings do not
    /// (a typed key gives its default).
    public init?(preferenceValue: PropertyListValue) {
        switch preferenceValue {
        case .bool, .integer, .real: self = PreferenceConversions.double(preferenceValue)
        case .string(let string):
            guard PreferenceConversions.startsWithNumber(string.value) else { return nil }
            self = PreferenceConversions.double(preferenceValue)
        default: return nil
        }
    }
    /// The value as stored in a preferences file.
    public var preferenceValue: PropertyListValue? { .real(PropertyListReal(self)) }
}

extension Float: PreferenceValue {
    /// As `Double`, narrowed.
    public init?(preferenceValue: PropertyListValue) {
        guard let double = Double(preferenceValue: preferenceValue) else { return nil }
        self = Float(double)
    }
    /// The value as stored in a preferences file.
    public var preferenceValue: PropertyListValue? { .real(PropertyListReal(self)) }
}

extension String: PreferenceValue {
    /// Strings, and numbers as their text.
    public init?(preferenceValue: PropertyListValue) {
        guard let string = PreferenceConversions.string(preferenceValue) else { return nil }
        self = string
    }
    /// The value as stored in a preferences file.
    public var preferenceValue: PropertyListValue? { .string(PropertyListString(self)) }
}

extension Data: PreferenceValue {
    /// Data only.
    public init?(preferenceValue: PropertyListValue) {
        guard let data = preferenceValue.dataValue else { return nil }
        self = data
    }
    /// The value as stored in a preferences file.
    public var preferenceValue: PropertyListValue? { .data(self) }
}

extension Date: PreferenceValue {
    /// Dates only.
    public init?(preferenceValue: PropertyListValue) {
        guard let date = preferenceValue.dateValue else { return nil }
        self = date
    }
    /// The value as stored in a preferences file.
    public var preferenceValue: PropertyListValue? { .date(self) }
}

extension URL: PreferenceValue {
    /// A stored path (a file URL, `~` expanded) or an `NSURL` archive.
    public init?(preferenceValue: PropertyListValue) {
        guard let url = PreferenceConversions.url(preferenceValue) else { return nil }
        self = url
    }
    /// File URLs store their path (`~`-abbreviated); others an `NSURL` keyed archive.
    public var preferenceValue: PropertyListValue? {
        if isFileURL { return .string(PropertyListString(PreferenceConversions.abbreviatingTilde(standardizedFileURL.path))) }
        return (try? URLArchive.encode(self)).map(PropertyListValue.data)
    }
}

extension PropertyListValue: PreferenceValue {
    /// Any value, unchanged.
    public init?(preferenceValue: PropertyListValue) { self = preferenceValue }
    /// The value itself.
    public var preferenceValue: PropertyListValue? { self }
}

extension Optional: PreferenceValue where Wrapped: PreferenceValue {
    /// The wrapped type's conversion; `nil` stores nothing (removes the key).
    public init?(preferenceValue: PropertyListValue) {
        guard let wrapped = Wrapped(preferenceValue: preferenceValue) else { return nil }
        self = .some(wrapped)
    }
    /// The wrapped value as stored, or `nil` (the key removed).
    public var preferenceValue: PropertyListValue? { self?.preferenceValue }
}

extension Array: PreferenceValue where Element: PreferenceValue {
    /// An array whose every element converts.
    public init?(preferenceValue: PropertyListValue) {
        guard let array = preferenceValue.arrayValue else { return nil }
        var result: [Element] = []
        result.reserveCapacity(array.count)
        for element in array {
            guard let converted = Element(preferenceValue: element) else { return nil }
            result.append(converted)
        }
        self = result
    }
    /// The elements as stored. An element with no stored form (a nil in `[Int?]`) is a null,
    /// which ``Preferences/set(_:forKey:)`` refuses: left out, it shifted every later element.
    public var preferenceValue: PropertyListValue? { .array(map { $0.preferenceValue ?? .null }) }
}

extension Dictionary: PreferenceValue where Key == String, Value: PreferenceValue {
    /// A dictionary with string keys whose every value converts.
    public init?(preferenceValue: PropertyListValue) {
        guard let dictionary = PreferenceConversions.dictionary(preferenceValue) else { return nil }
        var result: [String: Value] = [:]
        for (key, value) in dictionary {
            guard let converted = Value(preferenceValue: value) else { return nil }
            result[key] = converted
        }
        self = result
    }
    /// The entries as stored. A value with no stored form (a nil in `[String: Int?]`) is a
    /// null, which ``Preferences/set(_:forKey:)`` refuses, as it refuses one in an array: left
    /// out, the key was silently dropped.
    public var preferenceValue: PropertyListValue? {
        .dictionary(PropertyListDictionary(keys.sorted().map { key in (PropertyListValue(key), self[key]?.preferenceValue ?? .null) }))
    }
}

extension PreferenceValue where Self: RawRepresentable, RawValue: PreferenceValue {
    /// An enum is stored as its raw value.
    public init?(preferenceValue: PropertyListValue) {
        guard let raw = RawValue(preferenceValue: preferenceValue) else { return nil }
        self.init(rawValue: raw)
    }
    /// The raw value as stored.
    public var preferenceValue: PropertyListValue? { rawValue.preferenceValue }
}
