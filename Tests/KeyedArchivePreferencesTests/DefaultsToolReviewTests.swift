import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// What session 66's review of `karchive defaults` found: a domain whose file could not be read
/// was read and exported as `{}` with success, and an empty `--dir` put domains at the root of
/// the file system.
final class DefaultsToolReviewTests: PreferencesTestCase {
    /// The store takes a damaged domain file as an empty domain (with a warning), as Apple's
    /// preferences ignore one; the tool reported that empty domain as the domain's contents, so
    /// `export` wrote a "backup" of `{}` and exited 0. Now every read of it fails and nothing is
    /// written.
    func testAnUnreadableDomainIsNotReadOrExportedAsEmpty() throws {
        let damaged: [String: (String) throws -> Void] = [
            "array": { try Data("(\"x\")".utf8).write(to: URL(fileURLWithPath: $0)) },
            "garbage": { try Data("garbage{".utf8).write(to: URL(fileURLWithPath: $0)) },
            "folder": { try FileManager.default.createDirectory(atPath: $0, withIntermediateDirectories: false) },
            "pipe": { XCTAssertEqual(mkfifo($0, 0o600), 0) },
        ]
        try run(["write", "good", "k", "-int", "1"])
        for (domain, make) in damaged {
            try make(PreferencesDirectory.path(ofDomain: domain, in: directory))
            // Python's plistlib refuses the same file (a directory or a FIFO cannot be opened as one).
            let export = URL(fileURLWithPath: directory).appendingPathComponent("export-\(domain)")
            for arguments in [["read", domain], ["read", domain, "k"], ["read-type", domain, "k"], ["export", domain, export.path], ["export", domain, "-"]] {
                let (status, output, error) = try run(arguments)
                XCTAssertEqual(status, 1, "\(arguments): \(output)")
                XCTAssertEqual(output, "", "\(arguments)")
                XCTAssertTrue(error.contains("cannot be read"), "\(arguments): \(error)")
            }
            XCTAssertFalse(FileManager.default.fileExists(atPath: export.path), domain)
        }
        // Reading every domain fails too, rather than listing the damaged ones as empty.
        XCTAssertEqual(try run(["read"]).0, 1)
        // A readable domain reads and exports as before; a missing one is "does not exist".
        let (status, output, _) = try run(["export", "good", "-"])
        XCTAssertEqual(status, 0)
        let exported = try PropertyListSerialization.propertyList(from: Data(output.utf8), format: nil) as? [String: Any]
        XCTAssertEqual(exported?["k"] as? Int, 1)
        let missing = try run(["read", "absent"])
        XCTAssertEqual(missing.0, 1)
        XCTAssertTrue(missing.2.contains("does not exist"), missing.2)
        // plistlib agrees the damaged files are not property lists it can read.
        for domain in ["array", "garbage"] {
            let path = PreferencesDirectory.path(ofDomain: domain, in: directory)
            let verdict = try? Python.run("import plistlib,sys\ntry:\n d = plistlib.load(open(sys.argv[1],'rb'))\n print('dict' if isinstance(d, dict) else 'other')\nexcept Exception:\n print('refused')", arguments: [path])
            if let verdict { XCTAssertNotEqual(String(decoding: verdict, as: UTF8.self), "dict\n", domain) }
        }
    }

    /// A domain name of 239 to 249 bytes made a domain file the file system takes but a lock
    /// file (`.D.plist.lock`) or temporary file it does not: every write failed with "File name
    /// too long". Names are limited to what all of a domain's files allow.
    func testDomainNamesFitEveryFileOfTheDomain() throws {
        let longest = String(repeating: "d", count: PreferencesDirectory.maximumDomainNameLength)
        XCTAssertEqual(try run(["write", longest, "k", "v"]).0, 0)
        XCTAssertEqual(try foundationRead(longest)["k"] as? String, "v")
        // The longest of the domain's files, a damaged file's kept bytes, fits too.
        try Data("garbage{".utf8).write(to: URL(fileURLWithPath: PreferencesDirectory.path(ofDomain: longest, in: directory)))
        XCTAssertEqual(try run(["write", longest, "k", "w"]).0, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: PreferencesDirectory.path(ofDomain: longest, in: directory) + Preferences.unreadableSuffix))
        let tooLong = longest + "d"
        let (status, _, error) = try run(["write", tooLong, "k", "v"])
        XCTAssertEqual(status, 1)
        XCTAssertTrue(error.contains("domain name longer than"), error)
        XCTAssertThrowsError(try makeStore(tooLong))
    }

    /// `--dir ""` (a script's `--dir "$UNSET"`) wrote `/D.plist` and `/.D.plist.lock`; so did a
    /// store configured with an empty directory.
    func testAnEmptyDirectoryIsRefused() throws {
        for arguments in [["--dir", "", "write", "emptydirprobe", "k", "v"], ["--dir=", "read", "emptydirprobe"]] {
            let result = try ToolRunner.karchive(["defaults"] + arguments)
            XCTAssertEqual(result.status, 2, "\(arguments): \(result.standardError)")
            XCTAssertTrue(result.standardError.contains("--dir needs a directory"), result.standardError)
        }
        let demo = try ToolRunner.karchive(["demo", "--dir", ""])
        XCTAssertEqual(demo.status, 2, demo.standardError)
        XCTAssertThrowsError(try Preferences(domain: "emptydirprobe", configuration: .init(directory: "", argumentDomain: [:])))
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/emptydirprobe.plist"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/.emptydirprobe.plist.lock"))
    }
}
