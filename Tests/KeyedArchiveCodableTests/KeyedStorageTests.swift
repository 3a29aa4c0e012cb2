@testable import KeyedArchiveCodable
import KeyedArchive
import KeyedArchiveGraph
import KeyedArchivePropertyList
import KeyedArchiveTestSupport
import XCTest

/// The Codable decoder's field lookup (a cursor, key fingerprints and a same-bits fast path)
/// against a plain first-match scan by UTF-8 bytes, on random objects with repeated,
/// same-length, same-first-byte, canonically equivalent and long keys (built per object, so
/// that equal text has different bits), looked up in random orders.
final class KeyedStorageTests: XCTestCase {
    /// The value of the first entry whose key has the UTF-8 bytes of `stored`.
    private func firstMatch(_ stored: String, in entries: [PropertyListDictionary.Entry]) -> PropertyListValue? {
        for entry in entries {
            if case .string(let name) = entry.key, name.value.utf8.elementsEqual(stored.utf8) { return entry.value }
        }
        return nil
    }

    func testLookupsMatchTheFirstEntryScanInAnyOrder() throws {
        var random = SeededGenerator(seed: 0x6B65_7973)
        // Few distinct names, so that objects repeat keys and share lengths and first bytes; the
        // last two are canonically equivalent with the same length (combining marks reordered).
        let names = ["a", "b", "ab", "ba", "aa", "name", "nome", "tags", "e\u{301}", "\u{E9}", "$$x", "$0", "K", "\u{212A}",
                     "a\u{301}\u{316}", "a\u{316}\u{301}"]
        var compared = 0
        // The decode a container belongs to (the lookups do not use it).
        let state = try ArchiveDecodingState(document: try ArchiveDocument(data: KeyedArchiveEncoder().encode([1])), options: KeyedArchiveDecoder())
        for _ in 0..<4_000 {
            let count = Int.random(in: 0...12, using: &random)
            var entries: [PropertyListDictionary.Entry] = [("$class", .uid(1))]
            for value in 0..<count {
                // One in five a long key built now (a string object of its own); a storage hint
                // as the binary reader sets it, or none as the XML reader leaves it.
                let name = Int.random(in: 0..<5, using: &random) == 0
                    ? String(repeating: "long-", count: 4) + String(Int.random(in: 0...1, using: &random))
                    : names.randomElement(using: &random) ?? "a"
                let hint: PropertyListString.Storage? = Bool.random(using: &random) ? .ascii : nil
                entries.append((.string(PropertyListString(name, storage: hint)), .integer(PropertyListInteger(value))))
            }
            let storage = KeyedStorage(entries: entries, state: state, depth: 0)
            // The same object read in place from a binary file (keys stored as ASCII or UTF-16
            // as the hints and the text say), as an archive read by index is.
            let file = try PropertyList.encode(.dictionary(PropertyListDictionary(entries)), format: .binary)
            let reader = try BinaryPropertyListObjectReader(file, limits: .default)
            let span = try XCTUnwrap(reader.dictionarySpan(ofObject: reader.topObject))
            // One cache per file, as in a decode (key objects are the file's).
            let inPlace = InPlaceKeyedStorage(InPlaceLookup(reader: reader, span: span, keyCache: InPlaceKeyCache()), state: state, depth: 0)
            for _ in 0..<Int.random(in: 1...20, using: &random) {
                // User keys: "$x" is stored escaped as "$$x".
                let key = ["a", "b", "ab", "ba", "aa", "name", "nome", "tags", "e\u{301}", "\u{E9}", "$x", "zz", "K",
                           "a\u{301}\u{316}", "a\u{316}\u{301}", "long-long-long-long-0", "long-long-long-long-1"]
                    .randomElement(using: &random) ?? "a"
                let stored = ArchiveKeys.escape(key)
                let expected = firstMatch(stored, in: entries)
                XCTAssertEqual(try storage.value(forKey: key), expected, "key \(key) in \(entries.map(\.key))")
                XCTAssertEqual(try inPlace.value(forKey: key), expected, "in place: key \(key) in \(entries.map(\.key))")
                XCTAssertEqual(inPlace.hasValue(forKey: key), expected != nil, "in place: key \(key)")
                XCTAssertEqual(ArchiveKeys.value(forStoredKey: stored, in: PropertyListDictionary(entries)), expected, "key \(key)")
                XCTAssertEqual(PropertyListDictionary(entries)[stored], expected, "key \(key)")
                compared += 1
            }
        }
        XCTAssertGreaterThan(compared, 40_000)
    }

    /// Two spellings of "é" (equal as Swift strings, not as bytes) in the keys of every element.
    private struct Spellings: Codable, Equatable {
        struct Key: CodingKey {
            var stringValue: String
            init(stringValue: String) { self.stringValue = stringValue }
            var intValue: Int? { nil }
            init?(intValue: Int) { nil }
        }
        static let keys = [Key(stringValue: "caf\u{E9}"), Key(stringValue: "cafe\u{301}")]
        var first: Int
        var second: Int

        init(first: Int, second: Int) {
            self.first = first
            self.second = second
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Key.self)
            try container.encode(first, forKey: Self.keys[0])
            try container.encode(second, forKey: Self.keys[1])
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            first = try container.decode(Int.self, forKey: Self.keys[0])
            second = try container.decode(Int.self, forKey: Self.keys[1])
        }
    }

    /// The encoder's key cache keeps keys apart by their bytes: the two spellings are two fields
    /// in every object (from the second on, both keys come from the cache), read back by our
    /// decoder and by plistlib.
    func testEncoderKeepsCanonicallyEquivalentKeysApart() throws {
        let values = (0..<5).map { Spellings(first: $0, second: 100 + $0) }
        let data = try KeyedArchiveEncoder().encode(values)
        XCTAssertEqual(try KeyedArchiveDecoder().decode([Spellings].self, from: data), values)
        guard Python.executable != nil else {
            return print("skipped the plistlib part of testEncoderKeepsCanonicallyEquivalentKeysApart: python3 not found")
        }
        let script = """
            import plistlib, sys
            archive = plistlib.loads(sys.stdin.buffer.read())
            for o in archive['$objects']:
                if isinstance(o, dict) and 'caf\\u00e9' in o:
                    print(o['caf\\u00e9'], o['cafe\\u0301'])
            """
        let output = String(decoding: try Python.run(script, input: data), as: UTF8.self)
        XCTAssertEqual(output, (0..<5).map { "\($0) \(100 + $0)\n" }.joined())
    }
}
