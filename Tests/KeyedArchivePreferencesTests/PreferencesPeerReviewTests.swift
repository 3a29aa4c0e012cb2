import Foundation
import KeyedArchive
import XCTest

/// What session 65's review of the store against Foundation's `UserDefaults` found: a FIFO at a
/// domain's path hung every reader; Unicode white space before a number; GNUstep typed values
/// read where Foundation reads strings; a key's two spellings mixed; a nil dictionary value
/// dropped; a directory at a domain's path "deleted"; removals writing an empty domain; a
/// relative XDG_CONFIG_HOME.
final class PreferencesPeerReviewTests: PreferencesTestCase {
    /// Runs `body` on another thread and fails if it has not returned within `seconds`.
    private func returnsPromptly(_ what: String, seconds: Double = 10, _ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            body()
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + seconds), .success, "\(what) did not return (hung)")
    }

    func testAFIFOAtADomainsPathDoesNotHang() throws {
        XCTAssertEqual(mkfifo(PreferencesDirectory.path(ofDomain: "fifo", in: directory), 0o600), 0)
        let log = WarningLog()
        let directory = self.directory
        // Opened on another thread too: opening the store reads its file (a hang there, on the
        // test's thread, would stop the suite instead of failing this test).
        returnsPromptly("opening a store and reading") {
            let store = try? Preferences(
                domain: "fifo", configuration: .init(directory: directory, argumentDomain: [:], warningHandler: log.handler))
            _ = store?.object(forKey: "k")
        }
        XCTAssertTrue(log.all.contains { $0.contains("not a regular file") }, "\(log.all)")
        // The global domain's path, which every store reads.
        XCTAssertEqual(mkfifo(PreferencesDirectory.path(ofDomain: Preferences.globalDomainName, in: directory), 0o600), 0)
        returnsPromptly("opening a store") {
            _ = try? Preferences(
                domain: "other", configuration: .init(directory: directory, argumentDomain: [:], warningHandler: { _ in }))
        }
        // The tool exits with an error instead of waiting.
        let tool = try spawn(["read", "fifo", "k"])
        returnsPromptly("karchive defaults read") { tool.waitUntilExit() }
        if tool.isRunning { tool.terminate() } else { XCTAssertEqual(tool.terminationStatus, 1) }
    }

    /// Foundation's `integerValue` (and so `UserDefaults.integer(forKey:)`) skips Unicode white
    /// space before a number; the conversions skipped ASCII's only (`"\u{A0}7"` was 0).
    func testUnicodeWhiteSpaceBeforeANumberIsSkipped() {
        for space in ["\u{A0}", "\u{2003}", "\u{3000}", "\u{1680}", "\u{2028}", "\u{85}", "\t", "\n", " \u{A0} "] {
            let text = space + "7"
            let foundation = NSString(string: text).integerValue
            XCTAssertEqual(foundation, 7, "Foundation, \(text.debugDescription)")
            XCTAssertEqual(PreferenceConversions.integer(.string(PropertyListString(text))), foundation, text.debugDescription)
            XCTAssertTrue(PreferenceConversions.bool(.string(PropertyListString(text))), text.debugDescription)
            XCTAssertEqual(Int(preferenceValue: .string(PropertyListString(text))), 7, text.debugDescription)
        }
        // Foundation's doubleValue skips spaces (not line breaks).
        for space in ["\u{A0}", "\u{2003}", "\u{3000}"] {
            let text = space + "2.5"
            XCTAssertEqual(PreferenceConversions.double(.string(PropertyListString(text))), NSString(string: text).doubleValue, text.debugDescription)
        }
        // Not white space: a zero-width no-break space (a byte-order mark) stops the number.
        XCTAssertEqual(PreferenceConversions.integer(.string(PropertyListString("\u{FEFF}7"))), NSString(string: "\u{FEFF}7").integerValue)
    }

    /// `<*I5>` is GNUstep's, not Foundation's: Foundation's parser refuses it, so an argument
    /// `-Count '<*I5>'` is that string in Foundation's argument domain, and `defaults write`
    /// refuses it. It was read as the integer 5.
    func testGNUstepTypedValuesAreNotReadWhereFoundationReadsStrings() throws {
        for text in ["<*I5>", "<*BY>", "<*R1.5>", "<*D2001-01-01 00:00:00 +0000>"] {
            XCTAssertThrowsError(try PropertyListSerialization.propertyList(from: Data(text.utf8), options: [], format: nil), text)
            XCTAssertEqual(ArgumentDomain.parse(["-Key", text]), ["Key": PropertyListValue(text)], text)
            let (status, _, error) = try run(["write", "typed", "Key", text])
            XCTAssertEqual(status, 1, text)
            XCTAssertTrue(error.contains("Could not parse"), error)
        }
        XCTAssertEqual(ArgumentDomain.parse(["-List", "(a, <0fbd>)"]), ["List": ["a", .data(Data([0x0F, 0xBD]))]])
        XCTAssertEqual(ArgumentDomain.parse(["-Nested", "{ n = \"<*I5>\"; }"]), ["Nested": ["n": "<*I5>"]])
        // The library's own OpenStep reader still reads them (its documented extension).
        XCTAssertEqual(try OpenStepPropertyListReader.read("<*I5>"), 5)
    }

    /// A file holding `café` composed and decomposed (two keys to Foundation, one to a Swift
    /// dictionary): the store's view showed one spelling's name with the other's value.
    func testAKeysTwoSpellingsAreNeverMixed() throws {
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        let file = PropertyListDictionary([(.string(PropertyListString(composed)), "composed"), (.string(PropertyListString(decomposed)), "decomposed")])
        try PropertyList.encode(.dictionary(file), format: .binary)
            .write(to: URL(fileURLWithPath: PreferencesDirectory.path(ofDomain: "spellings", in: directory)))
        let store = try makeStore("spellings")
        let entries = ["composed": composed, "decomposed": decomposed]
        // The pair is one stored entry: the key's bytes and its own value.
        func assertOneEntry(_ dictionary: [String: PropertyListValue]?, _ what: String) throws {
            let dictionary = try XCTUnwrap(dictionary, what)
            XCTAssertEqual(dictionary.count, 1, what)
            let (key, value) = try XCTUnwrap(dictionary.first)
            XCTAssertTrue(
                entries.contains { $0.value.utf8.elementsEqual(key.utf8) && PropertyListValue($0.key) == value },
                "\(what): \(Array(key.unicodeScalars)) = \(value)")
        }
        try assertOneEntry(store.persistentDomain(), "the domain")
        // A dictionary value holding both (dictionary(forKey:), typed keys, import), as the
        // second read found.
        store.set(.dictionary(file), forKey: "Nested")
        try assertOneEntry(store.dictionary(forKey: "Nested"), "dictionary(forKey:)")
        try assertOneEntry(PreferenceConversions.dictionary(.dictionary(file)), "the conversion")
        let typed = store[PreferenceKey<[String: String]>("Nested", default: [:])]
        try assertOneEntry(typed.mapValues { PropertyListValue($0) }, "a typed key")
    }

    /// A nil value in a `[String: Int?]` was dropped with no word; a nil in `[Int?]` is refused
    /// with a warning, and now so is this.
    func testANilDictionaryValueIsRefusedLikeANilArrayElement() throws {
        let log = WarningLog()
        let store = try makeStore(writeDelay: nil, warnings: log.handler)
        let key = PreferenceKey<[String: Int?]>("Map", default: [:])
        store[key] = ["a": 1]
        XCTAssertEqual(log.all, [])
        store[key] = ["a": 2, "b": nil]
        XCTAssertEqual(log.all.count, 1, "\(log.all)")
        XCTAssertEqual(store.object(forKey: "Map"), ["a": 1], "the refused value left the stored one")
    }

    /// `karchive defaults delete D` with a directory at D's path said it deleted the domain
    /// (exit 0) and deleted nothing.
    func testDeletingADomainThatIsADirectoryFails() throws {
        try FileManager.default.createDirectory(atPath: PreferencesDirectory.path(ofDomain: "dirdom", in: directory), withIntermediateDirectories: false)
        let (status, _, error) = try run(["delete", "dirdom"])
        XCTAssertEqual(status, 1, error)
        XCTAssertTrue(FileManager.default.fileExists(atPath: PreferencesDirectory.path(ofDomain: "dirdom", in: directory)))
        // A domain file is deleted as before.
        try run(["write", "real", "k", "v"])
        XCTAssertEqual(try run(["delete", "real"]).0, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: PreferencesDirectory.path(ofDomain: "real", in: directory)))
    }

    /// Removing a key from a domain that has no file wrote a file of `{}`, and the domain then
    /// appeared in `karchive defaults domains`.
    func testRemovalsFromADomainWithNoFileWriteNone() throws {
        let store = try makeStore("ghost", writeDelay: nil)
        store.removeObject(forKey: "missing")
        try store.synchronize()
        XCTAssertFalse(FileManager.default.fileExists(atPath: PreferencesDirectory.path(ofDomain: "ghost", in: directory)))
        XCTAssertFalse(try run(["domains"]).1.contains("ghost"))
        // The removal is done: nothing stays pending, and a value set later is written.
        store.set("v", forKey: "k")
        try store.synchronize()
        XCTAssertEqual(try foundationRead("ghost")["k"] as? String, "v")
        // Removing the last key of a domain with a file keeps the (empty) file, as before.
        store.removeObject(forKey: "k")
        try store.synchronize()
        XCTAssertEqual(try foundationRead("ghost").count, 0)
    }

    /// The XDG specification: a relative `XDG_CONFIG_HOME` is invalid and ignored.
    func testARelativeXDGConfigHomeIsIgnored() throws {
        #if !canImport(Darwin)
        let saved = (getenv("XDG_CONFIG_HOME").map { String(cString: $0) }, getenv(PreferencesDirectory.environmentVariable).map { String(cString: $0) })
        defer {
            if let xdg = saved.0 { setenv("XDG_CONFIG_HOME", xdg, 1) } else { unsetenv("XDG_CONFIG_HOME") }
            if let own = saved.1 { setenv(PreferencesDirectory.environmentVariable, own, 1) }
        }
        unsetenv(PreferencesDirectory.environmentVariable)
        setenv("XDG_CONFIG_HOME", "relative/config", 1)
        XCTAssertTrue(PreferencesDirectory.default.hasPrefix("/"), PreferencesDirectory.default)
        XCTAssertTrue(PreferencesDirectory.default.hasSuffix("/.config/keyedarchive/preferences"), PreferencesDirectory.default)
        setenv("XDG_CONFIG_HOME", "/srv/config", 1)
        XCTAssertEqual(PreferencesDirectory.default, "/srv/config/keyedarchive/preferences")
        #endif
    }
}
