import BenchmarkKit
import Foundation

/// Whole-process timings of other tools on the W3 files: libplist's plistutil, Python's
/// plistlib and our karchive, each started fresh per run (start-up included, as a user sees it).
enum External {
    struct Tool {
        var task: String
        var tool: String
        var executable: String?
        var arguments: [String]
        var input: URL
        var output: URL?
        var expectedMagic: String?
        var missing: String
    }

    static func which(_ name: String) -> String? {
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return paths.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    static func run(context: Context, benchDir: URL, karchive: String?) -> [ExternalResult] {
        let files: (binary: URL, xml: URL, objects: Int)
        do {
            files = try W3Files.make(context: context)
        } catch {
            return [ExternalResult(task: "W3", tool: "-", command: "", status: .error, message: "could not build the W3 files: \(error)", inputBytes: 0, stats: nil, outputBytes: nil)]
        }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("karchive-bench-out-\(getpid())")
        try? FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: out) }

        let plistutil = which("plistutil"), python = which("python3")
        let karchivePath = karchive ?? benchDir.deletingLastPathComponent().appendingPathComponent(".build/release/karchive").path
        let karchiveFound = FileManager.default.isExecutableFile(atPath: karchivePath) ? karchivePath : nil
        let script = """
            import plistlib, sys
            with open(sys.argv[1], 'rb') as f: value = plistlib.load(f)
            if len(sys.argv) > 2:
                with open(sys.argv[2], 'wb') as f: plistlib.dump(value, f, fmt=plistlib.FMT_XML if sys.argv[3] == 'xml' else plistlib.FMT_BINARY)
            """
        let noPlistutil = "skipped: plistutil not installed (apt-get install libplist-utils)"
        let noPython = "skipped: python3 not found"
        let noKarchive = "skipped: no karchive at \(karchivePath) (swift build -c release --product karchive, or --karchive PATH)"
        let tools = [
            Tool(task: "W3 read binary", tool: "python3 plistlib", executable: python, arguments: ["-c", script, files.binary.path],
                 input: files.binary, output: nil, expectedMagic: nil, missing: noPython),
            Tool(task: "W3 read binary", tool: "karchive lint", executable: karchiveFound, arguments: ["lint", files.binary.path],
                 input: files.binary, output: nil, expectedMagic: nil, missing: noKarchive),
            Tool(task: "W3 binary->XML", tool: "plistutil", executable: plistutil,
                 arguments: ["-i", files.binary.path, "-f", "xml", "-o", out.appendingPathComponent("pu.xml").path],
                 input: files.binary, output: out.appendingPathComponent("pu.xml"), expectedMagic: "<?xml", missing: noPlistutil),
            Tool(task: "W3 binary->XML", tool: "python3 plistlib", executable: python,
                 arguments: ["-c", script, files.binary.path, out.appendingPathComponent("py.xml").path, "xml"],
                 input: files.binary, output: out.appendingPathComponent("py.xml"), expectedMagic: "<?xml", missing: noPython),
            Tool(task: "W3 binary->XML", tool: "karchive convert", executable: karchiveFound,
                 arguments: ["convert", "--format", "xml", files.binary.path, "-o", out.appendingPathComponent("ka.xml").path],
                 input: files.binary, output: out.appendingPathComponent("ka.xml"), expectedMagic: "<?xml", missing: noKarchive),
            Tool(task: "W3 XML->binary", tool: "plistutil", executable: plistutil,
                 arguments: ["-i", files.xml.path, "-f", "bin", "-o", out.appendingPathComponent("pu.bplist").path],
                 input: files.xml, output: out.appendingPathComponent("pu.bplist"), expectedMagic: "bplist00", missing: noPlistutil),
            Tool(task: "W3 XML->binary", tool: "python3 plistlib", executable: python,
                 arguments: ["-c", script, files.xml.path, out.appendingPathComponent("py.bplist").path, "binary"],
                 input: files.xml, output: out.appendingPathComponent("py.bplist"), expectedMagic: "bplist00", missing: noPython),
            Tool(task: "W3 XML->binary", tool: "karchive convert", executable: karchiveFound,
                 arguments: ["convert", "--format", "binary", files.xml.path, "-o", out.appendingPathComponent("ka.bplist").path],
                 input: files.xml, output: out.appendingPathComponent("ka.bplist"), expectedMagic: "bplist00", missing: noKarchive),
        ]
        let repetitions = max(2, min(5, context.scale.policy.repetitions))
        // plistutil's XML reader is quadratic: cap any one run.
        let timeout: Double = context.scale.name == "full" ? 120 : 60
        // Rounds: every tool once per round, so that the machine's drift during the run falls on
        // all of them alike (A B C A B C, as the in-process workloads interleave). Each round runs
        // the tools in a new order (a fixed-seed shuffle, as the series do): on the test VM a
        // process started right after one that gave back hundreds of megabytes can take up to
        // twice as long, in the kernel, and in one fixed order `karchive convert` always followed
        // plistlib's binary -> XML (0.41-0.46 s after it against 0.21-0.23 s after `karchive
        // lint` in one series of runs; PerformanceHistory.md, session 31).
        struct Runs {
            var samples: [Double] = []
            var cpu: [Double] = []
            var failure: (ImplementationResult.Status, String)?
            var outputBytes: Int?
            var finished = false
        }
        var runs = tools.map { Runs(finished: $0.executable == nil) }
        var orderRandom = BenchRandom(seed: 0xE7_7E_12, stream: 31)
        for round in 0..<repetitions {
            var order = Array(tools.indices)
            order.shuffle(using: &orderRandom)
            context.log("  whole processes, round \(round + 1): " + order.filter { !runs[$0].finished }.map { "\(tools[$0].task) · \(tools[$0].tool)" }.joined(separator: ", "))
            for index in order where !runs[index].finished {
                let tool = tools[index]
                guard let executable = tool.executable else { continue }
                if let output = tool.output { try? FileManager.default.removeItem(at: output) }
                let outcome = ChildProcess.run(executable: executable, arguments: tool.arguments, timeout: timeout)
                let stderr = String(decoding: outcome.stderr, as: UTF8.self)
                if outcome.timedOut || outcome.signalled || outcome.status != 0 || outcome.launchError != nil {
                    runs[index].failure = stderr.contains("not implemented yet") ? (.notImplemented, "n/a (not implemented yet)") : (.error, outcome.describeFailure())
                    runs[index].finished = true
                    continue
                }
                if let output = tool.output {
                    // plistutil exits 0 even when it fails: check the output itself.
                    guard let data = try? Data(contentsOf: output), !data.isEmpty,
                        tool.expectedMagic.map({ data.prefix(64).starts(with: Array($0.utf8)) || String(decoding: data.prefix(64), as: UTF8.self).contains($0) }) ?? true
                    else {
                        runs[index].failure = (.error, "exit 0 but no valid output (\(stderr.prefix(200)))")
                        runs[index].finished = true
                        continue
                    }
                    runs[index].outputBytes = data.count
                }
                runs[index].samples.append(outcome.seconds)
                runs[index].cpu.append(outcome.cpuSeconds)
                if outcome.seconds > 30 { runs[index].finished = true }
            }
        }
        var results: [ExternalResult] = []
        for (tool, run) in zip(tools, runs) {
            let inputBytes = (try? FileManager.default.attributesOfItem(atPath: tool.input.path)[.size] as? Int) ?? 0
            let command = ([tool.executable ?? tool.tool] + tool.arguments.map { $0.contains("\n") ? "<script>" : $0 }).joined(separator: " ")
            let result: ExternalResult
            if tool.executable == nil {
                result = ExternalResult(task: tool.task, tool: tool.tool, command: command, status: .skipped, message: tool.missing, inputBytes: inputBytes, stats: nil, outputBytes: nil)
            } else if let failure = run.failure {
                result = ExternalResult(task: tool.task, tool: tool.tool, command: command, status: failure.0, message: failure.1, inputBytes: inputBytes, stats: nil, outputBytes: nil)
            } else {
                result = ExternalResult(
                    task: tool.task, tool: tool.tool, command: command, status: .ok, message: nil, inputBytes: inputBytes,
                    stats: TimingStats(samples: run.samples), outputBytes: run.outputBytes, cpuSeconds: TimingStats(samples: run.cpu).median)
            }
            context.log("  \(tool.task) · \(tool.tool): \(result.stats.map { Format.seconds($0.median) } ?? result.message ?? "")")
            results.append(result)
        }
        return results
    }
}
