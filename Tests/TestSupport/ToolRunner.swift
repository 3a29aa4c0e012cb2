import Foundation

/// Runs the built `karchive` executable in a child process, as a user would.
public enum ToolRunner {
    /// What a run printed and how it ended.
    public struct Result: Sendable {
        public var status: Int32
        public var standardOutput: Data
        public var standardError: String
        /// Standard output as text.
        public var output: String { String(decoding: standardOutput, as: UTF8.self) }
        /// True when the process was killed by a signal (a crash), not exited.
        public var crashed: Bool
    }

    /// The `karchive` binary next to the test bundle (both live in `.build/<configuration>`).
    public static var karchiveURL: URL {
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("karchive")
        if FileManager.default.isExecutableFile(atPath: besideTests.path) { return besideTests }
        return URL(fileURLWithPath: Corpus.repositoryRoot).appendingPathComponent(".build/debug/karchive")
    }

    /// Runs `karchive` with `arguments` and `input` on standard input.
    public static func karchive(_ arguments: [String], input: Data = Data(), environment: [String: String]? = nil) throws -> Result {
        try run(karchiveURL, arguments, input: input, environment: environment)
    }

    /// Runs any executable; output and error go through temporary files so nothing can deadlock.
    public static func run(_ executable: URL, _ arguments: [String], input: Data = Data(), environment: [String: String]? = nil) throws -> Result {
        let directory = FileManager.default.temporaryDirectory
        let token = UUID().uuidString
        let inputURL = directory.appendingPathComponent("ka-in-\(token)")
        let outputURL = directory.appendingPathComponent("ka-out-\(token)")
        let errorURL = directory.appendingPathComponent("ka-err-\(token)")
        defer { for url in [inputURL, outputURL, errorURL] { try? FileManager.default.removeItem(at: url) } }
        try input.write(to: inputURL)
        _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        process.standardInput = try FileHandle(forReadingFrom: inputURL)
        process.standardOutput = try FileHandle(forWritingTo: outputURL)
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try process.run()
        process.waitUntilExit()
        return Result(
            status: process.terminationStatus,
            standardOutput: (try? Data(contentsOf: outputURL)) ?? Data(),
            standardError: String(decoding: (try? Data(contentsOf: errorURL)) ?? Data(), as: UTF8.self),
            crashed: process.terminationReason == .uncaughtSignal
        )
    }
}
