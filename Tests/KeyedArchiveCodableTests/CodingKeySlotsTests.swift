import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The encoder finds the stored keys of one-byte coding-key types by the key's byte
/// (`CodingKeySlots`), not its text. These tests check that every kind of key type still gets
/// the names its own `stringValue` gives, read back by Foundation and by the decoder.
final class CodingKeySlotsTests: XCTestCase {
    /// Two types whose first keys share a byte (0) and differ in text.
    struct Cat: Codable, Equatable {
        let name: String
        let lives: Int
    }

    struct Car: Codable, Equatable {
        let model: String
        let doors: Int
        let electric: Bool
    }

    /// Raw values that are not the case names.
    struct Renamed: Codable, Equatable {
        let fullName: String
        let age: Int
        enum CodingKeys: String, CodingKey, CaseIterable {
            case fullName = "full_name"
            case age = "years"
        }
    }

    /// Integer raw values: still one byte of plain data, named by the case.
    struct Numbered: Codable, Equatable {
        let first: Int
        let second: Int
        enum CodingKeys: Int, CodingKey, CaseIterable {
            case first = 7
            case second = 9
        }
    }

    /// A one-case key type: no stored bytes at all.
    struct Single: Codable, Equatable {
        let only: Double
        enum CodingKeys: CodingKey, CaseIterable {
            case only
        }
    }

    /// A key type that is not plain data (a string inside): found by its text.
    struct TextKey: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    struct Dynamic: Codable, Equatable {
        let fields: [String: Int]
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: TextKey.self)
            for (key, value) in fields.sorted(by: { $0.key < $1.key }) { try container.encode(value, forKey: TextKey(stringValue: key)) }
        }
        init(fields: [String: Int]) { self.fields = fields }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: TextKey.self)
            var fields: [String: Int] = [:]
            for key in container.allKeys { fields[key.stringValue] = try container.decode(Int.self, forKey: key) }
            self.fields = fields
        }
    }

    struct Everything: Codable, Equatable {
        let cats: [Cat]
        let cars: [Car]
        let renamed: [Renamed]
        let numbered: [Numbered]
        let single: [Single]
        let dynamic: [Dynamic]
    }

    private static let value = Everything(
        cats: (0..<3).map { Cat(name: "cat \($0)", lives: 9 - $0) },
        cars: (0..<3).map { Car(model: "car \($0)", doors: 2 + $0, electric: $0 % 2 == 0) },
        renamed: (0..<3).map { Renamed(fullName: "person \($0)", age: 30 + $0) },
        numbered: (0..<3).map { Numbered(first: $0, second: -$0) },
        single: (0..<3).map { Single(only: Double($0) / 4) },
        dynamic: [Dynamic(fields: ["a": 1, "bb": 2]), Dynamic(fields: ["bb": 3, "ccc": 4]), Dynamic(fields: ["a": 5])])

    func testEveryKindOfKeyTypeStoresTheNamesItsStringValueGives() throws {
        let data = try KeyedArchiveEncoder().encode(Self.value)
        XCTAssertEqual(try KeyedArchiveDecoder().decode(Everything.self, from: data), Self.value)

        // Foundation's reader: every object dictionary's keys, besides `$class`, are one type's
        // names as its own `stringValue` gives them (never another type's at the same byte).
        let archive = try XCTUnwrap(PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        let objects = try XCTUnwrap(archive["$objects"] as? [Any])
        let classNames = objects.compactMap { ($0 as? [String: Any])?["$classname"] as? String }
        func names<Key: CodingKey & CaseIterable>(_ type: Key.Type) -> Set<String> { Set(Key.allCases.map(\.stringValue)) }
        let expected: [Set<String>] = [
            ["name", "lives"], ["model", "doors", "electric"], names(Renamed.CodingKeys.self),
            names(Numbered.CodingKeys.self), names(Single.CodingKeys.self),
        ]
        XCTAssertEqual(expected[2], ["full_name", "years"])
        XCTAssertEqual(expected[3], ["first", "second"])
        var found: [Set<String>: Int] = [:]
        var dynamicKeys: [Set<String>] = []
        for object in objects {
            guard let fields = object as? [String: Any], fields["$class"] != nil, fields["$classname"] == nil,
                  fields["NS.keys"] == nil, fields["NS.objects"] == nil else { continue }
            let keys = Set(fields.keys).subtracting(["$class"])
            if expected.contains(keys) {
                found[keys, default: 0] += 1
            } else if keys != ["cats", "cars", "renamed", "numbered", "single", "dynamic"] {
                dynamicKeys.append(keys)
            }
        }
        for keys in expected { XCTAssertEqual(found[keys], 3, "objects with keys \(keys.sorted()) (class names \(classNames))") }
        XCTAssertEqual(dynamicKeys.sorted { $0.sorted().lexicographicallyPrecedes($1.sorted()) }, [["a"], ["a", "bb"], ["bb", "ccc"]])
        XCTAssertEqual(Set(classNames).count, classNames.count, "one class description per type: \(classNames)")
    }

    func testAKeyTypeUsedInTwoArchivesGetsEachArchivesOwnKeys() throws {
        // The slots are ids in one archive's table; a second archive starts from nothing. In
        // the third archive the cat comes after a car, so its names get other ids than in the
        // first: slots kept from the first would name its fields "car" and "cat".
        struct Pair: Codable, Equatable {
            let car: Car
            let cat: Cat
        }
        let first = try KeyedArchiveEncoder().encode([Cat(name: "a", lives: 1)])
        let second = try KeyedArchiveEncoder().encode([Car(model: "b", doors: 4, electric: false), Car(model: "c", doors: 2, electric: true)])
        let pair = Pair(car: Car(model: "e", doors: 5, electric: true), cat: Cat(name: "d", lives: 2))
        let third = try KeyedArchiveEncoder().encode(pair)
        XCTAssertEqual(try KeyedArchiveDecoder().decode([Cat].self, from: first), [Cat(name: "a", lives: 1)])
        XCTAssertEqual(try KeyedArchiveDecoder().decode([Car].self, from: second).map(\.model), ["b", "c"])
        XCTAssertEqual(try KeyedArchiveDecoder().decode(Pair.self, from: third), pair)
        let objects = try XCTUnwrap(
            (PropertyListSerialization.propertyList(from: third, format: nil) as? [String: Any])?["$objects"] as? [Any])
        let catFields = objects.compactMap { $0 as? [String: Any] }.filter { $0["lives"] != nil }
        XCTAssertEqual(catFields.count, 1)
        XCTAssertEqual(Set(try XCTUnwrap(catFields.first).keys), ["$class", "name", "lives"])
    }

    /// A hand-written key of one byte of plain data, named from a table.
    struct ByteKey: CodingKey, Equatable {
        static let names = ["zero", "one", "two", "three"]
        let index: UInt8
        init(_ index: UInt8) { self.index = index }
        var stringValue: String { Self.names[Int(index) % Self.names.count] }
        init?(stringValue: String) {
            guard let index = Self.names.firstIndex(of: stringValue) else { return nil }
            self.index = UInt8(index)
        }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    struct ByteKeyed: Codable, Equatable {
        let values: [UInt8: Int]
        init(values: [UInt8: Int]) { self.values = values }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: ByteKey.self)
            for (index, value) in values.sorted(by: { $0.key < $1.key }) { try container.encode(value, forKey: ByteKey(index)) }
        }
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: ByteKey.self)
            var values: [UInt8: Int] = [:]
            for key in container.allKeys { values[key.index] = try container.decode(Int.self, forKey: key) }
            self.values = values
        }
    }

    func testAHandWrittenOneByteKeyAndAKeyTypeInBothFormsKeepTheirNames() throws {
        let values = [ByteKeyed(values: [0: 10, 2: 12]), ByteKeyed(values: [1: 21, 3: 23]), ByteKeyed(values: [0: 30, 3: 33])]
        let data = try KeyedArchiveEncoder().encode(values)
        XCTAssertEqual(try KeyedArchiveDecoder().decode([ByteKeyed].self, from: data), values)
        let objects = try XCTUnwrap(
            (PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])?["$objects"] as? [Any])
        let keySets = objects.compactMap { $0 as? [String: Any] }.filter { $0["$class"] != nil && $0["NS.objects"] == nil }
            .map { Set($0.keys).subtracting(["$class"]) }
        XCTAssertEqual(Set(keySets), [["zero", "two"], ["one", "three"], ["zero", "three"]])

        // One key type as an object's fields and as a nested NSDictionary's keys in one encode.
        struct Outer: Codable, Equatable {
            let name: String
            let lives: Int
            enum CodingKeys: String, CodingKey { case name, lives, nested }
            init(name: String, lives: Int) { self.name = name; self.lives = lives }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(name, forKey: .name)
                try container.encode(lives, forKey: .lives)
                var nested = container.nestedContainer(keyedBy: CodingKeys.self, forKey: .nested)
                try nested.encode(name.uppercased(), forKey: .name)
            }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                name = try container.decode(String.self, forKey: .name)
                let nested = try container.nestedContainer(keyedBy: CodingKeys.self, forKey: .nested)
                XCTAssertEqual(try nested.decode(String.self, forKey: .name), name.uppercased())
                lives = try container.decode(Int.self, forKey: .lives)
            }
        }
        let outer = try KeyedArchiveEncoder().encode(Outer(name: "tom", lives: 3))
        XCTAssertEqual(try KeyedArchiveDecoder().decode(Outer.self, from: outer), Outer(name: "tom", lives: 3))
        let plist = try XCTUnwrap(PropertyListSerialization.propertyList(from: outer, format: nil) as? [String: Any])
        let outerObjects = try XCTUnwrap(plist["$objects"] as? [Any])
        XCTAssertTrue(outerObjects.contains { $0 as? String == "TOM" })
        let fields = outerObjects.compactMap { $0 as? [String: Any] }
        let object = try XCTUnwrap(fields.first { $0["lives"] != nil })
        XCTAssertEqual(Set(object.keys), ["$class", "name", "lives", "nested"])
        XCTAssertEqual(object["lives"] as? Int, 3)
        // The nested dictionary's one key is the string "name", by reference.
        let dictionary = try XCTUnwrap(fields.first { $0["NS.keys"] != nil })
        XCTAssertEqual((dictionary["NS.keys"] as? [Any])?.count, 1)
        XCTAssertEqual(outerObjects.filter { $0 as? String == "name" }.count, 1)
    }

    /// A value whose coding keys are a type of their own for every nesting level.
    struct Level<Inner: Encodable>: Encodable {
        let value: Int
        let inner: Inner
    }

    private static func nest<Inner: Encodable>(_ inner: Inner, levels: Int) throws -> Data {
        if levels == 0 { return try KeyedArchiveEncoder().encode(inner) }
        return try nest(Level(value: levels, inner: inner), levels: levels - 1)
    }

    func testMoreKeyTypesThanTheEncoderKeepsStillGetTheirNames() throws {
        // 70 levels: 70 coding-key types (each `Level<...>` has its own), past the 64 kept.
        let data = try Self.nest(0, levels: 70)
        let objects = try XCTUnwrap(
            (PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])?["$objects"] as? [Any])
        let levels = objects.compactMap { $0 as? [String: Any] }.filter { $0["$class"] != nil }
        XCTAssertEqual(levels.count, 70)
        for level in levels { XCTAssertEqual(Set(level.keys), ["$class", "value", "inner"], "\(level)") }
        // Each level's value, 1...70, stored inline under its own key.
        XCTAssertEqual(Set(levels.compactMap { $0["value"] as? Int }), Set(1...70))
    }
}
