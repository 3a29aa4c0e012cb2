import Foundation
import KeyedArchive
import XCTest

/// Foundation on Linux archives NSNumbers that compare equal as one object: a `0` after a
/// `false` is stored as that boolean, a key `1` after a `1.0` as that real. Its own
/// NSKeyedUnarchiver reads them back through NSNumber (`intValue` 0, the key 1); the Codable
/// bridge refused them ("expected a number, found a boolean"; "NSDictionary key 0 is a real").
/// Found by session 66's review of the Codable bridge against Foundation.
final class MergedNumberTests: XCTestCase {
    struct Settings: Codable, Equatable {
        var enabled: Bool
        var count: Int
        var ratio: Double
        var small: UInt8
        var level: Float
    }

    struct Labels: Codable, Equatable {
        var scale: Double
        var names: [Int: String]
    }

    /// The archive Foundation wrote, as our plain reader sees it: the objects its `$objects` holds.
    private func objects(_ archive: Data) throws -> [PropertyListValue] {
        guard case .dictionary(let top) = try PropertyList.decode(archive), case .array(let objects)? = top["$objects"] else {
            XCTFail("not an archive")
            return []
        }
        return objects
    }

    func testNumbersFoundationMergedIntoBooleansDecode() throws {
        // Fields written in a fixed order (an NSDictionary's order follows the process's hash
        // seed): the 0 after the `false` is stored as that boolean.
        let peer = MergedNumbersPeerSettings(order: ["enabled", "count", "ratio", "small", "level"])
        let archive = try NSKeyedArchiver.archivedData(withRootObject: peer, requiringSecureCoding: false)
        let stored = try objects(archive)
        XCTAssertFalse(stored.contains(.integer(0)), "the peer merged 0 into false: \(stored)")
        XCTAssertTrue(stored.contains(.bool(false)), "\(stored)")

        // Foundation's own reading of each field, through NSNumber.
        let expected = try foundationReading(archive)
        XCTAssertEqual(expected, Settings(enabled: false, count: 0, ratio: 1, small: 1, level: 1))
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Settings.self, from: archive), expected)

        // The other way: a `true` after the 1.0 is stored as the real, and reads as a Bool.
        let realFirst = try NSKeyedArchiver.archivedData(
            withRootObject: MergedNumbersPeerSettings(order: ["ratio", "level", "small", "enabled", "count"], enabled: true), requiringSecureCoding: false)
        let storedRealFirst = try objects(realFirst)
        XCTAssertFalse(storedRealFirst.contains(.bool(true)), "the peer merged true into 1.0: \(storedRealFirst)")
        XCTAssertEqual(try foundationReading(realFirst), Settings(enabled: true, count: 0, ratio: 1, small: 1, level: 1))
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Settings.self, from: realFirst), try foundationReading(realFirst))

        // In arrays too.
        let array = try NSKeyedArchiver.archivedData(withRootObject: NSArray(array: [true, 1, 1.0, false, 0]), requiringSecureCoding: false)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: [Double].self, from: array), [1, 1, 1, 0, 0])
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: [Int].self, from: array), [1, 1, 1, 0, 0])
        let reals = try NSKeyedArchiver.archivedData(withRootObject: NSArray(array: [1.0, true, 0.0, false]), requiringSecureCoding: false)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: [Bool].self, from: reals), [true, true, false, false])
        // A boolean that is neither 0 nor 1 cannot arise; a string is still refused.
        let text = try NSKeyedArchiver.archivedData(withRootObject: NSArray(array: ["1"]), requiringSecureCoding: false)
        XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofType: [Int].self, from: text))
    }

    /// Foundation's reading of a ``MergedNumbersPeerSettings`` archive, through NSNumber.
    private func foundationReading(_ archive: Data) throws -> Settings {
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: archive)
        unarchiver.requiresSecureCoding = false
        let theirs = try XCTUnwrap(unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? MergedNumbersPeerSettings)
        func number(_ key: String) throws -> NSNumber { try XCTUnwrap(theirs.values[key]) }
        return Settings(
            enabled: try number("enabled").boolValue, count: try number("count").intValue, ratio: try number("ratio").doubleValue,
            small: try number("small").uint8Value, level: try number("level").floatValue)
    }

    /// NSCoding classes too: `decodeDouble(forKey:)` read a boolean as a mismatch where
    /// `decodeInt64(forKey:)` read it as 0 or 1.
    func testNSCodingStyleDoubleReadsABoolean() throws {
        final class Flags: KeyedArchiving {
            var on = true
            var amount = 0.0
            init() {}
            func encode(with coder: KeyedArchiver) throws { coder.encode(on, forKey: "amount") }
            init(coder: KeyedUnarchiver) throws { amount = try coder.decodeDouble(forKey: "amount") }
        }
        let archive = try KeyedArchiver.archivedData(withRootObject: Flags(), format: .binary)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofClass: Flags.self, from: archive)?.amount, 1)
    }

    func testDictionaryKeysFoundationMergedIntoRealsDecode() throws {
        let peer = MergedKeysPeerLabels(scale: NSNumber(value: 1.0), names: NSDictionary(dictionary: [NSNumber(value: 1): "one", NSNumber(value: 2): "two", NSNumber(value: 0): "zero"]))
        let archive = try NSKeyedArchiver.archivedData(withRootObject: peer, requiringSecureCoding: false)
        let stored = try objects(archive)
        XCTAssertTrue(stored.contains(.real(1.0)), "\(stored)")
        XCTAssertFalse(stored.contains(.integer(1)), "the peer merged the key 1 with the real 1.0: \(stored)")

        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: archive)
        unarchiver.requiresSecureCoding = false
        let theirs = try XCTUnwrap(unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? MergedKeysPeerLabels)
        var names: [Int: String] = [:]
        for (key, value) in theirs.names {
            names[try XCTUnwrap((key as? NSNumber)?.intValue)] = value as? String
        }
        XCTAssertEqual(names, [0: "zero", 1: "one", 2: "two"])
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Labels.self, from: archive), Labels(scale: 1, names: names))

        // A key that is a real but not a whole number still has no integer to be.
        let fraction = try NSKeyedArchiver.archivedData(withRootObject: NSDictionary(dictionary: [NSNumber(value: 1.5): "x"]), requiringSecureCoding: false)
        XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofType: [Int: String].self, from: fraction))
    }
}

/// An Objective-C-style class writing the scale before the names (Foundation on Linux names
/// only top-level classes).
final class MergedKeysPeerLabels: NSObject, NSCoding {
    let scale: NSNumber
    let names: NSDictionary
    init(scale: NSNumber, names: NSDictionary) {
        self.scale = scale
        self.names = names
    }
    func encode(with coder: NSCoder) {
        coder.encode(scale, forKey: "scale")
        coder.encode(names, forKey: "names")
    }
    init?(coder: NSCoder) {
        guard let scale = coder.decodeObject(forKey: "scale") as? NSNumber, let names = coder.decodeObject(forKey: "names") as? NSDictionary else { return nil }
        self.scale = scale
        self.names = names
    }
}

/// An Objective-C-style settings class writing its NSNumber fields in a given order.
final class MergedNumbersPeerSettings: NSObject, NSCoding {
    static let keys = ["enabled", "count", "ratio", "small", "level"]
    let order: [String]
    var values: [String: NSNumber]
    init(order: [String], enabled: Bool = false) {
        self.order = order
        values = ["enabled": NSNumber(value: enabled), "count": NSNumber(value: 0), "ratio": NSNumber(value: 1.0), "small": NSNumber(value: 1), "level": NSNumber(value: true)]
    }
    func encode(with coder: NSCoder) {
        for key in order { coder.encode(values[key], forKey: key) }
    }
    init?(coder: NSCoder) {
        order = Self.keys
        values = [:]
        for key in Self.keys { values[key] = coder.decodeObject(forKey: key) as? NSNumber }
    }
}
