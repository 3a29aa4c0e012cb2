import Foundation

/// One way of doing an operation: ours or a peer's.
public struct Implementation {
    /// Short name shown in the table ("KeyedArchive", "PropertyListSerialization", ...).
    public var name: String
    /// True for this package's code; ratios are reported as "peer time / this time".
    public var isOurs: Bool
    /// Objects (records, elements) processed by one run; ratios compare time per unit, so a peer
    /// may run a smaller instance of the same workload and still be compared fairly.
    public var units: Int
    /// Bytes one run reads, when MB/s is meaningful: the input's size for readers and
    /// converters; for writers the size of the reference (Foundation's) file of the same value,
    /// the same for every implementation of the row, so MB/s compares as the ratios do (it is
    /// not the row's own output, which its check value gives).
    public var bytes: Int?
    /// Shown in the table, e.g. "peer at N=2,000".
    public var note: String?
    /// When set, the implementation is not run and the table shows this reason.
    public var skipReason: String?
    /// Untimed set-up run once before the warm-up (e.g. a decoder's input made by the encoder
    /// operation, when that operation did not run in this process).
    public var prepare: (() throws -> Void)?
    /// Untimed check after the warm-up; returns a warning (e.g. "output differs from the input")
    /// that the table shows beside the timing.
    public var validate: (() throws -> String?)?
    /// Does the work once and returns a check value: output bytes for encoders, a count of
    /// decoded objects for decoders. Every run must return the same value.
    public var run: () throws -> Int

    /// An implementation.
    public init(
        _ name: String, ours: Bool = false, units: Int, bytes: Int? = nil, note: String? = nil,
        skip: String? = nil, prepare: (() throws -> Void)? = nil, validate: (() throws -> String?)? = nil,
        run: @escaping () throws -> Int
    ) {
        self.prepare = prepare
        self.validate = validate
        self.name = name
        self.isOurs = ours
        self.units = units
        self.bytes = bytes
        self.note = note
        self.skipReason = skip
        self.run = run
    }
}

/// What a check value counts.
public enum CheckValueKind: String, Codable, Sendable {
    /// Bytes written.
    case bytes
    /// Objects decoded.
    case objects
}

/// One row group of the table: the same operation done by ours and the peers.
public struct BenchmarkOperation {
    /// Workload id, "W1" ... "W5" or "scaling".
    public var workload: String
    /// What is done, e.g. "read binary".
    public var name: String
    /// What the check values count.
    public var checkKind: CheckValueKind
    /// The implementations, run interleaved.
    public var implementations: [Implementation]
    /// When set, every sample of an implementation whose runs are shorter than this repeats the
    /// run back to back until the batch lasts about this long, and records the batch's time per
    /// run. For operations of tens of microseconds: one lone run after another implementation's
    /// measures the heap that implementation left (pages the allocator returned to the kernel
    /// must be faulted in again) more than the operation itself.
    public var minimumSampleSeconds: Double?
    /// When true, our implementations are measured first (warm-up and all rounds), then the
    /// peers, instead of all of them interleaved. For the scaling and nesting rows, whose subject
    /// is how our time per object changes with size: interleaved, each of our runs followed a
    /// peer's and paid for the heap it left (a peer that frees hundreds of megabytes makes the
    /// next run fault its memory in again), which made our rows grow with the peer's work.
    public var measuresOursFirst = false
    /// Operations that share a series (one scaling row at its sizes, one nesting row at its
    /// depths) are measured together by ``Runner/run(series:policy:log:)``: their rounds
    /// interleave across sizes, so the machine's drift over the minutes a series takes affects
    /// every size alike instead of deciding which size looks slowest.
    public var series: String?

    /// The same operation as a size of the scaling or nesting series `prefix` (its series is
    /// `prefix` and its name), with ``measuresOursFirst`` set: only our rows' own sizes come
    /// before and after each of our runs.
    func inScalingSeries(_ prefix: String) -> BenchmarkOperation {
        var operation = self
        operation.measuresOursFirst = true
        operation.series = "\(prefix) \(name)"
        return operation
    }

    /// An operation.
    public init(
        _ workload: String, _ name: String, check: CheckValueKind, minimumSampleSeconds: Double? = nil,
        _ implementations: [Implementation]
    ) {
        self.workload = workload
        self.name = name
        self.checkKind = check
        self.minimumSampleSeconds = minimumSampleSeconds
        self.implementations = implementations
    }
}

/// The measured outcome of one implementation of one operation.
public struct ImplementationResult: Codable, Sendable {
    /// How the run ended.
    public enum Status: String, Codable, Sendable {
        /// Measured.
        case ok
        /// Our API is still a placeholder or missing.
        case notImplemented = "not-implemented"
        /// Not run, for the reason in `message` (e.g. the peer crashes on this input).
        case skipped
        /// Threw an unexpected error.
        case error
    }

    public var workload: String
    public var operation: String
    public var implementation: String
    public var isOurs: Bool
    public var status: Status
    /// The reason for a skip, the error, or a warning about the output.
    public var message: String?
    /// The implementation's own note (``Implementation/note``): what the row is.
    public var note: String?
    /// How it was timed, when not one run per sample: "N runs per sample" (a batch, for
    /// operations shorter than the minimum sample) or "1 run (time box)".
    public var runNote: String? = nil
    public var units: Int
    public var bytes: Int?
    public var checkKind: CheckValueKind
    /// Output bytes (encoders) or decoded objects (decoders) of the first run.
    public var checkValue: Int?
    /// False when some run returned a different check value than the first.
    public var checkValueStable: Bool
    public var stats: TimingStats?
    public var secondsPerUnit: Double?
    public var unitsPerSecond: Double?
    public var megabytesPerSecond: Double?
    /// For each other measured implementation P of the same operation: P's median time per unit
    /// divided by this one's (above 1: this one is faster).
    public var ratios: [String: Double]
    /// The operation's ``BenchmarkOperation/series``.
    public var series: String? = nil
    /// The median CPU time per unit (user and system time of every thread of the process over
    /// each sample, divided by its runs and units): the work done, where ``secondsPerUnit`` is
    /// the time taken. Above ``secondsPerUnit`` when a second thread helped. Nil when the
    /// process's CPU clock could not be read.
    public var cpuSecondsPerUnit: Double? = nil
}

/// Runs operations with warm-up, interleaved repetitions and time boxes.
public enum Runner {
    /// Measures every implementation of `operation` under `policy`. `log` receives progress lines.
    public static func run(
        _ operation: BenchmarkOperation, policy: RunPolicy, log: (String) -> Void = { _ in }
    ) -> [ImplementationResult] {
        run(series: [operation], policy: policy, log: log)
    }

    /// Measures `operations` together: the rounds of all their implementations interleave, so
    /// drift of the machine affects each operation alike (the sizes of one scaling series).
    /// With ``BenchmarkOperation/measuresOursFirst`` set on all of them, our implementations of
    /// every operation are measured first, then the peers'. Ratios compare implementations of
    /// the same operation only. Results come back in operation order, then implementation order.
    public static func run(
        series operations: [BenchmarkOperation], policy: RunPolicy, log: (String) -> Void = { _ in }
    ) -> [ImplementationResult] {
        let entries = operations.enumerated().flatMap { number, operation in
            operation.implementations.map { Entry(operationNumber: number, operation: operation, implementation: $0) }
        }
        var results: [ImplementationResult]
        if !operations.isEmpty, operations.allSatisfy(\.measuresOursFirst) {
            // Ours (warm-up and rounds), then the peers: none of our runs follows a peer's.
            var ours = measure(entries.filter(\.implementation.isOurs), policy: policy, log: log)[...]
            var peers = measure(entries.filter { !$0.implementation.isOurs }, policy: policy, log: log)[...]
            results = entries.compactMap { $0.implementation.isOurs ? ours.popFirst() : peers.popFirst() }
        } else {
            results = measure(entries, policy: policy, log: log)
        }
        for index in results.indices {
            guard let mine = results[index].secondsPerUnit, mine > 0 else { continue }
            for other in results.indices where other != index && entries[other].operationNumber == entries[index].operationNumber {
                if let theirs = results[other].secondsPerUnit, theirs > 0 {
                    results[index].ratios[results[other].implementation] = theirs / mine
                }
            }
        }
        return results
    }

    /// One implementation of one operation of a series.
    private struct Entry {
        var operationNumber: Int
        var operation: BenchmarkOperation
        var implementation: Implementation
    }

    /// Warm-up, interleaved rounds and statistics of every entry, in order; no ratios.
    private static func measure(_ entries: [Entry], policy: RunPolicy, log: (String) -> Void) -> [ImplementationResult] {
        var results = entries.map { entry in
            let (operation, implementation) = (entry.operation, entry.implementation)
            return ImplementationResult(
                workload: operation.workload, operation: operation.name, implementation: implementation.name,
                isOurs: implementation.isOurs, status: .ok, message: implementation.skipReason,
                note: implementation.note, units: implementation.units, bytes: implementation.bytes,
                checkKind: operation.checkKind, checkValue: nil, checkValueStable: true, stats: nil,
                secondsPerUnit: nil, unitsPerSecond: nil, megabytesPerSecond: nil, ratios: [:], series: operation.series)
        }
        var samples = [[Double]](repeating: [], count: results.count)
        // The CPU time of each sample, per run (nil once one could not be read).
        var cpuSamples = [[Double]?](repeating: [], count: results.count)
        var spent = [Double](repeating: 0, count: results.count)
        var active = [Bool](repeating: true, count: results.count)
        var batchSizes = [Int](repeating: 1, count: results.count)
        // The time of each entry's last run (per run, for batches), and the slowest run of any
        // other entry since each entry's own last run.
        var runSeconds = [Double](repeating: 0, count: results.count)
        var slowestSince = [Double](repeating: 0, count: results.count)
        func ran(_ index: Int) {
            for other in slowestSince.indices where other != index {
                slowestSince[other] = Swift.max(slowestSince[other], runSeconds[index])
            }
            slowestSince[index] = 0
        }

        // Warm-up (and validation): a run that throws takes the implementation out.
        for (index, entry) in entries.enumerated() {
            let (operation, implementation) = (entry.operation, entry.implementation)
            if let reason = implementation.skipReason {
                results[index].status = .skipped
                results[index].message = reason
                active[index] = false
                continue
            }
            for _ in 0..<Swift.max(1, policy.warmups) {
                do {
                    try implementation.prepare?()
                    let (seconds, cpuSeconds, value) = try Stopwatch.timeWithCPU(implementation.run)
                    spent[index] += seconds
                    runSeconds[index] = seconds
                    results[index].checkValue = value
                    if seconds >= policy.timeBoxSeconds {
                        // Too slow to repeat: the warm-up is the only sample.
                        samples[index] = [seconds]
                        cpuSamples[index] = cpuSeconds.map { [$0] }
                        results[index].runNote = "1 run (time box)"
                        active[index] = false
                        break
                    }
                } catch {
                    (results[index].status, results[index].message) = classify(error)
                    active[index] = false
                    break
                }
            }
            ran(index)
            // A run that already lasts the minimum is its own sample: calibrating would only
            // repeat it (a 10^6 scaling run: seconds spent for nothing, and a sample fewer).
            if results[index].status == .ok, active[index], let minimum = operation.minimumSampleSeconds, runSeconds[index] < minimum {
                do {
                    let (batch, seconds) = try runBackToBack(implementation.run, forAtLeast: minimum)
                    spent[index] += seconds
                    batchSizes[index] = batch
                    if batch > 1 { results[index].runNote = "\(batch) runs per sample" }
                } catch {
                    (results[index].status, results[index].message) = classify(error)
                    active[index] = false
                }
            }
            if results[index].status == .ok, let validate = implementation.validate {
                do {
                    if let warning = try validate() { results[index].message = join(results[index].message, "WARNING: \(warning)") }
                } catch {
                    results[index].message = join(results[index].message, "WARNING: validation threw \(error)")
                }
            }
            log("  \(operation.workload) \(operation.name) · \(implementation.name): \(describeWarmup(results[index], spent[index]))")
        }

        // Measured rounds, interleaved A B A B so that drift affects every implementation alike.
        // In a series (ours, then the peers, each measured here on their own: see
        // `run(series:policy:log:)`), each round runs the sizes in a new order (a fixed-seed shuffle), so that
        // no size always runs right after the same other one: whatever a run leaves for the
        // next (the settle run handles the large effects) falls on different sizes in turn.
        // (Until session 13 each round only started one entry later, 1 2 3 4 then 2 3 4 1:
        // the same cyclic order, so each size but one per round kept its predecessor.)
        let shuffles = entries.contains { $0.operation.series != nil }
        var orderRandom = BenchRandom(seed: 0x5E51_E5, stream: 13)
        for _ in 0..<policy.repetitions {
            var order = Array(entries.indices)
            if shuffles { order.shuffle(using: &orderRandom) }
            for index in order {
                let entry = entries[index]
                guard active[index] else { continue }
                let implementation = entry.implementation
                if spent[index] >= policy.timeBoxSeconds && !samples[index].isEmpty {
                    active[index] = false
                    continue
                }
                do {
                    // In a series, a size first runs untimed, at least once and for a tenth of
                    // that run's time (at most a second), when a run four times slower (another
                    // size's, or another implementation's) came since its last sample: otherwise
                    // its sample measures what that run left behind, not the size it belongs to.
                    // A W5 decode of 1,000 records took 15x its time right after the 10^6 one;
                    // one of 10,000 records, which came after those, 3x: glibc coalesces the
                    // millions of small blocks the 10^6 run freed only at the next large
                    // allocation in each malloc arena (a `malloc_trim` right after the 10^6 run
                    // takes 0.27 s and leaves the next run fast). Four times, well below the
                    // tenfold step between scaling sizes (so the next smaller size always
                    // settles, whatever its time per object) and well above the spread of the
                    // nesting depths (which never do).
                    if entry.operation.series != nil, slowestSince[index] > 0, slowestSince[index] >= 4 * runSeconds[index] {
                        let (_, seconds) = try runBackToBack(implementation.run, forAtLeast: Swift.min(1, slowestSince[index] / 10))
                        spent[index] += seconds
                    }
                    let batch = batchSizes[index]
                    let expected = results[index].checkValue
                    let (seconds, cpuSeconds, stable) = try Stopwatch.timeWithCPU {
                        var stable = true
                        for _ in 0..<batch where try implementation.run() != expected { stable = false }
                        return stable
                    }
                    samples[index].append(seconds / Double(batch))
                    if let cpuSeconds { cpuSamples[index]?.append(cpuSeconds / Double(batch)) } else { cpuSamples[index] = nil }
                    runSeconds[index] = seconds / Double(batch)
                    ran(index)
                    spent[index] += seconds
                    if !stable { results[index].checkValueStable = false }
                } catch {
                    results[index].status = .error
                    results[index].message = "error on a repeated run: \(error)"
                    active[index] = false
                }
            }
        }

        for index in results.indices where results[index].status == .ok {
            guard !samples[index].isEmpty else { continue }
            let stats = TimingStats(samples: samples[index])
            results[index].stats = stats
            let units = Double(Swift.max(1, results[index].units))
            results[index].secondsPerUnit = stats.median / units
            if let cpu = cpuSamples[index], cpu.count == samples[index].count {
                results[index].cpuSecondsPerUnit = TimingStats(samples: cpu).median / units
            }
            results[index].unitsPerSecond = stats.median > 0 ? units / stats.median : nil
            if let bytes = results[index].bytes, stats.median > 0 {
                results[index].megabytesPerSecond = Double(bytes) / 1_000_000 / stats.median
            }
            if !results[index].checkValueStable {
                results[index].message = join(results[index].message, "check value changed between runs")
            }
        }
        return results
    }

    /// Runs `run` back to back (at least once, at most 100,000 times) until `minimumSeconds` have
    /// passed; returns how many runs that took and the seconds spent. Finds a batch size, and
    /// settles a series size after a much slower one.
    static func runBackToBack(_ run: () throws -> Int, forAtLeast minimumSeconds: Double) throws -> (runs: Int, seconds: Double) {
        var runs = 0
        let (seconds, _) = try Stopwatch.time {
            let clock = ContinuousClock()
            let start = clock.now
            repeat {
                _ = try run()
                runs += 1
            } while Stopwatch.seconds(clock.now - start) < minimumSeconds && runs < 100_000
        }
        return (runs, seconds)
    }

    /// A placeholder or missing API is "not implemented yet"; anything else is an error.
    public static func classify(_ error: Error) -> (ImplementationResult.Status, String) {
        let text = String(describing: error)
        if error is NotImplementedYet || text.contains("not implemented yet") {
            return (.notImplemented, "n/a (not implemented yet)")
        }
        return (.error, "error: \(text)")
    }

    private static func describeWarmup(_ result: ImplementationResult, _ seconds: Double) -> String {
        switch result.status {
        case .ok: return "warm-up \(Format.seconds(seconds))"
        default: return result.message ?? result.status.rawValue
        }
    }

    static func join(_ first: String?, _ second: String) -> String {
        guard let first, !first.isEmpty else { return second }
        return first + "; " + second
    }
}
