import Foundation
import KeyedArchive
@_spi(KeyedArchiveInternals) import KeyedArchiveGraph
import KeyedArchiveTestSupport
import XCTest

/// Objects given to the table as slots (``ArchiveSlot``, what the Codable encoder fills its
/// containers with) must be written exactly as the same objects given as dictionary values.
final class ArchiveSlotTests: XCTestCase {
    /// Every value a slot can hold inline comes back as the same value, bit for bit and width
    /// for width; values that need the table have no plain slot.
    func testPlainSlotsRoundTripTheirValues() throws {
        let plain: [PropertyListValue] = [
            .uid(0), .uid(7), .uid(.max), .bool(true), .bool(false),
            .integer(PropertyListInteger(Int64.min)), .integer(PropertyListInteger(-1)), .integer(PropertyListInteger(0)),
            .integer(PropertyListInteger(Int64.max)), .integer(PropertyListInteger(UInt64(Int64.max) + 1)),
            .integer(PropertyListInteger(UInt64.max)), .real(PropertyListReal(-0.0)), .real(PropertyListReal(Double.nan)),
            .real(PropertyListReal(1e300)), .real(PropertyListReal(Float(1.1))), .real(PropertyListReal(-Float.infinity)),
        ]
        for value in plain {
            let slot = try XCTUnwrap(ArchiveSlot(plain: value), "\(value)")
            let back = try XCTUnwrap(slot.plainValue)
            XCTAssertTrue(Self.sameBits(back, value), "\(value) came back as \(back)")
        }
        XCTAssertNil(ArchiveSlot(plain: .integer(PropertyListInteger(5, storedWidth: 8))), "a stored width needs the table")
        XCTAssertNil(ArchiveSlot(plain: .string(PropertyListString("a"))))
        XCTAssertNil(ArchiveSlot(plain: .array([])))
        XCTAssertEqual(ArchiveSlot.unsigned(UInt64(Int64.max)).kind, .integer)
        XCTAssertEqual(ArchiveSlot.unsigned(UInt64(Int64.max) + 1).kind, .largeUnsigned)
    }

    /// The same archive built twice, once with `setObject(_:at:)` and once with
    /// `setObject(fields:array:at:)`: objects of two classes with inline numbers of every kind
    /// and width, references, interned keys (one interned twice), a key kept aside as a value,
    /// an NSArray-form object, an array member that is not an entry, and a pinned object whose
    /// conditional reference is patched at the end. The bytes must be the same, and Foundation
    /// reads the numbers back.
    func testObjectsGivenAsSlotsAreWrittenAsTheirValuesAre() throws {
        let byValue = try build(useSlots: false)
        let bySlots = try build(useSlots: true)
        XCTAssertEqual(bySlots, byValue)
        // And the archive is one Foundation reads, with the patched conditional in place.
        let archive = try XCTUnwrap(PropertyListSerialization.propertyList(from: bySlots, format: nil) as? [String: Any])
        let objects = try XCTUnwrap(archive["$objects"] as? [Any])
        XCTAssertGreaterThan(objects.count, 10)
        let people = objects.compactMap { $0 as? [String: Any] }.filter { $0["wide"] != nil }
        XCTAssertEqual(people.compactMap { ($0["wide"] as? NSNumber)?.int64Value }, (0..<12).map { Self.wideValues[$0 % 6] })
        XCTAssertEqual(people.compactMap { ($0["weight"] as? NSNumber)?.floatValue }, (0..<12).map { Float($0 % 3) + 0.5 })
        XCTAssertEqual(people.compactMap { ($0["score"] as? NSNumber)?.doubleValue }, (0..<12).map { Double($0) / 4 })
    }

    /// Inline integers of every width they are written in: 1, 2, 4 and 8 bytes, negatives (8).
    private static let wideValues: [Int64] = [300, -7, 70_000, 5_000_000_000, Int64.min, 255]

    private func build(useSlots: Bool) throws -> Data {
        let table = ArchiveObjectTable()
        let person = table.classUID(chain: ["Person", "NSObject"])
        let list = table.classUID(chain: ["NSArray", "NSObject"])
        let target = NSObject()
        let name = table.internStoredKey(PropertyListValue("name"))
        let nameAgain = table.internStoredKey(PropertyListValue(String(decoding: Array("name".utf8), as: UTF8.self)))
        XCTAssertEqual(name, nameAgain, "one id per key text")
        let classKey = table.internStoredKey(PropertyListValue("$class"))
        let objectsKey = table.internStoredKey(PropertyListValue("NS.objects"))
        var roots: [PropertyListValue] = []
        func set(_ fields: [(ArchiveSlot, ArchiveSlot)], array: [ArchiveSlot]? = nil, at uid: UInt32) {
            if useSlots {
                table.setObject(
                    fields: fields.map { ArchiveField(key: $0.0, value: $0.1) }, array: array.map { (objectsKey, $0) }, at: uid)
            } else {
                var entries: [PropertyListDictionary.Entry] = fields.map { (table.value(of: $0.0), table.value(of: $0.1)) }
                if let array { entries.append((PropertyListValue("NS.objects"), .array(array.map { table.value(of: $0) }))) }
                table.setObject(.dictionary(PropertyListDictionary(entries)), at: uid)
            }
        }
        for number in 0..<12 {
            let uid = table.reserveUID()
            let text = table.leafUID(string: "person \(number % 5)")
            let key = number % 2 == 0 ? name : nameAgain
            set([
                (classKey, .uid(person)), (key, .uid(text)), (table.internStoredKey(PropertyListValue("age")), .integer(Int64(number % 4))),
                (table.internStoredKey(PropertyListValue("wide")), .integer(Self.wideValues[number % 6])),
                (table.internStoredKey(PropertyListValue("big")), .unsigned(UInt64.max - UInt64(number % 2))),
                (table.internStoredKey(PropertyListValue("score")), .real(Double(number) / 4)),
                (table.internStoredKey(PropertyListValue("weight")), .float(Float(number % 3) + 0.5)),
                (table.internStoredKey(PropertyListValue("ok")), .bool(number % 3 == 0)),
                // A key that is a kept-aside string value, not an interned one.
                (table.slot(for: PropertyListValue("extra\(number % 2)")), table.slot(for: .integer(PropertyListInteger(9, storedWidth: 8)))),
            ], at: uid)
            roots.append(.uid(uid))
        }
        let members = table.reserveUID()
        set([(classKey, .uid(list))], array: roots.compactMap { $0.uidValue.map(ArchiveSlot.uid) }, at: members)
        // A member that is not an entry (a UID past the table): flattened as a value.
        let odd = table.reserveUID()
        set([(classKey, .uid(list))], array: [.uid(1), .uid(1 << 30)], at: odd)
        // A pinned object: its conditional reference is patched once the target has a UID.
        let pinned = table.reserveUID()
        let conditional = table.conditionalReference(to: target, slot: .object(uid: pinned))
        set([(classKey, .uid(person)), (table.internStoredKey(PropertyListValue("friend")), table.slot(for: conditional))], at: pinned)
        let targetUID = table.reserveUID(for: target)
        set([(classKey, .uid(person))], at: targetUID)
        return try table.encodedData(
            top: PropertyListDictionary([("root", .uid(members)), ("odd", .uid(odd)), ("pinned", .uid(pinned))]), format: .binary)
    }

    /// The archiver's object fields as slots: setting a key again replaces its value in place,
    /// whether the key is short or long, a literal or rebuilt at run time (its stored form then
    /// comes from a new cache entry, and interning gives it the same id), before and after the
    /// object switches to a hash index; every key is stored once, `$`-keys escaped.
    func testObjectSlotsReplaceAKeySetAgain() throws {
        let keys = ["a", "name", "$dollar", "日本", "fourteen-bytes", "fifteen-bytes!!", "a much longer key é"]
        for extra in [0, 20] {
            let table = ArchiveObjectTable()
            let cache = StoredKeyCache()
            let classKey = table.internStoredKey(PropertyListValue("$class"))
            let fields = ArchiveObjectSlots(capacity: 2)
            // An earlier object's fields, dropped by `begin`.
            fields.begin(classKey: classKey, classUID: 0, capacity: 1)
            fields.setStored(.integer(-1), forKey: cache.slot(for: "dropped", in: table))
            fields.begin(classKey: classKey, classUID: 0, capacity: 4)
            var expected: [String: Int] = [:]
            for (offset, key) in keys.enumerated() {
                fields.setStored(.integer(Int64(offset)), forKey: cache.slot(for: key, in: table))
                expected[key] = offset
            }
            for number in 0..<extra {
                fields.setStored(.integer(Int64(number)), forKey: cache.slot(for: "extra\(number)", in: table))
                expected["extra\(number)"] = number
            }
            for (offset, key) in keys.enumerated() {
                // The same text in a new `String`, not the literal's storage.
                let again = String(decoding: Array(key.utf8), as: UTF8.self)
                XCTAssertTrue(fields.contains(key: cache.slot(for: again, in: table)), key)
                fields.setStored(.integer(Int64(100 + offset)), forKey: cache.slot(for: again, in: table))
                expected[key] = 100 + offset
            }
            XCTAssertFalse(fields.contains(key: cache.slot(for: "nam", in: table)))
            XCTAssertEqual(fields.count, 1 + keys.count + extra, "extra \(extra)")
            let uid = table.reserveUID()
            fields.withFields { table.setObject(fields: $0, array: nil, at: uid) }
            let data = try table.encodedData(top: PropertyListDictionary([("root", .uid(uid))]), format: .binary)
            let objects = try XCTUnwrap(PropertyList.decode(data)["$objects"]?.arrayValue)
            guard case .dictionary(let dictionary) = objects[Int(uid)] else { return XCTFail("not a dictionary") }
            let (found, repeated) = ArchiveFixtures.integerFields(of: dictionary)
            XCTAssertEqual(repeated, [], "keys stored twice")
            XCTAssertEqual(found, expected, "extra \(extra)")
        }
    }

    /// Each class chain (with or without hints) is written once, however often it is asked
    /// for: more chains than the table's short list holds (16), asked for in turn, then again
    /// in another order and as rebuilt arrays, get the UID they got first; every description in
    /// the archive is one of them, and keys interned past the table's short list of keys
    /// (16) keep one id per text too.
    func testClassDescriptionsAndKeysAreWrittenOnce() throws {
        let table = ArchiveObjectTable()
        func chain(_ number: Int) -> [String] { ["Kind\(number)", number % 3 == 0 ? "Base\(number % 5)" : "NSObject"] }
        func hints(_ number: Int) -> [String]? { number % 4 == 1 ? ["Hint\(number)"] : nil }
        var uids: [Int: UInt32] = [:]
        for number in 0..<40 { uids[number] = table.classUID(chain: chain(number), hints: hints(number)) }
        XCTAssertEqual(Set(uids.values).count, 40, "distinct chains share a description")
        for number in (0..<40).reversed() {
            let rebuilt = chain(number).map { String(decoding: Array($0.utf8), as: UTF8.self) }
            XCTAssertEqual(table.classUID(chain: rebuilt, hints: hints(number)), uids[number], "chain \(number)")
        }
        // The same chain with and without hints are two descriptions.
        XCTAssertNotEqual(table.classUID(chain: chain(1)), uids[1])
        var keyIDs: [String: UInt64] = [:]
        for number in 0..<40 { keyIDs["key\(number)"] = table.internStoredKey(PropertyListValue("key\(number)")).bits }
        XCTAssertEqual(Set(keyIDs.values).count, 40)
        for number in (0..<40).reversed() {
            let text = String(decoding: Array("key\(number)".utf8), as: UTF8.self)
            XCTAssertEqual(table.internStoredKey(PropertyListValue(text)).bits, keyIDs["key\(number)"], "key \(number)")
        }
        let root = table.reserveUID()
        table.setObject(.array(uids.keys.sorted().compactMap { uids[$0].map { .uid($0) } }), at: root)
        let data = try table.encodedData(top: PropertyListDictionary([("root", .uid(root))]), format: .binary)
        let objects = try XCTUnwrap(PropertyList.decode(data)["$objects"]?.arrayValue)
        let descriptions = objects.indices.filter { objects[$0]["$classname"] != nil }
        XCTAssertEqual(descriptions.count, 41)
        for number in 0..<40 {
            let uid = Int(try XCTUnwrap(uids[number]))
            XCTAssertEqual(objects[uid]["$classes"], .array(chain(number).map { PropertyListValue($0) }), "chain \(number)")
            XCTAssertEqual(objects[uid]["$classhints"], hints(number).map { .array($0.map { PropertyListValue($0) }) }, "chain \(number)")
        }
    }

    private static func sameBits(_ a: PropertyListValue, _ b: PropertyListValue) -> Bool {
        switch (a, b) {
        case (.real(let x), .real(let y)): return x.value.bitPattern == y.value.bitPattern && x.isSinglePrecision == y.isSinglePrecision
        case (.integer(let x), .integer(let y)):
            return x.bitPattern == y.bitPattern && x.isAboveInt64Max == y.isAboveInt64Max && x.storedWidth == y.storedWidth
        default: return a == b
        }
    }
}
