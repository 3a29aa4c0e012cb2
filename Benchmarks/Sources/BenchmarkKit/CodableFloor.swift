/// The Codable protocol's own cost, with no format behind it: an `Encoder` that visits every
/// value and writes nothing, and a `Decoder` that reads nothing and returns constants. A Codable
/// coder gets these calls (the containers, their type-erasing boxes, one call per field) and
/// must also read or write each key and value, so these rows estimate the least a coder can take
/// and bound the ratio it can reach against a peer on this machine. An estimate, not a proof: a
/// coder with a fast path for arrays (ours has one) skips `Array`'s own `encode(to:)` and
/// `init(from:)`, which these coders go through.
///
/// Benchmark-only, and only for W5's records: Bool, Int, Double and String have overloads here;
/// any other primitive (Float, Int8, ...) would reach the generic overload and recurse forever.
public enum CodableFloor {
    /// Counts the values an `Encodable` value hands to its encoder.
    public final class NullEncoder: Encoder {
        public var codingPath: [any CodingKey] { [] }
        public var userInfo: [CodingUserInfoKey: Any] { [:] }
        var values = 0

        public func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            KeyedEncodingContainer(Keyed<Key>(encoder: self))
        }
        public func unkeyedContainer() -> any UnkeyedEncodingContainer { Unkeyed(encoder: self) }
        public func singleValueContainer() -> any SingleValueEncodingContainer { Single(encoder: self) }

        /// The number of leaf values `value` encodes.
        public static func count<T: Encodable>(_ value: T) throws -> Int {
            let encoder = NullEncoder()
            try value.encode(to: encoder)
            return encoder.values
        }

        struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
            let encoder: NullEncoder
            var codingPath: [any CodingKey] { [] }
            mutating func encodeNil(forKey key: Key) throws { encoder.values += 1 }
            mutating func encode(_ value: Bool, forKey key: Key) throws { encoder.values += 1 }
            mutating func encode(_ value: String, forKey key: Key) throws { encoder.values += 1 }
            mutating func encode(_ value: Double, forKey key: Key) throws { encoder.values += 1 }
            mutating func encode(_ value: Int, forKey key: Key) throws { encoder.values += 1 }
            mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try value.encode(to: encoder) }
            mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
                encoder.container(keyedBy: keyType)
            }
            mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { Unkeyed(encoder: encoder) }
            mutating func superEncoder() -> any Encoder { encoder }
            mutating func superEncoder(forKey key: Key) -> any Encoder { encoder }
        }

        struct Unkeyed: UnkeyedEncodingContainer {
            let encoder: NullEncoder
            var codingPath: [any CodingKey] { [] }
            var count = 0
            mutating func encodeNil() throws { count += 1; encoder.values += 1 }
            mutating func encode(_ value: Bool) throws { count += 1; encoder.values += 1 }
            mutating func encode(_ value: String) throws { count += 1; encoder.values += 1 }
            mutating func encode(_ value: Double) throws { count += 1; encoder.values += 1 }
            mutating func encode(_ value: Int) throws { count += 1; encoder.values += 1 }
            mutating func encode<T: Encodable>(_ value: T) throws { count += 1; try value.encode(to: encoder) }
            mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
                count += 1
                return encoder.container(keyedBy: keyType)
            }
            mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { count += 1; return Unkeyed(encoder: encoder) }
            mutating func superEncoder() -> any Encoder { encoder }
        }

        struct Single: SingleValueEncodingContainer {
            let encoder: NullEncoder
            var codingPath: [any CodingKey] { [] }
            mutating func encodeNil() throws { encoder.values += 1 }
            mutating func encode(_ value: Bool) throws { encoder.values += 1 }
            mutating func encode(_ value: String) throws { encoder.values += 1 }
            mutating func encode(_ value: Double) throws { encoder.values += 1 }
            mutating func encode(_ value: Int) throws { encoder.values += 1 }
            mutating func encode<T: Encodable>(_ value: T) throws { try value.encode(to: encoder) }
        }
    }

    /// Produces `Decodable` values from nothing: every keyed container has every key, every
    /// unkeyed container has `elementsPerArray` elements except the top-level one, which has
    /// `topLevelCount`; leaves are constants.
    public final class ConstantDecoder: Decoder {
        public var codingPath: [any CodingKey] { [] }
        public var userInfo: [CodingUserInfoKey: Any] { [:] }
        let topLevelCount: Int
        let elementsPerArray: Int
        var isTopLevel = true

        init(topLevelCount: Int, elementsPerArray: Int) {
            self.topLevelCount = topLevelCount
            self.elementsPerArray = elementsPerArray
        }

        public func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            KeyedDecodingContainer(Keyed<Key>(decoder: self))
        }
        public func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let count = isTopLevel ? topLevelCount : elementsPerArray
            isTopLevel = false
            return Unkeyed(decoder: self, count: count)
        }
        public func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(decoder: self) }

        /// Builds a value of type `T`.
        public static func make<T: Decodable>(_ type: T.Type, topLevelCount: Int, elementsPerArray: Int) throws -> T {
            try T(from: ConstantDecoder(topLevelCount: topLevelCount, elementsPerArray: elementsPerArray))
        }

        struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
            let decoder: ConstantDecoder
            var codingPath: [any CodingKey] { [] }
            var allKeys: [Key] { [] }
            func contains(_ key: Key) -> Bool { true }
            func decodeNil(forKey key: Key) throws -> Bool { false }
            func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { true }
            func decode(_ type: String.Type, forKey key: Key) throws -> String { "" }
            func decode(_ type: Double.Type, forKey key: Key) throws -> Double { 0 }
            func decode(_ type: Int.Type, forKey key: Key) throws -> Int { 0 }
            func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try T(from: decoder) }
            func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
                try decoder.container(keyedBy: type)
            }
            func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try decoder.unkeyedContainer() }
            func superDecoder() throws -> any Decoder { decoder }
            func superDecoder(forKey key: Key) throws -> any Decoder { decoder }
        }

        struct Unkeyed: UnkeyedDecodingContainer {
            let decoder: ConstantDecoder
            var codingPath: [any CodingKey] { [] }
            let count: Int?
            var currentIndex = 0
            var isAtEnd: Bool { currentIndex >= (count ?? 0) }

            init(decoder: ConstantDecoder, count: Int) {
                self.decoder = decoder
                self.count = count
            }
            mutating func decodeNil() throws -> Bool { false }
            mutating func decode(_ type: Bool.Type) throws -> Bool { currentIndex += 1; return true }
            mutating func decode(_ type: String.Type) throws -> String { currentIndex += 1; return "" }
            mutating func decode(_ type: Double.Type) throws -> Double { currentIndex += 1; return 0 }
            mutating func decode(_ type: Int.Type) throws -> Int { currentIndex += 1; return 0 }
            mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { currentIndex += 1; return try T(from: decoder) }
            mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
                currentIndex += 1
                return try decoder.container(keyedBy: type)
            }
            mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
                currentIndex += 1
                return try decoder.unkeyedContainer()
            }
            mutating func superDecoder() throws -> any Decoder { decoder }
        }

        struct Single: SingleValueDecodingContainer {
            let decoder: ConstantDecoder
            var codingPath: [any CodingKey] { [] }
            func decodeNil() -> Bool { false }
            func decode(_ type: Bool.Type) throws -> Bool { true }
            func decode(_ type: String.Type) throws -> String { "" }
            func decode(_ type: Double.Type) throws -> Double { 0 }
            func decode(_ type: Int.Type) throws -> Int { 0 }
            func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: decoder) }
        }
    }
}
