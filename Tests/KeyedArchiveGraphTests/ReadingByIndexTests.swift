import Foundation
import KeyedArchive
import KeyedArchiveGraph
import KeyedArchivePropertyList
import XCTest

/// The unarchiver reads a binary archive by index, each `$objects` entry from the file when it
/// is decoded and an object's fields in place (`InPlaceFields`). These tests hold it to the
/// unarchiver over the whole tree (what it did before, and still does for XML and for
/// `init(propertyList:)`): the same objects from good archives and, from damaged ones, an
/// object only where the whole read gives the same one, a `KeyedArchiveError` otherwise, and
/// never a trap.
final class ReadingByIndexTests: XCTestCase {
    private let classes: [KeyedArchiveClass] = [.type(Primitives.self), .type(Node.self), .array, .string]

    /// A description of what an unarchiver decodes from `data`, for comparing two reads.
    private func summary(_ unarchiver: KeyedUnarchiver) throws -> String {
        guard let root = try unarchiver.decodeTopLevelObject(of: classes) as? [Any] else { return "no root array" }
        var parts: [String] = []
        for item in root {
            switch item {
            case let primitives as Primitives:
                parts.append("P(\(primitives.flag),\(primitives.int),\(primitives.int32),\(primitives.int64),\(primitives.float),"
                    + "\(primitives.double),\(Array(primitives.bytes)),\(primitives.name ?? "nil"),\(primitives.dollarKey))")
            case let node as Node:
                // The nodes reachable from this one, breadth first, with their links' labels.
                var seen: Set<ObjectIdentifier> = [ObjectIdentifier(node)]
                var queue = [node]
                var index = 0
                while index < queue.count {
                    let next = queue[index]
                    index += 1
                    parts.append("N\(next.label)->\(next.links.map(\.label)) weak \(next.weak?.label ?? -1)")
                    for link in next.links where seen.insert(ObjectIdentifier(link)).inserted { queue.append(link) }
                }
            default:
                parts.append("\(type(of: item))")
            }
        }
        return parts.joined(separator: "; ")
    }

    private func decodeWhole(_ data: Data) throws -> String {
        try summary(KeyedUnarchiver(document: ArchiveDocument(data: data, limits: .default, byIndex: false)))
    }

    private func decodeByIndex(_ data: Data) throws -> String {
        try summary(KeyedUnarchiver(data: data))
    }

    private func sampleArchive() throws -> Data {
        let primitives = Primitives()
        primitives.flag = true
        primitives.int = -5
        primitives.int32 = 70_000
        primitives.int64 = Int64.min
        primitives.float = 1.5
        primitives.double = -0.25
        primitives.bytes = Data([1, 2, 3, 250])
        primitives.name = "A name longer than fifteen bytes, é"
        primitives.dollarKey = 9
        let nodes = (0..<4).map { Node(label: $0) }
        nodes[0].links = [nodes[1], nodes[2]]
        nodes[1].links = [nodes[0]]
        nodes[2].links = [nodes[3], nodes[3]]
        nodes[3].weak = nodes[0]
        // A short ASCII name too: read from the file without a value (`shortASCIIString`).
        let short = Primitives()
        short.name = "short name"
        return try KeyedArchiver.archivedData(withRootObject: [primitives, nodes[0], short] as [Any], format: .binary)
    }

    func testGoodArchiveDecodesTheSameBothWays() throws {
        let data = try sampleArchive()
        let whole = try decodeWhole(data)
        XCTAssertEqual(try decodeByIndex(data), whole)
        XCTAssertTrue(whole.contains("P(true,-5,70000,-9223372036854775808,1.5,-0.25,[1, 2, 3, 250],A name longer than fifteen bytes, é,9)"), whole)
        XCTAssertTrue(whole.contains("N0->[1, 2] weak -1; N1->[0] weak -1; N2->[3, 3] weak -1; N3->[] weak 0"), whole)
    }

    /// The static entry points read a binary archive from the caller's bytes until they
    /// return; an unarchiver kept beyond that throws instead of reading memory that may be gone.
    func testAnUnarchiverKeptPastItsDecodeThrows() throws {
        final class Keeper: KeyedArchiving {
            nonisolated(unsafe) static var kept: KeyedUnarchiver?
            init() {}
            func encode(with coder: KeyedArchiver) throws { try coder.encode("text", forKey: "text") }
            init(coder: KeyedUnarchiver) throws { Keeper.kept = coder }
        }
        // Two top-level objects: the static entry point decodes "root"; "other" is read only
        // through the kept unarchiver, after the entry point returned.
        let archiver = KeyedArchiver()
        try archiver.encode(Keeper(), forKey: "root")
        try archiver.encode("another object", forKey: "other")
        let data = try archiver.finishEncoding()
        XCTAssertNotNil(try KeyedUnarchiver.unarchivedObject(ofClass: Keeper.self, from: data))
        let kept = try XCTUnwrap(Keeper.kept)
        Keeper.kept = nil
        XCTAssertThrowsError(try kept.decodeTopLevelObject(of: String.self, forKey: "other")) { error in
            XCTAssertTrue("\(error)".contains("given back"), "\(error)")
        }
        // An unarchiver made from the data owns a copy and reads after the fact.
        let owned = try KeyedUnarchiver(data: data)
        XCTAssertEqual(try owned.decodeTopLevelObject(of: String.self, forKey: "other"), "another object")
    }

    /// A key stored as UTF-16 whose length cannot match is skipped unread; a later lookup past
    /// the cursor must still find an earlier entry with that key (the first match wins).
    func testSkippedUTF16KeysStillCountForTheFirstMatch() throws {
        let entries: [PropertyListDictionary.Entry] = [
            ("ab", PropertyListValue(1)), ("é", PropertyListValue(2)), ("xxxxx", PropertyListValue(3)), ("é", PropertyListValue(4)),
        ]
        let file = try PropertyList.encode(.dictionary(PropertyListDictionary(entries)), format: .binary)
        let reader = try BinaryPropertyListObjectReader(file, limits: .default)
        let fields = InPlaceFields(
            reader: reader, span: try XCTUnwrap(reader.dictionarySpan(ofObject: reader.topObject)), keyCache: InPlaceKeyCache())
        XCTAssertEqual(try fields.value(forStoredKey: "xxxxx"), PropertyListValue(3))
        XCTAssertEqual(try fields.value(forStoredKey: "é"), PropertyListValue(2))
        XCTAssertEqual(try fields.value(forStoredKey: "ab"), PropertyListValue(1))
        XCTAssertNil(try fields.value(forStoredKey: "zz"))
    }

    /// A large string or data entry referred to many times is read once and shared, as the
    /// whole tree shared it: a small archive cannot make the decoders copy it at every use.
    func testLargeLeavesReferredToManyTimesAreShared() throws {
        let blob = Data((0..<4096).map { UInt8(truncatingIfNeeded: $0) })
        var objects: [PropertyListValue] = ["$null"]
        let arrayClass = PropertyListValue.dictionary(PropertyListDictionary(stringKeys: [
            ("$classname", "NSArray"), ("$classes", .array(["NSArray", "NSObject"])),
        ]))
        objects.append(.dictionary(PropertyListDictionary(stringKeys: [
            ("NS.objects", .array(Array(repeating: .uid(2), count: 1000))), ("$class", .uid(3)),
        ])))
        objects.append(.data(blob))
        objects.append(arrayClass)
        let data = try PropertyList.encode(.dictionary(PropertyListDictionary(stringKeys: [
            ("$version", PropertyListValue(100000)), ("$archiver", "NSKeyedArchiver"),
            ("$top", .dictionary(PropertyListDictionary(stringKeys: [("root", .uid(1))]))), ("$objects", .array(objects)),
        ])), format: .binary)
        let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .data], from: data) as? [Data])
        XCTAssertEqual(decoded.count, 1000)
        let addresses = Set(decoded.map { $0.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) } })
        XCTAssertEqual(addresses.count, 1, "each reference got its own copy")
        XCTAssertEqual(decoded.first, blob)
    }

    /// Every byte replaced by each of a few values chosen to hit markers, counts and widths.
    func testDamagedArchivesDecodeAsTheWholeReadDoesOrFail() throws {
        let data = try sampleArchive()
        var agreed = 0, lenient = 0, failed = 0
        for index in data.indices {
            for replacement: UInt8 in [0x0F, 0x80, 0xFF, data[index] ^ 0x01] where replacement != data[index] {
                var damaged = data
                damaged[index] = replacement
                let whole = Result { try decodeWhole(damaged) }
                let byIndex = Result { try decodeByIndex(damaged) }
                switch (whole, byIndex) {
                case (.success(let expected), .success(let got)):
                    XCTAssertEqual(got, expected, "byte \(index) = 0x\(String(replacement, radix: 16))")
                    agreed += 1
                case (.success, .failure(let error)):
                    XCTFail("byte \(index) = 0x\(String(replacement, radix: 16)): the whole read decodes, reading by index throws \(error)")
                case (.failure, .success):
                    // Damage where this decode never reads (reading by index checks what it
                    // reads, as CoreFoundation does).
                    lenient += 1
                case (.failure, .failure(let error)):
                    XCTAssertTrue(error is KeyedArchiveError, "byte \(index): \(error)")
                    failed += 1
                }
            }
        }
        XCTAssertGreaterThan(failed, data.count)
        XCTAssertGreaterThan(agreed, 0)
        XCTAssertLessThan(lenient, failed)
    }
}
