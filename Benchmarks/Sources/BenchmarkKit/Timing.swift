import Foundation

/// Summary statistics of repeated timings, in seconds.
public struct TimingStats: Codable, Sendable, Equatable {
    /// Every measured run, in the order taken (warm-up excluded unless it was the only run).
    public var samples: [Double]
    /// The median run.
    public var median: Double
    /// The fastest run.
    public var min: Double
    /// The slowest run.
    public var max: Double
    /// The first quartile (equals `min` for fewer than four runs).
    public var q1: Double
    /// The third quartile (equals `max` for fewer than four runs).
    public var q3: Double

    /// Statistics of `samples`; `samples` must not be empty.
    public init(samples: [Double]) {
        precondition(!samples.isEmpty, "statistics of no samples")
        self.samples = samples
        let sorted = samples.sorted()
        func quantile(_ q: Double) -> Double {
            // Linear interpolation between closest ranks (the usual "type 7" quantile).
            let position = q * Double(sorted.count - 1)
            let low = Int(position.rounded(.down))
            let high = Swift.min(low + 1, sorted.count - 1)
            let fraction = position - Double(low)
            return sorted[low] + (sorted[high] - sorted[low]) * fraction
        }
        median = quantile(0.5)
        min = sorted[0]
        max = sorted[sorted.count - 1]
        q1 = sorted.count < 4 ? min : quantile(0.25)
        q3 = sorted.count < 4 ? max : quantile(0.75)
    }
}

/// The monotonic clock every measurement uses.
public enum Stopwatch {
    /// Seconds taken by `body`, measured with `ContinuousClock` (monotonic, nanosecond resolution).
    @inline(never)
    public static func time<T>(_ body: () throws -> T) rethrows -> (seconds: Double, result: T) {
        let clock = ContinuousClock()
        let start = clock.now
        let result = try body()
        let elapsed = clock.now - start
        return (seconds(elapsed), result)
    }

    /// Seconds taken by `body` on the clock, as ``time(_:)`` measures them, and the process's
    /// CPU time over the same span (user and system, every thread: what the work cost, where
    /// the clock shows how long it took).
    @inline(never)
    public static func timeWithCPU<T>(_ body: () throws -> T) rethrows -> (seconds: Double, cpuSeconds: Double?, result: T) {
        let cpuStart = processCPUSeconds()
        let (seconds, result) = try time(body)
        let cpuEnd = processCPUSeconds()
        guard let cpuStart, let cpuEnd, cpuEnd >= cpuStart else { return (seconds, nil, result) }
        return (seconds, cpuEnd - cpuStart, result)
    }

    /// The CPU time the process has used so far (`CLOCK_PROCESS_CPUTIME_ID`: user and system
    /// time of all its threads, nanosecond resolution), or nil where the clock is missing.
    public static func processCPUSeconds() -> Double? {
        var now = timespec()
        guard clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now) == 0 else { return nil }
        return Double(now.tv_sec) + Double(now.tv_nsec) * 1e-9
    }

    /// A `Duration` in seconds as a `Double`.
    public static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
    }
}

/// How many times to run each implementation, and how long any one implementation may take.
public struct RunPolicy: Sendable, Codable {
    /// Untimed runs before measuring (the first run also validates the output).
    public var warmups: Int
    /// Measured rounds; in each round every implementation runs once, in turn (A B A B ...).
    public var repetitions: Int
    /// Once an implementation has spent this many seconds in total (warm-up included), it takes
    /// part in no further rounds. A warm-up run longer than this is kept as the only sample.
    public var timeBoxSeconds: Double

    /// A policy.
    public init(warmups: Int, repetitions: Int, timeBoxSeconds: Double) {
        self.warmups = warmups
        self.repetitions = repetitions
        self.timeBoxSeconds = timeBoxSeconds
    }
}

/// Thrown by our-side adapters whose library API has not landed yet.
public struct NotImplementedYet: Error, CustomStringConvertible {
    /// The API that is missing.
    public var api: String
    /// An error naming the missing API.
    public init(_ api: String) { self.api = api }
    public var description: String { "\(api) is not implemented yet" }
}
