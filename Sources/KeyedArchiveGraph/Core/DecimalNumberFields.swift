import KeyedArchivePropertyList

/// The fields of an archived NSDecimalNumber, and their conversion to and from `Decimal`.
///
/// Apple's `-[NSDecimalNumber encodeWithCoder:]` writes the NSDecimal struct's parts:
/// `NS.exponent` and `NS.length` (32-bit integers), `NS.negative` and `NS.compact` (booleans),
/// `NS.mantissa.bo` = 1 (the mantissa's byte order: 1 is little-endian) and `NS.mantissa`, the
/// eight 16-bit mantissa words as 16 bytes of data (`encodeBytes:length:`, inline), least
/// significant word first, the words past `NS.length` zero. Its decoder refuses a length above
/// 8 or a mantissa that is not 16 bytes, and byte-swaps each word unless the byte order is 1.
/// swift-corelibs-foundation writes the byte order under `NS.bo` and the mantissa as an NSData
/// object (by reference); both forms are read here.
///
/// `Decimal`'s raw parts are not public API outside Apple platforms, so the conversion goes
/// through its public parts (sign, exponent, significand) and the significand's digits.
package struct DecimalNumberFields: Equatable, Sendable {
    /// The power of ten (NSDecimal keeps 8 bits: -128...127).
    package var exponent: Int
    /// The number of significant mantissa words (0...8); 0 with `isNegative` is NaN.
    package var length: Int
    package var isNegative: Bool
    package var isCompact: Bool
    /// The mantissa, least significant word first.
    package var words: [UInt16]

    package static let classChain = ["NSDecimalNumber", "NSNumber", "NSValue", "NSObject"]
    package static let exponentKey = "NS.exponent"
    package static let lengthKey = "NS.length"
    package static let negativeKey = "NS.negative"
    package static let compactKey = "NS.compact"
    package static let byteOrderKey = "NS.mantissa.bo"
    /// swift-corelibs-foundation's name for the byte order.
    package static let corelibsByteOrderKey = "NS.bo"
    package static let mantissaKey = "NS.mantissa"

    /// The parts of `decimal`.
    package init(_ decimal: Decimal) {
        guard !decimal.isNaN else {
            self.init(exponent: 0, length: 0, isNegative: true, isCompact: false, words: [UInt16](repeating: 0, count: 8))
            return
        }
        // The significand is a whole number below 2^128 whose description is its digits.
        var words = [UInt16](repeating: 0, count: 8)
        for digit in decimal.significand.description.utf8 where (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) {
            // words = words * 10 + digit (it fits: the significand is below 2^128).
            var carry = UInt32(digit - UInt8(ascii: "0"))
            for index in words.indices {
                let product = UInt32(words[index]) &* 10 &+ carry
                words[index] = UInt16(truncatingIfNeeded: product)
                carry = product >> 16
            }
        }
        let length = (words.lastIndex { $0 != 0 } ?? -1) + 1
        self.init(
            exponent: decimal.exponent, length: length, isNegative: decimal.sign == .minus && length > 0,
            // NSDecimalCompact's form: no trailing decimal zero left in a non-zero mantissa.
            isCompact: length > 0 && Self.remainder(of: words, dividingBy: 10) != 0, words: words)
    }

    package init(exponent: Int, length: Int, isNegative: Bool, isCompact: Bool, words: [UInt16]) {
        self.exponent = exponent
        self.length = length
        self.isNegative = isNegative
        self.isCompact = isCompact
        self.words = words
    }

    /// The value, or nil when the parts are out of NSDecimal's ranges.
    package var decimal: Decimal? {
        guard (-128...127).contains(exponent), (0...8).contains(length), words.count == 8 else { return nil }
        guard length > 0 else { return isNegative ? .nan : Decimal(0) }
        var significant = Array(words[..<length])
        // The significand's digits, least significant first, by repeated division by 10.
        var digits: [UInt8] = []
        while significant.contains(where: { $0 != 0 }) {
            var remainder: UInt32 = 0
            for index in significant.indices.reversed() {
                let current = remainder << 16 | UInt32(significant[index])
                significant[index] = UInt16(current / 10)
                remainder = current % 10
            }
            digits.append(UInt8(ascii: "0") + UInt8(remainder))
        }
        // Parsed whole, digits and exponent together: `Decimal(sign:exponent:significand:)`
        // added the exponent to the significand's own, which parsing compacts ("1000" is
        // 1 × 10^3), and a sum past 127 was NaN although the value (1000 × 10^125) fits.
        // A zero mantissa of non-zero length is zero, as NSDecimal reads it.
        let text = (isNegative ? "-" : "") + (digits.isEmpty ? "0" : String(decoding: digits.reversed(), as: UTF8.self)) + "E" + String(exponent)
        guard let decimal = Decimal(string: text), !decimal.isNaN else { return nil }
        return decimal
    }

    /// The fields of an archived NSDecimalNumber (without `$class`), as Apple writes them.
    package var archivedFields: [(key: String, value: PropertyListValue)] {
        var mantissa = [UInt8]()
        mantissa.reserveCapacity(16)
        for word in words { mantissa += [UInt8(truncatingIfNeeded: word), UInt8(truncatingIfNeeded: word >> 8)] }
        return [
            (Self.exponentKey, .integer(PropertyListInteger(Int64(exponent)))),
            (Self.lengthKey, .integer(PropertyListInteger(Int64(length)))),
            (Self.negativeKey, .bool(isNegative)),
            (Self.compactKey, .bool(isCompact)),
            (Self.byteOrderKey, .integer(1)),
            (Self.mantissaKey, .data(Data(mantissa))),
        ]
    }

    /// Whether an object's fields are an NSDecimalNumber's: the class's name, or its mantissa
    /// (a subclass, or another archiver's name for it).
    package static func describes(_ fields: PropertyListDictionary, className: String) -> Bool {
        fields[mantissaKey] != nil || className == classChain[0]
    }

    /// A number stored where a decimal is asked, as NSNumber's `decimalValue` gives it: an
    /// integer exactly; a real as its shortest text (123.456, not `Decimal(Double)`'s
    /// 123.45599999999997952); a boolean (a merged NSNumber) as 0 or 1. Nil for anything else,
    /// and for a real past Decimal's range (1e300, 5e-324), which must be an error, not NaN.
    package static func decimal(ofNumber value: PropertyListValue) -> Decimal? {
        switch value {
        case .integer(let integer): return integer.int64Value.map { Decimal($0) } ?? Decimal(integer.bitPattern)
        case .real(let real):
            guard real.value.isFinite, let decimal = Decimal(string: String(describing: real.value)), !decimal.isNaN else { return nil }
            return decimal
        case .bool(let bool): return bool ? 1 : 0
        default: return nil
        }
    }

    private static func remainder(of words: [UInt16], dividingBy divisor: UInt32) -> UInt32 {
        var remainder: UInt32 = 0
        for word in words.reversed() { remainder = (remainder << 16 | UInt32(word)) % divisor }
        return remainder
    }
}

extension ArchiveDocument {
    /// NSDecimalNumber: the fields ``DecimalNumberFields`` describes, checked as Apple's
    /// decoder checks them (and the exponent within NSDecimal's 8 bits, which Apple's decoder
    /// does not check: a wider one spilled into the other parts).
    package func decimalValue(ofObject fields: PropertyListDictionary, path: @autoclosure () -> String) throws(KeyedArchiveError) -> Decimal {
        typealias Keys = DecimalNumberFields
        func integer(_ key: String) throws(KeyedArchiveError) -> Int {
            switch fields[key] {
            case nil: return 0
            case .integer(let integer)?:
                guard let value = integer.int64Value, let result = Int(exactly: value) else {
                    throw KeyedArchiveError(.invalidObject, "\(integer) is out of range", path: path() + " " + key)
                }
                return result
            case let other?: throw KeyedArchiveError(.invalidObject, "expected an integer, found a \(other.typeName)", path: path() + " " + key)
            }
        }
        func flag(_ key: String) throws(KeyedArchiveError) -> Bool {
            switch fields[key] {
            case nil: return false
            case .bool(let bool)?: return bool
            case .integer(let integer)?: return integer.bitPattern != 0
            case let other?: throw KeyedArchiveError(.invalidObject, "expected a boolean, found a \(other.typeName)", path: path() + " " + key)
            }
        }
        let exponent = try integer(Keys.exponentKey)
        guard (-128...127).contains(exponent) else {
            throw KeyedArchiveError(.invalidObject, "exponent \(exponent) is outside -128...127", path: path() + " " + Keys.exponentKey)
        }
        let length = try integer(Keys.lengthKey)
        guard (0...8).contains(length) else {
            throw KeyedArchiveError(.invalidObject, "length \(length) is outside 0...8", path: path() + " " + Keys.lengthKey)
        }
        let byteOrder = fields[Keys.byteOrderKey] != nil ? try integer(Keys.byteOrderKey) : try integer(Keys.corelibsByteOrderKey)
        guard let stored = fields[Keys.mantissaKey] else {
            throw KeyedArchiveError(.invalidObject, "NSDecimalNumber has no NS.mantissa", path: path())
        }
        let mantissa: Data
        switch try followed(stored, kind: .data, path: path() + " " + Keys.mantissaKey, remaining: Self.maximumFieldIndirection) {
        case .inline(.data(let data)): mantissa = data
        case .inline(let other):
            throw KeyedArchiveError(.invalidObject, "expected data, found a \(other.typeName)", path: path() + " " + Keys.mantissaKey)
        case .object(let object, let objectPath): mantissa = try dataValue(ofObject: object, path: objectPath)
        }
        guard mantissa.count == 16 else {
            throw KeyedArchiveError(.invalidObject, "the mantissa is \(mantissa.count) bytes, not 16", path: path() + " " + Keys.mantissaKey)
        }
        let bytes = [UInt8](mantissa)
        // Byte order 1 is little-endian (Apple's, and corelibs' on little-endian hosts).
        let words = (0..<8).map { index -> UInt16 in
            let first = UInt16(bytes[2 * index]), second = UInt16(bytes[2 * index + 1])
            return byteOrder == 1 ? first | second << 8 : first << 8 | second
        }
        let parts = DecimalNumberFields(
            exponent: exponent, length: length, isNegative: try flag(Keys.negativeKey), isCompact: try flag(Keys.compactKey), words: words)
        guard let decimal = parts.decimal else {
            throw KeyedArchiveError(.invalidObject, "not a decimal number", path: path())
        }
        return decimal
    }
}
