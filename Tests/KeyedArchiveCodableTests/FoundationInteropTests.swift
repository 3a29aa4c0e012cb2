import Foundation
import KeyedArchive
import KeyedArchiveSample
import XCTest

/// The Objective-C side of the sample: an `NSCoding` class with the original keys, written the
/// way the Objective-C app wrote it (`encodeObject:`, `encodeFloat:`, `encodeBool:`).
final class ArchivingData: NSObject, NSCoding {
    var image: Data
    var name: String
    var gender: String
    var vocation: String
    var page: String
    var theSlider: Float
    var isSwitchOn: Bool

    init(_ value: KeyedArchiveSample.ArchivingData) {
        image = value.image
        name = value.name
        gender = value.gender
        vocation = value.vocation
        page = value.page
        theSlider = value.theSlider
        isSwitchOn = value.isSwitchOn
    }

    required init?(coder: NSCoder) {
        guard let image = coder.decodeObject(forKey: "ImageKey") as? Data,
            let name = coder.decodeObject(forKey: "NameKey") as? String,
            let gender = coder.decodeObject(forKey: "GenderKey") as? String,
            let vocation = coder.decodeObject(forKey: "VocationKey") as? String,
            let page = coder.decodeObject(forKey: "PageKey") as? String
        else { return nil }
        self.image = image
        self.name = name
        self.gender = gender
        self.vocation = vocation
        self.page = page
        theSlider = coder.decodeFloat(forKey: "TheSliderKey")
        isSwitchOn = coder.decodeBool(forKey: "IsSwitchOnKey")
    }

    func encode(with coder: NSCoder) {
        coder.encode(image, forKey: "ImageKey")
        coder.encode(name, forKey: "NameKey")
        coder.encode(gender, forKey: "GenderKey")
        coder.encode(vocation, forKey: "VocationKey")
        coder.encode(page, forKey: "PageKey")
        coder.encode(theSlider, forKey: "TheSliderKey")
        coder.encode(isSwitchOn, forKey: "IsSwitchOnKey")
    }
}

final class FoundationInteropTests: XCTestCase {
    typealias Model = KeyedArchiveSample.ArchivingData

    static let samples: [Model] = [
        .defaultProfile,
        Model(
            image: SampleImages.alternateImage, name: "Zoë Ünïcode 名前 🎉", gender: "", vocation: "$null-ish $x",
            page: "42", theSlider: 0.1, isSwitchOn: false),
        Model(image: Data(), name: "a", gender: "b", vocation: "c", page: "d", theSlider: -Float.greatestFiniteMagnitude, isSwitchOn: true),
    ]

    private func foundationDecode(_ data: Data) throws -> ArchivingData? {
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
        unarchiver.requiresSecureCoding = false
        unarchiver.setClass(ArchivingData.self, forClassName: "ArchivingData")
        defer { unarchiver.finishDecoding() }
        return unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? ArchivingData
    }

    func testFoundationReadsOurArchiveFieldForField() throws {
        for format in [PropertyListFormat.binary, .xml] {
            for sample in Self.samples {
                let encoder = KeyedArchiveEncoder()
                encoder.outputFormat = format
                let data = try encoder.encode(sample)
                let object = try XCTUnwrap(try foundationDecode(data), "NSKeyedUnarchiver could not read our \(format) archive")
                XCTAssertEqual(object.image, sample.image)
                XCTAssertEqual(object.name, sample.name)
                XCTAssertEqual(object.gender, sample.gender)
                XCTAssertEqual(object.vocation, sample.vocation)
                XCTAssertEqual(object.page, sample.page)
                XCTAssertEqual(object.theSlider.bitPattern, sample.theSlider.bitPattern)
                XCTAssertEqual(object.isSwitchOn, sample.isSwitchOn)
            }
        }
    }

    func testOurArchiveHasTheObjectiveCShape() throws {
        let data = try KeyedArchiver.archivedData(withRootObject: Model.defaultProfile)
        let plist = try PropertyList.decode(data)
        guard case .array(let objects)? = plist["$objects"], case .uid(let root)? = plist["$top"]?["root"],
            case .dictionary(let fields) = objects[Int(root)]
        else { return XCTFail("not an archive") }
        // The slider is a 4-byte real stored inline, as encodeFloat:forKey: stores it; the switch an inline boolean.
        guard case .real(let slider)? = fields["TheSliderKey"] else { return XCTFail("slider not inline") }
        XCTAssertTrue(slider.isSinglePrecision)
        XCTAssertEqual(fields["IsSwitchOnKey"], .bool(true))
        guard case .uid(let classUID)? = fields["$class"], case .dictionary(let description) = objects[Int(classUID)] else {
            return XCTFail("no class")
        }
        XCTAssertEqual(description["$classname"], "ArchivingData")
        XCTAssertEqual(description["$classes"], .array(["ArchivingData", "NSObject"]))
        guard case .uid(let imageUID)? = fields["ImageKey"] else { return XCTFail("image not a reference") }
        XCTAssertEqual(objects[Int(imageUID)], .data(Model.defaultProfile.image))
    }

    func testWeReadFoundationsArchiveWithModuleQualifiedName() throws {
        for sample in Self.samples {
            let data = try NSKeyedArchiver.archivedData(withRootObject: ArchivingData(sample), requiringSecureCoding: false)
            // Foundation on Linux ignores setClassName and writes the module-qualified name.
            let className = try XCTUnwrap(Self.rootClassName(data))
            XCTAssertTrue(className.hasSuffix(".ArchivingData"), className)
            let decoder = KeyedArchiveDecoder()
            decoder.isStrict = true
            XCTAssertEqual(try decoder.decode(Model.self, from: data), sample)
            XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Model.self, from: data), sample)
        }
    }

    func testFoundationReadsCollectionsDatesURLsAndUUIDs() throws {
        struct Bag: Codable {
            var numbers: [String: [Int]]
            var when: Date
            var link: URL
            var id: UUID
        }
        let bag = Bag(
            numbers: ["a": [1, 2, 300_000], "b": []], when: Date(timeIntervalSinceReferenceDate: 12345.5),
            link: URL(string: "https://example.com/a?b=c")!, id: UUID())
        let data = try KeyedArchiveEncoder().encode(bag.numbers)
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
        unarchiver.requiresSecureCoding = false
        let numbers = unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? [String: [Int]]
        XCTAssertEqual(numbers, bag.numbers)
        for (value, check) in [(bag.when as Any, { (object: Any?) in (object as? Date) == bag.when }),
                               (bag.link as Any, { (object: Any?) in (object as? URL) == bag.link }),
                               (bag.id as Any, { (object: Any?) in (object as? UUID) == bag.id })] {
            let data: Data
            switch value {
            case let date as Date: data = try KeyedArchiver.archivedData(withRootObject: date)
            case let url as URL: data = try KeyedArchiver.archivedData(withRootObject: url)
            case let uuid as UUID: data = try KeyedArchiver.archivedData(withRootObject: uuid)
            default: continue
            }
            let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
            unarchiver.requiresSecureCoding = false
            XCTAssertTrue(check(unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey)), "\(value)")
        }
        // And Foundation's archives of those decode here.
        let when = try NSKeyedArchiver.archivedData(withRootObject: NSDate(timeIntervalSinceReferenceDate: 99.25), requiringSecureCoding: false)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Date.self, from: when), Date(timeIntervalSinceReferenceDate: 99.25))
        let uuid = UUID()
        let uuidData = try NSKeyedArchiver.archivedData(withRootObject: uuid as NSUUID, requiringSecureCoding: false)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: UUID.self, from: uuidData), uuid)
        let array = try NSKeyedArchiver.archivedData(withRootObject: ["x", "y"] as NSArray, requiringSecureCoding: false)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: [String].self, from: array), ["x", "y"])
    }

    /// Nil optional objects are `$null` in an object's fields, as `encodeObject:nil forKey:`
    /// writes them, also through the `encodeIfPresent` of synthesized `encode(to:)`: Foundation
    /// here fails `decodeObject(forKey:)` on a missing key, and the failure sticks to the
    /// unarchiver. Nil numbers stay left out (Objective-C has no nil `encodeInteger:`).
    func testNilOptionalsAreNullForFoundationAndNotInDictionaries() throws {
        let lonely = OptionalPet(name: nil, age: nil, friend: nil, tags: nil)
        let friendly = OptionalPet(name: "Rex", age: 3, friend: lonely, tags: ["a": nil, "b": 2])
        let data = try KeyedArchiver.archivedData(withRootObject: [lonely, friendly, lonely])

        // Every field of every object is there; the nil ones refer to $null (UID 0).
        let plist = try PropertyList.decode(data)
        guard case .array(let objects)? = plist["$objects"] else { return XCTFail("not an archive") }
        let pets = objects.filter { $0["friend"] != nil }
        XCTAssertEqual(pets.count, 2)
        let nulls = pets.map { pet in ["name", "age", "friend", "tags"].filter { pet[$0] == .uid(0) } }
        XCTAssertEqual(nulls.sorted { $0.count > $1.count }, [["name", "friend", "tags"], []])
        XCTAssertEqual(pets.filter { $0["age"] == nil }.count, 1)
        // In the nested keyed container (an NSDictionary), a nil is left out.
        let dictionaries = objects.filter { $0["NS.keys"] != nil }
        XCTAssertEqual(dictionaries.count, 1)
        guard case .array(let keys)? = dictionaries.first?["NS.keys"] else { return XCTFail("no keys") }
        XCTAssertEqual(keys.compactMap { $0.uidValue.map { objects[Int($0)] } }, ["b"])

        // Foundation reads all three elements, the shared one once.
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
        unarchiver.requiresSecureCoding = false
        unarchiver.setClass(FOptionalPet.self, forClassName: "OptionalPet")
        let theirs = try XCTUnwrap(unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? [FOptionalPet])
        XCTAssertNil(unarchiver.error)
        XCTAssertEqual(theirs.count, 3)
        XCTAssertEqual(theirs.map(\.name), [nil, "Rex", nil])
        XCTAssertEqual(theirs.map(\.age), [nil, 3, nil])
        XCTAssertTrue(theirs.count == 3 && theirs[1].friend === theirs[0] && theirs[2] === theirs[0])

        // A generic type's optional number or Bool comes through the generic encodeIfPresent:
        // left out too; its optional string is $null.
        struct Box<Number: Codable & Equatable, Text: Codable & Equatable>: Codable, Equatable { var number: Number?; var text: Text? }
        for boxData in [
            try KeyedArchiver.archivedData(withRootObject: Box<Int, String>(number: nil, text: nil)),
            try KeyedArchiver.archivedData(withRootObject: Box<Bool, Date>(number: nil, text: nil)),
            try KeyedArchiver.archivedData(withRootObject: Box<Double, [Int]>(number: nil, text: nil)),
        ] {
            let boxPlist = try PropertyList.decode(boxData)
            guard case .array(let boxObjects)? = boxPlist["$objects"], case .uid(let root)? = boxPlist["$top"]?["root"] else { return XCTFail("not an archive") }
            XCTAssertNil(boxObjects[Int(root)]["number"])
            XCTAssertEqual(boxObjects[Int(root)]["text"], .uid(0))
        }
        XCTAssertEqual(
            try KeyedUnarchiver.unarchivedObject(ofType: Box<Int, String>.self, from: try KeyedArchiver.archivedData(withRootObject: Box<Int, String>(number: nil, text: nil))),
            Box(number: nil, text: nil))

        // And we read our own back.
        let ours = try KeyedUnarchiver.unarchivedObject(ofType: [OptionalPet].self, from: data)
        XCTAssertEqual(ours.map(\.name), [nil, "Rex", nil])
        XCTAssertEqual(ours.map(\.age), [nil, 3, nil])
        XCTAssertTrue(ours[1].friend === ours[0])
        XCTAssertEqual(ours[1].tags, ["b": 2])
    }

    /// A `Date` field outside the property-list years (0...9999) round-trips, from our archive
    /// and from Foundation's; a non-finite one is refused when encoding.
    func testDatesOutsidePropertyListYears() throws {
        struct Stamp: Codable, Equatable { var when: Date }
        for seconds in [1e12, -1e12, 3e14] {
            let stamp = Stamp(when: Date(timeIntervalSinceReferenceDate: seconds))
            XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Stamp.self, from: try KeyedArchiver.archivedData(withRootObject: stamp)), stamp)
            let theirs = try NSKeyedArchiver.archivedData(withRootObject: NSDate(timeIntervalSinceReferenceDate: seconds), requiringSecureCoding: false)
            XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Date.self, from: theirs), stamp.when)
        }
        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: Stamp(when: Date(timeIntervalSinceReferenceDate: .nan)))) { error in
            guard case EncodingError.invalidValue? = error as? EncodingError else { return XCTFail("\(error)") }
        }
    }

    /// Private and local types are named without the address Swift prints for their context
    /// (`(unknown context at $…)`), which moves from run to run: a strict decode in another
    /// process would not find the type by that name.
    func testPrivateAndLocalTypesHaveNamesThatDoNotChangeBetweenRuns() throws {
        struct LocalStamp: Codable, Equatable { var mark = 2 }
        XCTAssertTrue(String(reflecting: PrivateStamp.self).contains("unknown context"), "the premise")
        for (data, expected) in [
            (try KeyedArchiver.archivedData(withRootObject: PrivateStamp()), "PrivateStamp"),
            (try KeyedArchiver.archivedData(withRootObject: LocalStamp()), "FoundationInteropTests.LocalStamp"),
        ] {
            XCTAssertEqual(try Self.rootClassName(data), expected)
        }
        // Archives named as another process names these types decode strictly, by the archive
        // name and by the module-qualified one.
        let decoder = KeyedArchiveDecoder()
        decoder.isStrict = true
        for name in ["PrivateStamp", "KeyedArchiveCodableTests.PrivateStamp"] {
            let encoder = KeyedArchiveEncoder()
            encoder.setClassName(name, for: PrivateStamp.self)
            XCTAssertEqual(try decoder.decode(PrivateStamp.self, from: try encoder.encode(PrivateStamp(mark: 3))), PrivateStamp(mark: 3), name)
        }
    }

    /// An unkeyed container passes an element only once it decoded, as Foundation's decoders
    /// do, so a type can try one type and then another (it skipped the element on a failure:
    /// `[1, "two", 3]` read as 1 and a skip, losing the string and the 3).
    func testUnkeyedContainerKeepsAnElementAFailedDecodeLeft() throws {
        struct Lossy: Decodable, Equatable {
            var items: [String] = []
            init(from decoder: any Decoder) throws {
                var container = try decoder.unkeyedContainer()
                while !container.isAtEnd {
                    let index = container.currentIndex
                    if let number = try? container.decode(Int.self) {
                        items.append("int \(number) @\(index)")
                    } else if let text = try? container.decode(String.self) {
                        items.append("string \(text) @\(index)")
                    } else if let nested = try? container.nestedUnkeyedContainer() {
                        items.append("array of \(nested.count ?? -1) @\(index)")
                    } else {
                        items.append("real \(try container.decode(Double.self)) @\(index)")
                    }
                }
            }
        }
        let mixed: [Any] = [1, "two", 3, ["x"], 2.5]
        let ours = try KeyedArchiveDecoder().decode(Lossy.self, from: try KeyedArchiver.archivedData(withRootObject: mixed, format: .binary))
        let json = try JSONDecoder().decode(Lossy.self, from: try JSONSerialization.data(withJSONObject: mixed))
        XCTAssertEqual(ours.items, json.items)
        XCTAssertEqual(ours.items, ["int 1 @0", "string two @1", "int 3 @2", "array of 1 @3", "real 2.5 @4"])
        // The one documented difference (CodableBridge.md, Numbers): a boolean asked as an Int
        // reads as 0 or 1, as NSNumber's `intValue` reads it, because Foundation on Linux
        // archives a 1 after a `true` as that boolean; JSONDecoder refuses it, so a type that
        // tries `Int` before `Bool` sees 1 here and the boolean there.
        let withBoolean: [Any] = [1, true]
        let oursBoolean = try KeyedArchiveDecoder().decode(Lossy.self, from: try KeyedArchiver.archivedData(withRootObject: withBoolean, format: .binary))
        XCTAssertEqual(oursBoolean.items, ["int 1 @0", "int 1 @1"])
        XCTAssertThrowsError(try JSONDecoder().decode([Int].self, from: Data("[1, true]".utf8)))
    }

    static func rootClassName(_ data: Data) throws -> String? {
        let plist = try PropertyList.decode(data)
        guard case .array(let objects)? = plist["$objects"], case .uid(let root)? = plist["$top"]?["root"],
            case .uid(let classUID)? = objects[Int(root)]["$class"]
        else { return nil }
        return objects[Int(classUID)]["$classname"]?.stringValue
    }
}

/// A Codable class whose fields are all optional (synthesized coding: `encodeIfPresent`), with
/// a nested keyed container of optionals (an NSDictionary).
final class OptionalPet: Codable, KeyedArchiveClassNaming {
    static let archiveClassName = "OptionalPet"
    let name: String?
    let age: Int?
    let friend: OptionalPet?
    let tags: [String: Int?]?

    init(name: String?, age: Int?, friend: OptionalPet?, tags: [String: Int?]?) {
        self.name = name
        self.age = age
        self.friend = friend
        self.tags = tags
    }

    enum CodingKeys: String, CodingKey { case name, age, friend, tags }
    struct TagKey: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(age, forKey: .age)
        try container.encodeIfPresent(friend, forKey: .friend)
        if let tags {
            var nested = container.nestedContainer(keyedBy: TagKey.self, forKey: .tags)
            for (key, value) in tags.sorted(by: { $0.key < $1.key }) { try nested.encodeIfPresent(value, forKey: TagKey(stringValue: key)) }
        } else {
            try container.encodeNil(forKey: .tags)
        }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        name = try container.decodeIfPresent(String.self, forKey: .name)
        age = try container.decodeIfPresent(Int.self, forKey: .age)
        friend = try container.decodeIfPresent(OptionalPet.self, forKey: .friend)
        if try container.decodeNil(forKey: .tags) {
            tags = nil
        } else {
            let nested = try container.nestedContainer(keyedBy: TagKey.self, forKey: .tags)
            var tags: [String: Int?] = [:]
            for key in nested.allKeys { tags[key.stringValue] = try nested.decodeIfPresent(Int.self, forKey: key) }
            self.tags = tags
        }
    }
}

/// Foundation's side of ``OptionalPet``, read with `decodeObject(forKey:)` as Objective-C would.
final class FOptionalPet: NSObject, NSCoding {
    let name: String?
    let age: Int?
    let friend: FOptionalPet?

    required init?(coder: NSCoder) {
        name = coder.decodeObject(forKey: "name") as? String
        age = coder.containsValue(forKey: "age") ? coder.decodeInteger(forKey: "age") : nil
        friend = coder.decodeObject(forKey: "friend") as? FOptionalPet
    }

    func encode(with coder: NSCoder) {}
}

/// A private type: Swift names it `KeyedArchiveCodableTests.(unknown context at $…).PrivateStamp`.
private struct PrivateStamp: Codable, Equatable {
    var mark = 1
}
