import Foundation
import KeyedArchive
import XCTest

/// A nil inside an array, set or dictionary: NSArray, NSSet and NSDictionary cannot hold nil,
/// so the archive holds an NSNull object there, as Foundation writes a Swift nil bridged into
/// one, and an NSNull reads back as nil.
final class NullMemberTests: XCTestCase {
    private func foundationRoot(_ data: Data) throws -> Any? {
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
        unarchiver.requiresSecureCoding = false
        defer { unarchiver.finishDecoding() }
        return unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey)
    }

    func testFoundationReadsOurNilElementsAsNSNull() throws {
        let array = try XCTUnwrap(try foundationRoot(KeyedArchiver.archivedData(withRootObject: [1, nil, 3] as [Int?])) as? NSArray)
        // With `$null` in NS.objects, Foundation dropped the element: (1, 3).
        XCTAssertEqual(array.count, 3)
        XCTAssertEqual(array.object(at: 0) as? Int, 1)
        XCTAssertTrue(array.object(at: 1) is NSNull)
        XCTAssertEqual(array.object(at: 2) as? Int, 3)

        let dictionary = try XCTUnwrap(
            try foundationRoot(KeyedArchiver.archivedData(withRootObject: ["a": nil, "b": 1] as [String: Int?])) as? NSDictionary)
        XCTAssertEqual(dictionary.count, 2)
        // With `$null` there, this read crashed (a NULL value inside the NSDictionary).
        XCTAssertTrue(dictionary.object(forKey: "a") is NSNull)
        XCTAssertEqual(dictionary.object(forKey: "b") as? Int, 1)
    }

    func testWeReadFoundationsNSNullAsNil() throws {
        let array = try NSKeyedArchiver.archivedData(withRootObject: ["a", NSNull(), "c"] as NSArray, requiringSecureCoding: false)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: [String?].self, from: array), ["a", nil, "c"])
        let dictionary = try NSKeyedArchiver.archivedData(withRootObject: ["a": NSNull(), "b": 1] as NSDictionary, requiringSecureCoding: false)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: [String: Int?].self, from: dictionary), ["a": nil, "b": 1])
        // An NSNull where a value is required is still an error, not a default.
        XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofType: [String].self, from: array))
    }

    struct Holder: Codable, Equatable {
        var list: [String?]
        var table: [String: Date?]
        var numbers: Set<Int?>
        var field: String?
        var nested: [[Int?]?]
    }

    struct ExplicitNils: Codable, Equatable {
        var count = 2
        init() {}
        func encode(to encoder: any Encoder) throws {
            var list = encoder.unkeyedContainer()
            for _ in 0..<count { try list.encodeNil() }
        }
        init(from decoder: any Decoder) throws {
            var list = try decoder.unkeyedContainer()
            count = 0
            while !list.isAtEnd {
                guard try list.decodeNil() else { throw DecodingError.dataCorruptedError(in: list, debugDescription: "not nil") }
                count += 1
            }
        }
    }

    /// A class whose value is one optional, encoded through a single-value container.
    final class Box: Codable {
        var value: Int?
        init(_ value: Int?) { self.value = value }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(value)
        }
        init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Int?.self) }
    }

    struct Boxes: Codable {
        var first: Box
        var second: Box
        var other: Box
    }

    /// A class instance that encodes a single nil: its entry is an NSNull, shared by every
    /// reference to it (the encode threw "a class instance cannot encode as nil"; JSON and
    /// property-list encoders encode it).
    func testAClassInstanceEncodingOneNilKeepsItsIdentity() throws {
        let empty = Box(nil)
        let data = try KeyedArchiver.archivedData(withRootObject: Boxes(first: empty, second: empty, other: Box(7)))
        let boxes = try KeyedUnarchiver.unarchivedObject(ofType: Boxes.self, from: data)
        XCTAssertNil(boxes.first.value)
        XCTAssertTrue(boxes.first === boxes.second)
        XCTAssertEqual(boxes.other.value, 7)
        let peer = try PropertyListDecoder().decode(Boxes.self, from: try PropertyListEncoder().encode(Boxes(first: empty, second: empty, other: Box(7))))
        XCTAssertNil(peer.first.value)
        XCTAssertEqual(peer.other.value, 7)
    }

    func testNilMembersRoundTripInBothFormatsWithOneNSNullEntry() throws {
        let holder = Holder(
            list: ["x", nil, "y", nil], table: ["now": Date(timeIntervalSinceReferenceDate: 1), "never": nil],
            numbers: [1, nil], field: nil, nested: [nil, [nil, 2]])
        for format in [PropertyListFormat.binary, .xml] {
            let encoder = KeyedArchiveEncoder()
            encoder.outputFormat = format
            let data = try encoder.encode(holder)
            XCTAssertEqual(try KeyedArchiveDecoder().decode(Holder.self, from: data), holder, "\(format)")
            let plist = try PropertyList.decode(data)
            guard case .array(let objects)? = plist["$objects"] else { return XCTFail("not an archive") }
            // One NSNull object for all the nils in collections; the object field keeps `$null`.
            let nullClass = objects.firstIndex { $0["$classname"] == "NSNull" }
            let nulls = objects.filter { $0["$class"] != nil && $0["$class"] == nullClass.map { .uid(UInt32($0)) } }
            XCTAssertEqual(nulls.count, 1, "\(format)")
            let root = objects.first { $0["field"] != nil }
            XCTAssertEqual(root?["field"], .uid(0), "\(format)")
            XCTAssertEqual(try KeyedArchiveDecoder().decode(ExplicitNils.self, from: try encoder.encode(ExplicitNils())).count, 2)
        }
    }
}
