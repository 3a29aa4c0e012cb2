import Foundation

extension Workload {
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
            let label = "N=\(Format.count(size))"
            let peerSkip = size > cap ? "peers skipped above N=\(Format.count(cap)) (time)" : nil
            operations += series("S-W2", graphOperations(context: context, ours: size, peer: size, workload: "S-W2 \(label)", peerSkip: peerSkip))
            operations += series("S-W5", recordOperations(
                seed: context.seed, count: size, peerCount: size, workload: "S-W5 \(label)", jsonToo: false, peerSkip: peerSkip))
            // About 39 objects per W3 record.
            let inputs = try MixedInputs(context: context, records: max(1, size / 39), xmlToo: false)
            operations += series("S-W3", mixedOperations(inputs, workload: "S-W3 \(label)", full: false, peerSkip: peerSkip))
        }
        return operations
    }
}
