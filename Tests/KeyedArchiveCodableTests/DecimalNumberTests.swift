import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// `Decimal` through the Codable bridge is an NSDecimalNumber, as Apple's archiver writes one:
/// `NS.exponent`, `NS.length`, `NS.negative`, `NS.compact`, `NS.mantissa.bo` = 1 and the 16
/// mantissa bytes `NS.mantissa` (inline, little-endian words). Before session 66 it went
/// through `Decimal`'s own coding, an object of class "Decimal" no NSKeyedUnarchiver reads, and
/// an NSDecimalNumber from Apple was refused ("keyNotFound exponent").
///
/// The peer for the parts is Foundation's own `Decimal` coding (through PropertyListEncoder),
/// which writes the NSDecimal struct's raw parts; Foundation on Linux cannot archive an
/// NSDecimalNumber (its hashing recurses) and reads only its own form (the mantissa as an
/// NSData object, the byte order under `NS.bo`), which is read here too.
final class DecimalNumberTests: XCTestCase {
    struct Price: Codable, Equatable {
        var amount: Decimal
        var fees: [Decimal]
        var discount: Decimal?
    }

    /// Foundation's raw parts of a Decimal: its own `encode(to:)` through PropertyListEncoder.
    private func foundationParts(_ decimal: Decimal) throws -> (exponent: Int, length: Int, negative: Bool, compact: Bool, words: [Int]) {
        let plist = try PropertyListSerialization.propertyList(from: try PropertyListEncoder().encode([decimal]), format: nil)
        let parts = try XCTUnwrap((plist as? [Any])?.first as? [String: Any])
        return (
            try XCTUnwrap(parts["exponent"] as? Int), try XCTUnwrap(parts["length"] as? Int), try XCTUnwrap(parts["isNegative"] as? Bool),
            try XCTUnwrap(parts["isCompact"] as? Bool), try XCTUnwrap(parts["mantissa"] as? [Int])
        )
    }

    /// Our archive's NSDecimalNumber objects, in `$objects` order.
    private func archivedDecimalNumbers(_ archive: Data) throws -> [PropertyListValue] {
        let plist = try PropertyList.decode(archive)
        guard case .array(let objects)? = plist["$objects"] else { return [] }
        return objects.filter { object in
            guard case .uid(let classUID)? = object["$class"], case .array(let chain)? = objects[Int(classUID)]["$classes"] else { return false }
            return chain == ["NSDecimalNumber", "NSNumber", "NSValue", "NSObject"]
        }
    }

    private func randomDecimals(count: Int) -> [Decimal] {
        var random = SeededGenerator(seed: 66)
        var values: [Decimal] = [0, 1, -1, .nan, Decimal(string: "3.14")!, Decimal(string: "-0.001")!, Decimal(string: "100")!,
            Decimal(string: "340282366920938463463374607431768211455")!, Decimal(Int64.min), Decimal(UInt64.max),
            Decimal(sign: .minus, exponent: -128, significand: 7), Decimal(sign: .plus, exponent: 127, significand: 65_536)]
        while values.count < count {
            var digits = String(random.next() % 9 + 1)
            for _ in 0..<Int(random.next() % 38) { digits += String(random.next() % 10) }
            let exponent = Int(random.next() % 256) - 128
            values.append(Decimal(sign: random.next() % 2 == 0 ? .plus : .minus, exponent: exponent, significand: Decimal(string: digits)!))
        }
        return values
    }

    func testDecimalsAreArchivedAsAppleWritesNSDecimalNumber() throws {
        let values = randomDecimals(count: 300)
        for value in values {
            let archive = try KeyedArchiver.archivedData(withRootObject: [value])
            let objects = try archivedDecimalNumbers(archive)
            XCTAssertEqual(objects.count, 1, "\(value)")
            guard let object = objects.first else { continue }
            let theirs = try foundationParts(value)
            XCTAssertEqual(object["NS.exponent"], .integer(PropertyListInteger(Int64(theirs.exponent))), "\(value)")
            XCTAssertEqual(object["NS.length"], .integer(PropertyListInteger(Int64(theirs.length))), "\(value)")
            XCTAssertEqual(object["NS.negative"], .bool(theirs.negative), "\(value)")
            XCTAssertEqual(object["NS.compact"], .bool(theirs.compact), "\(value)")
            XCTAssertEqual(object["NS.mantissa.bo"], .integer(1))
            // Little-endian words, those past the length zero (Apple's encoder clears them).
            let words = theirs.words.enumerated().map { $0.offset < theirs.length ? $0.element : 0 }
            XCTAssertEqual(object["NS.mantissa"], .data(Data(words.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })), "\(value)")
            // And back.
            let back = try KeyedUnarchiver.unarchivedObject(ofType: [Decimal].self, from: archive)
            if value.isNaN { XCTAssertTrue(back.first?.isNaN == true) } else { XCTAssertEqual(back, [value]) }
        }
        // Inside a struct, optional and in arrays, binary and XML.
        let price = Price(amount: Decimal(string: "19.99")!, fees: [Decimal(string: "0.5")!, 2], discount: Decimal(string: "-1.25"))
        for format in [PropertyListFormat.binary, .xml] {
            let encoder = KeyedArchiveEncoder()
            encoder.outputFormat = format
            let archive = try encoder.encode(price)
            XCTAssertEqual(try archivedDecimalNumbers(archive).count, 4)
            XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Price.self, from: archive), price)
        }
    }

    /// An archive holding one NSDecimalNumber with the given fields.
    private func archive(_ fields: [(String, PropertyListValue)], extra: [PropertyListValue] = []) throws -> Data {
        var object = PropertyListDictionary([("$class", .uid(2))])
        for (key, value) in fields { object.entries.append((PropertyListValue(key), value)) }
        let objects: [PropertyListValue] = ["$null", .dictionary(object),
            .dictionary(PropertyListDictionary([("$classname", "NSDecimalNumber"), ("$classes", ["NSDecimalNumber", "NSNumber", "NSValue", "NSObject"])]))] + extra
        return try PropertyList.encode(.dictionary(PropertyListDictionary([
            ("$archiver", "NSKeyedArchiver"), ("$version", 100000), ("$top", .dictionary(PropertyListDictionary([("root", .uid(1))]))),
            ("$objects", .array(objects)),
        ])), format: .binary)
    }

    private func mantissa(_ words: [UInt16], bigEndian: Bool = false) -> Data {
        Data((words + [UInt16](repeating: 0, count: 8 - words.count)).flatMap { bigEndian ? [UInt8($0 >> 8), UInt8($0 & 0xFF)] : [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
    }

    func testNSDecimalNumbersFromAppleAndCorelibsDecode() throws {
        // Apple's form: 3.14 is 314 × 10^-2. -(0x0009_5678_1234) × 10^5 takes three words.
        let apple = try archive([("NS.exponent", -2), ("NS.length", 1), ("NS.negative", false), ("NS.compact", true), ("NS.mantissa.bo", 1), ("NS.mantissa", .data(mantissa([314])))])
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Decimal.self, from: apple), Decimal(string: "3.14"))
        let wide = try archive([("NS.exponent", 5), ("NS.length", 3), ("NS.negative", true), ("NS.compact", true), ("NS.mantissa.bo", 1), ("NS.mantissa", .data(mantissa([0x1234, 0x5678, 0x9])))])
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Decimal.self, from: wide), Decimal(sign: .minus, exponent: 5, significand: Decimal(0x9_5678_1234)))
        // Another byte order (Apple swaps each word unless the order is 1).
        let swapped = try archive([("NS.exponent", -2), ("NS.length", 1), ("NS.mantissa.bo", 2), ("NS.mantissa", .data(mantissa([314], bigEndian: true)))])
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Decimal.self, from: swapped), Decimal(string: "3.14"))
        // corelibs' form: `NS.bo`, the mantissa an NSData object (inline data by reference here).
        let corelibs = try archive([("NS.exponent", -1), ("NS.length", 1), ("NS.negative", false), ("NS.compact", true), ("NS.bo", 1), ("NS.mantissa", .uid(3))], extra: [.data(mantissa([25]))])
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Decimal.self, from: corelibs), Decimal(string: "2.5"))
        // NaN is length 0, negative; zero length 0.
        let nan = try archive([("NS.length", 0), ("NS.negative", true), ("NS.mantissa.bo", 1), ("NS.mantissa", .data(mantissa([])))])
        XCTAssertTrue(try KeyedUnarchiver.unarchivedObject(ofType: Decimal.self, from: nan).isNaN)
        // A number where a Decimal is asked reads as NSNumber's decimalValue does.
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: [Decimal].self, from: try KeyedArchiver.archivedData(withRootObject: [7, 2.5] as [Any], format: .binary)), [7, 2.5])
    }

    /// An Objective-C class migrated to ``KeyedArchiving`` writes `Decimal` (NSDecimalNumber)
    /// with `encode(_:forKey:)` and reads it with `decodeDecimal(forKey:)`.
    final class Invoice: KeyedArchiving {
        var total: Decimal
        var tax: Decimal?
        init(total: Decimal, tax: Decimal?) {
            self.total = total
            self.tax = tax
        }
        func encode(with coder: KeyedArchiver) throws {
            try coder.encode(total, forKey: "total")
            try coder.encode(tax, forKey: "tax")
        }
        init(coder: KeyedUnarchiver) throws {
            total = try coder.decodeDecimal(forKey: "total") ?? -1
            tax = try coder.decodeDecimal(forKey: "tax")
        }
    }

    func testNSCodingStyleCodersWriteAndReadNSDecimalNumber() throws {
        for value in randomDecimals(count: 60) where !value.isNaN {
            let archive = try KeyedArchiver.archivedData(withRootObject: Invoice(total: value, tax: nil), format: .binary)
            let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Invoice.self, from: archive))
            XCTAssertEqual(decoded.total, value)
            XCTAssertNil(decoded.tax)
            // The same object the Codable bridge writes (whose parts are checked against Foundation's).
            func withoutClass(_ objects: [PropertyListValue]) -> [[PropertyListDictionary.Entry]] {
                objects.map { object in
                    guard case .dictionary(let fields) = object else { return [] }
                    return fields.entries.filter { $0.key != "$class" }
                }
            }
            let ours = withoutClass(try archivedDecimalNumbers(archive))
            let codable = withoutClass(try archivedDecimalNumbers(try KeyedArchiver.archivedData(withRootObject: value)))
            XCTAssertEqual(ours.count, 1)
            XCTAssertTrue(ours.elementsEqual(codable) { $0.elementsEqual($1) { $0.key == $1.key && $0.value == $1.value } }, "\(value)")
        }
        // Apple's NSDecimalNumber at the top, read by key.
        let apple = try archive([("NS.exponent", -2), ("NS.length", 1), ("NS.negative", true), ("NS.compact", true), ("NS.mantissa.bo", 1), ("NS.mantissa", .data(mantissa([314])))])
        let unarchiver = try KeyedUnarchiver(data: apple)
        XCTAssertEqual(try unarchiver.decodeDecimal(forKey: "root"), Decimal(string: "-3.14"))
        XCTAssertNil(try unarchiver.decodeDecimal(forKey: "missing"))
        // Another class under the key is a type mismatch naming the key.
        let other = try KeyedArchiver.archivedData(withRootObject: ["not", "decimal"] as [Any], format: .binary)
        XCTAssertThrowsError(try KeyedUnarchiver(data: other).decodeDecimal(forKey: "root")) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .typeMismatch)
        }
    }

    /// Parts that are not in NSDecimalCompact's form: the value is the mantissa times ten to
    /// the exponent even where the compact form's exponent would pass 127 (10 × 10^127 read as
    /// NaN: the significand's digits were parsed, compacted to 1 × 10^1, and the exponents added).
    func testUncompactedPartsReadAsTheirValue() throws {
        let oneE128 = try XCTUnwrap(Decimal(string: "10E127"))
        for (exponent, words) in [(125, [UInt16(1000)]), (127, [10]), (120, [0xE100, 0x5F5])] {
            let data = try archive([("NS.exponent", .integer(PropertyListInteger(Int64(exponent)))), ("NS.length", .integer(PropertyListInteger(Int64(words.count)))), ("NS.mantissa.bo", 1), ("NS.mantissa", .data(mantissa(words)))])
            XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Decimal.self, from: data), oneE128, "\(words) × 10^\(exponent)")
        }
        // A zero mantissa of length 1 is zero (NSDecimal reads it so), with either sign.
        for negative in [false, true] {
            let zero = try archive([("NS.exponent", 3), ("NS.length", 1), ("NS.negative", .bool(negative)), ("NS.mantissa.bo", 1), ("NS.mantissa", .data(mantissa([])))])
            XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Decimal.self, from: zero), 0)
        }
        // Such a Decimal made by Foundation from its raw parts (10 × 10^127, not compact)
        // goes through an archive unchanged.
        let raw: [[String: Any]] = [["exponent": 127, "length": 1, "isNegative": false, "isCompact": false, "mantissa": [10, 0, 0, 0, 0, 0, 0, 0]]]
        let foundation = try PropertyListDecoder().decode([Decimal].self, from: try PropertyListSerialization.data(fromPropertyList: raw, format: .binary, options: 0))
        XCTAssertEqual(foundation, [oneE128])
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: [Decimal].self, from: try KeyedArchiver.archivedData(withRootObject: foundation)), foundation)
    }

    /// A real where a Decimal is asked: its shortest text (123.456, not 123.45599999999997952),
    /// and an error past Decimal's range (1e300 read as NaN).
    func testRealsReadAsTheirShortestText() throws {
        let reals = try KeyedArchiver.archivedData(withRootObject: [123.456, -0.1, 5e-7] as [Any], format: .binary)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: [Decimal].self, from: reals), ["123.456", "-0.1", "5e-7"].compactMap { Decimal(string: $0) })
        for huge in [1e300, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude] {
            let data = try KeyedArchiver.archivedData(withRootObject: [huge] as [Any], format: .binary)
            XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofType: [Decimal].self, from: data), "\(huge)") { error in
                guard case DecodingError.dataCorrupted(let context) = error else { return XCTFail("\(error)") }
                XCTAssertTrue(context.debugDescription.contains("outside the range of Decimal"), context.debugDescription)
            }
        }
    }

    /// Archives this bridge wrote before session 66 (Decimal's own coding: class "Decimal",
    /// `exponent`, `length`, `isNegative`, `isCompact`, `mantissa`) still read.
    func testTheEarlierFormStillDecodes() throws {
        struct EarlierForm: Encodable {
            var value: Decimal
            func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
        }
        for value in randomDecimals(count: 40) where !value.isNaN {
            let archive = try KeyedArchiver.archivedData(withRootObject: EarlierForm(value: value))
            XCTAssertTrue(try archivedDecimalNumbers(archive).isEmpty)
            XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Decimal.self, from: archive), value)
        }
    }

    /// Fields out of NSDecimal's ranges are errors with the field's path, never traps.
    func testMalformedNSDecimalNumbersAreRefused() throws {
        let good: [(String, PropertyListValue)] = [("NS.exponent", -2), ("NS.length", 1), ("NS.mantissa.bo", 1), ("NS.mantissa", .data(mantissa([314])))]
        func replacing(_ key: String, _ value: PropertyListValue?) -> [(String, PropertyListValue)] {
            var fields = good.filter { $0.0 != key }
            if let value { fields.append((key, value)) }
            return fields
        }
        let cases: [(String, [(String, PropertyListValue)])] = [
            ("NS.length", replacing("NS.length", 9)), ("NS.length", replacing("NS.length", -1)),
            ("NS.exponent", replacing("NS.exponent", 128)), ("NS.exponent", replacing("NS.exponent", .integer(PropertyListInteger(UInt64.max)))),
            ("NS.mantissa", replacing("NS.mantissa", .data(Data(count: 15)))), ("NS.mantissa", replacing("NS.mantissa", "314")),
            ("no NS.mantissa", replacing("NS.mantissa", nil)), ("NS.negative", replacing("NS.negative", 2.5)),
        ]
        for (field, fields) in cases {
            let data = try archive(fields)
            XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofType: Decimal.self, from: data), field) { error in
                guard case DecodingError.dataCorrupted(let context) = error else { return XCTFail("\(field): \(error)") }
                XCTAssertTrue(context.debugDescription.contains(field.hasPrefix("no ") ? "has no NS.mantissa" : field), "\(field): \(context.debugDescription)")
            }
        }
    }
}
