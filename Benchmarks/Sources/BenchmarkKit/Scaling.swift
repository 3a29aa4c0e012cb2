import Foundation

extension Workload {
    /// The label of one size of a scaling series ("S-W2 N=10,000"), its operations' workload.
    static func scalingLabel(_ series: String, size: Int) -> String { "\(series) N=\(Format.count(size))" }

    /// The label of one depth of the nesting series ("S-nest d=64").
    static func nestingLabel(depth: Int) -> String { "S-nest d=\(depth)" }

    /// Every size label of the scaling and nesting series at `scale` (for `--profile`).
    public static func seriesLabels(_ scale: Scale) -> [String] {
        scale.scalingSizes.flatMap { size in ["S-W2", "S-W5", "S-W3"].map { scalingLabel($0, size: size) } }
            + scale.nestingDepths.map { nestingLabel(depth: $0) }
    }

    /// Scaling: W2, W5 and a W3-like plist at growing sizes; the table's "per obj" column must
    /// stay flat for a linear implementation. (Nesting depth has its own workload, ``nesting``.)
    public static let scaling = Workload(
        id: "scaling", title: "scaling",
        stresses: "super-linear behaviour: time per object at 10^3 ... 10^6 objects (it should stay flat)"
    ) { context in
        var operations: [BenchmarkOperation] = []
        func series(_ prefix: String, _ rows: [BenchmarkOperation]) -> [BenchmarkOperation] {
            // Batches of at least 20 ms: a 10^3 run lasts about a millisecond.
            rows.map { row in
                var row = row.inScalingSeries(prefix)
                row.minimumSampleSeconds = 0.02
                return row
            }
        }
        let cap = context.scale.scalingPeerCap
        for size in context.scale.scalingSizes {
            let peerSkip = size > cap ? "peers skipped above N=\(Format.count(cap)) (time)" : nil
            let (w2, w5, w3) = (scalingLabel("S-W2", size: size), scalingLabel("S-W5", size: size), scalingLabel("S-W3", size: size))
            if context.builds(seriesSize: w2) {
                // With the walk and graph floors: whether flat time per person is reachable at all.
                operations += series("S-W2", graphOperations(
                    context: context, ours: size, peer: size, workload: w2, peerSkip: peerSkip, graphFloor: true))
            }
            if context.builds(seriesSize: w5) {
                operations += series("S-W5", recordOperations(
                    seed: context.seed, count: size, peerCount: size, workload: w5, jsonToo: false, peerSkip: peerSkip))
            }
            if context.builds(seriesSize: w3) {
                // About 39 objects per W3 record.
                let inputs = try MixedInputs(context: context, records: max(1, size / 39), xmlToo: false)
                operations += series("S-W3", mixedOperations(inputs, workload: w3, full: false, peerSkip: peerSkip))
            }
        }
        return operations
    }
}
