import KeyedArchive

/// The shared compatibility corpus in `../shared/corpus`, relative to the repository root.
public enum Corpus {
    /// What a reader should do with a corpus file (the `expect` column of `expectations.tsv`).
    public struct Entry: Sendable {
        /// The path relative to the corpus folder, e.g. `bplist/cpython-TESTDATA-FMT_BINARY.bplist`.
        public var path: String
        /// The expectation, e.g. `MUST-PARSE`, `MUST-REJECT`, `MAY-PARSE`, `ARCHIVE-REJECT`.
        public var expect: String
        /// The plistlib result column (`ok` or an exception).
        public var plistlib: String
        /// The file's bytes.
        public var data: Data { (try? Data(contentsOf: URL(fileURLWithPath: Corpus.root! + "/" + path))) ?? Data() }
    }

    /// The repository root, derived from this file's location.
    public static let repositoryRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }  // TestSupport, Tests, repo
        return url.path
    }()

    /// The corpus folder, or `nil` when it is absent (tests then skip with a visible message).
    public static let root: String? = {
        let path = URL(fileURLWithPath: repositoryRoot).deletingLastPathComponent()
            .appendingPathComponent("shared/corpus").path
        return FileManager.default.fileExists(atPath: path + "/expectations.tsv") ? path : nil
    }()

    /// Every row of `expectations.tsv`.
    public static let entries: [Entry] = {
        guard let root, let text = try? String(contentsOfFile: root + "/expectations.tsv", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            if line.hasPrefix("#") { return nil }
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard columns.count >= 5 else { return nil }
            return Entry(path: columns[0], expect: columns[1], plistlib: columns[4])
        }
    }()

    /// The entries in one folder (`bplist`, `xml`, `keyed`, `malformed`).
    public static func entries(in folder: String) -> [Entry] {
        entries.filter { $0.path.hasPrefix(folder + "/") }
    }
}
