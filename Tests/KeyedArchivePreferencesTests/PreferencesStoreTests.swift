import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

final class PreferencesStoreTests: PreferencesTestCase {
    func testRegistrationIsVolatileAndPersistedValuesWin() throws {
        let store = try makeStore()
        store.register(defaults: ["FontSize": 12, "Name": "default"])
        XCTAssertEqual(store.integer(forKey: "FontSize"), 12)
        store.set(14, forKey: "FontSize")
        XCTAssertEqual(store.integer(forKey: "FontSize"), 14)
        try store.synchronize()
        // Only the persisted key is on disk, as Foundation reads the file.
        let onDisk = try foundationRead("com.example.test")
        XCTAssertEqual(onDisk.keys.sorted(), ["FontSize"])
        XCTAssertEqual(onDisk["FontSize"] as? Int, 14)
        // A new store sees the persisted value but not the registration (it is per store).
        let reopened = try makeStore()
        XCTAssertEqual(reopened.integer(forKey: "FontSize"), 14)
        XCTAssertNil(reopened.object(forKey: "Name"))
        // Removing falls back to the registration domain.
        store.removeObject(forKey: "FontSize")
        XCTAssertEqual(store.integer(forKey: "FontSize"), 12)
        try store.synchronize()
        XCTAssertEqual(try foundationRead("com.example.test").count, 0)
        // Registration from a plist file (XML written by Foundation).
        let file = directory + "/Defaults.plist"
        try PropertyListSerialization.data(fromPropertyList: ["Volume": 0.75, "Enabled": true], format: .binary, options: 0)
            .write(to: URL(fileURLWithPath: file))
        try store.register(defaultsFromFile: file)
        XCTAssertEqual(store.double(forKey: "Volume"), 0.75)
        XCTAssertTrue(store.bool(forKey: "Enabled"))
        XCTAssertEqual(store.dictionaryRepresentation()["Volume"], 0.75)
        XCTAssertNil(store.persistentDomain()["Volume"])
    }

    func testSearchListArgumentsApplicationGlobalRegistration() throws {
        // The argument domain as the process would parse it, values as OpenStep text.
        let arguments = ArgumentDomain.parse(["-NightMode", "YES", "-List", "(a, b)", "-Dict", "{ k = v; }", "-Quoted", "\"x y\"", "-flag", "-Bad", "(unclosed"])
        XCTAssertEqual(arguments["NightMode"], "YES")
        XCTAssertEqual(arguments["List"], ["a", "b"])
        XCTAssertEqual(arguments["Dict"], ["k": "v"])
        XCTAssertEqual(arguments["Quoted"], "x y")
        XCTAssertNil(arguments["flag"])  // followed by another option: no value
        XCTAssertEqual(arguments["Bad"], "(unclosed")  // unparsable: the string itself
        let store = try makeStore(arguments: arguments)
        store.set(false, forKey: "NightMode")
        XCTAssertTrue(store.bool(forKey: "NightMode"), "the argument domain wins")
        XCTAssertEqual(store.persistentDomain()["NightMode"], false)
        // Global domain: below the application domain, above registration.
        let global = try makeStore(Preferences.globalDomainName)
        global.set("global", forKey: "Shared")
        global.set("global", forKey: "Both")
        try global.synchronize()
        store.register(defaults: ["Shared": "registered", "Only": "registered"])
        store.set("app", forKey: "Both")
        XCTAssertEqual(store.string(forKey: "Shared"), "global")
        XCTAssertEqual(store.string(forKey: "Both"), "app")
        XCTAssertEqual(store.string(forKey: "Only"), "registered")
        XCTAssertFalse(PreferencesDirectory.domains(in: directory).contains(Preferences.globalDomainName))
    }

    /// Every typed getter against Foundation's UserDefaults on this machine where it follows
    /// Apple, and against Apple's documented conversions where swift-corelibs-foundation differs.
    func testTypedGettersMatchUserDefaults() throws {
        let suite = "ka-prefs-test-\(UUID().uuidString)"
        guard let defaults = UserDefaults(suiteName: suite) else { throw XCTSkip("UserDefaults(suiteName:) unavailable") }
        defer { defaults.removePersistentDomain(forName: suite) }
        let store = try makeStore()
        let strings = ["YES", "yes", "true", "TRUE", "1", "0", "NO", "no", "false", "", " 42", "42abc", "-7", "3.7", "abc", "2.5 kg", "1e3", "+5"]
        for (index, string) in strings.enumerated() {
            let key = "s\(index)"
            defaults.set(string, forKey: key)
            store.set(string, forKey: key)
            XCTAssertEqual(store.bool(forKey: key), defaults.bool(forKey: key), "bool(\(string))")
            XCTAssertEqual(store.integer(forKey: key), defaults.integer(forKey: key), "integer(\(string))")
            XCTAssertEqual(store.double(forKey: key), defaults.double(forKey: key), "double(\(string))")
            XCTAssertEqual(store.float(forKey: key), defaults.float(forKey: key), "float(\(string))")
            XCTAssertEqual(store.string(forKey: key), defaults.string(forKey: key), "string(\(string))")
            XCTAssertEqual(store.url(forKey: key)?.path, defaults.url(forKey: key)?.path, "url(\(string))")
            XCTAssertNil(store.data(forKey: key))
            XCTAssertNil(store.array(forKey: key))
        }
        // Numbers of their own type: corelibs agrees with Apple.
        for (index, number) in [0, 1, -3, 1 << 40].enumerated() {
            defaults.set(number, forKey: "i\(index)")
            store.set(number, forKey: "i\(index)")
            XCTAssertEqual(store.integer(forKey: "i\(index)"), defaults.integer(forKey: "i\(index)"))
            XCTAssertEqual(store.bool(forKey: "i\(index)"), defaults.bool(forKey: "i\(index)"))
        }
        for (index, number) in [0.0, 2.5, -1e300].enumerated() {
            defaults.set(number, forKey: "d\(index)")
            store.set(number, forKey: "d\(index)")
            XCTAssertEqual(store.double(forKey: "d\(index)"), defaults.double(forKey: "d\(index)"))
            XCTAssertEqual(store.bool(forKey: "d\(index)"), defaults.bool(forKey: "d\(index)"))
        }
        defaults.set(true, forKey: "b")
        store.set(true, forKey: "b")
        XCTAssertEqual(store.bool(forKey: "b"), defaults.bool(forKey: "b"))
        defaults.set(Data([1, 2]), forKey: "data")
        store.set(Data([1, 2]), forKey: "data")
        XCTAssertEqual(store.data(forKey: "data"), defaults.data(forKey: "data"))
        XCTAssertEqual(store.integer(forKey: "data"), defaults.integer(forKey: "data"))
        XCTAssertEqual(store.string(forKey: "data"), defaults.string(forKey: "data"))
        defaults.set(["a", "b"], forKey: "array")
        store.set(["a", "b"], forKey: "array")
        XCTAssertEqual(store.stringArray(forKey: "array"), defaults.stringArray(forKey: "array"))
        XCTAssertNil(store.dictionary(forKey: "array"))
        for key in ["missing"] {
            XCTAssertEqual(store.bool(forKey: key), defaults.bool(forKey: key))
            XCTAssertEqual(store.integer(forKey: key), defaults.integer(forKey: key))
            XCTAssertEqual(store.double(forKey: key), defaults.double(forKey: key))
            XCTAssertNil(store.string(forKey: key))
            XCTAssertNil(store.url(forKey: key))
        }
        // Where corelibs differs from Apple's documented behaviour ("-stringForKey: ... will
        // convert NSNumber values to their NSString representation"; integerForKey: and
        // doubleForKey: convert any number; boolForKey: of a string uses YES/true or its integer).
        store.set(3.7, forKey: "real")
        XCTAssertEqual(store.integer(forKey: "real"), 3)
        XCTAssertEqual(store.string(forKey: "real"), "3.7")
        store.set(5, forKey: "int")
        XCTAssertEqual(store.double(forKey: "int"), 5)
        XCTAssertEqual(store.string(forKey: "int"), "5")
        XCTAssertEqual(store.integer(forKey: "b"), 1)
        XCTAssertEqual(store.string(forKey: "b"), "1")
        store.set("Yellow", forKey: "yellow")
        XCTAssertFalse(store.bool(forKey: "yellow"))  // NSString.boolValue says true; CFPreferences says false
        store.set(Float(0.1), forKey: "float")
        XCTAssertEqual(store.float(forKey: "float"), 0.1)
        XCTAssertEqual(store.object(forKey: "float"), .real(PropertyListReal(Float(0.1))))
        // A 4-byte real prints at its own precision, as NSNumber's stringValue does.
        XCTAssertEqual(store.string(forKey: "float"), NSNumber(value: Float(0.1)).stringValue)
        XCTAssertEqual(store.string(forKey: "float"), "0.1")
        defaults.set(Float(0.1), forKey: "float")
        XCTAssertEqual(store.string(forKey: "float"), defaults.string(forKey: "float"))
    }

    func testURLsAreStoredAsApple() throws {
        let store = try makeStore()
        let home = FileManager.default.homeDirectoryForCurrentUser.path
        store.set(URL(fileURLWithPath: home + "/Documents/report.txt"), forKey: "File")
        XCTAssertEqual(store.object(forKey: "File"), "~/Documents/report.txt")
        XCTAssertEqual(store.url(forKey: "File")?.path, home + "/Documents/report.txt")
        let web = try XCTUnwrap(URL(string: "https://example.com/a?b=c"))
        store.set(web, forKey: "Web")
        let archive = try XCTUnwrap(store.data(forKey: "Web"))
        XCTAssertEqual(store.url(forKey: "Web"), web)
        // Foundation's NSKeyedUnarchiver reads the archive as an NSURL.
        let unarchived = try NSKeyedUnarchiver.unarchivedObject(ofClass: NSURL.self, from: archive)
        XCTAssertEqual(unarchived?.absoluteString, web.absoluteString)
        // And we read the archive Foundation makes.
        let theirs = try NSKeyedArchiver.archivedData(withRootObject: NSURL(string: "ftp://host/file")!, requiringSecureCoding: false)
        store.set(theirs, forKey: "Theirs")
        XCTAssertEqual(store.url(forKey: "Theirs")?.absoluteString, "ftp://host/file")
    }

    func testTypedKeysAndModel() throws {
        let store = try makeStore()
        XCTAssertFalse(store[.testNightMode])
        store[.testNightMode] = true
        XCTAssertTrue(store[.testNightMode])
        XCTAssertEqual(store.object(forKey: "NightMode"), true)
        store.set("YES", forKey: "NightMode")
        XCTAssertTrue(store[.testNightMode], "Apple's conversion applies to typed keys")
        XCTAssertNil(store[.testDeadline])
        let date = Date(timeIntervalSinceReferenceDate: 800_000_000)
        store[.testDeadline] = date
        XCTAssertEqual(store[.testDeadline], date)
        store[.testDeadline] = nil
        XCTAssertNil(store.object(forKey: "MembershipDeadline"))
        store[.testTheme] = .dark
        XCTAssertEqual(store.object(forKey: "Theme"), "dark")
        store.set("nonsense", forKey: "Theme")
        XCTAssertEqual(store[.testTheme], .light)

        let log = WarningLog()
        let model = TestSettings(preferences: store)
        model.warningHandler = log.handler
        XCTAssertEqual(model.preferenceKeys, ["AutoPlayVoiceOver", "UIFontSize", "LastOpened", "ServerName"])
        XCTAssertFalse(model.autoPlayVoiceOver)
        model.autoPlayVoiceOver = true
        XCTAssertEqual(store.object(forKey: "AutoPlayVoiceOver"), true)
        model.fontSize = 14
        XCTAssertEqual(store.double(forKey: "UIFontSize"), 14)
        XCTAssertEqual(model.serverName, "example.com")
        store.set("other.example", forKey: "ServerName")
        XCTAssertEqual(model.serverName, "other.example")
        let file = directory + "/Defaults.plist"
        try Data(PropertyList.encode(["AutoPlayVoiceOver": false, "Unrelated": 1], format: .binary)).write(to: URL(fileURLWithPath: file))
        let missing = try model.registerDefaults(fromFile: file)
        XCTAssertEqual(missing, ["UIFontSize", "ServerName"], "LastOpened opted out of the warning")
        XCTAssertEqual(log.all.count, 1)
        XCTAssertTrue(log.all.first?.contains("UIFontSize, ServerName") ?? false, "\(log.all)")
    }

    func testSizeBudgetWarns() throws {
        let log = WarningLog()
        let store = try makeStore(warnings: log.handler, sizeBudget: 1000)
        store.set(Data(count: 500), forKey: "Small")
        try store.synchronize()
        XCTAssertTrue(log.all.isEmpty)
        store.set(Data(count: 2000), forKey: "Big")
        try store.synchronize()
        XCTAssertEqual(log.all.count, 1)
        XCTAssertTrue(log.all.first?.contains("over its budget of 1000 bytes") ?? false, "\(log.all)")
    }

    func testFilePermissionsAreKeptAndDamagedFilesIgnored() throws {
        let store = try makeStore()
        store.set(1, forKey: "A")
        try store.synchronize()
        let path = store.path
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int, 0o600)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: path)
        store.set(2, forKey: "A")
        try store.synchronize()
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int, 0o640)
        // No temporary files are left behind.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains("tmp") }, [])
        // A damaged file reads as empty with a warning, and the next write replaces it.
        try Data("bplist00garbage".utf8).write(to: URL(fileURLWithPath: path))
        let log = WarningLog()
        let other = try makeStore(warnings: log.handler)
        XCTAssertNil(other.object(forKey: "A"))
        XCTAssertFalse(log.all.isEmpty)
        other.set(3, forKey: "B")
        try other.synchronize()
        XCTAssertEqual(try foundationRead("com.example.test")["B"] as? Int, 3)
    }

    /// Without a write delay a change is on disk when `set` returns: a set that found another
    /// thread's write already scheduled returned at once, before that write (which took its
    /// change) had run. Read back by Foundation after every set, from four threads at once.
    func testWithoutADelayEachSetIsOnDiskWhenItReturns() throws {
        let store = try makeStore(writeDelay: nil)
        let path = store.path
        let missing = Protected<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<25 {
                let key = "k\(thread)-\(index)"
                store.set(.integer(PropertyListInteger(Int64(index))), forKey: key)
                let data = try? Data(contentsOf: URL(fileURLWithPath: path))
                let onDisk = data.flatMap { try? PropertyListSerialization.propertyList(from: $0, format: nil) as? [String: Any] }
                if onDisk?[key] as? Int != index { missing.withLock { $0.append(key) } }
            }
        }
        XCTAssertEqual(missing.withLock { $0 }, [])
    }

    /// A warning handler (or an observer) that sets a value ran inside the write that warned,
    /// which held the write lock; without a write delay the set writes too, and waited on the
    /// lock for ever. Warnings and observers now run after the write lets go of it.
    func testAWarningHandlerThatSetsAValueDoesNotDeadlock() throws {
        let storeBox = Protected<Preferences?>(nil)
        let warned = Protected(0)
        let store = try makeStore(writeDelay: nil, warnings: { _ in
            guard warned.withLock({ count in count += 1; return count == 1 }) else { return }
            storeBox.withLock { $0 }?.set("noted", forKey: "Warned")
        }, sizeBudget: 10)
        storeBox.withLock { $0 = store }
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            store.set("a value longer than the ten-byte budget", forKey: "Big")
            done.signal()
        }
        guard done.wait(timeout: .now() + 20) == .success else { return XCTFail("set did not return: deadlocked") }
        XCTAssertEqual(store.string(forKey: "Warned"), "noted")
        XCTAssertGreaterThan(warned.withLock { $0 }, 0)
        storeBox.withLock { $0 = nil }
    }

    /// 8 tasks x 1,000 writes to their own keys and a shared counter key; all land.
    func testConcurrentTasks() async throws {
        let store = try makeStore(writeDelay: .milliseconds(5))
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<1000 {
                        store.set(index, forKey: "t\(task)-\(index % 50)")
                        store.set(task, forKey: "Last")
                        _ = store.integer(forKey: "t\(task)-\(index % 50)")
                    }
                }
            }
        }
        try store.synchronize()
        let onDisk = try foundationRead("com.example.test")
        XCTAssertEqual(onDisk.count, 8 * 50 + 1)
        for task in 0..<8 {
            for slot in 0..<50 {
                // The last write to slot s in 0..<1000 with index % 50 == s is 950 + s.
                XCTAssertEqual(onDisk["t\(task)-\(slot)"] as? Int, 950 + slot)
            }
        }
        XCTAssertTrue((0..<8).contains(onDisk["Last"] as? Int ?? -1))
    }

    func testObserverSeesLocalChanges() async throws {
        let store = try makeStore()
        let stream = store.changes(for: PreferenceKeys.testNightMode)
        var iterator = stream.makeAsyncIterator()
        store[.testNightMode] = true
        store.set("NO", forKey: "NightMode")
        store.set("NO", forKey: "NightMode")  // no change: no event
        store.removeObject(forKey: "NightMode")
        store.register(defaults: ["NightMode": true])
        var received: [Bool?] = []
        for _ in 0..<4 { received.append(await iterator.next()) }
        // true; "NO" reads false; removal gives the default (false); registration gives true.
        XCTAssertEqual(received, [true, false, false, true])
    }

    /// Keys that differ only in Unicode normalization are one key to the store (its API is
    /// `[String: _]`), but a write keeps the file's own entries: writing one key never drops
    /// another spelling, a set changes the entry reads show (in this store and the next), and
    /// a removal removes every spelling. (The store merged them, so the next write kept one of
    /// the two entries.)
    func testAWriteKeepsKeysThatDifferOnlyInNormalization() throws {
        guard Python.executable != nil else { throw XCTSkip("python3 not installed") }
        let composed = "caf\u{E9}", decomposed = "cafe\u{301}"
        let path = PreferencesDirectory.path(ofDomain: "normalization", in: directory)
        func writeFile(_ python: String) throws {
            try Python.run("""
                import plistlib, sys
                sys.stdout.buffer.write(plistlib.dumps(\(python), fmt=plistlib.FMT_BINARY, sort_keys=False))
                """).write(to: URL(fileURLWithPath: path))
        }
        func onDisk() throws -> String {
            String(decoding: try Python.run("""
                import plistlib, sys
                d = plistlib.load(open(sys.argv[1], 'rb'))
                print(sorted((k.encode('utf-8').hex(), v) for k, v in d.items()))
                """, arguments: [path]), as: UTF8.self)
        }
        // The composed spelling first in the file: the store shows the last in its own order
        // (decomposed sorts first by its bytes), whatever the file's order.
        try writeFile("{'caf\\u00e9': 'composed', 'cafe\\u0301': 'decomposed', 'other': 1}")
        let store = try makeStore("normalization")
        XCTAssertEqual(store.string(forKey: decomposed), "composed")
        store.set("1", forKey: "new")
        try store.synchronize()
        XCTAssertEqual(try onDisk(), "[('63616665cc81', 'decomposed'), ('636166c3a9', 'composed'), ('6e6577', '1'), ('6f74686572', 1)]\n")

        // A set through either spelling changes the entry reads show, here and in a new store.
        store.set("changed", forKey: decomposed)
        try store.synchronize()
        XCTAssertEqual(try onDisk(), "[('63616665cc81', 'decomposed'), ('636166c3a9', 'changed'), ('6e6577', '1'), ('6f74686572', 1)]\n")
        XCTAssertEqual(store.string(forKey: composed), "changed")
        XCTAssertEqual(try makeStore("normalization").string(forKey: decomposed), "changed")

        // A removal removes every spelling; removeAll leaves nothing.
        store.removeObject(forKey: decomposed)
        try store.synchronize()
        XCTAssertEqual(try onDisk(), "[('6e6577', '1'), ('6f74686572', 1)]\n")
        XCTAssertNil(try makeStore("normalization").object(forKey: composed))
        try writeFile("{'cafe\\u0301': 'decomposed', 'caf\\u00e9': 'composed'}")
        let again = try makeStore("normalization")
        again.removeAll()
        try again.synchronize()
        XCTAssertEqual(try onDisk(), "[]\n")
        XCTAssertTrue(try makeStore("normalization").persistentDomain().isEmpty)
    }

    /// A writer removes a dead writer's temporary file (`.B.plist.tmp-` and six letters or
    /// digits, as `mkstemp` names it) and nothing else: a domain named `.B.plist.tmp-x` is
    /// stored in `.B.plist.tmp-x.plist`, which begins with B's prefix too, and was deleted by
    /// every write of B.
    func testWritersRemoveOnlyTheirOwnLeftoverTemporaryFiles() throws {
        let other = try makeStore(".B.plist.tmp-x")
        other.set("keep me", forKey: "important")
        try other.synchronize()
        let leftover = directory + "/.B.plist.tmp-AbC123"
        FileManager.default.createFile(atPath: leftover, contents: Data("dead writer".utf8))

        let store = try makeStore("B")
        store.set(1, forKey: "k")
        try store.synchronize()

        XCTAssertFalse(FileManager.default.fileExists(atPath: leftover), "the dead writer's file is removed")
        XCTAssertEqual(try foundationRead(".B.plist.tmp-x")["important"] as? String, "keep me")
        XCTAssertEqual(try makeStore(".B.plist.tmp-x").string(forKey: "important"), "keep me")
    }
}

extension PreferenceKeys {
    fileprivate static let testNightMode = Key<Bool>("NightMode", default: false)
    fileprivate static let testDeadline = Key<Date?>("MembershipDeadline", default: nil)
    fileprivate static let testTheme = Key<TestTheme>("Theme", default: .light)
}

enum TestTheme: String, PreferenceValue {
    case light, dark
}

final class TestSettings: PreferencesModel, @unchecked Sendable {
    @Preference var autoPlayVoiceOver = false
    @Preference("UIFontSize") var fontSize = 12.0
    @Preference(warnsWithoutRegisteredDefault: false) var lastOpened: Date? = nil
    @ReadOnlyPreference var serverName = "example.com"
}

/// Codable values stored as keyed archives.
final class PreferencesCodableValueTests: XCTestCase {
    struct Color: Codable, Equatable {
        var red, green, blue, alpha: Float
    }

    func testCodableValuesRoundTripAsArchivesFoundationReads() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("prefs-codable-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let preferences = try Preferences(domain: "codable", configuration: .init(directory: directory.path))
        let tint = Color(red: 0.25, green: 0.5, blue: 1, alpha: 1)
        try preferences.set(archiving: tint, forKey: "Tint")
        try preferences.synchronize()

        // A second store (as another launch would) reads it back.
        let reopened = try Preferences(domain: "codable", configuration: .init(directory: directory.path))
        XCTAssertEqual(try reopened.archivedValue(Color.self, forKey: "Tint"), tint)
        XCTAssertNil(try reopened.archivedValue(Color.self, forKey: "Missing"))

        // On disk the value is Data holding an NSKeyedArchiver archive that Foundation parses.
        let file = try Data(contentsOf: URL(fileURLWithPath: reopened.path))
        let domain = try XCTUnwrap(try PropertyListSerialization.propertyList(from: file, format: nil) as? [String: Any])
        let archive = try XCTUnwrap(domain["Tint"] as? Data)
        let envelope = try XCTUnwrap(try PropertyListSerialization.propertyList(from: archive, format: nil) as? [String: Any])
        XCTAssertEqual(envelope["$archiver"] as? String, "NSKeyedArchiver")

        // A key holding something else is a typed error, not a crash or a silent nil.
        preferences.set("not an archive", forKey: "Tint")
        XCTAssertThrowsError(try preferences.archivedValue(Color.self, forKey: "Tint")) { error in
            XCTAssertTrue(error is DecodingError, "\(error)")
        }
        preferences.set(Data([1, 2, 3]), forKey: "Tint")
        XCTAssertThrowsError(try preferences.archivedValue(Color.self, forKey: "Tint"))
        try preferences.set(archiving: Color?.none, forKey: "Tint")
        XCTAssertNil(preferences.object(forKey: "Tint"))
    }
}
