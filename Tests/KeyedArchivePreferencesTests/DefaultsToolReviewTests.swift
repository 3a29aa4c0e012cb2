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

    /// A domain name of 238 to 243 bytes made a domain file and a lock file the file system
    /// takes but a temporary file (`.D.plist.tmp-XXXXXX`, 19 bytes more) it does not: every
    /// write failed with "File name too long". The temporary name now takes at most 200 bytes
    /// of the name. Longer names (whose lock file cannot exist) still read, list and delete.
    func testLongDomainNamesAreWrittenAndRead() throws {
        let longest = String(repeating: "d", count: 255 - ".plist.lock".utf8.count - 1)
        XCTAssertEqual(try run(["write", longest, "k", "v"]).0, 0)
        XCTAssertEqual(try foundationRead(longest)["k"] as? String, "v")
        XCTAssertEqual(try run(["read", longest, "k"]).1, "v\n")
        // A domain file of 249 bytes (its name 255 with `.plist`), made by another program.
        let longer = String(repeating: "e", count: 249)
        try PropertyListSerialization.data(fromPropertyList: ["k": "w"], format: .binary, options: 0)
            .write(to: URL(fileURLWithPath: PreferencesDirectory.path(ofDomain: longer, in: directory)))
        XCTAssertEqual(try run(["read", longer, "k"]).1, "w\n")
        XCTAssertTrue(try run(["domains"]).1.contains(longer))
        XCTAssertEqual(try run(["read"]).0, 0)
        // Writing or deleting it (under its lock) fails with the system's reason, the lock
        // file's name being too long, as before session 66; the file is left as it was.
        for arguments in [["write", longer, "k", "x"], ["delete", longer]] {
            let (status, _, error) = try run(arguments)
            XCTAssertEqual(status, 1, "\(arguments)")
            XCTAssertTrue(error.contains("File name too long"), error)
        }
        XCTAssertEqual(try run(["read", longer, "k"]).1, "w\n")
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
