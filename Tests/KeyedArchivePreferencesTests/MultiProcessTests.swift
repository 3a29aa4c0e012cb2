import Foundation
import KeyedArchive
import XCTest

/// Real processes (the built `karchive` binary) writing the same domain.
final class MultiProcessTests: PreferencesTestCase {
    /// Two processes write 500 different keys each at the same time, in read-modify-write
    /// cycles of 5 keys (100 each, interleaved under the file lock).
    func testTwoProcessesLoseNoKeys() throws {
        let first = try spawn(["x-write-many", "shared", "a", "500", "5"])
        let second = try spawn(["x-write-many", "shared", "b", "500", "5"])
        first.waitUntilExit()
        second.waitUntilExit()
        XCTAssertEqual(first.terminationStatus, 0)
        XCTAssertEqual(second.terminationStatus, 0)
        let onDisk = try foundationRead("shared")
        XCTAssertEqual(onDisk.count, 1000)
        for index in 0..<500 {
            XCTAssertEqual(onDisk["a\(index)"] as? Int, index)
            XCTAssertEqual(onDisk["b\(index)"] as? Int, index)
        }
    }

    /// A writer killed with SIGKILL at random moments: the file always parses, and holds one
    /// complete generation (its payload matches its generation number and size).
    func testKilledWriterLeavesOldOrNewContents() throws {
        var generator = SystemRandomNumberGenerator()
        var generationsSeen = Set<Int>()
        for round in 0..<50 {
            let output = Pipe()
            let writer = try spawn(["x-churn", "churn"], output: output)
            // Wait until it has written at least once, then kill it a random moment later.
            _ = output.fileHandleForReading.availableData
            usleep(UInt32.random(in: 0...30_000, using: &generator))
            kill(writer.processIdentifier, SIGKILL)
            writer.waitUntilExit()
            XCTAssertEqual(writer.terminationReason, .uncaughtSignal, "round \(round)")
            let data = try Data(contentsOf: URL(fileURLWithPath: PreferencesDirectory.path(ofDomain: "churn", in: directory)))
            let value = try PropertyList.decode(data)
            let generation = try XCTUnwrap(value["Generation"]?.intValue, "round \(round)")
            let size = try XCTUnwrap(value["PayloadSize"]?.intValue)
            let payload = try XCTUnwrap(value["Payload"]?.dataValue)
            XCTAssertEqual(size, 1_000 + (generation * 7_919) % 200_000, "round \(round)")
            XCTAssertEqual(payload.count, size, "round \(round)")
            XCTAssertTrue(payload.allSatisfy { $0 == UInt8(truncatingIfNeeded: generation) }, "round \(round)")
            generationsSeen.insert(generation)
            // Foundation parses it too.
            XCTAssertNoThrow(try PropertyListSerialization.propertyList(from: data, options: [], format: nil))
        }
        XCTAssertGreaterThan(generationsSeen.count, 10, "the writer made progress across rounds")
        // A kill between creating and renaming the temporary file leaves it behind; the next
        // writer removes such leftovers under the lock, so at most the last kill's remains.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp-") }
        XCTAssertLessThanOrEqual(leftovers.count, 1, "\(leftovers)")
    }

    /// An observer in this process sees a value written by another process (inotify).
    func testObserverSeesAnotherProcessesChange() async throws {
        let store = try makeStore("observed")
        let stream = store.changes(forKey: "Color")
        var iterator = stream.makeAsyncIterator()
        let (status, _, _) = try run(["write", "observed", "Color", "-string", "teal"])
        XCTAssertEqual(status, 0)
        let value = await iterator.next()
        XCTAssertEqual(value, "teal")
        // And synchronize() / reads see it without any observer.
        let other = try makeStore("observed")
        try run(["write", "observed", "Size", "-int", "3"])
        XCTAssertEqual(other.integer(forKey: "Size"), 3)
    }

    func testDefaultsCommandOutput() throws {
        try run(["write", "tool", "Name", "Ada Lovelace"])
        try run(["write", "tool", "NightMode", "-bool", "YES"])
        try run(["write", "tool", "Count", "-int", "42"])
        try run(["write", "tool", "Ratio", "-float", "0.25"])
        try run(["write", "tool", "Tags", "-array", "a", "-int", "2"])
        try run(["write", "tool", "Nested", "{ inner = (x, \"y z\"); bytes = <0fbd>; }"])
        try run(["write", "tool", "Nested", "-dict-add", "more", "-bool", "NO"])
        try run(["write", "tool", "When", "-date", "2024-05-01 10:00:00 +0000"])
        // An empty value is the empty string, as macOS defaults writes it (CoreFoundation's
        // parser refuses empty text); our OpenStep reader would make it an empty dictionary.
        try run(["write", "tool", "Empty", ""])
        // The file, as python's plistlib reads it, has the types macOS defaults would write.
        let onDisk = try foundationRead("tool")
        XCTAssertEqual(onDisk["Name"] as? String, "Ada Lovelace")
        XCTAssertEqual(onDisk["NightMode"] as? Bool, true)
        XCTAssertEqual(onDisk["Count"] as? Int, 42)
        XCTAssertEqual(onDisk["Ratio"] as? Double, 0.25)
        XCTAssertEqual((onDisk["Tags"] as? [Any])?.count, 2)
        XCTAssertEqual((onDisk["When"] as? Date)?.timeIntervalSince1970, 1_714_557_600)
        let nested = try XCTUnwrap(onDisk["Nested"] as? [String: Any])
        XCTAssertEqual(nested["inner"] as? [String], ["x", "y z"])
        XCTAssertEqual(nested["bytes"] as? Data, Data([0x0F, 0xBD]))
        XCTAssertEqual(nested["more"] as? Bool, false)

        XCTAssertEqual(try run(["read", "tool", "Name"]).1, "Ada Lovelace\n")
        XCTAssertEqual(try run(["read", "tool", "NightMode"]).1, "1\n")
        XCTAssertEqual(try run(["read-type", "tool", "NightMode"]).1, "Type is boolean\n")
        XCTAssertEqual(try run(["read-type", "tool", "Ratio"]).1, "Type is float\n")
        XCTAssertEqual(try run(["read-type", "tool", "Count"]).1, "Type is integer\n")
        XCTAssertEqual(try run(["read-type", "tool", "Tags"]).1, "Type is array\n")
        XCTAssertEqual(try run(["read-type", "tool", "When"]).1, "Type is date\n")
        XCTAssertEqual(onDisk["Empty"] as? String, "")
        XCTAssertThrowsError(try PropertyListSerialization.propertyList(from: Data(), format: nil))
        XCTAssertEqual(try run(["read-type", "tool", "Empty"]).1, "Type is string\n")
        // The layout macOS defaults prints (4-space indents, nested containers after "key =     ").
        let (_, text, _) = try run(["read", "tool", "Tags"])
        XCTAssertEqual(text, "(\n    a,\n    2\n)\n")
        let (_, whole, _) = try run(["read", "tool"])
        XCTAssertTrue(whole.hasPrefix("{\n    Count = 42;\n"), whole)
        XCTAssertTrue(whole.contains("    Name = \"Ada Lovelace\";\n"), whole)
        XCTAssertTrue(whole.contains("    Nested =     {\n        bytes = <0fbd>;\n        inner =         (\n            x,\n            \"y z\"\n        );\n"), whole)
        // Our own reader reads the printed text back to the same strings.
        let reread = try OpenStepPropertyListReader.read(whole)
        XCTAssertEqual(reread["Name"], "Ada Lovelace")
        XCTAssertEqual(try run(["domains"]).1, "tool\n")
        XCTAssertEqual(try run(["read", "tool", "Missing"]).0, 1)
        XCTAssertEqual(try run(["delete", "tool", "Name"]).0, 0)
        XCTAssertNil(try foundationRead("tool")["Name"])
        // export / import round trip into another domain.
        let exported = directory + "/exported.bin"
        XCTAssertEqual(try run(["export", "tool", exported]).0, 0)
        XCTAssertEqual(try run(["import", "copy", exported]).0, 0)
        XCTAssertEqual(try run(["read", "copy"]).1, try run(["read", "tool"]).1)
        XCTAssertEqual(try run(["delete", "copy"]).0, 0)
        XCTAssertEqual(try run(["domains"]).1, "tool\n")
        XCTAssertEqual(try run(["write", "tool", "X", "-int", "notanumber"]).0, 1)
    }

    /// Values without a type are read as macOS `defaults` reads them (text without any of
    /// `"(){}[]<>` is a string; other text must parse, or nothing is written), and the writes
    /// that would lose a value are refused. Each used to store something else: `a=b;` a
    /// dictionary, an unbalanced `{...` a string, `-array-add` over a string an array.
    func testDefaultsWriteReadsValuesAsMacOSDefaultsDoes() throws {
        XCTAssertEqual(try run(["write", "tool", "Name", "-string", "Ada"]).0, 0)
        let appended = try run(["write", "tool", "Name", "-array-add", "Bob"])
        XCTAssertEqual(appended.0, 1)
        XCTAssertTrue(appended.2.contains("is not an array"), appended.2)
        XCTAssertEqual(try foundationRead("tool")["Name"] as? String, "Ada")
        XCTAssertEqual(try run(["write", "tool", "List", "-array", "x"]).0, 0)
        XCTAssertEqual(try run(["write", "tool", "List", "-dict-add", "k", "v"]).0, 1)
        XCTAssertEqual(try foundationRead("tool")["List"] as? [String], ["x"])

        XCTAssertEqual(try run(["write", "tool", "Motto", "a=b;"]).0, 0)
        XCTAssertEqual(try run(["write", "tool", "Env", "PATH=/usr/bin;"]).0, 0)
        XCTAssertEqual(try run(["write", "tool", "Flag", "--help"]).0, 0)
        let unbalanced = try run(["write", "tool", "Cfg", "{Enabled = YES; Level = 3"])
        XCTAssertEqual(unbalanced.0, 1)
        XCTAssertTrue(unbalanced.2.contains("Could not parse"), unbalanced.2)
        XCTAssertEqual(try run(["write", "tool", "Nested", "-array", "a", "-array", "b"]).0, 2)
        XCTAssertEqual(try run(["write", "tool", "Items", "-array", "a", "(b, c)", "<dict><key>k</key><string>v</string></dict>", "-int", "3"]).0, 0)
        XCTAssertEqual(try run(["write", "tool", "Token", "<deadbeef>"]).0, 0)
        let onDisk = try foundationRead("tool")
        XCTAssertEqual(onDisk["Motto"] as? String, "a=b;")
        XCTAssertEqual(onDisk["Env"] as? String, "PATH=/usr/bin;")
        XCTAssertEqual(onDisk["Flag"] as? String, "--help")
        XCTAssertNil(onDisk["Cfg"])
        XCTAssertNil(onDisk["Nested"])
        let items = try XCTUnwrap(onDisk["Items"] as? [Any])
        XCTAssertEqual(items.count, 4)
        XCTAssertEqual(items[0] as? String, "a")
        XCTAssertEqual(items[1] as? [String], ["b", "c"])
        XCTAssertEqual(items[2] as? [String: String], ["k": "v"])
        XCTAssertEqual(items[3] as? Int, 3)
        XCTAssertEqual(onDisk["Token"] as? Data, Data([0xDE, 0xAD, 0xBE, 0xEF]))

        // `write DOMAIN '{...}'` replaces the domain; `rename` moves a key.
        XCTAssertEqual(try run(["write", "tool", "{ Only = 1; Other = (x); }"]).0, 0)
        XCTAssertEqual(Set(try foundationRead("tool").keys), ["Only", "Other"])
        XCTAssertEqual(try run(["write", "tool", "(not, a, dictionary)"]).0, 1)
        XCTAssertEqual(try run(["rename", "tool", "Only", "Renamed"]).0, 0)
        XCTAssertEqual(try foundationRead("tool")["Renamed"] as? String, "1")
        XCTAssertNil(try foundationRead("tool")["Only"])
        XCTAssertEqual(try run(["rename", "tool", "Missing", "X"]).0, 1)

        // Help where an option can stand, after --dir too.
        for arguments in [["--help"], ["read", "--help"]] {
            let help = try run(arguments)
            XCTAssertEqual(help.0, 0, "\(arguments)")
            XCTAssertTrue(help.1.hasPrefix("usage: karchive defaults"), "\(arguments): \(help.1)")
        }

        // An import that cannot be read names the file.
        let bad = directory + "/bad.xml"
        try Data("<plist><dict><key>A</key><integer>1x</integer></dict></plist>".utf8).write(to: URL(fileURLWithPath: bad))
        let imported = try run(["import", "tool", bad])
        XCTAssertEqual(imported.0, 1)
        XCTAssertTrue(imported.2.contains(bad), imported.2)
    }
}
