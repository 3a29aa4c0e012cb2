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

    static func rootClassName(_ data: Data) throws -> String? {
        let plist = try PropertyList.decode(data)
        guard case .array(let objects)? = plist["$objects"], case .uid(let root)? = plist["$top"]?["root"],
            case .uid(let classUID)? = objects[Int(root)]["$class"]
        else { return nil }
        return objects[Int(classUID)]["$classname"]?.stringValue
    }
}
