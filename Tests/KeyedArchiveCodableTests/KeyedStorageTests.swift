@testable import KeyedArchiveCodable
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The Codable decoder's field lookup (a cursor and key fingerprints) against the plain
/// first-match scan the unarchiver uses, on random objects with repeated, same-length,
/// same-first-byte and canonically equivalent keys, looked up in random orders.
final class KeyedStorageTests: XCTestCase {
    func testLookupsMatchTheFirstEntryScanInAnyOrder() {
        var random = SeededGenerator(seed: 0x6B65_7973)
        // Few distinct names, so that objects repeat keys and share lengths and first bytes; the
        // last two are canonically equivalent with the same length (combining marks reordered).
        let names = ["a", "b", "ab", "ba", "aa", "name", "nome", "tags", "e\u{301}", "\u{E9}", "$$x", "$0", "K", "\u{212A}",
                     "a\u{301}\u{316}", "a\u{316}\u{301}"]
        var compared = 0
        for _ in 0..<4_000 {
            let count = Int.random(in: 0...12, using: &random)
            var entries: [PropertyListDictionary.Entry] = [("$class", .uid(1))]
            for value in 0..<count {
                entries.append((.string(PropertyListString(names.randomElement(using: &random) ?? "a")), .integer(PropertyListInteger(value))))
            }
            let storage = KeyedStorage(entries: entries)
            for _ in 0..<Int.random(in: 1...20, using: &random) {
                // User keys: "$x" is stored escaped as "$$x".
                let key = ["a", "b", "ab", "ba", "aa", "name", "nome", "tags", "e\u{301}", "\u{E9}", "$x", "zz", "K",
                           "a\u{301}\u{316}", "a\u{316}\u{301}"]
                    .randomElement(using: &random) ?? "a"
                let stored = ArchiveKeys.escape(key)
                XCTAssertEqual(storage.value(forKey: key), ArchiveKeys.value(forStoredKey: stored, in: PropertyListDictionary(entries)),
                               "key \(key) in \(entries.map(\.key))")
                compared += 1
            }
        }
        XCTAssertGreaterThan(compared, 40_000)
    }
}
