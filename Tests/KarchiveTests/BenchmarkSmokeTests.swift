import Foundation
import KeyedArchiveBenchmarkKit
import XCTest

/// Runs the benchmark harness's workloads in-process at tiny sizes and checks that its numbers
/// are sane. Never a speed threshold: timings are only checked to be positive, finite and
/// ordered, and ratios to be consistent with each other.
///
/// Why in-process and not `swift run -c release --package-path Benchmarks ... --quick`: that
/// builds the whole library a second time in release (a separate package and build directory),
/// which costs CI minutes on every run for no extra coverage; the harness code is the same
/// target (`Benchmarks/Sources/BenchmarkKit`, compiled here as KeyedArchiveBenchmarkKit).
final class BenchmarkSmokeTests: XCTestCase {
    /// One shared run: the suite takes several seconds in a debug build.
    private static let results: [ImplementationResult] = {
        let context = Context(scale: .smoke)
        return Suite.run(context)
    }()

    func testEveryWorkloadProducesRows() {
        let workloads = Set(Self.results.map { $0.workload.split(separator: " ").first.map(String.init) ?? "" })
        for id in ["W1", "W2", "W3", "W4", "W5", "S-W2", "S-W3", "S-W5", "S-nest"] {
            XCTAssertTrue(workloads.contains(id), "no rows for \(id): \(workloads.sorted())")
        }
        XCTAssertFalse(Self.results.contains { $0.operation == "set-up" }, "a workload failed to build its inputs")
    }

    func testPeersRunAndTheirNumbersAreSane() {
        let peers = Self.results.filter { !$0.isOurs }
        XCTAssertGreaterThan(peers.filter { $0.status == .ok }.count, 20)
        for result in peers {
            let row = "\(result.workload) \(result.operation) \(result.implementation)"
            XCTAssertTrue(result.status == .ok || result.status == .skipped, "\(row): \(result.status) \(result.message ?? "")")
            if result.status == .skipped { XCTAssertFalse((result.message ?? "").isEmpty, "\(row): a skip needs a reason") }
            guard result.status == .ok else { continue }
            checkTimings(result, row)
        }
    }

    func testOurRowsAreMeasuredOrMarkedNotImplemented() {
        let ours = Self.results.filter(\.isOurs)
        XCTAssertFalse(ours.isEmpty)
        for result in ours {
            let row = "\(result.workload) \(result.operation) \(result.implementation)"
            switch result.status {
            case .ok:
                checkTimings(result, row)
                XCTAssertFalse(result.message?.contains("WARNING") ?? false, "\(row): \(result.message ?? "")")
            case .notImplemented:
                XCTAssertEqual(result.message, "n/a (not implemented yet)", row)
                XCTAssertNil(result.stats, row)
            case .skipped:
                XCTAssertFalse((result.message ?? "").isEmpty, row)
            case .error:
                XCTFail("\(row): \(result.message ?? "error")")
            }
        }
    }

    func testDecoderCountsMatchTheGeneratedInputs() {
        let scale = Scale.smoke
        let expectations: [(String, String, Int)] = [
            ("W2", "acyclic unarchive", scale.w2Objects),
            ("W2", "acyclic unarchive, friends in arrays", scale.w2Objects),
            ("W5", "decode", scale.w5Records),
            ("W3", "read binary", scale.w3Records),
            ("W4", "wide read binary", scale.w4WideCount),
            ("W4", "deep d=\(scale.w4Depth + 1) read binary", scale.w4Chains),
            ("W1", "unarchive", 1),
            ("W1", "unarchive, default profile", 1),
        ]
        for (workload, operation, expected) in expectations {
            let rows = Self.results.filter { $0.workload == workload && $0.operation == operation && $0.status == .ok }
            XCTAssertFalse(rows.isEmpty, "\(workload) \(operation): nothing measured")
            for row in rows {
                XCTAssertEqual(row.checkValue, expected, "\(workload) \(operation) \(row.implementation)")
            }
        }
    }

    func testRatiosAreFiniteAndConsistent() {
        let groups = Dictionary(grouping: Self.results.filter { $0.status == .ok }) { "\($0.workload)|\($0.operation)" }
        var pairs = 0
        for (_, rows) in groups {
            for a in rows {
                for (name, ratio) in a.ratios {
                    XCTAssertTrue(ratio.isFinite && ratio > 0, "\(a.operation): ratio to \(name) is \(ratio)")
                    guard let b = rows.first(where: { $0.implementation == name }), let back = b.ratios[a.implementation] else {
                        XCTFail("\(a.operation): \(name) has no ratio back to \(a.implementation)")
                        continue
                    }
                    // a/b and b/a are computed from the same medians: their product is 1.
                    XCTAssertEqual(ratio * back, 1, accuracy: 1e-9)
                    pairs += 1
                }
            }
        }
        XCTAssertGreaterThan(pairs, 0)
    }

    func testReportIsWellFormedJSONAndTheTableHasEveryRow() throws {
        var report = BenchmarkReport(mode: "smoke", seed: 1, policy: Scale.smoke.policy)
        report.results = Self.results
        let json = try report.json()
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        XCTAssertEqual((object["results"] as? [Any])?.count, Self.results.count)
        XCTAssertNotNil(object["host"] as? [String: Any])
        let back = try JSONDecoder().decode(BenchmarkReport.self, from: json)
        XCTAssertEqual(back.results.count, Self.results.count)
        XCTAssertEqual(back.results.first?.stats, Self.results.first?.stats)

        let table = Table.render(Self.results)
        // A header, a rule, one line per result, then (after an empty line) each long note once.
        let lines = table.split(separator: "\n", omittingEmptySubsequences: false)
        let longNotes = Set(Self.results.compactMap { result in
            result.note.flatMap { $0.count > Table.inlineNoteLimit ? [result.implementation, $0] : nil }
        })
        XCTAssertFalse(longNotes.isEmpty, "the suite's reference rows have long notes")
        XCTAssertEqual(lines.count, Self.results.count + 2 + 1 + longNotes.count)
        XCTAssertEqual(lines[Self.results.count + 2], "")
        // No long note widens the impl column (and so every line): each is only under the table.
        let rows = lines.prefix(Self.results.count + 2).joined(separator: "\n")
        for note in longNotes {
            XCTAssertFalse(rows.contains(note[1]), "a long note in the rows: \(note)")
            XCTAssertEqual(lines.filter { $0.hasSuffix("] \(note[0]): \(note[1])") }.count, 1, "listed once: \(note)")
        }
    }

    func testLongNotesAreListedOnceUnderTheTableAndShortOnesStayInline() {
        // Rows made by the runner, then given the notes and times to show.
        let operation = BenchmarkOperation("A", "op", check: .bytes, [Implementation("x", units: 1) { 1 }])
        let template = Runner.run(operation, policy: RunPolicy(warmups: 1, repetitions: 1, timeBoxSeconds: 10))[0]
        func row(_ workload: String, _ name: String, note: String?, runNote: String?, seconds: Double) -> ImplementationResult {
            var result = template
            (result.workload, result.implementation, result.isOurs) = (workload, name, name == "ours")
            (result.note, result.runNote, result.ratios) = (note, runNote, [:])
            (result.stats, result.secondsPerUnit, result.unitsPerSecond) = (TimingStats(samples: [seconds]), seconds, 1 / seconds)
            return result
        }
        let long = "reference: " + String(repeating: "a long description ", count: 4)
        var results = [
            row("A", "ours", note: "short note", runNote: "40 runs per sample", seconds: 1e-5),
            row("A", "floor", note: long, runNote: "90 runs per sample", seconds: 4e-6),
            row("A", "peer", note: nil, runNote: nil, seconds: 0.04),
            row("B", "floor", note: long, runNote: nil, seconds: 5e-6),
            row("B", "other floor", note: long, runNote: nil, seconds: 6e-6),
        ]
        results[2].ratios = ["ours": 1e-5 / 0.04]
        results[0].ratios = ["peer": 0.04 / 1e-5]
        let lines = Table.render(results).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertTrue(lines[2].contains("ours * (short note; 40 runs per sample)"), lines[2])
        XCTAssertTrue(lines[3].contains("floor [1] (90 runs per sample)"), lines[3])
        XCTAssertFalse(lines[3].contains("a long description"), lines[3])
        // The same implementation with the same note shares its number; another name has its own.
        XCTAssertTrue(lines[5].contains("floor [1]"), lines[5])
        XCTAssertTrue(lines[6].contains("other floor [2]"), lines[6])
        XCTAssertEqual(Array(lines.suffix(3)), ["", "[1] floor: \(long)", "[2] other floor: \(long)"])
        // A peer 4,000 times slower reads 0.00025x, not 0.00x; ours reads 4000.00x.
        XCTAssertTrue(lines[4].hasSuffix("ours 0.00025x"), lines[4])
        XCTAssertTrue(lines[2].hasSuffix("peer 4000.00x"), lines[2])
        XCTAssertEqual(Format.ratio(0.01), "0.01x")
        XCTAssertEqual(Format.ratio(0.0099), "0.0099x")
        XCTAssertEqual(Format.ratio(0.00005), "0.000050x")
        XCTAssertEqual(Format.ratio(3901.834), "3901.83x")
    }

    func testStatisticsOfKnownSamples() {
        let stats = TimingStats(samples: [5, 1, 4, 2, 3])
        XCTAssertEqual(stats.median, 3)
        XCTAssertEqual(stats.min, 1)
        XCTAssertEqual(stats.max, 5)
        XCTAssertEqual(stats.q1, 2)
        XCTAssertEqual(stats.q3, 4)
        XCTAssertEqual(TimingStats(samples: [1, 2]).median, 1.5)
    }

    func testTimeBoxStopsRepeatsAndPlaceholdersAreNotErrors() {
        var calls = 0
        let operation = BenchmarkOperation("T", "box", check: .bytes, [
            Implementation("slow", units: 1) {
                calls += 1
                Thread.sleep(forTimeInterval: 0.05)
                return 7
            },
            Implementation("missing", ours: true, units: 1) { throw NotImplementedYet("thing") },
            Implementation("broken", units: 1) { throw CocoaError(.fileNoSuchFile) },
        ])
        let results = Runner.run(operation, policy: RunPolicy(warmups: 1, repetitions: 50, timeBoxSeconds: 0.12))
        XCTAssertEqual(results[0].status, .ok)
        XCTAssertLessThan(calls, 10, "the time box did not stop the repetitions")
        XCTAssertEqual(results[0].checkValue, 7)
        XCTAssertGreaterThanOrEqual(results[0].stats?.min ?? 0, 0.05)
        XCTAssertNil(results[0].runNote)
        XCTAssertEqual(results[1].status, .notImplemented)
        XCTAssertEqual(results[2].status, .error)
        // A warm-up that alone outlasts the time box is the only sample, and the row says so.
        let once = Runner.run(
            BenchmarkOperation("T", "once", check: .bytes, [Implementation("slower", units: 1) { Thread.sleep(forTimeInterval: 0.05); return 1 }]),
            policy: RunPolicy(warmups: 1, repetitions: 5, timeBoxSeconds: 0.02))
        XCTAssertEqual(once[0].stats?.samples.count, 1)
        XCTAssertEqual(once[0].runNote, "1 run (time box)")
    }

    func testShortRunsAreTimedInBatchesAndSlowOnesAlone() {
        var fastCalls = 0, slowCalls = 0, changingCalls = 0
        let operation = BenchmarkOperation("T", "batch", check: .bytes, minimumSampleSeconds: 0.02, [
            Implementation("fast", units: 1) {
                fastCalls += 1
                Thread.sleep(forTimeInterval: 0.001)
                return 3
            },
            Implementation("slow", units: 1) {
                slowCalls += 1
                Thread.sleep(forTimeInterval: 0.03)
                return 4
            },
            Implementation("changing", units: 1) {
                changingCalls += 1
                Thread.sleep(forTimeInterval: 0.001)
                return changingCalls > 1 ? 6 : 5
            },
        ])
        let results = Runner.run(operation, policy: RunPolicy(warmups: 1, repetitions: 3, timeBoxSeconds: 10))
        XCTAssertEqual(results.map(\.status), [.ok, .ok, .ok])
        // The fast one ran in batches: many more calls than samples, each sample a time per call.
        XCTAssertGreaterThan(fastCalls, 3 * 5)
        XCTAssertEqual(results[0].stats?.samples.count, 3)
        let perCall = results[0].stats?.median ?? 0
        XCTAssertGreaterThanOrEqual(perCall, 0.001)
        XCTAssertLessThan(perCall, 0.01, "a sample recorded the batch's time, not the time per call")
        XCTAssertTrue(results[0].runNote?.hasSuffix(" runs per sample") ?? false)
        // The slow one is above the minimum: one call per sample (warm-up and 3 rounds; no
        // calibration, since its warm-up already lasted the minimum).
        XCTAssertEqual(slowCalls, 4)
        XCTAssertNil(results[1].runNote)
        XCTAssertGreaterThanOrEqual(results[1].stats?.min ?? 0, 0.03)
        // A check value that changes after the warm-up is reported, however the runs are batched.
        XCTAssertFalse(results[2].checkValueStable)
    }

    /// CPU time per unit is the work of every thread of the process, not the time on the clock:
    /// about none for a run that sleeps, about its time for one that computes on one thread,
    /// twice that for one that does the same work on each of two threads (whether or not they
    /// ran at the same time). The scaling table shows both.
    func testCPUTimeCountsWorkOnEveryThreadNotWaiting() throws {
        // A fixed amount of work on the calling thread (a dependent chain the optimizer keeps):
        // the same CPU time whether or not another thread runs at the same time.
        @Sendable func compute() -> Int {
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            for _ in 0..<400_000 { state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
            return Int(state >> 63) + 1
        }
        let sizes = [("sleeps", 0), ("one thread", 1), ("two threads", 2)].map { name, threads in
            var operation = BenchmarkOperation("T \(name)", "op", check: .bytes, [
                Implementation("ours", ours: true, units: 4) {
                    switch threads {
                    case 0:
                        Thread.sleep(forTimeInterval: 0.004)
                        return 1
                    case 1:
                        return compute()
                    default:
                        let done = DispatchSemaphore(value: 0)
                        let worker = Thread {
                            _ = compute()
                            done.signal()
                        }
                        worker.start()
                        let mine = compute()
                        done.wait()
                        return mine
                    }
                },
            ])
            operation.measuresOursFirst = true
            operation.series = "T op"
            return operation
        }
        let results = Runner.run(series: sizes, policy: RunPolicy(warmups: 1, repetitions: 5, timeBoxSeconds: 10))
        XCTAssertEqual(results.map(\.status), [.ok, .ok, .ok])
        let wall = results.map { $0.secondsPerUnit ?? 0 }, cpu = try results.map { try XCTUnwrap($0.cpuSecondsPerUnit) }
        XCTAssertLessThan(cpu[0], wall[0] / 4, "a sleeping run counted CPU time: \(cpu[0]) against \(wall[0]) s")
        XCTAssertGreaterThan(cpu[1], wall[1] / 2, "a computing run counted too little CPU time: \(cpu[1]) against \(wall[1]) s")
        XCTAssertLessThan(cpu[1], wall[1] * 1.5, "one thread counted more than the clock: \(cpu[1]) against \(wall[1]) s")
        // Twice the work, however the two threads were scheduled.
        XCTAssertGreaterThan(cpu[2], cpu[1] * 1.5, "the second thread's work was not counted: \(cpu[2]) against \(cpu[1]) s")
        // The series row lists the CPU time per object at each size after the clock's.
        let table = Table.render(series: results)
        XCTAssertTrue(table.contains("CPU time per object"), table)
        let row = try XCTUnwrap(table.split(separator: "\n").first { $0.hasPrefix("T op") }, table)
        XCTAssertTrue(row.contains(cpu.map(Format.seconds).joined(separator: ", ")), table)
    }

    /// The rounds of a series run its sizes in varying orders, so that no size always runs
    /// right after the same other one (what a run leaves behind falls on different sizes).
    /// Rounds that only started one size later kept the cyclic order: with three sizes, each
    /// size had the same predecessor within every round.
    func testASeriesVariesWhichSizeRunsBeforeWhich() {
        var calls: [String] = []
        let sizes = ["a", "b", "c"].map { size in
            var operation = BenchmarkOperation("T \(size)", "op", check: .bytes, [
                Implementation(size, ours: true, units: 1) {
                    calls.append(size)
                    // Equal times: no size settles after another (that takes a run 4x as long,
                    // 20 ms here: more than a busy machine's oversleeping).
                    Thread.sleep(forTimeInterval: 0.005)
                    return 1
                },
            ])
            operation.measuresOursFirst = true
            operation.series = "T op"
            return operation
        }
        _ = Runner.run(series: sizes, policy: RunPolicy(warmups: 1, repetitions: 6, timeBoxSeconds: 10))
        let runs = calls
        XCTAssertEqual(runs.count, 3 + 3 * 6, "one warm-up and six rounds of three sizes: \(runs)")
        var predecessors: [String: Set<String>] = [:]
        for round in 0..<6 {
            let order = Array(runs[(3 + 3 * round)..<(6 + 3 * round)])
            XCTAssertEqual(Set(order), ["a", "b", "c"], "round \(round) runs every size once: \(runs)")
            for (before, after) in zip(order, order.dropFirst()) { predecessors[after, default: []].insert(before) }
        }
        XCTAssertTrue(predecessors.values.contains { $0.count > 1 }, "every size kept its predecessor in every round: \(runs)")
    }

    /// The sizes of one scaling series are measured in the same rounds (drift between sizes
    /// cancels), ours before the peers, and ratios still compare one size's rows only.
    func testASeriesInterleavesItsSizesAndKeepsRatiosWithinEachSize() {
        var calls: [String] = []
        func implementation(_ name: String, ours: Bool, perRun: Double) -> Implementation {
            Implementation(name, ours: ours, units: 1) {
                calls.append(name)
                Thread.sleep(forTimeInterval: perRun)
                return 1
            }
        }
        // Two sizes 2x apart: well under the 4x at which a size settles after a slower one. Of
        // 5 and 10 ms, so that a busy machine's oversleeping (a few ms) cannot reach 4x: with 1
        // and 2 ms, a large run that overslept 2 ms once made the small size settle (17 calls).
        let sizes = [("small", 0.005), ("large", 0.010)].map { size, perRun in
            BenchmarkOperation("T \(size)", "op", check: .bytes, [
                implementation("peer \(size)", ours: false, perRun: perRun * 3),
                implementation("ours \(size)", ours: true, perRun: perRun),
            ])
        }
        let series = sizes.map { operation -> BenchmarkOperation in
            var operation = operation
            operation.measuresOursFirst = true
            operation.series = "T op"
            return operation
        }
        // Grouping: both sizes in one group at the first one's place; a lone operation alone.
        var lone = sizes[0]
        lone.workload = "T lone"
        let groups = Suite.seriesGroups([series[0], lone, series[1]])
        XCTAssertEqual(groups.map { $0.map(\.workload) }, [["T small", "T large"], ["T lone"]])

        let results = Runner.run(series: series, policy: RunPolicy(warmups: 1, repetitions: 3, timeBoxSeconds: 10))
        XCTAssertEqual(calls.count, 16)
        // Warm-ups in order, then rounds that each run every size once, all before any peer.
        XCTAssertEqual(calls.prefix(2).map { $0 }, ["ours small", "ours large"], "warm-ups: \(calls)")
        for round in 0..<3 {
            XCTAssertEqual(Set(calls[(2 + 2 * round)..<(4 + 2 * round)]), ["ours small", "ours large"], "round \(round): \(calls)")
        }
        XCTAssertEqual(Set(calls.suffix(8)), ["peer small", "peer large"])
        XCTAssertEqual(results.map(\.implementation), ["peer small", "ours small", "peer large", "ours large"])
        XCTAssertEqual(results.map(\.series), Array(repeating: "T op", count: 4))
        XCTAssertEqual(Set(results[1].ratios.keys), ["peer small"], "a ratio crossed sizes")
        XCTAssertEqual(Set(results[3].ratios.keys), ["peer large"])

        // The summary: one line per implementation, max / min of its time per object.
        let table = Table.render(series: results)
        let oursLine = table.split(separator: "\n").first { $0.contains("ours small") }
        XCTAssertNotNil(oursLine, table)
        let largest = results.filter { $0.implementation.hasPrefix("ours") }.compactMap(\.secondsPerUnit)
        guard largest.count == 2, let maximum = largest.max(), let minimum = largest.min() else {
            return XCTFail("ours did not run at both sizes")
        }
        // Each size is its own implementation name here, so each line has one size and no ratio.
        XCTAssertTrue(oursLine?.hasSuffix("-") ?? false, table)
        var sameName = results
        for index in sameName.indices { sameName[index].implementation = sameName[index].isOurs ? "ours" : "peer" }
        let merged = Table.render(series: sameName).split(separator: "\n").first { $0.contains(" ours ") }
        let expected = String(format: "%.2f", maximum / minimum)
        // The clock's max / min, then the CPU time's columns.
        XCTAssertTrue(merged?.contains(" \(expected) ") ?? false, "expected max / min \(expected): \(merged ?? "")")
        XCTAssertGreaterThan(maximum / minimum, 1.5, "the 10 ms size per object should be well above the 5 ms one")
    }

    /// In a series, a size after which a run four times slower came first runs untimed for a
    /// tenth of that run's time (the samples after a big run measured what that run left
    /// behind), also when a faster size ran in between; and a run that already lasts the batch
    /// minimum is not calibrated (that only repeated it).
    func testASmallSizeAfterABigOneSettlesUntimedAndLongRunsAreNotCalibrated() {
        var calls: [String] = []
        func operation(_ name: String, perRun: Double) -> BenchmarkOperation {
            var operation = BenchmarkOperation("T \(name)", "op", check: .bytes, minimumSampleSeconds: 0.01, [
                Implementation(name, ours: true, units: 1) {
                    calls.append(name)
                    Thread.sleep(forTimeInterval: perRun)
                    return 1
                },
            ])
            operation.measuresOursFirst = true
            operation.series = "T op"
            return operation
        }
        // "big" is 25x "medium" and 300x "small", far above the 4x of the rule even if sleeps
        // overshoot by several milliseconds; "small" is calibrated into batches, "medium" and
        // "big" (above the 10 ms minimum) are not.
        let results = Runner.run(
            series: [operation("small", perRun: 0.001), operation("medium", perRun: 0.012), operation("big", perRun: 0.3)],
            policy: RunPolicy(warmups: 1, repetitions: 3, timeBoxSeconds: 10))
        XCTAssertEqual(results.map { $0.stats?.samples.count }, [3, 3, 3])
        XCTAssertEqual(calls.filter { $0 == "big" }.count, 4, "one warm-up and three samples, no calibration run: \(calls)")
        // Rounds start one size later each time (small medium big, medium big small, big small
        // medium), and "big" runs between any two samples of the others: each of their three
        // samples comes after untimed runs for a tenth of big's time (30 ms: at most 30 runs of
        // "small", three of "medium", fewer when sleeps overshoot).
        let batch = results[0].runNote.flatMap { Int($0.split(separator: " ").first ?? "") } ?? 1
        let small = calls.filter { $0 == "small" }.count, medium = calls.filter { $0 == "medium" }.count
        // Warm-up and calibration (a batch), then three times settle and batch.
        XCTAssertGreaterThanOrEqual(small, 1 + batch + 3 * (batch + 1), "no settle run before a batch of \(batch): \(calls)")
        XCTAssertLessThanOrEqual(small, 1 + batch + 3 * (batch + 60), "settled far longer than a tenth of big's run: \(calls)")
        // Warm-up, then three times at least one settle run and the sample (without: 4).
        XCTAssertGreaterThanOrEqual(medium, 7, "medium: no settle run before its samples: \(calls)")
        XCTAssertLessThanOrEqual(medium, 1 + 3 * 7, "medium settled far longer than a tenth of big's run: \(calls)")
    }

    func testOursFirstMeasuresOurRowsBeforeAnyPeerRunsAndKeepsTheOrder() {
        var calls: [String] = []
        func implementation(_ name: String, ours: Bool) -> Implementation {
            Implementation(name, ours: ours, units: 1) {
                calls.append(name)
                Thread.sleep(forTimeInterval: 0.001)
                return 1
            }
        }
        var operation = BenchmarkOperation("T", "order", check: .bytes, [
            implementation("peer A", ours: false), implementation("ours B", ours: true),
            implementation("peer C", ours: false), implementation("ours D", ours: true),
        ])
        let policy = RunPolicy(warmups: 1, repetitions: 3, timeBoxSeconds: 10)
        _ = Runner.run(operation, policy: policy)
        XCTAssertEqual(calls.prefix(4), ["peer A", "ours B", "peer C", "ours D"], "interleaved by default")
        calls = []
        operation.measuresOursFirst = true
        let results = Runner.run(operation, policy: policy)
        XCTAssertEqual(calls.count, 16)
        XCTAssertEqual(Set(calls.prefix(8)), ["ours B", "ours D"], "a peer ran before our rounds were done: \(calls)")
        XCTAssertEqual(Set(calls.suffix(8)), ["peer A", "peer C"])
        XCTAssertEqual(calls.prefix(4), ["ours B", "ours D", "ours B", "ours D"], "ours are still interleaved among themselves")
        // Results come back in the operation's order, with ratios across the two groups.
        XCTAssertEqual(results.map(\.implementation), ["peer A", "ours B", "peer C", "ours D"])
        XCTAssertNotNil(results[1].ratios["peer A"])
        XCTAssertNotNil(results[0].ratios["ours D"])
    }

    /// The Codable floor rows bound what any Codable coder can reach, so they must make every
    /// call a real coder gets: every leaf of W5's records, and records of the real shape.
    func testTheCodableFloorVisitsEveryValue() throws {
        let records = Customer.make(seed: 3, count: 50)
        // Seven scalar fields, the address's three, `visits`, and each tag.
        let leaves = records.reduce(0) { $0 + 11 + $1.tags.count }
        XCTAssertEqual(try CodableFloor.NullEncoder.count(records), leaves)
        let made = try CodableFloor.ConstantDecoder.make([Customer].self, topLevelCount: 50, elementsPerArray: 2)
        XCTAssertEqual(made.count, 50)
        XCTAssertEqual(made.map(\.tags.count), Array(repeating: 2, count: 50))
    }

    /// The graph floor bounds W2's unarchives only if it makes the graph they return: the same
    /// people, names, ages and scores, each linked to the same friends, and released as they are.
    func testTheGraphFloorMakesTheUnarchivedGraph() {
        for cyclic in [false, true] {
            let spec = GraphSpec.make(seed: 5, count: 300, cyclic: cyclic)
            let (made, survivors) = GraphFloor(spec).madeGraph()
            XCTAssertEqual(made.count, 300)
            XCTAssertEqual(made.names, spec.names)
            XCTAssertEqual(made.ages, spec.ages)
            XCTAssertEqual(made.scores, spec.scores)
            XCTAssertEqual(made.friends, spec.friends)
            XCTAssertEqual(spec.friends.joined().count, cyclic ? 3 * 300 : 3 * 299, "three friends for everyone but an acyclic graph's first")
            XCTAssertEqual(survivors, 0, "cyclic: \(cyclic)")
            XCTAssertEqual(GraphFloor(spec).makeGraph(), 300)
            // The row sits in W2's unarchives and the scaling series' beside the coders it bounds.
            let kind = cyclic ? "cyclic" : "acyclic"
            for workload in ["W2", "S-W2 N=100"] {
                let rows = Self.results.filter { $0.workload == workload && $0.operation == "\(kind) unarchive" }.map(\.implementation)
                XCTAssertTrue(rows.contains("graph floor") && rows.contains("KeyedArchive NSCoding-style"), "\(workload) \(kind): \(rows)")
            }
        }
    }

    /// The walk floor bounds W2's archives only if it does the walk they must: every person
    /// copied out once and every friend identified as the person it is.
    func testTheWalkFloorIdentifiesEveryFriend() {
        for cyclic in [false, true] {
            let spec = GraphSpec.make(seed: 7, count: 400, cyclic: cyclic)
            let floor = WalkFloor(spec)
            XCTAssertEqual(floor.identifiedFriends(), spec.friends, "cyclic: \(cyclic)")
            // Names, an 8-byte age and score per person, a 4-byte index per friend.
            let bytes = spec.names.reduce(0) { $0 + $1.utf8.count } + 16 * 400 + 4 * spec.friends.joined().count
            XCTAssertEqual(floor.walk(), bytes)
            let kind = cyclic ? "cyclic" : "acyclic"
            for workload in ["W2", "S-W2 N=100"] {
                let rows = Self.results.filter { $0.workload == workload && $0.operation == "\(kind) archive" }.map(\.implementation)
                XCTAssertTrue(rows.contains("walk floor") && rows.contains("KeyedArchive NSCoding-style"), "\(workload) \(kind): \(rows)")
            }
        }
    }

    /// `--profile` of one size of a series builds that size's inputs only, and the same rows as
    /// the whole series has for it.
    func testOneSeriesSizeBuildsThatSizeOnly() throws {
        var context = Context(scale: .smoke)
        let scaling = try Workload.scaling.make(context)
        let nesting = try Workload.nesting.make(context)
        for (label, workload, all) in [("S-W5 N=1,000", Workload.scaling, scaling), ("S-W2 N=100", .scaling, scaling), ("S-nest d=64", .nesting, nesting)] {
            context.onlySeriesSize = label
            let one = try workload.make(context)
            XCTAssertEqual(Set(one.map(\.workload)), [label])
            XCTAssertEqual(one.map(\.name), all.filter { $0.workload == label }.map(\.name), label)
            XCTAssertGreaterThan(Set(all.map(\.workload)).count, 1, label)
        }
        context.onlySeriesSize = "S-W5 N=7"
        XCTAssertTrue(try Workload.scaling.make(context).isEmpty)
    }

    /// A cyclic graph is not freed by ARC: the unarchive row must cut its cycles, or every run
    /// would leak the graph (it did until session 41) and skip the teardown an acyclic row pays.
    func testTheGraphUnarchiveRowsReleaseTheirGraphs() throws {
        for cyclic in [false, true] {
            let spec = GraphSpec.make(seed: 6, count: 500, cyclic: cyclic)
            // The cyclic graph has cycles to cut: someone names themself or a later person.
            XCTAssertEqual(spec.friends.enumerated().contains { index, friends in friends.contains { $0 >= index } }, cyclic)
            let coder = try OurSide.graphCoder(for: spec)
            let data = try coder.archive()
            XCTAssertEqual(try coder.unarchive(data), 500)
            let (decoded, alive) = try coder.unarchiveSurvivors(data)
            XCTAssertEqual(decoded, 500)
            XCTAssertEqual(alive, 0, "cyclic: \(cyclic)")
        }
    }

    func testPeakMemoryInAChildStyleRun() throws {
        #if os(Linux)
        let rss = try XCTUnwrap(PeakMemory.status("VmRSS"))
        XCTAssertGreaterThan(rss, 1_000_000)
        let baseline = PeakMemory.begin()
        // Touch 64 MB so the peak must rise above the baseline.
        var buffer = [UInt8](repeating: 1, count: 64 << 20)
        buffer[buffer.count - 1] = 2
        let peak = PeakMemory.end(baseline)
        XCTAssertEqual(buffer.last, 2)
        let above = try XCTUnwrap(peak.aboveBaseline)
        XCTAssertGreaterThanOrEqual(above, 60 << 20, peak.method)
        #else
        throw XCTSkip("VmRSS/VmHWM are Linux-only")
        #endif
    }
}

private func checkTimings(_ result: ImplementationResult, _ row: String) {
    guard let stats = result.stats else {
        XCTFail("\(row): measured but no statistics")
        return
    }
    XCTAssertFalse(stats.samples.isEmpty, row)
    XCTAssertTrue(stats.samples.allSatisfy { $0 > 0 && $0.isFinite }, "\(row): \(stats.samples)")
    XCTAssertLessThanOrEqual(stats.min, stats.median, row)
    XCTAssertLessThanOrEqual(stats.median, stats.max, row)
    XCTAssertLessThanOrEqual(stats.q1, stats.q3, row)
    XCTAssertTrue(result.checkValueStable, "\(row): output changed between runs")
    if result.implementation == "Codable floor" && result.checkKind == .bytes {
        XCTAssertEqual(result.checkValue, 0, "\(row): the null Encoder writes nothing")
    } else {
        XCTAssertGreaterThan(result.checkValue ?? 0, 0, "\(row): empty output")
    }
    XCTAssertTrue((result.secondsPerUnit ?? -1) > 0, row)
    XCTAssertTrue(result.cpuSecondsPerUnit.map { $0.isFinite && $0 >= 0 } ?? false, "\(row): no CPU time")
    XCTAssertTrue(result.unitsPerSecond.map { $0.isFinite && $0 > 0 } ?? false, row)
    if result.bytes != nil { XCTAssertTrue(result.megabytesPerSecond.map { $0.isFinite && $0 > 0 } ?? false, row) }
}
