import KeyedArchive
import KeyedArchiveGraph
import KeyedArchiveTestSupport
import XCTest

/// Every archive in the shared corpus decodes, re-archives, and the re-archive decodes to the
/// same graph; ARCHIVE-REJECT files fail with typed errors.
final class CorpusArchiveTests: XCTestCase {
    static let everything = KeyedArchiveClass.foundationClasses + [.archivedObject]

    private func keyedEntries() throws -> [Corpus.Entry] {
        guard Corpus.root != nil else {
            print("CorpusArchiveTests: ../shared/corpus is absent; skipping")
            throw XCTSkip("corpus absent")
        }
        let entries = Corpus.entries(in: "keyed")
        XCTAssertGreaterThan(entries.count, 90)
        return entries
    }

    func testEveryCorpusArchiveDecodesAndReArchivesToTheSameGraph() throws {
        for entry in try keyedEntries() {
            let data = entry.data
            do {
                let unarchiver = try KeyedUnarchiver(data: data)
                var original: [String: Any?] = [:]
                for key in unarchiver.topLevelKeys {
                    original[key] = try unarchiver.decodeTopLevelObject(of: Self.everything, forKey: key)
                }
                // Re-archive every top-level value under its key.
                let archiver = KeyedArchiver()
                for key in unarchiver.topLevelKeys { try archiver.encode(original[key] ?? nil, forKey: key) }
                let rearchived = try archiver.finishEncoding()

                // The resolved trees (a plain description of the graph) must be equal.
                let before = try ArchiveResolver(data: data).resolveTopLevel()
                let after = try ArchiveResolver(data: rearchived).resolveTopLevel()
                // NSSet members have no order; they resolve to arrays, compared as multisets
                // when the archive holds sets (and strictly otherwise).
                if try Self.containsSet(data) {
                    XCTAssertEqual(Self.unordered(before), Self.unordered(after), "\(entry.path): re-archived graph differs")
                } else {
                    XCTAssertEqual(before, after, "\(entry.path): re-archived graph differs")
                }

                // And the re-archive decodes again.
                let again = try KeyedUnarchiver(data: rearchived)
                XCTAssertEqual(Set(again.topLevelKeys), Set(unarchiver.topLevelKeys), entry.path)
                for key in again.topLevelKeys {
                    _ = try again.decodeTopLevelObject(of: Self.everything, forKey: key)
                }
            } catch {
                XCTFail("\(entry.path): \(error)")
            }
        }
    }

    /// True when some class description in the archive names an NSSet class.
    static func containsSet(_ data: Data) throws -> Bool {
        let plist = try PropertyList.decode(data)
        for object in plist["$objects"]?.arrayValue ?? [] {
            for name in object["$classes"]?.arrayValue ?? [] where name.stringValue?.hasSuffix("Set") == true {
                return true
            }
        }
        return false
    }

    /// Arrays as sets (multiset equality is close enough for these small corpora).
    static func unordered(_ value: PropertyListValue) -> PropertyListValue {
        switch value {
        case .array(let items), .set(let items): return .set(items.map(unordered))
        case .dictionary(let dictionary):
            return .dictionary(PropertyListDictionary(dictionary.entries.map { ($0.key, unordered($0.value)) }))
        default: return value
        }
    }

    func testArchiveRejectFilesAreRejectedWithTypedErrors() throws {
        _ = try keyedEntries()
        let rejects = Corpus.entries.filter { $0.expect == "ARCHIVE-REJECT" }
        XCTAssertEqual(rejects.count, 15)
        for entry in rejects {
            do {
                _ = try KeyedUnarchiver.unarchivedObject(ofClasses: Self.everything, from: entry.data)
                XCTFail("\(entry.path) was accepted")
            } catch let error as KeyedArchiveError {
                XCTAssertNotEqual(error.code, .propertyList, "\(entry.path): \(error)")
            } catch {
                XCTFail("\(entry.path): untyped error \(error)")
            }
        }
    }
}
