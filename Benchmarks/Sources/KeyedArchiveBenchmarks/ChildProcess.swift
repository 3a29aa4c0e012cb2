import Foundation

/// Runs another process with a timeout and captures its output.
enum ChildProcess {
    struct Outcome {
        var status: Int32
        var signalled: Bool
        var timedOut: Bool
        var stdout: Data
        var stderr: Data
        var seconds: Double
        var launchError: String?

        /// Why the child did not produce a result.
        func describeFailure() -> String {
            if let launchError { return "could not start: \(launchError)" }
            if timedOut { return String(format: "timed out after %.0f s", seconds) }
            if signalled { return "child crashed (signal \(status))" }
            let text = String(decoding: stderr.suffix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return "child exited with status \(status)" + (text.isEmpty ? "" : ": \(text)")
        }
    }

    /// This executable's path, for re-running it in child mode.
    static func selfPath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Runs `executable` and waits at most `timeout` seconds (then kills it).
    static func run(executable: String, arguments: [String], timeout: Double) -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        // Drain both pipes on their own threads so a chatty child never blocks on a full pipe.
        let outBox = DataSink(), errBox = DataSink()
        let drained = DispatchGroup()
        for (pipe, sink) in [(out, outBox), (err, errBox)] {
            drained.enter()
            DispatchQueue.global().async {
                sink.append(pipe.fileHandleForReading.readDataToEndOfFile())
                drained.leave()
            }
        }
        let clock = ContinuousClock()
        let start = clock.now
        do {
            try process.run()
        } catch {
            try? out.fileHandleForWriting.close()
            try? err.fileHandleForWriting.close()
            drained.wait()
            return Outcome(status: -1, signalled: false, timedOut: false, stdout: Data(), stderr: Data(), seconds: 0, launchError: "\(error)")
        }
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            process.waitUntilExit()
            finished.signal()
        }
        var timedOut = false
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            process.terminate()
            finished.wait()
        }
        let seconds = Stopwatch.seconds(clock.now - start)
        drained.wait()
        return Outcome(
            status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
            timedOut: timedOut, stdout: outBox.data, stderr: errBox.data, seconds: seconds, launchError: nil)
    }
}

/// A thread-safe byte accumulator for pipe readers.
final class DataSink: @unchecked Sendable {
    private let lock = NSLock()
    private var storage = Data()
    func append(_ chunk: Data) {
        lock.lock()
        storage.append(chunk)
        lock.unlock()
    }
    var data: Data {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}

import BenchmarkKit
