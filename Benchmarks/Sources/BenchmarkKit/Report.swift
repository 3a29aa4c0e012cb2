import Foundation

/// Peak memory of one operation, measured in a child process.
public struct MemoryResult: Codable, Sendable {
    public var workload: String
    public var operation: String
    public var implementation: String
    /// Resident set size after the inputs were built, just before the operation, in bytes.
    public var baselineBytes: Int?
    /// Peak resident set size during the operation minus `baselineBytes`.
    public var peakAboveBaselineBytes: Int?
    /// The input size, for "peak / input" comparisons (W3: the file size).
    public var inputBytes: Int?
    /// How the peak was taken (VmHWM after a reset, or ru_maxrss), or why it is missing.
    public var method: String
    public var message: String?

    public init(
        workload: String, operation: String, implementation: String, baselineBytes: Int?,
        peakAboveBaselineBytes: Int?, inputBytes: Int?, method: String, message: String?
    ) {
        self.workload = workload
        self.operation = operation
        self.implementation = implementation
        self.baselineBytes = baselineBytes
        self.peakAboveBaselineBytes = peakAboveBaselineBytes
        self.inputBytes = inputBytes
        self.method = method
        self.message = message
    }
}

/// A whole-process measurement of an external tool (`plistutil`, `python3`, `karchive`).
public struct ExternalResult: Codable, Sendable {
    public var task: String
    public var tool: String
    public var command: String
    public var status: ImplementationResult.Status
    public var message: String?
    public var inputBytes: Int
    public var stats: TimingStats?
    public var megabytesPerSecond: Double?
    public var outputBytes: Int?
    /// Median CPU time (user + system, all threads) of the runs: a tool that uses two cores
    /// shows more CPU than wall time.
    public var cpuSeconds: Double?

    public init(
        task: String, tool: String, command: String, status: ImplementationResult.Status, message: String?,
        inputBytes: Int, stats: TimingStats?, outputBytes: Int?, cpuSeconds: Double? = nil
    ) {
        self.task = task
        self.tool = tool
        self.command = command
        self.status = status
        self.message = message
        self.inputBytes = inputBytes
        self.stats = stats
        self.megabytesPerSecond = stats.map { Double(inputBytes) / 1_000_000 / $0.median }
        self.outputBytes = outputBytes
        self.cpuSeconds = cpuSeconds
    }
}

/// Everything one harness run measured; written as JSON for tracking.
public struct BenchmarkReport: Codable, Sendable {
    public var date: String
    public var mode: String
    public var seed: UInt64
    public var host: HostInfo
    public var policy: RunPolicy
    public var results: [ImplementationResult]
    public var memory: [MemoryResult]
    public var external: [ExternalResult]

    public init(mode: String, seed: UInt64, policy: RunPolicy) {
        self.date = ISO8601DateFormatter().string(from: Date())
        self.mode = mode
        self.seed = seed
        self.host = HostInfo.current()
        self.policy = policy
        self.results = []
        self.memory = []
        self.external = []
    }

    /// The report as pretty-printed JSON with sorted keys.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
        return try encoder.encode(self)
    }
}

/// The machine the numbers come from.
public struct HostInfo: Codable, Sendable {
    public var cpu: String
    public var cores: Int
    public var memoryBytes: UInt64
    public var os: String

    /// The current machine (CPU model from /proc/cpuinfo where available).
    public static func current() -> HostInfo {
        var cpu = "unknown"
        if let text = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
            let line = text.split(separator: "\n").first(where: { $0.hasPrefix("model name") }),
            let colon = line.firstIndex(of: ":")
        {
            cpu = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let info = ProcessInfo.processInfo
        return HostInfo(
            cpu: cpu, cores: info.activeProcessorCount, memoryBytes: info.physicalMemory,
            os: info.operatingSystemVersionString)
    }
}

/// Number formatting for the tables.
public enum Format {
    /// "1.23 s", "45.6 ms", "789 µs", "12 ns".
    public static func seconds(_ value: Double) -> String {
        if value >= 1 { return String(format: "%.2f s", value) }
        if value >= 1e-3 { return String(format: "%.1f ms", value * 1e3) }
        if value >= 1e-6 { return String(format: "%.1f µs", value * 1e6) }
        return String(format: "%.0f ns", value * 1e9)
    }

    /// "12,345,678".
    public static func count(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (offset, character) in digits.enumerated() {
            if offset > 0 && (digits.count - offset) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return (value < 0 ? "-" : "") + out
    }

    /// "1.5 MB" style sizes (decimal megabytes), exact bytes below 10 kB.
    public static func size(_ bytes: Int) -> String {
        if bytes < 10_000 { return "\(bytes) B" }
        if bytes < 10_000_000 { return String(format: "%.1f kB", Double(bytes) / 1e3) }
        return String(format: "%.1f MB", Double(bytes) / 1e6)
    }

    /// "123k/s", "4.5M/s".
    public static func rate(_ perSecond: Double) -> String {
        if perSecond >= 1e6 { return String(format: "%.2fM/s", perSecond / 1e6) }
        if perSecond >= 1e3 { return String(format: "%.1fk/s", perSecond / 1e3) }
        return String(format: "%.1f/s", perSecond)
    }

    /// A ratio of two times: two decimals ("3.40x"), or two significant digits below 0.01 (a
    /// peer's row against ours, "0.00026x", "0.000050x"), which two decimals would show as
    /// "0.00x".
    public static func ratio(_ value: Double) -> String {
        guard value.isFinite, value > 0, value < 0.01 else { return String(format: "%.2fx", value) }
        let decimals = Swift.min(12, 1 - Int((log10(value)).rounded(.down)))
        return String(format: "%.\(decimals)fx", value)
    }

    /// Pads or truncates to `width`, left-aligned.
    public static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
}

/// Plain-text tables of a report.
public enum Table {
    /// Notes up to this many characters stay in the impl column; longer ones (a reference
    /// row's description) become numbered notes under the table, so that one long note does not
    /// widen the column, and every line with it, to a few hundred characters.
    public static let inlineNoteLimit = 40

    /// The timing table: one line per implementation, grouped by operation, then the long
    /// notes, each once, numbered as the rows refer to them ("walk floor [2]").
    public static func render(_ results: [ImplementationResult]) -> String {
        var rows: [[String]] = [[
            "workload", "impl", "N", "median", "spread (min..max)", "runs", "rate", "per obj", "output",
            "ratio (peer time / this)",
        ]]
        var notes: [String] = []
        var noteNumbers: [String: Int] = [:]
        var lastGroup = ""
        for result in results {
            let group = "\(result.workload) \(result.operation)"
            let label = group == lastGroup ? "" : group
            lastGroup = group
            var name = result.implementation + (result.isOurs ? " *" : "")
            var inline: [String] = []
            if let note = result.note, !note.isEmpty {
                if note.count > inlineNoteLimit {
                    let text = "\(result.implementation): \(note)"
                    let number = noteNumbers[text] ?? notes.count + 1
                    if number > notes.count {
                        notes.append("[\(number)] \(text)")
                        noteNumbers[text] = number
                    }
                    name += " [\(number)]"
                } else {
                    inline.append(note)
                }
            }
            if let runNote = result.runNote { inline.append(runNote) }
            if !inline.isEmpty { name += " (\(inline.joined(separator: "; ")))" }
            guard let stats = result.stats, result.status == .ok else {
                let reason = result.message ?? result.status.rawValue
                rows.append([label, name, Format.count(result.units), "-", "", "", "", "", "", reason])
                continue
            }
            var rate = result.unitsPerSecond.map { Format.rate($0) + " obj" } ?? ""
            if let mbps = result.megabytesPerSecond { rate = String(format: "%.1f MB/s", mbps) }
            let output: String
            switch (result.checkKind, result.checkValue) {
            case (.bytes, let value?): output = Format.size(value)
            case (.objects, let value?): output = Format.count(value) + " obj"
            default: output = ""
            }
            let ratios = result.ratios.sorted { $0.key < $1.key }.map { "\($0.key) \(Format.ratio($0.value))" }
            rows.append([
                label, name, Format.count(result.units), Format.seconds(stats.median),
                "\(Format.seconds(stats.min))..\(Format.seconds(stats.max))", "\(stats.samples.count)", rate,
                result.secondsPerUnit.map(Format.seconds) ?? "", output + (result.checkValueStable ? "" : " (unstable!)"),
                ratios.joined(separator: ", ") + (result.message.map { "  [\($0)]" } ?? ""),
            ])
        }
        let table = layout(rows)
        return notes.isEmpty ? table : table + "\n\n" + notes.joined(separator: "\n")
    }

    /// The scaling summary: for each series and implementation, the time per object at each
    /// size (in measuring order) and the largest over the smallest, the figure issue 7 asks to
    /// stay within 1.5x; then the same for CPU time per object (every thread's), which shows
    /// whether the work per object stays flat where a second thread shortens the larger sizes'
    /// time. Sizes an implementation did not run at (a skipped peer) are left out.
    public static func render(series results: [ImplementationResult]) -> String {
        var rows: [[String]] = [["series", "impl", "time per object at each size", "max / min", "CPU time per object", "CPU max / min"]]
        var keys: [String] = []
        var perObject: [String: [(size: String, seconds: Double, cpuSeconds: Double?)]] = [:]
        for result in results {
            guard let series = result.series, let seconds = result.secondsPerUnit, result.status == .ok else { continue }
            let key = series + "\u{0}" + result.implementation
            if perObject[key] == nil { keys.append(key) }
            perObject[key, default: []].append((sizeLabel(result.workload), seconds, result.cpuSecondsPerUnit))
        }
        for key in keys {
            guard let points = perObject[key], let timeSpread = spread(points.map(\.seconds)) else { continue }
            let parts = key.split(separator: "\u{0}", maxSplits: 1).map(String.init)
            // CPU time only when every size has it.
            let cpu = points.compactMap(\.cpuSeconds)
            let cpuSpread = cpu.count == points.count ? spread(cpu) : nil
            rows.append([
                parts.first ?? key, parts.last ?? "",
                points.map { "\($0.size) \(Format.seconds($0.seconds))" }.joined(separator: ", "),
                points.count > 1 ? String(format: "%.2f", timeSpread) : "-",
                cpuSpread == nil ? "" : cpu.map(Format.seconds).joined(separator: ", "),
                points.count > 1 ? cpuSpread.map { String(format: "%.2f", $0) } ?? "" : "-",
            ])
        }
        return layout(rows)
    }

    /// Largest over smallest of `values`, or nil for none or a non-positive one.
    static func spread(_ values: [Double]) -> Double? {
        guard let smallest = values.min(), smallest > 0, let largest = values.max() else { return nil }
        return largest / smallest
    }

    /// The size part of a scaling workload name ("S-W2 N=1,000" -> "N=1,000").
    static func sizeLabel(_ workload: String) -> String {
        workload.split(separator: " ").last.map(String.init) ?? workload
    }

    /// The memory table.
    public static func render(memory: [MemoryResult]) -> String {
        var rows: [[String]] = [["workload", "impl", "baseline RSS", "peak above baseline", "input", "peak / input", "method"]]
        for result in memory {
            let ratio: String
            if let peak = result.peakAboveBaselineBytes, let input = result.inputBytes, input > 0 {
                ratio = String(format: "%.2f", Double(peak) / Double(input))
            } else {
                ratio = ""
            }
            rows.append([
                "\(result.workload) \(result.operation)", result.implementation,
                result.baselineBytes.map(Format.size) ?? "", result.peakAboveBaselineBytes.map(Format.size) ?? "-",
                result.inputBytes.map(Format.size) ?? "", ratio, result.message ?? result.method,
            ])
        }
        return layout(rows)
    }

    /// The external (whole-process) table.
    public static func render(external: [ExternalResult]) -> String {
        var rows: [[String]] = [["task", "tool", "median", "spread", "CPU", "runs", "rate", "output"]]
        for result in external {
            guard let stats = result.stats, result.status == .ok else {
                rows.append([result.task, result.tool, "-", "", "", "", "", result.message ?? result.status.rawValue])
                continue
            }
            rows.append([
                result.task, result.tool, Format.seconds(stats.median),
                "\(Format.seconds(stats.min))..\(Format.seconds(stats.max))", result.cpuSeconds.map(Format.seconds) ?? "",
                "\(stats.samples.count)",
                result.megabytesPerSecond.map { String(format: "%.1f MB/s", $0) } ?? "",
                result.outputBytes.map(Format.size) ?? "",
            ])
        }
        return layout(rows)
    }

    static func layout(_ rows: [[String]]) -> String {
        let columns = rows.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in rows {
            // The last column is free-form and not padded.
            for (index, cell) in row.enumerated() where index < columns - 1 { widths[index] = max(widths[index], cell.count) }
        }
        var lines: [String] = []
        for (number, row) in rows.enumerated() {
            let cells = row.enumerated().map { index, cell in index < columns - 1 ? Format.pad(cell, widths[index]) : cell }
            var line = cells.joined(separator: "  ")
            while line.last == " " { line.removeLast() }
            lines.append(line)
            if number == 0 { lines.append(String(repeating: "-", count: min(160, widths.reduce(0, +) + 2 * columns + 20))) }
        }
        return lines.joined(separator: "\n")
    }
}
