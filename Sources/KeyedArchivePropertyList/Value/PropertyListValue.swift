/// A property-list value: one model for every object type the binary (`bplist00`), XML and
/// OpenStep formats can hold.
///
/// The model is **lossless** for what the binary format records beside the value itself: each
/// integer's and real's stored width, whether a string was stored as ASCII or UTF-16, and the
/// order of dictionary entries as read. A file that is read and written back unchanged can
/// therefore come out byte for byte as it went in.
///
/// Equality is by value, the way CoreFoundation compares property lists: storage hints are
/// ignored, dictionaries and sets compare without regard to order (entries that repeat a key, which
/// only files from outside have, pair up in their relative order), strings compare literally
/// (by Unicode scalars, so NFC and NFD spellings differ), and reals and dates compare by bit
/// pattern (so `nan == nan` and `-0.0 != 0.0`, which round-trip tests need).
///
/// ```swift
/// let settings: PropertyListValue = ["Name": "Ada", "Volume": 0.5, "Tags": ["a", "b"]]
/// let bytes = try PropertyList.encode(settings, format: .binary)
/// let back = try PropertyList.decode(bytes)
/// assert(back == settings)
/// ```
public enum PropertyListValue: Sendable {
    /// The binary null object (marker `0x00`): rare but legal; not representable in XML.
    case null
    /// A boolean.
    case bool(Bool)
    /// An integer in the range `Int64.min ... UInt64.max`, with its stored width.
    case integer(PropertyListInteger)
    /// A 4- or 8-byte IEEE 754 real.
    case real(PropertyListReal)
    /// A date: seconds since 2001-01-01 00:00:00 UTC, stored as a double.
    case date(Date)
    /// Raw bytes.
    case data(Data)
    /// A string, with the encoding it was stored in.
    case string(PropertyListString)
    /// A keyed-archiver object reference (`CF$UID`), at most 32 bits as CoreFoundation allows.
    case uid(UInt32)
    /// An ordered array.
    case array([PropertyListValue])
    /// A set (binary marker `0xC_`); members are kept in the order read.
    case set([PropertyListValue])
    /// A dictionary whose entries keep the order they were read or inserted in.
    case dictionary(PropertyListDictionary)
}

extension PropertyListValue {
    /// A string value stored the way Apple's writer chooses (ASCII when possible, else UTF-16).
    public init(_ string: String) { self = .string(PropertyListString(string)) }
    /// An integer value, stored at the width Apple's writer chooses (the smallest of 1, 2, 4
    /// bytes for non-negative values, 8 for negative ones).
    public init(_ integer: Int) { self = .integer(PropertyListInteger(integer)) }
    /// An integer value, stored at the width Apple's writer chooses (as for `Int`).
    public init(_ integer: Int64) { self = .integer(PropertyListInteger(integer)) }
    /// An integer value; values above `Int64.max` are stored as 16-byte integers, as Apple does.
    public init(_ integer: UInt64) { self = .integer(PropertyListInteger(integer)) }
    /// An 8-byte real.
    public init(_ real: Double) { self = .real(PropertyListReal(real)) }
    /// A 4-byte real.
    public init(_ real: Float) { self = .real(PropertyListReal(real)) }
    /// A boolean.
    public init(_ bool: Bool) { self = .bool(bool) }
    /// A data value.
    public init(_ data: Data) { self = .data(data) }
    /// A date value.
    public init(_ date: Date) { self = .date(date) }
    /// An array value.
    public init(_ array: [PropertyListValue]) { self = .array(array) }
    /// A dictionary value with string keys, in the order given.
    public init(_ entries: KeyValuePairs<String, PropertyListValue>) {
        self = .dictionary(PropertyListDictionary(entries.map { (PropertyListValue($0.key), $0.value) }))
    }
}

// MARK: - Typed accessors

extension PropertyListValue {
    /// The string, if this is a string.
    public var stringValue: String? {
        if case .string(let string) = self { return string.value }
        return nil
    }
    /// True when this is a string with `string`'s text, byte for byte (storage hints aside).
    /// A method rather than a pattern match at the call site: called on a value in place
    /// (`pointer.pointee.isString(probe)`), it reads the value without copying it.
    @inlinable
    package func isString(_ string: PropertyListString) -> Bool {
        guard case .string(let text) = self else { return false }
        return text == string
    }
    /// The integer as `Int`, if this is an integer that fits.
    public var intValue: Int? {
        if case .integer(let integer) = self { return integer.int64Value.flatMap { Int(exactly: $0) } }
        return nil
    }
    /// The integer, if this is an integer in the `Int64` range.
    public var int64Value: Int64? {
        if case .integer(let integer) = self { return integer.int64Value }
        return nil
    }
    /// The integer, if this is a non-negative integer.
    public var uint64Value: UInt64? {
        if case .integer(let integer) = self { return integer.uint64Value }
        return nil
    }
    /// The real as a `Double`, if this is a real.
    public var doubleValue: Double? {
        if case .real(let real) = self { return real.value }
        return nil
    }
    /// The boolean, if this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let bool) = self { return bool }
        return nil
    }
    /// The bytes, if this is data.
    public var dataValue: Data? {
        if case .data(let data) = self { return data }
        return nil
    }
    /// The date, if this is a date.
    public var dateValue: Date? {
        if case .date(let date) = self { return date }
        return nil
    }
    /// The UID, if this is a `CF$UID` reference.
    public var uidValue: UInt32? {
        if case .uid(let uid) = self { return uid }
        return nil
    }
    /// The elements, if this is an array.
    public var arrayValue: [PropertyListValue]? {
        if case .array(let array) = self { return array }
        return nil
    }
    /// The members, if this is a set.
    public var setValue: [PropertyListValue]? {
        if case .set(let members) = self { return members }
        return nil
    }
    /// The dictionary, if this is a dictionary.
    public var dictionaryValue: PropertyListDictionary? {
        if case .dictionary(let dictionary) = self { return dictionary }
        return nil
    }
    /// The value stored under a string key, if this is a dictionary that has one.
    public subscript(key: String) -> PropertyListValue? {
        dictionaryValue?[key]
    }

    /// A short name of the value's type, used in error messages ("dictionary", "string", ...).
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .integer: "integer"
        case .real: "real"
        case .date: "date"
        case .data: "data"
        case .string: "string"
        case .uid: "UID"
        case .array: "array"
        case .set: "set"
        case .dictionary: "dictionary"
        }
    }
}
