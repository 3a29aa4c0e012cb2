// Literal conformances, so values can be written the way they look:
// `let value: PropertyListValue = ["Name": "Ada", "Tags": ["a", 1, true]]`.

extension PropertyListValue: ExpressibleByStringLiteral {
    /// A string literal.
    public init(stringLiteral value: String) { self = .string(PropertyListString(value)) }
}

extension PropertyListValue: ExpressibleByIntegerLiteral {
    /// An integer literal.
    public init(integerLiteral value: Int64) { self = .integer(PropertyListInteger(value)) }
}

extension PropertyListValue: ExpressibleByFloatLiteral {
    /// A floating-point literal (an 8-byte real).
    public init(floatLiteral value: Double) { self = .real(PropertyListReal(value)) }
}

extension PropertyListValue: ExpressibleByBooleanLiteral {
    /// A boolean literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension PropertyListValue: ExpressibleByArrayLiteral {
    /// An array literal.
    public init(arrayLiteral elements: PropertyListValue...) { self = .array(elements) }
}

extension PropertyListValue: ExpressibleByDictionaryLiteral {
    /// A dictionary literal with string keys, in the order written.
    public init(dictionaryLiteral elements: (String, PropertyListValue)...) {
        self = .dictionary(PropertyListDictionary(stringKeys: elements))
    }
}
