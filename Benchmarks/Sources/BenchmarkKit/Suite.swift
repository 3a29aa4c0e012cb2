import Foundation

/// A named workload that builds its inputs and operations for a context.
public struct Workload: Sendable {
    /// "W1" ... "W5", "scaling", "nesting".
    public var id: String
    /// Short title.
    public var title: String
    /// What it stresses (for the docs and the table header).
    public var stresses: String
    /// Builds inputs (untimed) and returns the operations to measure.
    public var make: @Sendable (Context) throws -> [BenchmarkOperation]

    /// A workload.
    public init(id: String, title: String, stresses: String, make: @escaping @Sendable (Context) throws -> [BenchmarkOperation]) {
        self.id = id
        self.title = title
        self.stresses = stresses
        self.make = make
    }

    /// Every workload, in table order.
    ///
    /// The nesting series runs before the scaling series: built after the scaling series' 10^6
    /// runs, the first depth's input landed in the memory they left fragmented and was slower
    /// to walk (depth 8 of nesting write at 1.5-1.7x the other depths; with the inputs built in
    /// the opposite order, depth 500 was the slow one). See Docs/PerformanceHistory.md, session 13.
    public static let all: [Workload] = [.w1, .w2, .w3, .w4, .w5, .nesting, .scaling]

    /// The ids of the scaling runs, which `--no-scaling` skips and memory runs leave out.
    public static let scalingIDs: Set<String> = ["scaling", "nesting"]
}

/// Runs workloads and collects a report.
public enum Suite {
    /// Runs the workloads whose ids are in `only` (all when `nil`) and returns their results.
    /// A workload whose set-up throws is reported as one error row, and the others still run.
    public static func run(_ context: Context, only: Set<String>? = nil) -> [ImplementationResult] {
        var results: [ImplementationResult] = []
        for workload in Workload.all where only.map({ $0.contains(workload.id) }) ?? true {
            context.log("\(workload.id) \(workload.title): building inputs")
            let operations: [BenchmarkOperation]
            do {
                operations = try workload.make(context)
            } catch {
                let (status, message) = Runner.classify(error)
                results.append(ImplementationResult(
                    workload: workload.id, operation: "set-up", implementation: "-", isOurs: false, status: status,
                    message: message, note: nil, units: 0, bytes: nil, checkKind: .objects, checkValue: nil,
                    checkValueStable: true, stats: nil, secondsPerUnit: nil, unitsPerSecond: nil,
                    megabytesPerSecond: nil, ratios: [:]))
                continue
            }
            for var series in seriesGroups(operations) {
                if context.oursOnly {
                    for index in series.indices { series[index].implementations.removeAll { !$0.isOurs } }
                }
                results += Runner.run(series: series, policy: context.scale.policy, log: context.log)
            }
        }
        return results
    }

    /// `operations` grouped for measuring: the operations of one series together, at its first
    /// operation's place; an operation without a series alone.
    public static func seriesGroups(_ operations: [BenchmarkOperation]) -> [[BenchmarkOperation]] {
        var groups: [[BenchmarkOperation]] = []
        var groupOfSeries: [String: Int] = [:]
        for operation in operations {
            if let series = operation.series, let group = groupOfSeries[series] {
                groups[group].append(operation)
                continue
            }
            if let series = operation.series { groupOfSeries[series] = groups.count }
            groups.append([operation])
        }
        return groups
    }

    /// Every (workload, operation, implementation) triple, for child-process memory runs.
    public static func memoryTargets(_ context: Context, only: Set<String>?) -> [(workload: String, operation: String, implementation: String)] {
        // Names only: build tiny instances so listing is cheap.
        var tiny = context
        tiny.scale = .smoke
        tiny.cacheDirectory = nil
        var targets: [(String, String, String)] = []
        for workload in Workload.all where !Workload.scalingIDs.contains(workload.id) && (only.map { $0.contains(workload.id) } ?? true) {
            guard let operations = try? workload.make(tiny) else { continue }
            for operation in operations {
                for implementation in operation.implementations where implementation.skipReason == nil {
                    // Names that embed sizes (W4's depth) are the same at every scale.
                    targets.append((workload.id, operation.name, implementation.name))
                }
            }
        }
        return targets
    }

    /// In a child process: builds `workload`'s inputs, runs one implementation of one operation
    /// once, and reports the peak resident memory it added above the process's baseline.
    public static func childMemoryRun(_ context: Context, workload id: String, operation name: String, implementation: String) -> MemoryResult {
        var result = MemoryResult(
            workload: id, operation: name, implementation: implementation, baselineBytes: nil,
            peakAboveBaselineBytes: nil, inputBytes: nil, method: "", message: nil)
        guard let workload = Workload.all.first(where: { $0.id == id }) else {
            result.message = "no workload \(id)"
            return result
        }
        do {
            let operations = try workload.make(context)
            guard let operation = operations.first(where: { $0.name == name }),
                let target = operation.implementations.first(where: { $0.name == implementation })
            else {
                result.message = "no operation \(name) / \(implementation)"
                return result
            }
            result.inputBytes = target.bytes
            try target.prepare?()
            let baseline = PeakMemory.begin()
            result.baselineBytes = baseline.rssBytes
            _ = try target.run()
            let peak = PeakMemory.end(baseline)
            result.peakAboveBaselineBytes = peak.aboveBaseline
            result.method = peak.method
        } catch {
            result.message = Runner.classify(error).1
        }
        return result
    }
}
