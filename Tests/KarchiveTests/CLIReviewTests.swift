import Foundation
import KeyedArchiveTestSupport
import XCTest

/// What session 66's review of `karchive` as a shell user found (besides file modes and
/// owners, in ``KarchiveCLITests``, and the `defaults` domain checks in the preferences tests):
/// file names that are not UTF-8 opened or wrote another file; standard input read until the
/// process trapped; help written to a full disk exited 0; `-o` beat a later `--output`;
/// `unarchive --all --key` ignored the key; a trailing `-h` was an unknown option; and text from
/// input reached the terminal raw in `demo`, `defaults domains` and `print` (bidirectional
/// overrides).
final class CLIReviewTests: XCTestCase {
    private var scratch: URL!
    private let shell = URL(fileURLWithPath: "/bin/sh")

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("karchive-review-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Runs `script` in `sh` with `$0` the tool and `$1`... `arguments`, in the scratch folder.
    private func sh(_ script: String, _ arguments: [String] = []) throws -> ToolRunner.Result {
        try ToolRunner.run(shell, ["-c", "cd \"\(scratch.path)\" && " + script, ToolRunner.karchiveURL.path] + arguments)
    }

    private func plist(_ name: String, _ body: String = "<string>x</string>") throws -> URL {
        let url = scratch.appendingPathComponent(name)
        try Data("<plist version=\"1.0\">\(body)</plist>".utf8).write(to: url)
        return url
    }

    /// `CommandLine.arguments` replaces bytes that are not UTF-8 with U+FFFD: `-o out\xE9.plist`
    /// wrote `out\u{FFFD}.plist` (possibly someone else's file) and exited 0, and an input of
    /// such a name was "not found". Refused now, with nothing written.
    func testArgumentsThatAreNotUTF8AreRefused() throws {
        _ = try plist("in.xml")
        let write = try sh("exec \"$0\" convert -f binary in.xml -o \"$(printf 'out\\351.plist')\"")
        XCTAssertEqual(write.status, 2, write.standardError)
        XCTAssertTrue(write.standardError.contains("not valid UTF-8"), write.standardError)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: scratch.path), ["in.xml"])
        // The input of that name exists (made by the shell) and is not read as another file.
        let read = try sh("cp in.xml \"$(printf 'lat\\351.plist')\" && exec \"$0\" lint \"$(printf 'lat\\351.plist')\"")
        XCTAssertEqual(read.status, 2, read.standardError)
        XCTAssertTrue(read.standardError.contains("argument 2 is not valid UTF-8"), read.standardError)
        // UTF-8 names work as before.
        XCTAssertEqual(try sh("exec \"$0\" convert in.xml -o \"$(printf 'caf\\303\\251.plist')\"").status, 0)
        XCTAssertTrue(FileManager.default.fileExists(atPath: scratch.appendingPathComponent("café.plist").path))
    }

    /// Standard input was gathered in a `Data` that trapped when memory ran out ("Fatal
    /// error: unable to allocate memory", a crash report, exit 132); `lint FILE` already failed
    /// cleanly. Now exit 1 with the reason.
    func testStandardInputThatExhaustsMemoryFailsCleanly() throws {
        let result = try sh("ulimit -v 1500000 && exec \"$0\" convert - < /dev/zero")
        XCTAssertFalse(result.crashed, result.standardError)
        XCTAssertEqual(result.status, 1, result.standardError)
        XCTAssertTrue(result.standardError.contains("standard input: cannot read: Cannot allocate memory"), result.standardError)
        // Standard input that fits is read as before.
        let converted = try ToolRunner.karchive(["convert", "-f", "json", "-"], input: Data("<plist><string>in</string></plist>".utf8))
        XCTAssertEqual(converted.output.trimmingCharacters(in: .whitespacesAndNewlines), "\"in\"")
    }

    /// Help skipped the check of standard output that every command gets: `--help >/dev/full`
    /// exited 0.
    func testHelpThatCannotBeWrittenFails() throws {
        guard FileManager.default.fileExists(atPath: "/dev/full") else { throw XCTSkip("no /dev/full") }
        for arguments in ["--help", "convert --help", "defaults --help", "lint -h"] {
            let result = try sh("exec \"$0\" \(arguments) > /dev/full")
            XCTAssertEqual(result.status, 1, arguments)
            XCTAssertTrue(result.standardError.contains("cannot write to standard output"), result.standardError)
            XCTAssertEqual(try sh("exec \"$0\" \(arguments) > /dev/null").status, 0, arguments)
        }
    }

    /// `-o` won over `--output` whatever their order; the later of two spellings (or of a
    /// repeated option) wins now, as for `cp`-style tools. `unarchive --all --key K` ignored
    /// `K`; a trailing `-h` was an unknown option while a trailing `--help` showed help.
    func testOptionsTheLaterWinsAndConflictsAreRefused() throws {
        let input = try plist("in.xml")
        for (arguments, written) in [
            (["--output", "first", "-o", "second"], "second"), (["-o", "first", "--output", "second"], "second"),
            (["-o", "first", "-o", "second"], "second"), (["--output=first", "-o", "second", "--output", "third"], "third"),
        ] {
            let result = try ToolRunner.karchive(["convert", input.path] + arguments.map { $0.hasPrefix("-") ? $0 : scratch.appendingPathComponent($0).path })
            XCTAssertEqual(result.status, 0, result.standardError)
            let made = try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0 != "in.xml" }
            XCTAssertEqual(made, [written], "\(arguments)")
            for name in made { try FileManager.default.removeItem(at: scratch.appendingPathComponent(name)) }
        }
        let conflict = try ToolRunner.karchive(["unarchive", "--all", "--key", "root", input.path])
        XCTAssertEqual(conflict.status, 2)
        XCTAssertTrue(conflict.standardError.contains("--all and --key"), conflict.standardError)
        for trailing in ["-h", "--help"] {
            let help = try ToolRunner.karchive(["convert", input.path, trailing])
            XCTAssertEqual(help.status, 0, help.standardError)
            XCTAssertTrue(help.output.hasPrefix("usage: karchive convert"), help.output)
        }
        // `defaults write D K -h` still stores the text.
        let domains = scratch.appendingPathComponent("prefs").path
        XCTAssertEqual(try ToolRunner.karchive(["defaults", "--dir", domains, "write", "dom", "k", "-h"]).status, 0)
        XCTAssertEqual(try ToolRunner.karchive(["defaults", "--dir", domains, "read", "dom", "k"]).output, "-h\n")
    }

    /// The temporary file beside an output is named `.NAME.tmp-XXXXXX`, which for a name of
    /// more than 243 bytes was longer than a file name may be: `cp` wrote such outputs and
    /// `karchive` failed. The temporary name now takes at most 200 bytes of the name.
    func testOutputsWithLongNamesAreWritten() throws {
        _ = try plist("in.xml")
        for name in [String(repeating: "x", count: 249) + ".plist", String(repeating: "é", count: 124) + "x.plist"] {
            XCTAssertEqual(name.utf8.count, 255)
            // The peer: the shell's `cp` makes a file of that name.
            XCTAssertEqual(try sh("cp in.xml \"$1\" && rm \"$1\"", [name]).status, 0)
            let result = try ToolRunner.karchive(["convert", "-f", "binary", scratch.appendingPathComponent("in.xml").path, "-o", scratch.appendingPathComponent(name).path])
            XCTAssertEqual(result.status, 0, result.standardError)
            let written = try Data(contentsOf: scratch.appendingPathComponent(name))
            XCTAssertEqual(try PropertyListSerialization.propertyList(from: written, format: nil) as? String, "x")
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted(), ["in.xml", name].sorted())
            try FileManager.default.removeItem(at: scratch.appendingPathComponent(name))
        }
    }

    /// Text from input that reached the terminal raw: the demo's fields and paths, domain
    /// names in `defaults domains`, and bidirectional overrides (U+202E shows text in another
    /// order than it is stored) in `print`.
    func testTextFromInputIsEscapedWhereverItIsShown() throws {
        let escape = "\u{1B}[31mred"
        let demo = try ToolRunner.karchive(["demo", "--dir", scratch.appendingPathComponent("demo\u{1B}").path, "--name", escape])
        XCTAssertEqual(demo.status, 0, demo.standardError)
        XCTAssertFalse(demo.output.unicodeScalars.contains("\u{1B}"), demo.output)
        XCTAssertTrue(demo.output.contains("Name:      \\u{1B}[31mred"), demo.output)
        XCTAssertTrue(demo.output.contains("demo\\u{1B}/"), demo.output)

        let domains = scratch.appendingPathComponent("prefs")
        XCTAssertEqual(try ToolRunner.karchive(["defaults", "--dir", domains.path, "write", "evil\u{9B}2J", "k", "v"]).status, 0)
        let listed = try ToolRunner.karchive(["defaults", "--dir", domains.path, "domains"])
        XCTAssertEqual(listed.output, "evil\\u{9B}2J\n")

        let bidi = try plist("bidi.xml", "<dict><key>user\u{202E}gnp.exe</key><string>a\u{2066}b\u{2028}c</string></dict>")
        let printed = try ToolRunner.karchive(["print", bidi.path])
        XCTAssertEqual(printed.status, 0, printed.standardError)
        for scalar in ["\u{202E}", "\u{2066}", "\u{2028}"] as [Unicode.Scalar] {
            XCTAssertFalse(printed.output.unicodeScalars.contains(scalar), "U+\(String(scalar.value, radix: 16)) raw in \(printed.output)")
        }
        XCTAssertTrue(printed.output.contains("user\\u{202E}gnp.exe"), printed.output)
        XCTAssertTrue(printed.output.contains("a\\u{2066}b\\u{2028}c"), printed.output)
        // `defaults read D K` prints the stored text itself, as macOS `defaults` does (scripts
        // read values this way).
        XCTAssertEqual(try ToolRunner.karchive(["defaults", "--dir", domains.path, "read", "evil\u{9B}2J", "k"]).output, "v\n")
    }

    /// `print` cut dates to whole seconds (`06:15:58` for `06:15:58.684097`), which a timeline
    /// of events within one second needs; and with `root` in `$top` it printed the root alone,
    /// saying nothing of the other keys (session 66's forensic review). The dates here are
    /// written by Python's plistlib, whose reading of them is the expected text.
    func testPrintShowsFractionsOfSecondsAndNamesOtherTopKeys() throws {
        guard Python.executable != nil else { throw XCTSkip("python3 not found") }
        let script = """
            import plistlib, sys, datetime
            dates = [datetime.datetime(2017, 2, 23, 6, 15, 58, 684097), datetime.datetime(2001, 1, 1, 0, 0, 0, 250000),
                     datetime.datetime(1999, 12, 31, 23, 59, 59, 500000), datetime.datetime(2020, 5, 5, 5, 5, 5)]
            sys.stdout.buffer.write(plistlib.dumps(dates, fmt=plistlib.FMT_BINARY))
            """
        let dates = scratch.appendingPathComponent("dates.bplist")
        try Python.run(script).write(to: dates)
        let printed = try ToolRunner.karchive(["print", dates.path])
        XCTAssertEqual(printed.status, 0, printed.standardError)
        for expected in ["2017-02-23 06:15:58.684097 +0000", "2001-01-01 00:00:00.25 +0000", "1999-12-31 23:59:59.5 +0000", "2020-05-05 05:05:05 +0000"] {
            XCTAssertTrue(printed.output.contains(expected), "\(expected) in \(printed.output)")
        }

        let archiveScript = """
            import plistlib, sys
            archive = {"$archiver": "NSKeyedArchiver", "$version": 100000,
                       "$top": {"root": plistlib.UID(1), "extra": plistlib.UID(2), "more": plistlib.UID(2)},
                       "$objects": ["$null", "the root", "another"]}
            sys.stdout.buffer.write(plistlib.dumps(archive, fmt=plistlib.FMT_BINARY))
            """
        let archive = scratch.appendingPathComponent("top.bplist")
        try Python.run(archiveScript).write(to: archive)
        let root = try ToolRunner.karchive(["print", archive.path])
        XCTAssertEqual(root.status, 0, root.standardError)
        XCTAssertEqual(root.output, "\"the root\"\n")
        XCTAssertTrue(root.standardError.contains("$top also holds extra, more"), root.standardError)
        XCTAssertTrue(try ToolRunner.karchive(["unarchive", "--all", "-f", "json", archive.path]).output.contains("another"))
    }

    /// 600 messages referring to one 2 MB NSData (a 2.1 MB file) counted 1.2 GB of expanded
    /// bytes and `print` refused it, though it prints 24 bytes of each; `unarchive`, whose
    /// output would hold every copy, still refuses. Made with plistlib.
    func testPrintShowsSharedLargeDataThatUnarchiveRefuses() throws {
        guard Python.executable != nil else { throw XCTSkip("python3 not found") }
        let script = """
            import plistlib, sys
            objects = ["$null", {"$class": plistlib.UID(2), "NS.objects": [plistlib.UID(4 + i) for i in range(600)]},
                       {"$classname": "NSArray", "$classes": ["NSArray", "NSObject"]}, bytes(range(256)) * 8192]
            objects += [{"$class": plistlib.UID(604), "blob": plistlib.UID(3), "n": i} for i in range(600)]
            objects.append({"$classname": "Msg", "$classes": ["Msg", "NSObject"]})
            archive = {"$archiver": "NSKeyedArchiver", "$version": 100000, "$top": {"root": plistlib.UID(1)}, "$objects": objects}
            sys.stdout.buffer.write(plistlib.dumps(archive, fmt=plistlib.FMT_BINARY))
            """
        let archive = scratch.appendingPathComponent("shared.bplist")
        try Python.run(script).write(to: archive)
        let printed = try ToolRunner.karchive(["print", archive.path])
        XCTAssertEqual(printed.status, 0, printed.standardError)
        XCTAssertEqual(printed.output.components(separatedBy: "{length = 2097152, bytes = 0x000102030405060708090a0b0c0d0e0f1011121314151617...}").count - 1, 600)
        let unarchived = try ToolRunner.karchive(["unarchive", "-f", "binary", archive.path, "-o", scratch.appendingPathComponent("out.bplist").path])
        XCTAssertEqual(unarchived.status, 1)
        XCTAssertTrue(unarchived.standardError.contains("expanding shared references would produce more than"), unarchived.standardError)

        // Strings still count in full at every use, keys included: one NSDictionary whose 1,000
        // keys are one 2 MB string (a 2 MB file) is refused at once. With no byte limit at all
        // (the first form of this change) it took 227 s and 6 GB, every use of the key hashed
        // and renamed ("k (2)", "k (3)", ...).
        let keysScript = """
            import plistlib, sys
            objects = ["$null", {"$class": plistlib.UID(2), "NS.keys": [plistlib.UID(3)] * 1000, "NS.objects": [plistlib.UID(4)] * 1000},
                       {"$classname": "NSDictionary", "$classes": ["NSDictionary", "NSObject"]}, "k" * 2000000, 1]
            archive = {"$archiver": "NSKeyedArchiver", "$version": 100000, "$top": {"root": plistlib.UID(1)}, "$objects": objects}
            sys.stdout.buffer.write(plistlib.dumps(archive, fmt=plistlib.FMT_BINARY))
            """
        let keys = scratch.appendingPathComponent("keys.bplist")
        try Python.run(keysScript).write(to: keys)
        let refused = try ToolRunner.karchive(["print", keys.path])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.standardError.contains("expanding shared references would produce more than"), refused.standardError)
    }
}
