import Foundation

/// Runs Python snippets (for `plistlib` cross-checks) in a child process.
public enum Python {
    /// The python3 executable, or `nil` when it is not installed (tests then skip that part with
    /// a visible message).
    public static let executable: String? = {
        let search = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { "\($0)/python3" }
        return (search + ["/usr/bin/python3", "/usr/local/bin/python3"]).first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Runs `script` with `input` on standard input; returns standard output, or throws with
    /// standard error when the script fails. Input and error output go through temporary files,
    /// so large payloads cannot deadlock on full pipes.
    public static func run(_ script: String, input: Data = Data(), arguments: [String] = []) throws -> Data {
        guard let executable else { throw PythonError(message: "python3 not found") }
        let directory = FileManager.default.temporaryDirectory
        let inputURL = directory.appendingPathComponent("ka-py-in-\(UUID().uuidString)")
        let errorURL = directory.appendingPathComponent("ka-py-err-\(UUID().uuidString)")
        defer {
            try? FileManager.default.removeItem(at: inputURL)
            try? FileManager.default.removeItem(at: errorURL)
        }
        try input.write(to: inputURL)
        _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["-c", script] + arguments
        let stdout = Pipe()
        process.standardInput = try FileHandle(forReadingFrom: inputURL)
        process.standardOutput = stdout
        process.standardError = try FileHandle(forWritingTo: errorURL)
        try process.run()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let error = (try? Data(contentsOf: errorURL)) ?? Data()
            throw PythonError(message: String(decoding: error, as: UTF8.self))
        }
        return output
    }

    /// The error a failing script raised.
    public struct PythonError: Error, CustomStringConvertible {
        public var message: String
        public var description: String { message }
    }
}
