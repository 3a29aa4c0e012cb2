import BenchmarkKit
import Foundation

// KeyedArchiveBenchmarks: measures KeyedArchive against Foundation (and, with --external,
// libplist's plistutil, Python's plistlib and the karchive tool as whole processes).
//
//   swift run -c release --package-path Benchmarks KeyedArchiveBenchmarks [options]

let usage = """
    usage: KeyedArchiveBenchmarks [--quick] [--only W1,W2,W3,W4,W5,scaling,nesting] [--no-scaling]
                                  [--memory | --no-memory | --memory-only] [--external] [--karchive PATH]
                                  [--json FILE] [--cache DIR] [--seed N] [--ours-only] [--keep-freed-heap]

      --quick        small sizes, few repetitions (under a minute)
      --only LIST    run only these workloads (comma-separated ids)
      --no-scaling   skip the scaling runs, object counts and nesting depth (the longest part)
      --memory       measure peak RSS per operation in child processes (default in full mode)
      --no-memory    do not
      --memory-only  only the peak-memory children (no timing table)
      --external     also time plistutil, python3 plistlib and `karchive convert` as whole
                     processes on the W3 file
      --karchive P   the karchive binary (default: ../.build/release/karchive)
      --json FILE    where to write the JSON report (default: Benchmarks/results/latest.json)
      --cache DIR    cache for generated inputs (default: Benchmarks/.cache)
      --seed N       data seed (default fixed)
      --ours-only    run only KeyedArchive's rows (profiling; no ratios)
      --keep-freed-heap
                     keep freed memory in the timing process (glibc: no trimming, 32 MiB mmap
                     threshold) instead of returning it to the kernel; for every row alike
      --profile W:OPERATION:SECONDS[:IMPLEMENTATION]
                     run our implementation(s) of one operation in a loop (for perf/valgrind),
                     e.g. --profile "W5:encode:10"; W may also name one size of a series,
                     e.g. --profile "S-W2 N=10,000:acyclic archive:10:KeyedArchive Codable";
                     a named IMPLEMENTATION may also be a reference row or a peer
                     ("W2:acyclic unarchive:10:graph floor")

    """

struct Options {
    var scale = Scale.full
    var only: Set<String>?
    var oursOnly = false
    var keepFreedHeap = false
    var profile: String?
    var scaling = true
    var memory: Bool?
    var external = false
    var memoryOnly = false
    var karchive: String?
    var json: String?
    var cache: String?
    var seed: UInt64 = Context(scale: .smoke).seed
    var child: (String, String, String)?
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("KeyedArchiveBenchmarks: \(message)\n\(usage)".utf8))
    exit(2)
}

func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var index = 0
    func value() -> String {
        index += 1
        guard index < arguments.count else { fail("\(arguments[index - 1]) needs a value") }
        return arguments[index]
    }
    while index < arguments.count {
        switch arguments[index] {
        case "--quick": options.scale = .quick
        case "--smoke": options.scale = .smoke
        case "--only": options.only = Set(value().split(separator: ",").map(String.init))
        case "--no-scaling": options.scaling = false
        case "--ours-only": options.oursOnly = true
        case "--keep-freed-heap": options.keepFreedHeap = true
        case "--profile": options.profile = value()
        case "--memory": options.memory = true
        case "--no-memory": options.memory = false
        case "--external": options.external = true
        case "--memory-only": options.memoryOnly = true
        case "--karchive": options.karchive = value()
        case "--json": options.json = value()
        case "--cache": options.cache = value()
        case "--seed":
            guard let seed = UInt64(value()) else { fail("--seed needs an unsigned integer") }
            options.seed = seed
        case "--child":
            let workload = value(), operation = value(), implementation = value()
            options.child = (workload, operation, implementation)
        case "-h", "--help":
            print(usage)
            exit(0)
        default: fail("unknown option \(arguments[index])")
        }
        index += 1
    }
    return options
}

/// Benchmarks/, found from the executable (Benchmarks/.build/<config>/KeyedArchiveBenchmarks)
/// or the working directory.
func benchmarksDirectory() -> URL {
    let executable = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
    var candidate = executable.deletingLastPathComponent()
    for _ in 0..<4 {
        if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("Sources/KeyedArchiveBenchmarks").path) { return candidate }
        candidate = candidate.deletingLastPathComponent()
    }
    let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
    if FileManager.default.fileExists(atPath: cwd.appendingPathComponent("Benchmarks/Package.swift").path) {
        return cwd.appendingPathComponent("Benchmarks")
    }
    return cwd
}

func log(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

let options = parse(Array(CommandLine.arguments.dropFirst()))
let benchDir = benchmarksDirectory()
let cacheDir = URL(fileURLWithPath: options.cache ?? benchDir.appendingPathComponent(".cache").path)

if let (workload, operation, implementation) = options.child.map({ ($0.0, $0.1, $0.2) }) {
    // Child mode: one operation, one implementation, one run; a JSON line on stdout.
    let context = Context(seed: options.seed, scale: options.scale, cacheDirectory: cacheDir)
    let result = Suite.childMemoryRun(context, workload: workload, operation: operation, implementation: implementation)
    let data = (try? JSONEncoder().encode(result)) ?? Data("{}".utf8)
    FileHandle.standardOutput.write(data + Data("\n".utf8))
    exit(0)
}

if let profile = options.profile {
    // Profiling mode: our implementation(s) of one operation, repeated, nothing printed per run.
    let parts = profile.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
    guard 3...4 ~= parts.count, let seconds = Double(parts[2]) else { fail("--profile needs WORKLOAD:OPERATION:SECONDS[:IMPLEMENTATION]") }
    // A workload id, or the label of one size of a series ("S-W2 N=10,000", "S-nest d=64"):
    // then only that size's inputs are built.
    let seriesWorkload = parts[0].hasPrefix("S-nest") ? Workload.nesting : parts[0].hasPrefix("S-") ? Workload.scaling : nil
    guard let workload = seriesWorkload ?? Workload.all.first(where: { $0.id == parts[0] }) else { fail("--profile: no workload \(parts[0])") }
    if seriesWorkload != nil {
        // Checked first: only that size is built, and an unknown one would build nothing.
        let labels = Workload.seriesLabels(options.scale)
        guard labels.contains(parts[0]) else { fail("--profile: no series size \(parts[0]) (one of: \(labels.joined(separator: ", ")))") }
    }
    var context = Context(seed: options.seed, scale: options.scale, cacheDirectory: cacheDir, log: { log($0) })
    if seriesWorkload != nil { context.onlySeriesSize = parts[0] }
    do {
        var matched = 0
        for operation in try workload.make(context)
        where operation.name == parts[1] && (seriesWorkload == nil || operation.workload == parts[0]) {
            for implementation in operation.implementations
            // Without a name, ours only; a name may pick a reference row or a peer too.
            where (implementation.isOurs || parts.count == 4) && implementation.skipReason == nil && (parts.count == 3 || implementation.name == parts[3]) {
                matched += 1
                try implementation.prepare?()
                let clock = ContinuousClock()
                let start = clock.now
                var runs = 0
                repeat {
                    _ = try implementation.run()
                    runs += 1
                } while clock.now - start < .seconds(seconds)
                log("\(implementation.name): \(runs) runs, \((clock.now - start) / runs) each")
            }
        }
        if matched == 0 { fail("--profile: no implementation matches \(profile) (without a name: none of ours)") }
    } catch {
        fail("\(error)")
    }
    exit(0)
}

if options.keepFreedHeap { log("keep freed heap: \(PeakMemory.keepFreedHeap() ? "set" : "not available")") }

var only = options.only
if let named = only {
    // A workload the harness does not have measured nothing and said nothing.
    let known = Set(Workload.all.map(\.id))
    let unknown = named.subtracting(known).sorted()
    if !unknown.isEmpty { fail("--only: no workload \(unknown.joined(separator: ", ")) (one of: \(known.sorted().joined(separator: ", ")))") }
}
if !options.scaling {
    only = (only ?? Set(Workload.all.map(\.id))).subtracting(Workload.scalingIDs)
}
var context = Context(seed: options.seed, scale: options.scale, cacheDirectory: cacheDir, log: { log($0) })
context.oursOnly = options.oursOnly
var report = BenchmarkReport(mode: options.scale.name, seed: options.seed, policy: options.scale.policy)
log("KeyedArchive benchmarks, mode \(options.scale.name), \(report.host.cpu), \(report.host.cores) cores")

if !options.memoryOnly { report.results = Suite.run(context, only: only) }
if !options.memoryOnly {
    print("\n## Timings (median of interleaved runs, except series rows: ours first, then the peers; * = KeyedArchive; ratio = that implementation's time per object / this one's)\n")
    print(Table.render(report.results))
    if report.results.contains(where: { $0.series != nil }) {
        print("\n## Scaling: time per object by size (sizes of a series measured in the same rounds; target: max / min within 1.5)\n")
        print(Table.render(series: report.results))
    }
}

if options.memoryOnly || (options.memory ?? (options.scale.name == "full")) {
    log("\nPeak memory: one child process per operation and implementation")
    // Only what was measured above: a placeholder or skipped implementation has no peak to show.
    let measured = Set(report.results.filter { $0.status == .ok }.map { "\($0.workload)|\($0.operation)|\($0.implementation)" })
    for target in Suite.memoryTargets(context, only: only)
    where options.memoryOnly || measured.contains("\(target.workload)|\(target.operation)|\(target.implementation)") {
        var arguments = ["--child", target.workload, target.operation, target.implementation, "--seed", String(options.seed), "--cache", cacheDir.path]
        if options.scale.name != "full" { arguments.append("--\(options.scale.name)") }
        let outcome = ChildProcess.run(executable: ChildProcess.selfPath(), arguments: arguments, timeout: 600)
        var result = MemoryResult(
            workload: target.workload, operation: target.operation, implementation: target.implementation,
            baselineBytes: nil, peakAboveBaselineBytes: nil, inputBytes: nil, method: "child process", message: nil)
        if let line = outcome.stdout.split(separator: UInt8(ascii: "\n")).last,
            let decoded = try? JSONDecoder().decode(MemoryResult.self, from: Data(line))
        {
            result = decoded
        } else {
            result.message = outcome.describeFailure()
        }
        log("  \(target.workload) \(target.operation) · \(target.implementation): \(result.peakAboveBaselineBytes.map(Format.size) ?? result.message ?? "?")")
        report.memory.append(result)
    }
    print("\n## Peak memory above the baseline (child process per operation)\n")
    print(Table.render(memory: report.memory))
}

if options.external {
    report.external = External.run(context: context, benchDir: benchDir, karchive: options.karchive)
    print("\n## Whole processes on the W3 file (\(Format.count(options.scale.w3Records)) records)\n")
    print(Table.render(external: report.external))
}

let jsonURL = URL(fileURLWithPath: options.json ?? benchDir.appendingPathComponent("results/latest.json").path)
do {
    try FileManager.default.createDirectory(at: jsonURL.deletingLastPathComponent(), withIntermediateDirectories: true)
    try report.json().write(to: jsonURL, options: .atomic)
    log("\nJSON report: \(jsonURL.path)")
} catch {
    log("could not write \(jsonURL.path): \(error)")
    exit(1)
}
