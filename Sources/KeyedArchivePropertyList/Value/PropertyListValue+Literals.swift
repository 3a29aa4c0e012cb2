// Literal conformances, so values can be written the way they look:
// `let value: PropertyListValue = ["Name": "Ada", "Tags": ["a", 1, true]]`.

extension PropertyListValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(PropertyListString(value)) }
}

extension PropertyListValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int64) { self = .integer(PropertyListInteger(value)) }
}

extension PropertyListValue: ExpressibleByFloatLiteral {
    public init(floatLiteral value: Double) { self = .real(PropertyListReal(value)) }
}

extension PropertyListValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension PropertyListValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: PropertyListValue...) { self = .array(elements) }
}

extension PropertyListValue: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, PropertyListValue)...) {
        self = .dictionary(PropertyListDictionary(stringKeys: elements))
    }
}
