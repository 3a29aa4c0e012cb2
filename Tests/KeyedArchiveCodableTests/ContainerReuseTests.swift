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

    /// Like the test above, for the other ways a value's code can get hold of its object's
    /// storage: a second container of the same value, and a super encoder (written through
    /// later, it adds a `super` entry to whatever object holds that storage then).
    func testASecondContainerOrSuperEncoderKeptAfterItsValueDoesNotWriteIntoLaterObjects() throws {
        final class Keeper: @unchecked Sendable {
            var second: KeyedEncodingContainer<Item.Keys>?
            var superEncoder: (any Encoder)?
        }
        struct Keeping: Encodable {
            let number: Int
            let keeper: Keeper
            let keepsSecond: Bool
            let keeps: Bool

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Item.Keys.self)
                if !keeps {
                    if var second = keeper.second { try second.encode(-1, forKey: .late) }
                    if let kept = keeper.superEncoder {
                        var single = kept.singleValueContainer()
                        try single.encode(-2)
                    }
                }
                try container.encode(number, forKey: .number)
                if keeps && keepsSecond { keeper.second = encoder.container(keyedBy: Item.Keys.self) }
                if keeps && !keepsSecond { keeper.superEncoder = container.superEncoder() }
            }
        }
        for keepsSecond in [true, false] {
            let keeper = Keeper()
            let values = (1...6).map { Keeping(number: $0, keeper: keeper, keepsSecond: keepsSecond, keeps: $0 == 1) }
            let data = try KeyedArchiveEncoder().encode(values)
            keeper.second = nil
            keeper.superEncoder = nil
            let objects = try XCTUnwrap(PropertyList.decode(data)["$objects"]?.arrayValue)
            var numbered = 0
            for object in objects {
                guard case .dictionary(let fields) = object, let number = fields["number"] else { continue }
                numbered += 1
                guard number != .integer(1) else { continue }
                XCTAssertEqual(fields.count, 2, "keeps \(keepsSecond ? "a second container" : "a super encoder"): \(object)")
            }
            XCTAssertEqual(numbered, 6)
        }
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

    // MARK: Keyed containers kept for reuse

    /// Runs `encode` with every keyed container made anew, then with the encoder's kept ones.
    private func withAndWithoutKeptContainers(_ encode: () throws -> Data) rethrows -> (made: Data, kept: Data) {
        defer { KeyedArchiveEncoder.keptContainerLimitOverride.value = nil }
        KeyedArchiveEncoder.keptContainerLimitOverride.value = 0
        let made = try encode()
        KeyedArchiveEncoder.keptContainerLimitOverride.value = nil
        return (made, try encode())
    }

    /// The standard library's keyed containers are laid out as the encoder and decoder keep
    /// them (one reference to a box) on this toolchain; otherwise every container is made anew
    /// and the tests of kept containers compare two identical runs.
    func testKeyedContainersCanBeKeptOnThisToolchain() throws {
        final class Seen: @unchecked Sendable {
            static let key = CodingUserInfoKey(rawValue: "ContainerReuseTests.seen")!
            var encoding: Bool?
            var decoding: Bool?
        }
        struct Probe: Codable {
            enum Keys: String, CodingKey { case number }
            let seen: Seen
            init(seen: Seen) { self.seen = seen }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: Keys.self)
                seen = try XCTUnwrap(decoder.userInfo[Seen.key] as? Seen)
                seen.decoding = KeptContainers.canKeep(container)
            }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Keys.self)
                seen.encoding = KeptContainers.canKeep(container)
                try container.encode(1, forKey: .number)
            }
        }
        let seen = Seen()
        let data = try KeyedArchiveEncoder().encode(Probe(seen: seen))
        let decoder = KeyedArchiveDecoder()
        decoder.userInfo[Seen.key] = seen
        _ = try decoder.decode(Probe.self, from: data)
        XCTAssertEqual(seen.encoding, true)
        XCTAssertEqual(seen.decoding, true)
    }

    /// One type at every level of a tree (one coding-key type), nested deeper than the encoder
    /// keeps containers for: each level has its own container, the same bytes as containers
    /// made anew, and the tree decodes to itself.
    func testKeptContainersOfARecursiveTypeKeepEachLevelApart() throws {
        struct Branch: Codable, Equatable {
            var name: String
            var weight: Int
            var children: [Branch]
        }
        var generator = SeededGenerator(seed: 7)
        // A spine 45 levels deep, with short side branches (about 400 nodes in all).
        func branch(depth: Int, spine: Bool) -> Branch {
            var children: [Branch] = []
            if spine && depth < 45 { children.append(branch(depth: depth + 1, spine: true)) }
            let sides = depth < 48 ? Int(generator.next() % 3) : 0
            for _ in 0..<sides where generator.next() % 4 != 0 { children.insert(branch(depth: depth + 1, spine: false), at: 0) }
            return Branch(name: "b\(depth)-\(generator.next() % 1000)", weight: Int(generator.next() % 100), children: children)
        }
        let trees = (0..<3).map { _ in branch(depth: 0, spine: true) }
        func count(_ branch: Branch) -> (nodes: Int, depth: Int) {
            branch.children.map(count).reduce((1, 1)) { ($0.nodes + $1.nodes, max($0.depth, $1.depth + 1)) }
        }
        XCTAssertGreaterThan(trees.map { count($0).depth }.min() ?? 0, 40)
        XCTAssertLessThan(trees.map { count($0).nodes }.reduce(0, +), 20_000)
        for format in [PropertyListFormat.binary, .xml] {
            let result = try withAndWithoutKeptContainers {
                let encoder = KeyedArchiveEncoder()
                encoder.outputFormat = format
                return try encoder.encode(trees)
            }
            XCTAssertEqual(result.kept, result.made, "\(format)")
            XCTAssertEqual(try KeyedArchiveDecoder().decode([Branch].self, from: result.kept), trees)
        }
    }

    struct Flaky: Encodable {
        enum Keys: String, CodingKey { case number, after }
        struct Failure: Error {}
        let number: Int
        let fails: Bool

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(number, forKey: .number)
            if fails { throw Failure() }
            try container.encode(number * 2, forKey: .after)
        }
    }

    /// Asks for a second keyed container of another key type at the same level, and
    /// swallows its elements' failures (`try?`), so values of one type are left unfinished
    /// in the middle of a run.
    struct Shelf: Encodable {
        enum Keys: String, CodingKey { case label }
        struct ItemKey: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        let label: String
        let items: [Flaky]

        func encode(to encoder: any Encoder) throws {
            var labels = encoder.container(keyedBy: Keys.self)
            try labels.encode(label, forKey: .label)
            var items = encoder.container(keyedBy: ItemKey.self)
            for (index, item) in self.items.enumerated() {
                try? items.encode(item, forKey: ItemKey(stringValue: "item\(index)"))
            }
        }
    }

    struct DecodedFlaky: Decodable, Equatable {
        let number: Int
        let after: Int
    }

    /// Values that fail after their container was taken (the error swallowed by the caller)
    /// and containers asked for twice at one level leave nothing behind: later values of the
    /// same types have their own fields, the same bytes as with containers made anew.
    func testFailedValuesAndSecondContainersLeaveKeptContainersClean() throws {
        let shelves = (0..<20).map { shelf in
            Shelf(label: "shelf \(shelf)", items: (0..<6).map { Flaky(number: shelf * 10 + $0, fails: ($0 + shelf) % 4 == 0) })
        }
        let result = try withAndWithoutKeptContainers { try KeyedArchiveEncoder().encode(shelves) }
        XCTAssertEqual(result.kept, result.made)
        // Each unfailed item decodes with its own two fields, under its shelf.
        struct DecodedShelf: Decodable {
            let label: String
            let items: [String: DecodedFlaky]
            init(from decoder: any Decoder) throws {
                let labels = try decoder.container(keyedBy: Shelf.Keys.self)
                label = try labels.decode(String.self, forKey: .label)
                let items = try decoder.container(keyedBy: Shelf.ItemKey.self)
                var found: [String: DecodedFlaky] = [:]
                for key in items.allKeys where key.stringValue.hasPrefix("item") {
                    found[key.stringValue] = try items.decode(DecodedFlaky.self, forKey: key)
                }
                self.items = found
            }
        }
        let decoded = try KeyedArchiveDecoder().decode([DecodedShelf].self, from: result.kept)
        XCTAssertEqual(decoded.count, shelves.count)
        for (shelf, read) in zip(shelves, decoded) {
            XCTAssertEqual(read.label, shelf.label)
            var expected: [String: DecodedFlaky] = [:]
            for (index, item) in shelf.items.enumerated() where !item.fails {
                expected["item\(index)"] = DecodedFlaky(number: item.number, after: item.number * 2)
            }
            XCTAssertEqual(read.items, expected, shelf.label)
        }
    }

    // MARK: Decoding

    /// What the decoding tests below keep across `init(from:)` calls (handed in through the
    /// decoder's `userInfo`).
    final class DecodingStash: @unchecked Sendable {
        static let key = CodingUserInfoKey(rawValue: "ContainerReuseTests.stash")!
        var container: KeyedDecodingContainer<Entry.Keys>?
        var lateReads: [Int] = []
        weak var decoder: AnyObject?

        static func from(_ decoder: any Decoder) throws -> DecodingStash {
            guard let stash = decoder.userInfo[key] as? DecodingStash else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "no stash in userInfo"))
            }
            return stash
        }
    }

    /// Keeps the first entry's container, and reads it again while each later entry decodes.
    struct Entry: Codable {
        enum Keys: String, CodingKey { case number }
        let number: Int

        init(number: Int) { self.number = number }

        init(from decoder: any Decoder) throws {
            let stash = try DecodingStash.from(decoder)
            stash.decoder = decoder as AnyObject
            let container = try decoder.container(keyedBy: Keys.self)
            if let kept = stash.container {
                stash.lateReads.append(try kept.decode(Int.self, forKey: .number))
            } else {
                stash.container = container
            }
            number = try container.decode(Int.self, forKey: .number)
            if number < 0 { throw DecodingError.dataCorrupted(.init(codingPath: container.codingPath, debugDescription: "negative")) }
        }
    }

    private func decoder(with stash: DecodingStash) -> KeyedArchiveDecoder {
        var decoder = KeyedArchiveDecoder()
        decoder.userInfo[DecodingStash.key] = stash
        return decoder
    }

    /// The decoder reuses the storage of a container no one refers to any more; one kept past
    /// its value's `init(from:)` still reads its own object's fields after later objects.
    func testAKeptDecodingContainerKeepsReadingItsOwnObject() throws {
        let data = try KeyedArchiveEncoder().encode((1...6).map { Entry(number: $0 * 10) })
        let stash = DecodingStash()
        let decoded = try decoder(with: stash).decode([Entry].self, from: data)
        XCTAssertEqual(decoded.map(\.number), [10, 20, 30, 40, 50, 60])
        XCTAssertEqual(stash.lateReads, [10, 10, 10, 10, 10], "a kept container read another object's fields")
    }

    /// Strict class checks hold for every object, also those read through a container kept
    /// from an earlier object of the same coding-key type.
    func testStrictDecodingChecksObjectsReadThroughKeptContainers() throws {
        struct Point: Codable, Equatable { var x: Int; var y: Int }
        struct Impostor: Codable { var x: Int; var y: Int }
        struct Row: Encodable { var first: Point; var second: Point; var third: Impostor }
        struct StrictRow: Decodable, Equatable { var first: Point; var second: Point; var third: Point }
        let encoder = KeyedArchiveEncoder()
        encoder.setClassName("Point", for: Point.self)
        encoder.setClassName("Impostor", for: Impostor.self)
        encoder.setClassName("Row", for: Row.self)
        let data = try encoder.encode(Row(first: Point(x: 1, y: 2), second: Point(x: 3, y: 4), third: Impostor(x: 5, y: 6)))
        let lenient = KeyedArchiveDecoder()
        XCTAssertEqual(try lenient.decode(StrictRow.self, from: data).third, Point(x: 5, y: 6))
        let strict = KeyedArchiveDecoder()
        strict.isStrict = true
        strict.setClassName("Point", for: Point.self)
        strict.setClassName("Row", for: StrictRow.self)
        // `second` and `third` are read through the container `first` was read with.
        XCTAssertThrowsError(try strict.decode(StrictRow.self, from: data)) { error in
            guard case DecodingError.typeMismatch(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(context.debugDescription.contains("\"Impostor\""), context.debugDescription)
            XCTAssertEqual(context.codingPath.last?.stringValue, "third")
        }
        strict.setType(Point.self, forClassName: "Impostor")
        XCTAssertEqual(try strict.decode(StrictRow.self, from: data).second, Point(x: 3, y: 4))
    }

    /// The storages kept for reuse refer to the decode's state; they must not keep it alive
    /// once the decode has returned or thrown.
    func testTheDecodingStateIsFreedAfterTheDecode() throws {
        for numbers in [[1, 2, 3], [1, 2, -3, 4]] {
            let data = try KeyedArchiveEncoder().encode(numbers.map { Entry(number: $0) })
            let stash = DecodingStash()
            _ = try? decoder(with: stash).decode([Entry].self, from: data)
            stash.container = nil
            XCTAssertNil(stash.decoder, "the decoding state outlived the decode of \(numbers)")
        }
    }

    /// A tree whose objects sit at different coding-path depths for the same nesting level (a
    /// field, then an array element): every container reports its own path, as
    /// `JSONDecoder`'s do, also when its storage was used before at another depth.
    func testReusedDecodingStoragesReportTheirOwnCodingPath() throws {
        final class Node: Codable {
            let name: String
            let next: Node?
            let list: [Node]
            var path: [String] = []
            enum CodingKeys: String, CodingKey { case name, next, list }

            init(_ name: String, next: Node? = nil, list: [Node] = []) {
                self.name = name
                self.next = next
                self.list = list
            }

            required init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                name = try container.decode(String.self, forKey: .name)
                next = try container.decodeIfPresent(Node.self, forKey: .next)
                list = try container.decode([Node].self, forKey: .list)
                // Read after the nested objects were decoded (their storages made and freed).
                path = container.codingPath.map { $0.intValue.map { "#\($0)" } ?? $0.stringValue }
            }

            /// Name and path of every node, depth first.
            func all() -> [String] {
                ["\(name): \(path.joined(separator: "/"))"] + (next?.all() ?? []) + list.flatMap { $0.all() }
            }
        }
        let tree = Node(
            "root", next: Node("a"),
            list: [Node("b", next: Node("c", list: [Node("d")])), Node("e", list: [Node("f", next: Node("g"))])])
        let ours = try KeyedArchiveDecoder().decode(Node.self, from: KeyedArchiveEncoder().encode(tree))
        let json = try JSONDecoder().decode(Node.self, from: JSONEncoder().encode(tree))
        XCTAssertEqual(ours.path, [])
        XCTAssertEqual(ours.all(), json.all())
        XCTAssertEqual(json.all().count, 8)
    }
}
