import Foundation
import KeyedArchiveTestSupport
import XCTest

/// The command-line tool, run as a child process the way users run it.
final class KarchiveCLITests: XCTestCase {
    private var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("karchive-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: scratch)
    }

    func testHelpAndUsageErrors() throws {
        let help = try ToolRunner.karchive(["--help"])
        XCTAssertEqual(help.status, 0)
        for command in ["convert", "lint", "print", "archive", "unarchive", "defaults", "demo"] {
            XCTAssertTrue(help.output.contains(command), "tool help lists \(command)")
            let commandHelp = try ToolRunner.karchive([command, "--help"])
            XCTAssertEqual(commandHelp.status, 0, command)
            XCTAssertTrue(commandHelp.output.hasPrefix("usage: karchive \(command)"), command)
        }
        for arguments in [[], ["frobnicate"], ["convert"], ["convert", "--format", "yaml", "x"], ["convert", "--bogus", "x"], ["lint"]] {
            let result = try ToolRunner.karchive(arguments)
            XCTAssertEqual(result.status, 2, "\(arguments)")
            XCTAssertFalse(result.crashed)
            if !arguments.isEmpty {
                XCTAssertEqual(result.standardError.split(separator: "\n").count, 1, "one-line message for \(arguments): \(result.standardError)")
            }
        }
    }

    func testConvertRoundTripsThroughEveryFormatAndStdin() throws {
        let value: PropertyListValue = ["Name": "Ada", "Age": 36, "Ratio": 0.25, "On": true, "List": ["a", "é", 3]]
        let input = scratch.appendingPathComponent("in.plist")
        try PropertyList.encode(value, format: .xml).write(to: input)
        for format in ["binary", "xml"] {
            let output = scratch.appendingPathComponent("out.\(format)")
            let result = try ToolRunner.karchive(["convert", "--format", format, input.path, "-o", output.path])
            XCTAssertEqual(result.status, 0, result.standardError)
            let written = try Data(contentsOf: output)
            XCTAssertEqual(PropertyList.detectFormat(written), format == "xml" ? .xml : .binary)
            XCTAssertEqual(try PropertyList.decode(written), value)
            // Standard input to standard output.
            let piped = try ToolRunner.karchive(["convert", "-f", format, "-"], input: written)
            XCTAssertEqual(piped.status, 0, piped.standardError)
            XCTAssertEqual(try PropertyList.decode(piped.standardOutput), value)
        }
    }

    func testConvertToXMLThatFailsPartWayLeavesTheOldFile() throws {
        // Large enough that the streamed XML reaches the disk in several chunks before the set
        // at the end (which XML cannot hold) stops it.
        var members: [PropertyListValue] = (0..<150_000).map { PropertyListValue("member \($0)") }
        members.append(.set([1]))
        let input = scratch.appendingPathComponent("fails-late.bplist")
        try PropertyList.encode(.array(members), format: .binary).write(to: input)
        let output = scratch.appendingPathComponent("kept.xml")
        try Data("old contents".utf8).write(to: output)
        let result = try ToolRunner.karchive(["convert", "--format", "xml", input.path, "-o", output.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.standardError.contains(input.path), result.standardError)
        XCTAssertTrue(result.standardError.contains("sets have no XML form"), result.standardError)
        XCTAssertEqual(try Data(contentsOf: output), Data("old contents".utf8))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0.contains(".tmp-") }
        XCTAssertEqual(leftovers, [], "temporary files must be removed")
        // Without the set, the same file converts, byte for byte as reading and writing does.
        members.removeLast()
        try PropertyList.encode(.array(members), format: .binary).write(to: input)
        let good = try ToolRunner.karchive(["convert", "--format", "xml", input.path, "-o", output.path])
        XCTAssertEqual(good.status, 0, good.standardError)
        XCTAssertEqual(try Data(contentsOf: output), try PropertyList.encode(.array(members), format: .xml))
    }

    /// New outputs were always 0644 (`fchmod` after `mkstemp`), so a private plist converted
    /// under `umask 077` became world-readable; a file root replaced became root's (a user's
    /// preferences domain written by `sudo karchive defaults` locked its owner out). New files
    /// now get the mode a shell's `>` gives under the same umask; replaced ones keep owner,
    /// group and mode.
    func testOutputsFollowTheUmaskAndKeepTheOwnerOfWhatTheyReplace() throws {
        let input = scratch.appendingPathComponent("in.xml")
        try Data("<plist><dict><key>k</key><string>v</string></dict></plist>".utf8).write(to: input)
        let shell = URL(fileURLWithPath: "/bin/sh")
        func mode(_ url: URL) throws -> Int {
            try XCTUnwrap((try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)?.intValue)
        }
        for umask in ["077", "027", "002"] {
            let output = scratch.appendingPathComponent("out-\(umask).plist")
            let peer = scratch.appendingPathComponent("peer-\(umask)")
            let result = try ToolRunner.run(shell, [
                "-c", "umask \(umask) && : > \"$3\" && exec \"$0\" convert -f binary \"$1\" -o \"$2\"",
                ToolRunner.karchiveURL.path, input.path, output.path, peer.path,
            ])
            XCTAssertEqual(result.status, 0, result.standardError)
            XCTAssertEqual(try mode(output), try mode(peer), "umask \(umask)")
        }
        // A replaced file keeps its mode (set-group-ID too) whatever the umask.
        let existing = scratch.appendingPathComponent("out-077.plist")
        XCTAssertEqual(chmod(existing.path, 0o2640), 0)
        let again = try ToolRunner.run(shell, ["-c", "umask 077 && exec \"$0\" convert -f xml \"$1\" -o \"$2\"", ToolRunner.karchiveURL.path, input.path, existing.path])
        XCTAssertEqual(again.status, 0, again.standardError)
        XCTAssertEqual(try mode(existing), 0o2640)
        XCTAssertTrue(try String(contentsOf: existing, encoding: .utf8).contains("<string>v</string>"))

        // Owner and group: only root can hand a file to another user, so this part needs root
        // (CI runs as root); the mode checks above run for everyone.
        guard geteuid() == 0 else { return }
        let nobody: uid_t = 65534
        XCTAssertEqual(chown(existing.path, nobody, nobody), 0)
        let converted = try ToolRunner.karchive(["convert", "-f", "binary", input.path, "-o", existing.path])
        XCTAssertEqual(converted.status, 0, converted.standardError)
        var info = stat()
        XCTAssertEqual(stat(existing.path, &info), 0)
        XCTAssertEqual(info.st_uid, nobody)
        XCTAssertEqual(info.st_gid, nobody)
        XCTAssertEqual(info.st_mode & 0o7777, 0o2640)

        let domains = scratch.appendingPathComponent("prefs")
        XCTAssertEqual(try ToolRunner.karchive(["defaults", "--dir", domains.path, "write", "dom", "a", "1"]).status, 0)
        let domain = domains.appendingPathComponent("dom.plist")
        XCTAssertEqual(chown(domain.path, nobody, nobody), 0)
        XCTAssertEqual(try ToolRunner.karchive(["defaults", "--dir", domains.path, "write", "dom", "b", "2"]).status, 0)
        XCTAssertEqual(stat(domain.path, &info), 0)
        XCTAssertEqual(info.st_uid, nobody)
        XCTAssertEqual(info.st_mode & 0o777, 0o600)
    }

    func testConvertToJSONIsReadableByPython() throws {
        guard Python.executable != nil else {
            print("python3 not found: skipping the JSON check of karchive convert")
            return
        }
        let value: PropertyListValue = ["Name": "Ada", "Blob": .data(Data([1, 2, 3])), "Nested": ["x": [1, 2]]]
        let result = try ToolRunner.karchive(["convert", "--format", "json", "-"], input: try PropertyList.encode(value))
        XCTAssertEqual(result.status, 0, result.standardError)
        let echoed = try Python.run("import json,sys; d=json.load(sys.stdin); print(d['Name'], d['Blob'], d['Nested']['x'])", input: result.standardOutput)
        XCTAssertEqual(String(decoding: echoed, as: UTF8.self), "Ada AQID [1, 2]\n")
    }

    func testLintReportsEachBadFileOnOneLine() throws {
        let good = scratch.appendingPathComponent("good.plist")
        try PropertyList.encode(["a": 1], format: .binary).write(to: good)
        let truncated = scratch.appendingPathComponent("truncated.plist")
        try Data(try PropertyList.encode(["a": [1, 2, 3]], format: .binary).dropLast(5)).write(to: truncated)
        let missing = scratch.appendingPathComponent("missing.plist")

        XCTAssertEqual(try ToolRunner.karchive(["lint", good.path]).status, 0)
        let result = try ToolRunner.karchive(["lint", good.path, truncated.path, missing.path])
        XCTAssertEqual(result.status, 1)
        let lines = result.standardError.split(separator: "\n")
        XCTAssertEqual(lines.count, 2, result.standardError)
        XCTAssertTrue(lines[0].hasPrefix(truncated.path + ": "), String(lines[0]))
        XCTAssertTrue(lines[1].hasPrefix(missing.path + ": "), String(lines[1]))
        XCTAssertTrue(result.output.contains(good.path + ": OK"))
    }

    func testPrintShowsAnIndentedTree() throws {
        let value: PropertyListValue = ["b": [1, "two"], "a": .data(Data([0xde, 0xad]))]
        let result = try ToolRunner.karchive(["print", "-"], input: try PropertyList.encode(value))
        XCTAssertEqual(result.status, 0, result.standardError)
        let lines = result.output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.first, "{")
        XCTAssertTrue(lines.contains("  \"b\" => ["))
        XCTAssertTrue(lines.contains("    0 => 1"))
        XCTAssertTrue(lines.contains("    1 => \"two\""))
        XCTAssertTrue(lines.contains("  \"a\" => {length = 2, bytes = 0xdead}"))
    }

    /// `print` writes every control character from input escaped, as a Swift string literal
    /// would (`\n`, `\r`, `\t`, else `\u{1B}`), and `\"` and `\\` as before: a crafted file
    /// cannot send the terminal escape sequences or rewrite lines. Which characters are
    /// controls is taken from the standard library's Unicode data (general category Cc), not
    /// from the tool's own ranges.
    func testPrintEscapesEveryControlCharacter() throws {
        let scalars = (0...0x2FF).compactMap(Unicode.Scalar.init(_:))
        let value = PropertyListValue.array(scalars.map { .string(PropertyListString(String(Character($0)) + "x")) })
        let result = try ToolRunner.karchive(["print", "-"], input: try PropertyList.encode(value))
        XCTAssertEqual(result.status, 0, result.standardError)
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false)
        XCTAssertEqual(lines.count, scalars.count + 3, "one line per string, no more")
        for (index, scalar) in scalars.enumerated() where index + 1 < lines.count {
            let expected: String
            switch scalar {
            case "\n": expected = "\\n"
            case "\r": expected = "\\r"
            case "\t": expected = "\\t"
            case "\"": expected = "\\\""
            case "\\": expected = "\\\\"
            default:
                expected = scalar.properties.generalCategory == .control
                    ? "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}" : String(Character(scalar))
            }
            XCTAssertEqual(String(lines[index + 1]), "  \(index) => \"\(expected)x\"", "U+\(String(scalar.value, radix: 16))")
        }
        let controls = result.output.unicodeScalars.filter { $0.properties.generalCategory == .control && $0 != "\n" }
        XCTAssertTrue(controls.isEmpty, "control characters written raw: \(controls.map(\.value))")
    }

    /// Error messages quote key paths and values from input: their control characters are
    /// escaped the same way, on standard error, and file names in lint's report too.
    func testErrorMessagesEscapeControlCharactersFromInput() throws {
        let broken = Data("<plist><dict><key>k\u{1B}[31m\u{9B}2J</key><integer>z\u{7}z</integer></dict></plist>".utf8)
        let result = try ToolRunner.karchive(["print", "-"], input: broken)
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.standardError.contains("at k\\u{1B}[31m\\u{9B}2J:"), result.standardError)
        XCTAssertTrue(result.standardError.contains("z\\u{7}z"), result.standardError)
        let good = scratch.appendingPathComponent("name\u{1B}]0;title\u{7}.plist")
        try PropertyList.encode(["a": 1], format: .xml).write(to: good)
        let lint = try ToolRunner.karchive(["lint", good.path, "-"], input: broken)
        XCTAssertEqual(lint.status, 1)
        XCTAssertTrue(lint.output.contains("name\\u{1B}]0;title\\u{7}.plist: OK"), lint.output)
        for output in [result.standardError, lint.output, lint.standardError] {
            let controls = output.unicodeScalars.filter { $0.properties.generalCategory == .control && $0 != "\n" }
            XCTAssertTrue(controls.isEmpty, "control characters written raw: \(controls.map(\.value))")
        }
    }

    /// A strings file in UTF-16 with a byte-order mark (the classic encoding) is read as
    /// OpenStep text, not refused as XML.
    func testPrintReadsAUTF16StringsFile() throws {
        let text = "/* greeting */\n\"greeting\" = \"Hello\";\n"
        for (mark, bigEndian) in [([UInt8]([0xFF, 0xFE]), false), ([0xFE, 0xFF], true)] {
            let bytes = mark + text.utf16.flatMap { bigEndian ? [UInt8($0 >> 8), UInt8($0 & 0xFF)] : [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
            let result = try ToolRunner.karchive(["print", "-"], input: Data(bytes))
            XCTAssertEqual(result.status, 0, result.standardError)
            XCTAssertEqual(result.output, "{\n  \"greeting\" => \"Hello\"\n}\n")
        }
    }

    func testArchiveThenUnarchiveGivesBackThePropertyList() throws {
        let value: PropertyListValue = [
            "name": "Ada", "age": 36, "ratio": 0.25, "flags": [true, false], "blob": .data(Data([9, 8, 7])),
            "when": .date(Date(timeIntervalSinceReferenceDate: 1_000)), "nested": ["list": ["x", "y", "x"]],
        ]
        let input = scratch.appendingPathComponent("plain.plist")
        try PropertyList.encode(value, format: .xml).write(to: input)
        let archived = try ToolRunner.karchive(["archive", input.path])
        XCTAssertEqual(archived.status, 0, archived.standardError)
        // The archive is an NSKeyedArchiver archive that Foundation reads back to the same value.
        let foundationRoot = try NSKeyedUnarchiver.unarchiveTopLevelObjectWithData(archived.standardOutput)
        XCTAssertEqual(try FoundationBridge.value(foundationRoot as Any), value)
        for format in ["xml", "binary", "json"] {
            let resolved = try ToolRunner.karchive(["unarchive", "--format", format, "-"], input: archived.standardOutput)
            XCTAssertEqual(resolved.status, 0, resolved.standardError)
            if format != "json" {
                XCTAssertEqual(try PropertyList.decode(resolved.standardOutput), value, format)
            }
        }
    }

    func testUnarchiveReadsFoundationArchives() throws {
        let shared = NSMutableArray(array: ["s", 1])
        let root: NSDictionary = ["a": shared, "b": shared, "u": NSURL(string: "https://example.com/x")!, "n": NSNull()]
        let archive = try NSKeyedArchiver.archivedData(withRootObject: root, requiringSecureCoding: false)
        let result = try ToolRunner.karchive(["unarchive", "-"], input: archive)
        XCTAssertEqual(result.status, 0, result.standardError)
        let expected: PropertyListValue = ["a": ["s", 1], "b": ["s", 1], "u": "https://example.com/x", "n": "$null"]
        XCTAssertEqual(try PropertyList.decode(result.standardOutput), expected)
    }

    func testPrintResolvesArchivesAndShowsCyclesAndClasses() throws {
        guard let root = Corpus.root else {
            print("../shared/corpus not found: skipping the archive print check")
            return
        }
        let path = root + "/keyed/bpylist2-circular_archive.bplist"
        let resolved = try ToolRunner.karchive(["print", path])
        XCTAssertEqual(resolved.status, 0, resolved.standardError)
        XCTAssertTrue(resolved.output.contains("\"$ref\" => 1"), resolved.output)
        XCTAssertTrue(resolved.output.contains("\"$class\" => \"crap.Foo\""), resolved.output)
        let raw = try ToolRunner.karchive(["print", "--raw", path])
        XCTAssertEqual(raw.status, 0)
        XCTAssertTrue(raw.output.contains("\"$objects\" => ["), raw.output)
        XCTAssertTrue(raw.output.contains("UID(1)"), raw.output)
    }

    func testArchiveRejectCorpusFilesFailCleanlyInUnarchiveAndPrint() throws {
        guard let root = Corpus.root else {
            print("../shared/corpus not found: skipping the ARCHIVE-REJECT CLI check")
            return
        }
        let rejects = Corpus.entries.filter { $0.expect == "ARCHIVE-REJECT" }
        XCTAssertGreaterThan(rejects.count, 10)
        for entry in rejects {
            let path = root + "/" + entry.path
            let run = try ToolRunner.karchive(["unarchive", path])
            XCTAssertFalse(run.crashed, entry.path)
            XCTAssertEqual(run.status, 1, "unarchive \(entry.path): \(run.output)")
            XCTAssertEqual(run.standardError.split(separator: "\n").count, 1, "\(entry.path): \(run.standardError)")
            // print is an inspection tool: a valid plist that is not a complete archive prints as
            // a plain property list; a broken archive fails with one line.
            let printed = try ToolRunner.karchive(["print", path])
            XCTAssertFalse(printed.crashed, entry.path)
            XCTAssertTrue(printed.status == 0 || printed.standardError.split(separator: "\n").count == 1, entry.path)
        }
        // Other top-level keys are reachable on request, as real archives need.
        let primitives = root + "/keyed/goios-primitives.bplist"
        XCTAssertEqual(try ToolRunner.karchive(["unarchive", primitives]).status, 1)
        let all = try ToolRunner.karchive(["unarchive", "--all", primitives])
        XCTAssertEqual(all.status, 0, all.standardError)
        XCTAssertEqual(try PropertyList.decode(all.standardOutput)["$11"], 42)
        let one = try ToolRunner.karchive(["unarchive", "--key", "$6", primitives])
        XCTAssertEqual(try PropertyList.decode(one.standardOutput), "Hello, World!")
    }

    /// A few kilobytes whose shared arrays expand to hundreds of megabytes of text stop with a
    /// one-line error instead of filling memory and disk (the output budget is 64 MiB or 16x
    /// the input).
    func testSharedReferencesCannotBlowUpTextOutput() throws {
        guard Python.executable != nil else {
            print("python3 not found: skipping the output-budget check (plistlib builds the shared-array file)")
            return
        }
        // plistlib writes a container referenced twice once, so this file is small.
        let script = """
            import plistlib, sys
            inner = list(range(1000))
            value = [inner] * 1000
            for _ in range(300):
                value = [value]
            sys.stdout.buffer.write(plistlib.dumps(value, fmt=plistlib.FMT_BINARY))
            """
        let bomb = try Python.run(script)
        XCTAssertLessThan(bomb.count, 16_000)
        let path = scratch.appendingPathComponent("shared.bplist")
        try bomb.write(to: path)
        // (Each writer's own budget check is tested in-process in LimitsTests; here the tool's
        // wiring, on two commands, since each run writes 64 MiB before it stops.)
        for command in [["convert", "-f", "json"], ["print"]] {
            let result = try ToolRunner.karchive(command + [path.path])
            XCTAssertFalse(result.crashed)
            XCTAssertEqual(result.status, 1, "\(command)")
            XCTAssertTrue(result.standardError.contains("output would be longer than"), "\(command): \(result.standardError)")
            XCTAssertEqual(result.standardError.split(separator: "\n").count, 1)
            XCTAssertLessThanOrEqual(result.standardOutput.count, 0, "nothing half-written to standard output")
        }
        // Binary output writes every copy's references but no indentation: it stays small enough.
        let binary = try ToolRunner.karchive(["convert", "-f", "binary", path.path])
        XCTAssertEqual(binary.status, 0, binary.standardError)
    }

    /// Binary output stores every use of a shared container again, so a file of arrays that
    /// share arrays stops at the same budget as text output (it wrote 218 MB, from 139 bytes,
    /// until session 62), without leaving an output file.
    /// A binary property list of `count` arrays, each holding the next one twice, then an
    /// empty one: 2^count - 1 arrays once written out, though the reader keeps `count + 1`.
    private func doublingArrays(_ count: UInt8) throws -> URL {
        var objects: [[UInt8]] = (1...count).map { [0xA2, $0, $0] }
        objects.append([0xA0])
        var bomb = Array("bplist00".utf8)
        var offsets: [UInt8] = []
        for object in objects {
            offsets.append(UInt8(bomb.count))
            bomb += object
        }
        let tableOffset = UInt8(bomb.count)
        bomb += offsets + [0, 0, 0, 0, 0, 0, 1, 1]
        for field in [UInt8(objects.count), 0, tableOffset] { bomb += [0, 0, 0, 0, 0, 0, 0, field] }
        let input = scratch.appendingPathComponent("arrays-\(count).bplist")
        try Data(bomb).write(to: input)
        return input
    }

    func testSharedContainersCannotBlowUpBinaryOutput() throws {
        // 16,777,215 arrays written (about 151 MB).
        let input = try doublingArrays(23)
        let output = scratch.appendingPathComponent("out.bplist")
        let result = try ToolRunner.karchive(["convert", "-f", "binary", input.path, "-o", output.path])
        XCTAssertFalse(result.crashed)
        XCTAssertEqual(result.status, 1, result.standardError)
        XCTAssertTrue(result.standardError.contains("output would be longer than 67108864 bytes"), result.standardError)
        XCTAssertEqual(result.standardError.split(separator: "\n").count, 1)
        XCTAssertFalse(FileManager.default.fileExists(atPath: output.path), "no output file")
    }

    /// The same input archived: every use of a shared array is an NSArray of its own, so
    /// `karchive archive` ran until killed (1.4 GB after a minute); it now stops before
    /// archiving. A smaller one still archives, and Foundation reads the result.
    func testSharedContainersCannotBlowUpAnArchive() throws {
        let output = scratch.appendingPathComponent("out.archive")
        // 24 doublings; and 21 as XML, whose 4 million arrays (a bound too low for XML once let
        // through: 957 MB written, 2 GB of memory) are about 20 times the budget as text.
        for arguments in [["archive"], ["archive", "-f", "xml"]] {
            let depth: UInt8 = arguments.count == 1 ? 24 : 21
            let result = try ToolRunner.karchive(arguments + [try doublingArrays(depth).path, "-o", output.path])
            XCTAssertFalse(result.crashed)
            XCTAssertEqual(result.status, 1, result.standardError)
            XCTAssertTrue(result.standardError.contains("output would be longer than 67108864 bytes"), result.standardError)
            XCTAssertFalse(FileManager.default.fileExists(atPath: output.path), "no output file")
        }

        let small = try ToolRunner.karchive(["archive", try doublingArrays(6).path, "-o", output.path])
        XCTAssertEqual(small.status, 0, small.standardError)
        let archived = try NSKeyedUnarchiver.unarchivedObject(ofClasses: [NSArray.self], from: try Data(contentsOf: output)) as? NSArray
        func leaves(_ array: NSArray?) -> Int { array.map { $0.count == 0 ? 1 : $0.reduce(0) { $0 + leaves($1 as? NSArray) } } ?? -1 }
        XCTAssertEqual(leaves(archived), 64)
    }

    /// A failed write to standard output (`> /dev/full`, a full disk) exited 0, so a script's
    /// `karchive convert ... > out && mv out ...` went on with a truncated file; Python, the
    /// peer, fails the same way.
    func testAFailedWriteToStandardOutputFails() throws {
        guard FileManager.default.fileExists(atPath: "/dev/full") else { throw XCTSkip("no /dev/full on this system") }
        let input = scratch.appendingPathComponent("in.plist")
        try PropertyList.encode(["Name": "Ada"], format: .binary).write(to: input)
        let shell = URL(fileURLWithPath: "/bin/sh")
        for arguments in [["convert", "-f", "xml"], ["print"], ["lint"]] {
            let script = "\"$0\" \"$@\" > /dev/full"
            let result = try ToolRunner.run(shell, ["-c", script, ToolRunner.karchiveURL.path] + arguments + [input.path])
            XCTAssertEqual(result.status, 1, "\(arguments): \(result.standardError)")
            XCTAssertTrue(result.standardError.contains("cannot write to standard output"), result.standardError)
        }
        let python = try ToolRunner.run(shell, ["-c", "python3 -c 'import plistlib, sys; sys.stdout.buffer.write(plistlib.dumps({\"a\": 1}))' > /dev/full"])
        XCTAssertNotEqual(python.status, 0, "the peer fails too")
    }

    /// `-o` onto a FIFO or a device replaced it with a regular file (as root, `-o /dev/null`
    /// replaced the system's); it is now written as it is, as `cp` and Python write one (the
    /// FIFO stands for every such file: `AtomicFile.isSpecialFile` tells them apart). A link
    /// is followed: it stays a link, and its target gets the new contents.
    func testOutputIntoAFIFOADeviceOrALinkKeepsWhatThePathIs() throws {
        let input = scratch.appendingPathComponent("in.plist")
        let value: PropertyListValue = ["Name": "Ada", "List": [1, 2]]
        try PropertyList.encode(value, format: .binary).write(to: input)
        let expected = try PropertyList.encode(value, format: .xml)

        let fifo = scratch.appendingPathComponent("fifo")
        XCTAssertEqual(mkfifo(fifo.path, 0o600), 0)
        let received = Protected(Data())
        let reader = Thread {
            if let handle = FileHandle(forReadingAtPath: fifo.path) {
                received.withLock { $0 = handle.readDataToEndOfFile() }
            }
        }
        reader.start()
        let result = try ToolRunner.karchive(["convert", "-f", "xml", input.path, "-o", fifo.path])
        XCTAssertEqual(result.status, 0, result.standardError)
        let deadline = Date().addingTimeInterval(10)
        while received.withLock({ $0.isEmpty }), Date() < deadline { usleep(10_000) }
        XCTAssertEqual(received.withLock { $0 }, expected)
        var info = stat()
        XCTAssertEqual(lstat(fifo.path, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFIFO, "still a FIFO")

        // (Not tried on /dev/null: a regression run as root would replace the system's.)

        let target = scratch.appendingPathComponent("target.plist")
        try Data("old".utf8).write(to: target)
        let link = scratch.appendingPathComponent("link.plist")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        let linked = try ToolRunner.karchive(["convert", "-f", "xml", input.path, "-o", link.path])
        XCTAssertEqual(linked.status, 0, linked.standardError)
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: link.path), target.path)
        XCTAssertEqual(try Data(contentsOf: target), expected)

        // A link to nothing is refused, as `cp` refuses it; it used to become a regular file.
        let dangling = scratch.appendingPathComponent("dangling.plist")
        try FileManager.default.createSymbolicLink(atPath: dangling.path, withDestinationPath: "missing.plist")
        let refused = try ToolRunner.karchive(["convert", "-f", "xml", input.path, "-o", dangling.path])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.standardError.contains("not writing through it"), refused.standardError)
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: dangling.path), "missing.plist")

        // `-o /dev/stdout` (or a link to the process's descriptor) writes standard output where
        // it stands: followed to the file the shell opened and replaced, the shell's other
        // output to it (`header`, `footer`) was lost.
        let combined = scratch.appendingPathComponent("combined.txt")
        let script = "{ echo header; \"$0\" convert -f xml \"$1\" -o /dev/stdout; echo footer; } > \"$2\""
        let grouped = try ToolRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", script, ToolRunner.karchiveURL.path, input.path, combined.path])
        XCTAssertEqual(grouped.status, 0, grouped.standardError)
        XCTAssertEqual(try Data(contentsOf: combined), Data("header\n".utf8) + expected + Data("footer\n".utf8))
        // However spelled (`/dev//fd/1` was followed to the file and replaced it), and cut
        // after the output on a descriptor opened for reading and writing (`1<>file` kept the
        // old tail), as `cp` leaves it.
        for spelling in ["/dev//fd/1", "/proc/thread-self/fd/1"] {
            let spelled = "{ echo header; \"$0\" convert -f xml \"$1\" -o \(spelling); echo footer; } > \"$2\""
            let respelled = try ToolRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", spelled, ToolRunner.karchiveURL.path, input.path, combined.path])
            XCTAssertEqual(respelled.status, 0, respelled.standardError)
            XCTAssertEqual(try Data(contentsOf: combined), Data("header\n".utf8) + expected + Data("footer\n".utf8), spelling)
        }
        let longer = scratch.appendingPathComponent("longer.txt")
        try Data(repeating: UInt8(ascii: "X"), count: 4_000).write(to: longer)
        let readWrite = "\"$0\" convert -f xml \"$1\" -o /dev/stdout 1<>\"$2\""
        let overwritten = try ToolRunner.run(URL(fileURLWithPath: "/bin/sh"), ["-c", readWrite, ToolRunner.karchiveURL.path, input.path, longer.path])
        XCTAssertEqual(overwritten.status, 0, overwritten.standardError)
        XCTAssertEqual(try Data(contentsOf: longer), expected)
    }

    /// An input that cannot be read says why, as the system words it ("cannot read the file"
    /// alone did not tell a missing file from a directory).
    func testUnreadableInputsSayWhy() throws {
        let missing = scratch.appendingPathComponent("missing.plist").path
        for (path, reason) in [(missing, String(cString: strerror(ENOENT))), (scratch.path, String(cString: strerror(EISDIR)))] {
            let result = try ToolRunner.karchive(["print", path])
            XCTAssertEqual(result.status, 1)
            XCTAssertTrue(result.standardError.contains(path) && result.standardError.contains(reason), result.standardError)
        }
    }
}
