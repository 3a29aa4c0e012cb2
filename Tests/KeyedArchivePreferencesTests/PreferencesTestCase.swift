import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// Shared helpers: a fresh directory per test, stores that ignore the process arguments, and
/// the built `karchive` binary for multi-process tests.
class PreferencesTestCase: XCTestCase {
    var directory = ""

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ka-prefs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    func makeStore(
        _ domain: String = "com.example.test", arguments: [String: PropertyListValue] = [:], writeDelay: Duration? = .milliseconds(20),
        warnings: (@Sendable (String) -> Void)? = nil, sizeBudget: Int = 4 << 20
    ) throws -> Preferences {
        try Preferences(
            domain: domain,
            configuration: .init(
                directory: directory, argumentDomain: arguments, sizeBudget: sizeBudget, writeDelay: writeDelay,
                warningHandler: warnings ?? { XCTFail("unexpected warning: \($0)") }))
    }

    /// The file of a domain, decoded by Foundation (an independent binary-plist reader).
    func foundationRead(_ domain: String) throws -> [String: Any] {
        let data = try Data(contentsOf: URL(fileURLWithPath: PreferencesDirectory.path(ofDomain: domain, in: directory)))
        var format = PropertyListSerialization.PropertyListFormat.xml
        let object = try PropertyListSerialization.propertyList(from: data, options: [], format: &format)
        XCTAssertEqual(format, .binary)
        return try XCTUnwrap(object as? [String: Any])
    }

    /// The `karchive` executable next to the test bundle (built by `swift build --build-tests`).
    func karchive() throws -> URL {
        var candidates: [URL] = []
        if let first = CommandLine.arguments.first {
            candidates.append(URL(fileURLWithPath: first).deletingLastPathComponent().appendingPathComponent("karchive"))
        }
        candidates.append(Bundle.main.bundleURL.appendingPathComponent("karchive"))
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent().appendingPathComponent("karchive"))
        candidates.append(URL(fileURLWithPath: Corpus.repositoryRoot + "/.build/debug/karchive"))
        for candidate in candidates where FileManager.default.isExecutableFile(atPath: candidate.path) {
            return candidate
        }
        throw XCTSkip("karchive binary not found next to the tests (run `swift build --build-tests` first)")
    }

    /// Starts `karchive defaults --dir DIRECTORY arguments...`.
    func spawn(_ arguments: [String], output: Pipe? = nil) throws -> Process {
        let process = Process()
        process.executableURL = try karchive()
        process.arguments = ["defaults", "--dir", directory] + arguments
        process.standardOutput = output ?? FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// Runs `karchive defaults ...` to completion; returns (status, stdout, stderr).
    @discardableResult
    func run(_ arguments: [String]) throws -> (Int32, String, String) {
        let process = Process()
        process.executableURL = try karchive()
        process.arguments = ["defaults", "--dir", directory] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }
}

/// Collects warnings across threads.
final class WarningLog: @unchecked Sendable {
    private let lock = NSLock()
    private var messages: [String] = []
    var all: [String] { lock.withLock { messages } }
    lazy var handler: @Sendable (String) -> Void = { [unowned self] message in self.lock.withLock { self.messages.append(message) } }
}
