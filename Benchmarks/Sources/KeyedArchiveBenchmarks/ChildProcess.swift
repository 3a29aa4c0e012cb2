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
        /// User plus system CPU time of the child and its threads (0 when it did not start).
        var cpuSeconds: Double = 0
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
        // Not `waitUntilExit()`: on Linux, Foundation's runs an empty run loop in a busy loop,
        // which kept one of this machine's two cores at 100% through every child run and slowed
        // children that use two threads (measured: `karchive convert` 0.59 s under the harness
        // against 0.44 s from a shell). The termination handler costs nothing while waiting.
        let finished = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in finished.signal() }
        let clock = ContinuousClock()
        // Children are run one at a time, so the growth of this process's reaped-children CPU
        // time across the run is this child's.
        let cpuBefore = childrenCPUSeconds()
        let start = clock.now
        do {
            try process.run()
        } catch {
            try? out.fileHandleForWriting.close()
            try? err.fileHandleForWriting.close()
            drained.wait()
            return Outcome(status: -1, signalled: false, timedOut: false, stdout: Data(), stderr: Data(), seconds: 0, launchError: "\(error)")
        }
        var timedOut = false
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            timedOut = true
            process.terminate()
            finished.wait()
        }
        let seconds = Stopwatch.seconds(clock.now - start)
        let cpuSeconds = childrenCPUSeconds() - cpuBefore
        drained.wait()
        return Outcome(
            status: process.terminationStatus, signalled: process.terminationReason == .uncaughtSignal,
            timedOut: timedOut, stdout: outBox.data, stderr: errBox.data, seconds: seconds, cpuSeconds: cpuSeconds, launchError: nil)
    }

    /// User plus system time of all reaped children so far.
    private static func childrenCPUSeconds() -> Double {
        var usage = rusage()
        #if os(Linux)
        let children = RUSAGE_CHILDREN.rawValue
        #else
        let children = RUSAGE_CHILDREN
        #endif
        guard getrusage(children, &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
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
