import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The encoder reuses the storage of a finished container for the next one, but only when no
/// container value still refers to it: a container kept past its value's `encode(to:)` and
/// written to later must not land its writes in another object.
final class ContainerReuseTests: XCTestCase {
    /// Holds a keyed container beyond the `encode(to:)` that made it.
    final class Stash: @unchecked Sendable {
        var container: KeyedEncodingContainer<Item.Keys>?
    }

    struct Item: Encodable {
        enum Keys: String, CodingKey { case number, late }
        let number: Int
        let stash: Stash
        /// Keep this item's container in the stash (the first item), or write through the one
        /// kept there while encoding its own fields (the others).
        let keeps: Bool

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            // After this item's container exists: were the kept one's storage reused for it,
            // the late write would land here.
            if !keeps, var kept = stash.container { try kept.encode(-1, forKey: .late) }
            try container.encode(number, forKey: .number)
            if keeps { stash.container = container }
        }
    }

    struct Decoded: Decodable, Equatable {
        let number: Int
    }

    func testAContainerKeptAfterItsValueDoesNotWriteIntoLaterObjects() throws {
        let stash = Stash()
        let items = [Item(number: 1, stash: stash, keeps: true)] + (2...6).map { Item(number: $0, stash: stash, keeps: false) }
        let data = try KeyedArchiveEncoder().encode(items)
        stash.container = nil
        XCTAssertEqual(try KeyedArchiveDecoder().decode([Decoded].self, from: data).map(\.number), [1, 2, 3, 4, 5, 6])
        // No object got the late writes: each item object has `$class` and `number` only.
        let objects = try XCTUnwrap(PropertyList.decode(data)["$objects"]?.arrayValue)
        var itemObjects = 0
        for object in objects {
            guard case .dictionary(let fields) = object, fields["number"] != nil else { continue }
            itemObjects += 1
            XCTAssertNil(fields["late"], "a late write landed in \(object)")
            XCTAssertEqual(fields.count, 2, "\(object)")
        }
        XCTAssertEqual(itemObjects, 6)
        // Foundation reads the archive too.
        let archive = try XCTUnwrap(PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        XCTAssertNotNil(archive["$objects"])
    }

    /// Objects of one type encoded one after another (each reusing the storage of the one
    /// before) keep their own fields, including when they have different numbers of fields.
    func testReusedContainersStartEmpty() throws {
        struct Varying: Codable, Equatable {
            var a: Int
            var b: String?
            var c: [Int]?
        }
        let values = (0..<50).map { Varying(a: $0, b: $0 % 3 == 0 ? nil : "b\($0)", c: $0 % 4 == 0 ? Array(0..<($0 % 7)) : nil) }
        let data = try KeyedArchiveEncoder().encode(values)
        XCTAssertEqual(try KeyedArchiveDecoder().decode([Varying].self, from: data), values)
    }
}
