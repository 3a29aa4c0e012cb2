import Foundation
import KeyedArchive
import KeyedArchiveGraph
import KeyedArchivePropertyList
import KeyedArchiveTestSupport
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
        // One blob (kept apart from the others), then three, referred to in turn; and a short
        // one, which is read again at each reference.
        let blobs = (0..<3).map { index in Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &+ index) }) }
        let short = Data([1, 2, 3])
        for blobCount in [1, 3] {
            var objects: [PropertyListValue] = ["$null"]
            let arrayClass = PropertyListValue.dictionary(PropertyListDictionary(stringKeys: [
                ("$classname", "NSArray"), ("$classes", .array(["NSArray", "NSObject"])),
            ]))
            // Members: blob UIDs 3, 4, ... in turn, then the short one.
            let members = (0..<999).map { PropertyListValue.uid(UInt32(3 + $0 % blobCount)) } + [.uid(UInt32(3 + blobCount))]
            objects.append(.dictionary(PropertyListDictionary(stringKeys: [("NS.objects", .array(members)), ("$class", .uid(2))])))
            objects.append(arrayClass)
            objects += blobs.prefix(blobCount).map(PropertyListValue.data)
            objects.append(.data(short))
            let data = try PropertyList.encode(.dictionary(PropertyListDictionary(stringKeys: [
                ("$version", PropertyListValue(100000)), ("$archiver", "NSKeyedArchiver"),
                ("$top", .dictionary(PropertyListDictionary(stringKeys: [("root", .uid(1))]))), ("$objects", .array(objects)),
            ])), format: .binary)
            let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .data], from: data) as? [Data])
            XCTAssertEqual(decoded.count, 1000)
            for blob in 0..<blobCount {
                let copies = stride(from: blob, to: 999, by: blobCount).map { decoded[$0] }
                XCTAssertTrue(copies.allSatisfy { $0 == blobs[blob] }, "blob \(blob) of \(blobCount)")
                let addresses = Set(copies.map { $0.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) } })
                XCTAssertEqual(addresses.count, 1, "blob \(blob) of \(blobCount): each reference got its own copy")
            }
            XCTAssertEqual(decoded.last, short)
        }
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

    /// The key cache is direct-mapped: a key object that shares a slot with another replaces
    /// it, and a match is the very bits of the string it matched.
    func testKeyCacheSlotsKeepTheLastKeyObjectAndItsString() {
        let cache = InPlaceKeyCache(objectCount: 10)  // 16 slots
        let alpha = String(repeating: "alpha", count: 5)  // on the heap: its bits are a pointer
        XCTAssertNil(cache.known(3, alpha))
        // No key object is negative: -1 (an unused slot's mark) is never known nor remembered.
        XCTAssertNil(cache.known(-1, alpha))
        cache.remember(-1, matched: alpha, fingerprint: 1)
        XCTAssertNil(cache.known(-1, alpha))
        XCTAssertNil(cache.known(15, alpha))
        cache.remember(3, matched: alpha, fingerprint: 0b101)
        XCTAssertEqual(cache.known(3, alpha)?.fingerprint, 0b101)
        XCTAssertEqual(cache.known(3, alpha)?.sameBits, true)
        // The same text elsewhere in memory is not the same bits; the fingerprint still holds.
        let copy = String(alpha.utf8.map { Character(UnicodeScalar($0)) })
        XCTAssertEqual(cache.known(3, copy)?.sameBits, false)
        XCTAssertEqual(cache.known(3, copy)?.fingerprint, 0b101)
        // Object 19 maps to the same slot as 3: unknown until remembered, then it replaces 3.
        XCTAssertNil(cache.known(19, alpha))
        cache.remember(19, matched: "beta", fingerprint: 0b10)
        XCTAssertNil(cache.known(3, alpha))
        XCTAssertEqual(cache.known(19, "beta")?.sameBits, true)
        XCTAssertEqual(cache.known(19, "gamma")?.sameBits, false)
        // Another slot is untouched.
        cache.remember(4, matched: alpha, fingerprint: 1)
        XCTAssertEqual(cache.known(4, alpha)?.sameBits, true)
        XCTAssertEqual(cache.known(19, "beta")?.fingerprint, 0b10)
    }

    /// Caches of every size are made and freed with strings in some of their slots (under
    /// `swift test --sanitize=address`, a double free or a slot past the end stops the run).
    func testKeyCachesOfEverySizeAreMadeAndFreed() {
        for objectCount in [0, 1, 16, 17, 100, 255, 256, 257, 100_000] {
            let cache = InPlaceKeyCache(objectCount: objectCount)
            for object in stride(from: 0, to: 600, by: 7) {
                cache.remember(object, matched: "key \(object) " + String(repeating: "x", count: object % 40), fingerprint: UInt64(object))
            }
            // The last object remembered in each slot is known.
            XCTAssertEqual(cache.known(595, "nothing")?.fingerprint, 595, "\(objectCount)")
        }
    }

    // MARK: Class descriptions and `$top` read in place

    /// What a document gives for the class description at each UID: the description, or that
    /// it throws.
    private func classDescriptions(_ data: Data, limits: DecodingLimits, byIndex: Bool, inPlace: Bool = true) throws -> [String] {
        let document = try ArchiveDocument(data: data, limits: limits, byIndex: byIndex)
        document.readsClassDescriptionsInPlace = inPlace
        return (0..<UInt32(document.objectCount)).map { uid in
            do {
                let description = try document.classDescription(uid, path: "test")
                // Twice: the second comes from the cache.
                XCTAssertEqual(try document.classDescription(uid, path: "test"), description)
                return "\(description.name) \(description.chain) hints \(description.hints)"
            } catch {
                return "throws"
            }
        }
    }

    /// An archive whose root object's class is `description`.
    private func archive(classDescription description: PropertyListValue, top: PropertyListValue = ["root": .uid(1)]) throws -> Data {
        let objects: [PropertyListValue] = ["$null", ["$class": .uid(2), "x": 1], description]
        let envelope: PropertyListValue = [
            "$archiver": "NSKeyedArchiver", "$version": 100_000, "$top": top, "$objects": .array(objects),
        ]
        return try PropertyList.encode(envelope, format: .binary)
    }

    /// Class descriptions of the usual shape are read where they lie in the file; every other
    /// shape the general way. Both must give the same description, or both throw, for regular
    /// shapes, irregular ones, and limits too tight for a whole read of the description; and
    /// the same as a whole read of the archive under the default limits.
    func testClassDescriptionsReadInPlaceAsTheWholeReadDoes() throws {
        let utf16Name = PropertyListValue.string(PropertyListString("Model", storage: .utf16))
        let long = String(repeating: "L", count: 129)
        let descriptions: [(String, PropertyListValue)] = [
            ("usual", ["$classname": "Model", "$classes": ["Model", "NSObject"]]),
            ("name only", ["$classname": "Model"]),
            ("chain without the name", ["$classname": "Model", "$classes": ["Base", "NSObject"]]),
            ("repeated names", ["$classname": "Model", "$classes": ["Model", "Base", "Model", "Base"]]),
            ("chain first", .dictionary(PropertyListDictionary(stringKeys: [("$classes", ["Model"]), ("$classname", "Model")]))),
            ("hints", ["$classname": "Model", "$classes": ["Model"], "$classhints": ["Other"]]),
            ("extra key", ["$classname": "Model", "$classes": ["Model"], "extra": 1]),
            ("UTF-16 name", .dictionary(PropertyListDictionary(stringKeys: [("$classname", utf16Name)]))),
            ("UTF-16 chain member", .dictionary(PropertyListDictionary(stringKeys: [("$classname", "Model"), ("$classes", .array([utf16Name]))]))),
            ("non-ASCII name", ["$classname": "Modèle", "$classes": ["Modèle"]]),
            ("128-byte name", ["$classname": .string(PropertyListString(String(long.dropFirst()))), "$classes": ["NSObject"]]),
            ("129-byte name", ["$classname": .string(PropertyListString(long)), "$classes": ["NSObject"]]),
            ("16 names", ["$classname": "C0", "$classes": .array((0..<16).map { PropertyListValue("C\($0)") })]),
            ("17 names", ["$classname": "C0", "$classes": .array((0..<17).map { PropertyListValue("C\($0)") })]),
            ("duplicate key", .dictionary(PropertyListDictionary([("$classname", "First"), ("$classname", "Second")]))),
            ("no name", ["$classes": ["Model"]]),
            ("empty", .dictionary(PropertyListDictionary())),
            ("name not a string", ["$classname": 7]),
            ("chain not an array", ["$classname": "Model", "$classes": "Model"]),
            ("chain member not a string", ["$classname": "Model", "$classes": ["Model", 3]]),
            ("own $class", ["$classname": "Model", "$class": .uid(2)]),
            ("not a dictionary", ["Model"]),
            ("a string", "Model"),
        ]
        let tight: [(String, DecodingLimits)] = [
            ("default", .default),
            ("depth 1", DecodingLimits(maximumDepth: 1)),
            ("3 values", DecodingLimits(maximumExpandedNodeCount: 3)),
            ("20 bytes", DecodingLimits(maximumStringLength: 20, maximumDataLength: 20, maximumExpandedByteCount: 20)),
        ]
        var described = 0
        for (name, description) in descriptions {
            let data = try archive(classDescription: description)
            let general = try classDescriptions(data, limits: .default, byIndex: true, inPlace: false)
            XCTAssertEqual(try classDescriptions(data, limits: .default, byIndex: false), general, name)
            for (limitName, limits) in tight {
                let expected = try classDescriptions(data, limits: limits, byIndex: true, inPlace: false)
                XCTAssertEqual(try classDescriptions(data, limits: limits, byIndex: true), expected, "\(name), limits \(limitName)")
                if expected[2] != "throws" { described += 1 }
            }
        }
        // The regular shapes under the default limits at least.
        XCTAssertGreaterThan(described, 12)

        // And every class description of the corpus's archives.
        guard Corpus.root != nil else {
            print("ReadingByIndexTests: ../shared/corpus is absent; the corpus part is skipped")
            return
        }
        var files = 0
        for entry in Corpus.entries(in: "keyed") {
            let data = entry.data
            guard PropertyList.detectFormat(data) == .binary,
                let general = try? classDescriptions(data, limits: .default, byIndex: true, inPlace: false)
            else { continue }
            XCTAssertEqual(try classDescriptions(data, limits: .default, byIndex: true), general, entry.path)
            if let whole = try? classDescriptions(data, limits: .default, byIndex: false) {
                XCTAssertEqual(whole, general, entry.path)
            }
            files += 1
        }
        XCTAssertGreaterThan(files, 50)
    }

    private static func storage(_ value: PropertyListValue) -> PropertyListString.Storage? {
        if case .string(let string) = value { return string.storage }
        return nil
    }

    /// `$top` (a small dictionary of UIDs) is read without the decoder when it can be; the
    /// documents' `$top` must be the same either way, string storage included, or both throw.
    /// (`BinaryObjectReaderTests` holds the flat read to the whole one under tight limits.)
    func testTopIsReadAsTheWholeReadDoes() throws {
        let utf16Key = PropertyListValue.string(PropertyListString("root", storage: .utf16))
        let tops: [(String, PropertyListValue)] = [
            ("usual", ["root": .uid(1)]),
            ("several", ["root": .uid(1), "$0": .uid(1), "other": .uid(2)]),
            ("scalars", ["root": .uid(1), "n": 5, "big": .integer(PropertyListInteger(Int64.min)), "r": 2.5, "b": true]),
            ("UTF-16 key", .dictionary(PropertyListDictionary([(utf16Key, .uid(1))]))),
            ("integer key", .dictionary(PropertyListDictionary([(7, .uid(1)), ("root", .uid(1))]))),
            ("nested", ["root": .uid(1), "inner": ["a": 1]]),
            ("data", ["root": .uid(1), "d": .data(Data([1, 2]))]),
            ("17 entries", .dictionary(PropertyListDictionary(stringKeys: (0..<17).map { ("k\($0)", .uid(1)) }))),
            ("long key", .dictionary(PropertyListDictionary(stringKeys: [(String(repeating: "k", count: 129), .uid(1))]))),
            ("empty", .dictionary(PropertyListDictionary())),
            ("not a dictionary", .array([.uid(1)])),
        ]
        var read = 0
        for (name, top) in tops {
            let data = try archive(classDescription: ["$classname": "Model"], top: top)
            let whole = Result { try ArchiveDocument(data: data, byIndex: false).top }
            let inPlace = Result { try ArchiveDocument(data: data, byIndex: true).top }
            switch (whole, inPlace) {
            case (.success(let expected), .success(let got)):
                XCTAssertEqual(got, expected, name)
                XCTAssertEqual(got.entries.map { Self.storage($0.key) }, expected.entries.map { Self.storage($0.key) }, name)
                read += 1
            case (.failure, .failure):
                break
            default:
                XCTFail("\(name): whole \(whole), by index \(inPlace)")
            }
        }
        XCTAssertEqual(read, 9)
    }
}
