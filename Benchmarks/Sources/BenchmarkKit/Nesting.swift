import Foundation
import KeyedArchive

/// Nesting scaling: the same number of nesting levels arranged as chains of growing depth, so
/// that any cost growing with depth shows in the time per level (issue 7: flat "for nesting up
/// to the depth limit"). Foundation's keyed archiver is exponential in the depth of nested
/// arrays (peers-on-linux.md: depth 40 takes 2.6 s), so its rows stop at a small depth.
enum NestedArrays {
    /// `chains` chains of arrays nested `depth` deep, each array holding its level number and
    /// the next array (the innermost holds a number only): as Swift values and as NSArrays.
    static func make(depth: Int, chains: Int) -> (swift: [Any], foundation: NSArray) {
        var swiftChains: [Any] = []
        let foundationChains = NSMutableArray()
        for chain in 0..<chains {
            var swiftNode: [Any] = [chain]
            var foundationNode = NSArray(object: NSNumber(value: chain))
            for level in 1..<max(1, depth) {
                swiftNode = [level, swiftNode]
                foundationNode = NSArray(array: [NSNumber(value: level), foundationNode])
            }
            swiftChains.append(swiftNode)
            foundationChains.add(foundationNode)
        }
        return (swiftChains, foundationChains)
    }
}

extension Workload {
    /// Nesting: the same number of nesting levels as chains of growing depth, up to near the
    /// depth limit; the "per obj" column (per level) must stay flat. Part of the scaling runs
    /// (`--no-scaling` skips it too), with an id of its own so it can run alone.
    public static let nesting = Workload(
        id: "nesting", title: "nesting depth",
        stresses: "costs that grow with depth: time per nesting level at depths 8 ... 500 (it should stay flat)"
    ) { context in
        try context.scale.nestingDepths.filter { context.builds(seriesSize: nestingLabel(depth: $0)) }
            .flatMap { try nestingOperations(context: context, depth: $0) }.map { $0.inScalingSeries("S-nest") }
    }

    /// The nesting rows at one depth: a property list of chains (the W4 shape) read and written,
    /// and a keyed archive of nested arrays archived and unarchived. Units are nesting levels.
    static func nestingOperations(context: Context, depth: Int) throws -> [BenchmarkOperation] {
        let scale = context.scale
        let workload = nestingLabel(depth: depth)
        let chains = max(1, scale.nestingLevels / depth)
        let levels = chains * depth
        let peerWrites = depth <= scale.nestingPeerDepth
        let peerSkip = peerWrites ? nil : "peer skipped above depth \(scale.nestingPeerDepth) (super-linear in depth)"

        // Property list: Foundation writes the file (cached), as for W4. The tree is made twice
        // and the first copy held as long as the rows: it takes whatever small free blocks the
        // earlier workloads left, so the copy that is written lies in memory taken in one
        // stretch at every depth. Made once, the first depth's tree landed among the blocks the
        // peers of W2 and W5 had freed and was slower to walk: 134-145 ns a level to write at
        // depth 8 against 89-93 ns at depth 500 in full runs (91 ns with the series run alone);
        // made twice, 106 against 92 ns (session 40's second full run).
        let holeFiller = DeepWide.deep(seed: context.seed, depth: depth, chains: chains)
        let tree = DeepWide.deep(seed: context.seed, depth: depth, chains: chains)
        let foundationTree = FoundationTree.make(tree)
        let values = TreeCount.of(tree)
        let stem = "nest-\(String(context.seed, radix: 16))-\(depth)x\(chains)-v1"
        let binary = try context.cached(stem + ".bplist") { try Peer.serialize(foundationTree, format: .binary) }
        var operations = [
            BenchmarkOperation(workload, "plist read binary", check: .objects, [
                Implementation("KeyedArchive", ours: true, units: levels, bytes: binary.count, validate: {
                    try OurSide.decode(binary) == tree ? nil : "our decoded value differs from the generated tree"
                }) {
                    try OurSide.decode(binary).arrayValue?.count ?? -1
                },
                Implementation("PropertyListSerialization", units: levels, bytes: binary.count) {
                    (try Peer.deserialize(binary) as? NSArray)?.count ?? -1
                },
            ]),
            BenchmarkOperation(workload, "plist write binary", check: .bytes, [
                Implementation("KeyedArchive", ours: true, units: levels, bytes: binary.count, note: "\(values) values") {
                    try withExtendedLifetime(holeFiller) { try OurSide.encode(tree, format: .binary).count }
                },
                Implementation("PropertyListSerialization", units: levels, bytes: binary.count, skip: peerSkip) {
                    try Peer.serialize(foundationTree, format: .binary).count
                },
            ]),
        ]

        // Keyed archive of nested arrays: ours at full size, Foundation's on fewer chains.
        let ours = NestedArrays.make(depth: depth, chains: chains)
        let peerChains = min(chains, scale.nestingPeerChains)
        let peer = NestedArrays.make(depth: depth, chains: peerChains)
        let peerNote = peerChains < chains ? "peer on \(peerChains) chains" : nil
        let oursArchive = try OurSide.archiveObject(ours.swift)
        var peerArchive = Data()
        operations += [
            BenchmarkOperation(workload, "archive nested arrays", check: .bytes, [
                Implementation("KeyedArchive", ours: true, units: levels) {
                    try OurSide.archiveObject(ours.swift).count
                },
                Implementation("NSKeyedArchiver", units: peerChains * depth, note: peerNote, skip: peerSkip) {
                    Peer.keyedArchive(peer.foundation).count
                },
            ]),
            BenchmarkOperation(workload, "unarchive nested arrays", check: .objects, [
                Implementation("KeyedArchive", ours: true, units: levels, bytes: oursArchive.count, validate: {
                    try OurSide.unarchiveNestedArrays(oursArchive) == chains ? nil : "the root array does not have \(chains) chains"
                }) {
                    try OurSide.unarchiveNestedArrays(oursArchive)
                },
                Implementation("NSKeyedUnarchiver", units: peerChains * depth, note: peerNote, skip: peerSkip, prepare: {
                    peerArchive = Peer.keyedArchive(peer.foundation)
                }) {
                    (try Peer.keyedUnarchive(peerArchive, classes: []) as? NSArray)?.count ?? -1
                },
            ]),
        ]
        return operations
    }
}
