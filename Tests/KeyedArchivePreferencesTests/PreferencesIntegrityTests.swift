import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// What the store writes it can read back, what it cannot read it does not destroy, and what it
/// tells observers and warning handlers arrives in order and once.
final class PreferencesIntegrityTests: PreferencesTestCase {
    private func nested(_ levels: Int) -> PropertyListValue {
        var value: PropertyListValue = "leaf"
        for _ in 0..<levels { value = .array([value]) }
        return value
    }

    /// The reader refuses nesting past 512 containers (the domain's dictionary is one): a value
    /// deeper than that was written, every reader then saw an empty domain, and the next write
    /// replaced the file as damaged, losing every key.
    func testAValueTooDeepForTheReadersIsRefusedAndNothingIsLost() throws {
        let log = WarningLog()
        let store = try makeStore(writeDelay: nil, warnings: log.handler)
        store.set("keep-me", forKey: "Important")
        store.set(nested(511), forKey: "Deep")
        XCTAssertEqual(log.all, [])
        store.set(nested(512), forKey: "Deep")
        XCTAssertEqual(log.all.count, 1)
        XCTAssertTrue(log.all.first?.contains("nested more than 511 deep") ?? false, "\(log.all)")
        XCTAssertEqual(store.object(forKey: "Deep"), nested(511), "the refused value replaced the stored one")
        try store.synchronize()
        // Another store (another process's view) reads every key.
        let reader = try makeStore()
        XCTAssertEqual(reader.string(forKey: "Important"), "keep-me")
        XCTAssertEqual(reader.object(forKey: "Deep"), nested(511))
        XCTAssertEqual(try foundationRead("com.example.test")["Important"] as? String, "keep-me")
    }

    /// Values no preferences file holds (NSUserDefaults refuses them) are refused: written, they
    /// made `karchive defaults read` and `export` fail for the whole domain.
    func testNullsUIDsSetsAndNonStringKeysAreRefused() throws {
        let log = WarningLog()
        let store = try makeStore(warnings: log.handler)
        store.set("before", forKey: "K")
        let refused: [PropertyListValue] = [
            .null, .uid(3), .set([1]), .array(["a", .null]),
            .dictionary(PropertyListDictionary([(PropertyListValue(1), "one")])),
        ]
        for value in refused { store.set(value, forKey: "K") }
        XCTAssertEqual(log.all.count, refused.count, "\(log.all)")
        XCTAssertEqual(store.string(forKey: "K"), "before")
        // A typed array of optionals with a nil: left out, the nil shifted every later element.
        let numbers = PreferenceKey<[Int?]>("Numbers", default: [])
        store[numbers] = [1, 2, 3]
        store[numbers] = [1, nil, 3]
        XCTAssertEqual(log.all.count, refused.count + 1, "\(log.all)")
        XCTAssertEqual(store[numbers], [1, 2, 3])
        try store.synchronize()
        XCTAssertEqual(try foundationRead("com.example.test")["K"] as? String, "before")
    }

    /// A damaged file is replaced by the next write, but its bytes are kept beside it.
    func testAReplacedUnreadableFileIsKeptBesideTheNewOne() throws {
        let store = try makeStore(writeDelay: nil)
        store.set(1, forKey: "A")
        let damaged = Data("bplist00 half of what was there".utf8)
        try damaged.write(to: URL(fileURLWithPath: store.path))
        let log = WarningLog()
        let writer = try makeStore(writeDelay: nil, warnings: log.handler)
        let start = ContinuousClock.now
        writer.set(2, forKey: "B")
        // Read again three times before it was taken as damaged.
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - start, .milliseconds(60))
        XCTAssertEqual(try foundationRead("com.example.test")["B"] as? Int, 2)
        let kept = store.path + ".unreadable"
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: kept)), damaged)
        XCTAssertTrue(log.all.contains { $0.contains("replacing unreadable preferences file") && $0.contains(kept) }, "\(log.all)")
        // Not a domain.
        XCTAssertEqual(try run(["domains"]).1.trimmingCharacters(in: .whitespacesAndNewlines), "com.example.test")
    }

    /// Another program rewriting the file in place (not by rename) leaves it half written for a
    /// moment; a write that read it then took it as damaged and replaced it with its own keys
    /// alone. The file is read again before it is taken as damaged. (The rewrite finishes 15 ms
    /// into the write's 60 ms of reading again; on a machine too busy for that, the scenario is
    /// run again, up to three times.)
    func testAFileRewrittenInPlaceDuringAWriteIsReadAgainNotReplaced() throws {
        try rewriteInPlaceDuringAWrite(firstPart: { $0.prefix($0.count / 2) })
    }

    /// The same with the file caught empty, the rewrite's first state (`cp` and editors open
    /// it with `O_TRUNC`): an empty file was taken as an empty domain at once.
    func testAFileCaughtEmptyMidRewriteIsReadAgainNotReplaced() throws {
        try rewriteInPlaceDuringAWrite(firstPart: { _ in Data() })
    }

    private func rewriteInPlaceDuringAWrite(firstPart: (Data) -> Data, file: StaticString = #filePath, line: UInt = #line) throws {
        var outcomes: [String] = []
        for round in 0..<3 {
            let domain = "com.example.inplace\(round)"
            let external = try Data(PropertyList.encode(
                .dictionary(PropertyListDictionary((0..<50).map { (PropertyListValue("Key\($0)"), PropertyListValue(Int64($0))) })),
                format: .binary))
            let log = WarningLog()
            let store = try makeStore(domain, writeDelay: .seconds(3600), warnings: log.handler)
            store.set("mine", forKey: "AppKey")
            // The first half of the rewrite is on disk.
            let path = store.path
            try firstPart(external).write(to: URL(fileURLWithPath: path))
            let written = DispatchSemaphore(value: 0)
            let failure = Protected<(any Error)?>(nil)
            DispatchQueue.global().async {
                do { try store.synchronize() } catch { failure.withLock { $0 = error } }
                written.signal()
            }
            usleep(15_000)
            // In place: the same file, opened for writing, the rest written.
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.seek(toOffset: 0)
            try handle.write(contentsOf: external)
            try handle.close()
            XCTAssertEqual(written.wait(timeout: .now() + 30), .success)
            XCTAssertNil(failure.withLock { $0 })
            let onDisk = try foundationRead(domain)
            if onDisk.count == 51 && log.all.isEmpty {
                XCTAssertEqual(onDisk["AppKey"] as? String, "mine")
                XCTAssertEqual(onDisk["Key49"] as? Int, 49)
                return
            }
            outcomes.append("round \(round): \(onDisk.count) keys, warnings \(log.all)")
        }
        XCTFail("the external keys were lost in every round: \(outcomes)", file: file, line: line)
    }

    /// `karchive defaults rename` and `import` of a value the store refuses fail and change
    /// nothing: `set` only warned, so the rename removed the old key and stored nothing, and
    /// the import half applied, both exiting 0.
    func testTheToolRefusesToRenameOrImportValuesTheStoreCannotHold() throws {
        let domain = "com.example.tool"
        let file = PreferencesDirectory.path(ofDomain: domain, in: directory)
        // A file another program wrote: the reader takes the set, the store would not write it.
        let original = try PropertyList.encode(["Old": .set([1, 2]), "Other": 1], format: .binary)
        try original.write(to: URL(fileURLWithPath: file))
        let (status, _, error) = try run(["rename", domain, "Old", "New"])
        XCTAssertEqual(status, 1, error)
        XCTAssertTrue(error.contains("cannot store New"), error)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: file)), original)

        let imported = directory + "/import.plist"
        try PropertyList.encode(["A": 1, "B": .set([3]), "C": "c"], format: .binary).write(to: URL(fileURLWithPath: imported))
        let (importStatus, _, importError) = try run(["import", domain, imported])
        XCTAssertEqual(importStatus, 1, importError)
        XCTAssertTrue(importError.contains("cannot store B"), importError)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: file)), original)
    }

    /// A thread that changed a key tells observers of changes up to its own, not of changes
    /// other threads made meanwhile: one thread delivering the backlog of another that kept
    /// setting values held a single `set` for seconds.
    func testASetTellsObserversOfChangesUpToItsOwnOnly() throws {
        let store = try makeStore(writeDelay: .seconds(3600))
        let setterThread = Protected<String?>(nil)
        let deliveredOn = Protected<[String]>([])
        let bWaiting = DispatchSemaphore(value: 0)
        let aObservation = store.observe("A") { _ in
            // While A's change is being told, thread B changes P (its change is queued after A's).
            bWaiting.signal()
            let deadline = ContinuousClock.now + .seconds(10)
            while store.object(forKey: "P") == nil, ContinuousClock.now < deadline { usleep(1000) }
        }
        let pObservation = store.observe("P") { _ in deliveredOn.withLock { $0.append("\(pthread_self())") } }
        let bDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            bWaiting.wait()
            setterThread.withLock { $0 = "\(pthread_self())" }
            store.set("p", forKey: "P")
            bDone.signal()
        }
        store.set("a", forKey: "A")
        XCTAssertEqual(bDone.wait(timeout: .now() + 20), .success)
        XCTAssertEqual(deliveredOn.withLock { $0 }, [setterThread.withLock { $0 } ?? "none"], "P's change was told on the thread that set A")
        aObservation.cancel()
        pObservation.cancel()
    }

    /// A domain too big for the readers (256 MiB) is not written; the changes stay pending and
    /// readable here, and the file keeps what it had.
    func testADomainTooLargeToReadBackIsNotWritten() throws {
        let store = try makeStore(warnings: { _ in })
        store.set("keep-me", forKey: "Important")
        try store.synchronize()
        store.set(Data(count: (256 << 20) + 1), forKey: "Big")
        XCTAssertThrowsError(try store.synchronize()) { error in
            XCTAssertTrue("\(error)".contains("a preferences file may hold"), "\(error)")
        }
        XCTAssertEqual(store.data(forKey: "Big")?.count, (256 << 20) + 1)
        let reader = try makeStore()
        XCTAssertEqual(reader.string(forKey: "Important"), "keep-me")
        XCTAssertNil(reader.object(forKey: "Big"))
        // Removing the value lets the domain be written again.
        store.removeObject(forKey: "Big")
        store.set("later", forKey: "After")
        try store.synchronize()
        XCTAssertEqual(try foundationRead("com.example.test")["After"] as? String, "later")
    }

    /// A warning handler that reads the store, told that the file is damaged, loaded the file
    /// again (its stamp not yet recorded) and was told again, until the stack overflowed.
    func testAWarningHandlerThatReadsTheStoreIsToldOnce() throws {
        let storeBox = Protected<Preferences?>(nil)
        let warnings = Protected(0)
        let store = try makeStore(warnings: { _ in
            let count = warnings.withLock { count -> Int in
                count += 1
                return count
            }
            guard count < 100 else { return }
            _ = storeBox.withLock { $0 }?.bool(forKey: "Anything")
        })
        storeBox.withLock { $0 = store }
        try Data("bplist00 damaged".utf8).write(to: URL(fileURLWithPath: store.path))
        XCTAssertFalse(store.bool(forKey: "Flag"))
        XCTAssertEqual(warnings.withLock { $0 }, 1)
        storeBox.withLock { $0 = nil }
    }

    /// Several threads setting one key: the observer's last value is the key's last value.
    /// When each thread told observers of its own change, two threads' notifications could
    /// arrive swapped, and nothing corrected the last one (6 rounds in 1,000 with 8 threads).
    func testAnObserversLastValueIsTheKeysLastValue() throws {
        let store = try makeStore(writeDelay: .seconds(3600))
        var mismatches = 0
        for round in 0..<300 {
            let last = Protected<PropertyListValue?>(nil)
            let observation = store.observe("Shared") { value in last.withLock { $0 = value } }
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for step in 0..<4 { store.set(.integer(PropertyListInteger(Int64(round * 100 + thread * 10 + step))), forKey: "Shared") }
            }
            if last.withLock({ $0 }) != store.object(forKey: "Shared") { mismatches += 1 }
            observation.cancel()
        }
        XCTAssertEqual(mismatches, 0)
    }

    /// Typed keys fall back to their default for a stored string that is not a number or a
    /// boolean's spelling (`integer(forKey:)` and `bool(forKey:)` give 0 and false, as Apple's).
    func testTypedKeysFallBackForStringsThatDoNotConvert() throws {
        let store = try makeStore()
        let port = PreferenceKey<Int>("Port", default: 8080)
        let ratio = PreferenceKey<Double>("Ratio", default: 0.5)
        let enabled = PreferenceKey<Bool>("Enabled", default: true)
        store.set("abc", forKey: "Port")
        store.set("none", forKey: "Ratio")
        store.set("maybe", forKey: "Enabled")
        XCTAssertEqual(store[port], 8080)
        XCTAssertEqual(store[ratio], 0.5)
        XCTAssertEqual(store[enabled], true)
        XCTAssertEqual(store.integer(forKey: "Port"), 0)
        XCTAssertFalse(store.bool(forKey: "Enabled"))
        // What does convert still does.
        store.set(" 42abc", forKey: "Port")
        store.set("-.5", forKey: "Ratio")
        store.set("NO", forKey: "Enabled")
        XCTAssertEqual(store[port], 42)
        XCTAssertEqual(store[ratio], -0.5)
        XCTAssertEqual(store[enabled], false)
        store.set("yes", forKey: "Enabled")
        XCTAssertEqual(store[enabled], true)
    }
}
