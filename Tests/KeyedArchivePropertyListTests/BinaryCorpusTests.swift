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

    /// Bit-flipped copies of the binary corpus files under 200,000 bytes that `include` accepts,
    /// `perFile` each, named "path flip n"; the same copies for the same seed.
    static func damagedEntries(seed: UInt64, perFile: Int, where include: (Data) -> Bool = { _ in true }) -> [(name: String, data: Data)] {
        var generator = SeededGenerator(seed: seed)
        var damaged: [(name: String, data: Data)] = []
        for entry in binaryEntries() {
            let original = Array(entry.data)
            guard original.count > 8, original.count < 200_000, include(entry.data) else { continue }
            for attempt in 0..<perFile {
                damaged.append(("\(entry.path) flip \(attempt)", Data(generator.flippingBits(in: original))))
            }
        }
        return damaged
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

    /// Why a value-based writer cannot reproduce `bytes`, or `nil` when it can: equal strings,
    /// numbers, dates or data stored more than once, widths CFBinaryPList would not choose, or
    /// more objects than the references reach.
    static func unreproducibleReason(_ bytes: [UInt8]) -> String? {
        guard bytes.count >= 42 else { return "too short" }
        func read(_ at: Int, _ width: Int) -> Int { (0..<width).reduce(0) { $0 << 8 | Int(bytes[at + $1]) } }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6]), refSize = Int(bytes[trailer + 7])
        let count = read(trailer + 8, 8), top = read(trailer + 16, 8), table = read(trailer + 24, 8)
        func minimal(_ value: Int) -> Int { value <= 0xFF ? 1 : value <= 0xFFFF ? 2 : value <= 0xFFFF_FFFF ? 4 : 8 }
        if refSize != minimal(count) || offsetSize != minimal(table) || top != 0 { return "non-CF widths or top object" }
        let offsets = (0..<count).map { read(table + $0 * offsetSize, offsetSize) }
        let sorted = Array(Set(offsets)).sorted() + [table]
        var seen = Set<[UInt8]>()
        var duplicates = 0
        for (index, start) in sorted.dropLast().enumerated() {
            let object = Array(bytes[start..<sorted[index + 1]])
            guard let marker = object.first, (0x1...0x6).contains(marker >> 4) else { continue }
            if !seen.insert(object).inserted { duplicates += 1 }
        }
        if duplicates > 0 { return "\(duplicates) equal scalars stored again (identity-based uniquing)" }
        guard let value = try? BinaryPropertyListReader.read(bytes), let ours = try? BinaryPropertyListWriter.write(value) else { return "unreadable" }
        let ourCount = ours[(ours.count - 24)..<(ours.count - 16)].reduce(0) { $0 << 8 | Int($1) }
        if ourCount < count { return "\(count - ourCount) objects no reference needs" }
        if ourCount == count && ours.count == bytes.count { return "same objects, other references or order (e.g. one UID object per use, not per value)" }
        return nil
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
                // A value-based writer can only differ where the file is not laid out by value:
                // equal scalars stored twice (Apple's writers merge by object identity),
                // non-minimal widths, or objects no reference reaches.
                let reason = Self.unreproducibleReason(Array(data))
                XCTAssertNotNil(reason, "\(entry.path): differs although its layout is reproducible from its value")
                print("  differs: \(entry.path): \(reason ?? "?")")
                if let dir = ProcessInfo.processInfo.environment["KA_MISMATCH_DIR"] {
                    try Data(written).write(to: URL(fileURLWithPath: dir + "/" + (entry.path as NSString).lastPathComponent))
                }
            }
            // Whatever the bytes, the value must survive.
            XCTAssertEqual(try BinaryPropertyListReader.read(written), value, entry.path)
        }
        print("Apple-made binary files byte-identical after read+write: \(identical)/\(total)")
        XCTAssertGreaterThanOrEqual(identical, 56, "fewer Apple-made files come out byte-identical than before")
    }
}
