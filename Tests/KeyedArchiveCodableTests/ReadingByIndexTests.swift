@testable import KeyedArchiveCodable
import Foundation
import KeyedArchive
import KeyedArchiveGraph
import KeyedArchivePropertyList
import KeyedArchiveTestSupport
import XCTest

/// The Codable decoder reads a binary archive by index, each `$objects` entry from the file
/// when it is needed, and an object's fields in place (``InPlaceKeyedStorage``). These tests
/// hold it to the decoder over the whole tree (what it did before, and still does for XML):
/// the same values from good archives, and from damaged ones, a value only where the whole
/// read gives the same one, a `DecodingError` otherwise, and never a trap.
final class ReadingByIndexTests: XCTestCase {
    /// Decodes `data` over the whole tree, as the decoder did before reading by index.
    private func decodeWhole<T: Decodable>(_ type: T.Type, _ data: Data) throws -> T {
        let document = try ArchiveDocument(data: data, limits: .default, byIndex: false)
        return try ArchiveDecodingState(document: document, options: KeyedArchiveDecoder()).decodeRoot(type, key: "root")
    }

    /// Every byte of an archive replaced by each of a few values chosen to hit markers, counts
    /// and widths (0x0F: an extended count; 0x80: a UID marker; 0xFF: out of range).
    private func assertDamageAgrees<T: Codable & Equatable>(_ value: T, file: StaticString = #filePath, line: UInt = #line) throws {
        let data = try KeyedArchiveEncoder().encode(value)
        XCTAssertEqual(try KeyedArchiveDecoder().decode(T.self, from: data), value, file: file, line: line)
        XCTAssertEqual(try decodeWhole(T.self, data), value, file: file, line: line)
        var agreed = 0, lenient = 0, failed = 0
        for index in data.indices {
            for replacement: UInt8 in [0x0F, 0x80, 0xFF, data[index] ^ 0x01] where replacement != data[index] {
                var damaged = data
                damaged[index] = replacement
                let whole = Result { try decodeWhole(T.self, damaged) }
                let byIndex = Result { try KeyedArchiveDecoder().decode(T.self, from: damaged) }
                switch (whole, byIndex) {
                case (.success(let expected), .success(let got)):
                    XCTAssertEqual(got, expected, "byte \(index) = 0x\(String(replacement, radix: 16))", file: file, line: line)
                    agreed += 1
                case (.success, .failure(let error)):
                    XCTFail("byte \(index) = 0x\(String(replacement, radix: 16)): the whole read decodes, reading by index throws \(error)",
                            file: file, line: line)
                case (.failure, .success):
                    // The damage is somewhere this decode never reads (reading by index checks
                    // what it reads, as CoreFoundation does), e.g. an unused class name.
                    lenient += 1
                case (.failure, .failure(let error)):
                    XCTAssertTrue(error is DecodingError, "byte \(index): \(error)", file: file, line: line)
                    failed += 1
                }
            }
        }
        // The damage must have reached the code under test both ways.
        XCTAssertGreaterThan(failed, data.count, file: file, line: line)
        XCTAssertGreaterThan(agreed, 0, file: file, line: line)
        XCTAssertLessThan(lenient, failed, file: file, line: line)
    }

    /// The decoder reads a binary archive from the caller's bytes until `decode` returns; one a
    /// type keeps beyond that throws instead of reading memory that may be gone.
    func testADecoderKeptPastItsDecodeThrows() throws {
        final class Keeper: Decodable {
            nonisolated(unsafe) static var kept: KeyedDecodingContainer<Key>?
            init(from decoder: any Decoder) throws {
                Keeper.kept = try decoder.container(keyedBy: Key.self)
            }
            enum Key: String, CodingKey { case name }
        }
        struct Named: Codable { var name: String }
        let data = try KeyedArchiveEncoder().encode([Named(name: "kept")])
        XCTAssertEqual(try KeyedArchiveDecoder().decode([Keeper].self, from: data).count, 1)
        let kept = try XCTUnwrap(Keeper.kept)
        Keeper.kept = nil
        // The container's fields are read in place, from bytes given back when decode returned.
        XCTAssertThrowsError(try kept.decode(String.self, forKey: .name)) { error in
            XCTAssertTrue(error is DecodingError && "\(error)".contains("given back"), "\(error)")
        }
    }

    /// Objects read in place share a few storages, each restarted at the next object once no
    /// container refers to it. Containers a type keeps while the decode goes on (here, every
    /// record's, read again after all the records and their arrays of strings, which are
    /// read with a spare storage too) still read their own object, and nested ones theirs.
    func testContainersKeptDuringTheDecodeReadTheirOwnObject() throws {
        struct Inner: Codable, Equatable {
            var label: String
            enum CodingKeys: CodingKey { case label }
        }
        struct Record: Codable, Equatable {
            var name: String
            var tags: [String]
            var inner: Inner
            enum CodingKeys: CodingKey { case name, tags, inner }
        }
        final class Keeper: Decodable {
            let container: KeyedDecodingContainer<Record.CodingKeys>
            let innerContainer: KeyedDecodingContainer<Inner.CodingKeys>
            let tags: [String]
            init(from decoder: any Decoder) throws {
                container = try decoder.container(keyedBy: Record.CodingKeys.self)
                innerContainer = try container.nestedContainer(keyedBy: Inner.CodingKeys.self, forKey: .inner)
                tags = try container.decode([String].self, forKey: .tags)
            }
        }
        struct Batch: Decodable {
            var reread: [Record]
            init(from decoder: any Decoder) throws {
                var list = try decoder.unkeyedContainer()
                var keepers: [Keeper] = []
                while !list.isAtEnd { keepers.append(try list.decode(Keeper.self)) }
                // Read after every record was decoded: each container is still its own record's.
                reread = try keepers.map { keeper in
                    Record(
                        name: try keeper.container.decode(String.self, forKey: .name),
                        tags: try keeper.container.decode([String].self, forKey: .tags),
                        inner: Inner(label: try keeper.innerContainer.decode(String.self, forKey: .label)))
                }
                XCTAssertEqual(keepers.map(\.tags), reread.map(\.tags))
            }
        }
        let records = (0..<40).map { index in
            Record(name: "record \(index)", tags: ["tag \(index)", "t\(index % 3)"], inner: Inner(label: "inner \(index)"))
        }
        let data = try KeyedArchiveEncoder().encode(records)
        XCTAssertEqual(try KeyedArchiveDecoder().decode(Batch.self, from: data).reread, records)
        XCTAssertEqual(try decodeWhole(Batch.self, data).reread, records)
    }

    func testDamagedArchivesDecodeAsTheWholeReadDoesOrFail() throws {
        var generator = ModelGenerator(seed: 0x1DE7)
        try assertDamageAgrees(generator.model(depth: 0))
        try assertDamageAgrees(Profile(name: "Ada Lovelace, Countess", age: 36, score: 0.5, tags: ["analytical", "engine", "é"]))
    }

    /// String fields read straight from the file as text (ASCII, shorter than 64 bytes) and
    /// through entries (longer ones, shared by every reference; UTF-16): lengths on both sides
    /// of the boundaries (15 bytes inline in a `String`, the extended count from 15, the shared
    /// entries from 64), decoded as the whole read decodes them, damaged or not.
    func testStringFieldsOnEitherSideOfTheDirectRead() throws {
        struct Texts: Codable, Equatable {
            var texts: [String]
            var first: String
            var last: String
            // Fields on either side of 15 bytes, the longest text copied straight into a
            // small string.
            var empty = "", one = "1", fifteen = "fifteen bytes!!", sixteen = "sixteen bytes!!!"
        }
        let long = String(repeating: "x", count: 64)
        let texts = Texts(
            texts: ["", "a", String(repeating: "b", count: 14), String(repeating: "c", count: 15), String(repeating: "d", count: 16),
                    String(repeating: "e", count: 62), String(repeating: "f", count: 63), long, long + "y", "caf\u{E9}", "\u{1F600}"],
            first: String(repeating: "f", count: 63), last: long)
        XCTAssertEqual([texts.fifteen.utf8.count, texts.sixteen.utf8.count], [15, 16])
        let data = try KeyedArchiveEncoder().encode(texts)
        XCTAssertEqual(try KeyedArchiveDecoder().decode(Texts.self, from: data), texts)
        try assertDamageAgrees(texts)
    }

    /// A string of 64 bytes or more that the archive refers to many times is read once and
    /// shared by every value decoded from it (short strings are read as text at each use).
    func testLongStringFieldsReferredToManyTimesAreShared() throws {
        let long = String(repeating: "shared text ", count: 8)  // 96 bytes, one entry
        let data = try KeyedArchiveEncoder().encode(Array(repeating: long, count: 1_000))
        let decoded = try KeyedArchiveDecoder().decode([String].self, from: data)
        XCTAssertEqual(decoded.count, 1_000)
        XCTAssertEqual(decoded.first, long)
        // Strings that share storage have the same bits; a copy per reference would not.
        let storages = Set(decoded.map { string in withUnsafeBytes(of: string) { Array($0) } })
        XCTAssertEqual(storages.count, 1, "each reference got its own copy")
    }

    /// A string longer than the limits allow is refused by index as in the whole read, however
    /// short (the direct read of text caps it at the limit too). A top-level string: the
    /// archive's other strings are at most 15 bytes (`NSKeyedArchiver`), and no class name.
    func testStringLongerThanTheLimitIsRefusedBothWays() throws {
        let text = "twenty bytes of text"
        let data = try KeyedArchiveEncoder().encode(text)
        var limits = DecodingLimits.default
        limits.maximumStringLength = 19
        let decoder = KeyedArchiveDecoder()
        decoder.limits = limits
        XCTAssertThrowsError(try decoder.decode(String.self, from: data))
        XCTAssertThrowsError(try ArchiveDocument(data: data, limits: limits, byIndex: false))
        limits.maximumStringLength = 20
        decoder.limits = limits
        XCTAssertEqual(try decoder.decode(String.self, from: data), text)
        XCTAssertNoThrow(try ArchiveDocument(data: data, limits: limits, byIndex: false))
    }

    /// Fields whose keys the file stores as UTF-16 (non-ASCII names) or with a long count
    /// (15 bytes or more), `$class` after the fields, a key repeated (the first wins), all
    /// integer widths and UIDs of 1 to 4 bytes: built by hand, read in place.
    func testHandBuiltObjectsReadInPlace() throws {
        struct Fields: Codable, Equatable {
            var café: Int
            var aVeryLongFieldNameIndeed: String
            var small: Int
            var big: Int64
            var flag: Bool
            var ratio: Double
        }
        // $objects: [$null, root object, "text", class description]; padded with strings so
        // that UIDs need 2 bytes.
        var objects: [PropertyListValue] = ["$null"]
        for index in 0..<300 { objects.append(PropertyListValue("pad \(index)")) }
        let textUID = UInt32(objects.count)
        objects.append("hello in place")
        let classUID = UInt32(objects.count)
        objects.append(.dictionary(PropertyListDictionary(stringKeys: [
            ("$classname", "Fields"), ("$classes", .array(["Fields", "NSObject"])),
        ])))
        let rootUID = UInt32(objects.count)
        objects.append(.dictionary(PropertyListDictionary([
            (.string(PropertyListString("café")), .integer(PropertyListInteger(7))),
            ("aVeryLongFieldNameIndeed", .uid(textUID)),
            ("small", .integer(PropertyListInteger(UInt64(200), storedWidth: 1))),
            ("small", .integer(PropertyListInteger(UInt64(9), storedWidth: 1))),
            ("big", .integer(PropertyListInteger(Int64.min, storedWidth: 8))),
            ("flag", true),
            ("ratio", .real(PropertyListReal(0.25))),
            ("$class", .uid(classUID)),
        ])))
        let envelope: PropertyListValue = .dictionary(PropertyListDictionary(stringKeys: [
            ("$version", PropertyListValue(100000)), ("$archiver", "NSKeyedArchiver"),
            ("$top", .dictionary(PropertyListDictionary(stringKeys: [("root", .uid(rootUID))]))),
            ("$objects", .array(objects)),
        ]))
        let data = try PropertyList.encode(envelope, format: .binary)
        let expected = Fields(café: 7, aVeryLongFieldNameIndeed: "hello in place", small: 200, big: Int64.min, flag: true, ratio: 0.25)
        XCTAssertEqual(try KeyedArchiveDecoder().decode(Fields.self, from: data), expected)
        XCTAssertEqual(try decodeWhole(Fields.self, data), expected)
    }

    /// Arrays of strings read in place count each string's bytes once toward the limit (the
    /// tightest limit that lets three 40-byte strings through is 120), and one whose last
    /// member is no UID, given up on after two members were decoded, fails on that member as
    /// the general path reports it, at that limit and at the default one.
    func testArraysOfStringsReadInPlaceAreCountedOnce() throws {
        // Long enough that the decoder's count of string bytes sets the tightest limit (the
        // envelope's strings count on their own), short enough to be read in place (64).
        let first = String(repeating: "1", count: 40), second = String(repeating: "2", count: 40)
        func archive(lastMember: PropertyListValue) throws -> Data {
            var objects: [PropertyListValue] = ["$null", PropertyListValue(first), PropertyListValue(second)]
            let classUID = UInt32(objects.count)
            objects.append(.dictionary(PropertyListDictionary(stringKeys: [
                ("$classname", "NSArray"), ("$classes", .array(["NSArray", "NSObject"])),
            ])))
            let rootUID = UInt32(objects.count)
            objects.append(.dictionary(PropertyListDictionary(stringKeys: [
                ("NS.objects", .array([.uid(1), .uid(2), lastMember])), ("$class", .uid(classUID)),
            ])))
            return try PropertyList.encode(.dictionary(PropertyListDictionary(stringKeys: [
                ("$version", PropertyListValue(100000)), ("$archiver", "NSKeyedArchiver"),
                ("$top", .dictionary(PropertyListDictionary(stringKeys: [("root", .uid(rootUID))]))),
                ("$objects", .array(objects)),
            ])), format: .binary)
        }
        let good = try archive(lastMember: .uid(1))
        let bad = try archive(lastMember: PropertyListValue(5))
        var decoder = KeyedArchiveDecoder()
        var tightest: Int?
        for limit in 1...512 {
            decoder.limits = DecodingLimits(maximumExpandedByteCount: limit)
            if let strings = try? decoder.decode([String].self, from: good) {
                XCTAssertEqual(strings, [first, second, first])
                tightest = limit
                break
            }
        }
        // The three strings' bytes: the decoder's own count decided.
        XCTAssertEqual(tightest, 120)
        decoder.limits = DecodingLimits(maximumExpandedByteCount: try XCTUnwrap(tightest))
        XCTAssertThrowsError(try decoder.decode([String].self, from: bad)) { error in
            XCTAssertTrue("\(error)".contains("NS.objects[2]: expected UID, found integer"), "\(error)")
        }
        // With room to spare, the same error.
        decoder.limits = .default
        XCTAssertThrowsError(try decoder.decode([String].self, from: bad)) { error in
            XCTAssertTrue("\(error)".contains("NS.objects[2]: expected UID, found integer"), "\(error)")
        }
    }
}
