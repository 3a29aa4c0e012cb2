import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The binary files of the shared corpus against their expectations, byte identity of Apple-made
/// files read and written back, and truncated / bit-flipped variants.
final class BinaryCorpusTests: XCTestCase {
    /// Every binary file of the corpus (starts with `bplist`), and the malformed `.bin` files.
    static func binaryEntries() -> [Corpus.Entry] {
        Corpus.entries.filter { entry in
            guard entry.path.hasPrefix("bplist/") || entry.path.hasPrefix("keyed/") || entry.path.hasPrefix("malformed/") else { return false }
            return entry.path.hasSuffix(".bplist") || (entry.path.hasPrefix("malformed/") && entry.path.hasSuffix(".bin"))
        }
    }

    /// Files whose corpus expectation we knowingly do not follow, with the reason.
    static let knownExceptions: [String: String] = [
        // A 5-byte UID of 2^40-1, written by go-plist. CoreFoundation rejects UIDs above
        // 2^32-1 (and our value model holds UInt32), so we reject it too.
        "bplist/goplist-enc-CF_Keyed_Archiver_UIDs_interface.bplist": "MAY-PARSE",
    ]

    func testExpectations() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        let entries = Self.binaryEntries()
        XCTAssertGreaterThan(entries.count, 200)
        var parsed = 0, rejected = 0
        for entry in entries {
            let data = entry.data
            // .bin files in malformed/ may be XML or garbage: only judge those that look binary.
            if entry.path.hasSuffix(".bin"), !data.starts(with: Array("bplist".utf8)) { continue }
            let result = Result { try BinaryPropertyListReader.read(data) }
            if case .failure(let error) = result {
                XCTAssertTrue(error is PropertyListError, "\(entry.path): threw a non-PropertyListError \(error)")
            }
            switch Self.knownExceptions[entry.path] ?? entry.expect {
            case "MUST-PARSE":
                if case .failure(let error) = result { XCTFail("\(entry.path) must parse: \(error)") }
            case "MUST-REJECT":
                if case .success = result { XCTFail("\(entry.path) must be rejected") }
            default:
                break  // MAY-PARSE, MUST-NOT-CRASH, ARCHIVE-REJECT: returning or throwing are both fine.
            }
            if case .success = result { parsed += 1 } else { rejected += 1 }
        }
        print("binary corpus: \(parsed) parsed, \(rejected) rejected of \(entries.count)")
    }

    /// Producers whose files came from Apple's writer (the Producer column of MANIFEST.md).
    static func appleMadePaths() -> Set<String> {
        guard let root = Corpus.root, let manifest = try? String(contentsOfFile: root + "/MANIFEST.md", encoding: .utf8) else { return [] }
        var folder = ""
        var paths = Set<String>()
        let appleWords = ["Apple", "CFBinaryPList", "Cocoa", "Xcode", "macOS", "iOS", "Foundation"]
        for line in manifest.split(separator: "\n") {
            if line.hasPrefix("## ") {
                folder = line.dropFirst(3).split(separator: "/").first.map(String.init) ?? ""
                continue
            }
            guard line.hasPrefix("| `") else { continue }
            let columns = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard columns.count > 6 else { continue }
            let name = columns[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            guard name.hasSuffix(".bplist"), appleWords.contains(where: { columns[6].contains($0) }) else { continue }
            paths.insert(folder + "/" + name)
        }
        return paths
    }

    /// Apple-made files read and written back unchanged come out byte-identical (most of them:
    /// the share is printed; files from Apple's non-CF encoders differ in offset widths).
    func testAppleFilesRoundTripByteIdentical() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        let apple = Self.appleMadePaths()
        XCTAssertGreaterThan(apple.count, 50)
        var identical = 0, total = 0
        var mismatches: [String] = []
        for entry in Self.binaryEntries() where apple.contains(entry.path) {
            let data = entry.data
            guard let value = try? BinaryPropertyListReader.read(data) else { continue }
            total += 1
            let written = try BinaryPropertyListWriter.write(value)
            if written == Array(data) {
                identical += 1
            } else {
                mismatches.append(entry.path)
                if let dir = ProcessInfo.processInfo.environment["KA_MISMATCH_DIR"] {
                    try Data(written).write(to: URL(fileURLWithPath: dir + "/" + (entry.path as NSString).lastPathComponent))
                }
            }
            // Whatever the bytes, the value must survive.
            XCTAssertEqual(try BinaryPropertyListReader.read(written), value, entry.path)
        }
        print("Apple-made binary files byte-identical after read+write: \(identical)/\(total)")
        for path in mismatches { print("  differs: \(path)") }
        XCTAssertGreaterThanOrEqual(identical, 56, "fewer Apple-made files come out byte-identical than before")
    }
}
