import Foundation
import KeyedArchive

/// W4 inputs: chains nested near the depth limit, and one very wide array.
enum DeepWide {
    /// A root array of `chains` chains, each `depth` levels of alternating arrays and
    /// dictionaries with a couple of scalars per level (total nesting: depth + 1).
    static func deep(seed: UInt64, depth: Int, chains: Int) -> PropertyListValue {
        var random = BenchRandom(seed: seed, stream: 5)
        var roots: [PropertyListValue] = []
        for _ in 0..<chains {
            var node: PropertyListValue = PropertyListValue(random.below(1_000))
            for level in 1..<depth {
                if level % 2 == 0 {
                    node = .array([PropertyListValue(level), node])
                } else {
                    node = .dictionary(PropertyListDictionary(stringKeys: [
                        ("level", PropertyListValue(level)), ("next", node),
                    ]))
                }
            }
            roots.append(node)
        }
        return .array(roots)
    }

    /// A flat array of `count` integers of all widths, reals and a few repeated strings.
    static func wide(seed: UInt64, count: Int) -> PropertyListValue {
        var random = BenchRandom(seed: seed, stream: 6)
        let strings = ["alpha", "beta", "gamma", "δέλτα"]
        var elements: [PropertyListValue] = []
        elements.reserveCapacity(count)
        for _ in 0..<count {
            switch random.below(8) {
            case 0: elements.append(PropertyListValue(random.below(256)))
            case 1: elements.append(PropertyListValue(random.below(65_536)))
            case 2: elements.append(PropertyListValue(Int(random.next() >> 32)))
            case 3: elements.append(PropertyListValue(Int64(bitPattern: random.next())))
            case 4, 5: elements.append(PropertyListValue(Double(random.below(1 << 40)) / 3))
            case 6: elements.append(PropertyListValue(strings[random.below(strings.count)]))
            default: elements.append(PropertyListValue(random.below(2) == 0))
            }
        }
        return .array(elements)
    }
}

extension Workload {
    /// W4: nesting near the default depth limit (512), and a wide flat array.
    public static let w4 = Workload(
        id: "W4", title: "deep and wide",
        stresses: "recursion/explicit stacks near the depth limit (deep); per-element overhead and large offset tables (wide)"
    ) { context in
        let scale = context.scale
        var operations: [BenchmarkOperation] = []
        let seed = String(context.seed, radix: 16)
        let cases: [(String, String, PropertyListValue)] = [
            ("deep d=\(scale.w4Depth + 1)", "w4-deep-\(seed)-\(scale.w4Depth)x\(scale.w4Chains)-v1",
             DeepWide.deep(seed: context.seed, depth: scale.w4Depth, chains: scale.w4Chains)),
            ("wide", "w4-wide-\(seed)-\(scale.w4WideCount)-v1", DeepWide.wide(seed: context.seed, count: scale.w4WideCount)),
        ]
        for (name, stem, tree) in cases {
            let foundation = FoundationTree.make(tree)
            let objects = TreeCount.of(tree)
            // Foundation writes deep files slowly (its uniquing hashes nested containers): cache them.
            let binary = try context.cached(stem + ".bplist") { try Peer.serialize(foundation, format: .binary) }
            let xml = try context.cached(stem + ".xml") { try Peer.serialize(foundation, format: .xml) }
            operations += [
                BenchmarkOperation("W4", "\(name) read binary", check: .objects, [
                    Implementation("KeyedArchive", ours: true, units: objects, bytes: binary.count, validate: {
                        try OurSide.decode(binary) == tree ? nil : "our decoded value differs from the generated tree"
                    }) {
                        try OurSide.decode(binary).arrayValue?.count ?? -1
                    },
                    Implementation("PropertyListSerialization", units: objects, bytes: binary.count) {
                        (try Peer.deserialize(binary) as? NSArray)?.count ?? -1
                    },
                ]),
                BenchmarkOperation("W4", "\(name) write binary", check: .bytes, [
                    Implementation("KeyedArchive", ours: true, units: objects, bytes: binary.count) {
                        try OurSide.encode(tree, format: .binary).count
                    },
                    Implementation("PropertyListSerialization", units: objects, bytes: binary.count) {
                        try Peer.serialize(foundation, format: .binary).count
                    },
                ]),
                BenchmarkOperation("W4", "\(name) read XML", check: .objects, [
                    Implementation("KeyedArchive", ours: true, units: objects, bytes: xml.count) {
                        try OurSide.decode(xml).arrayValue?.count ?? -1
                    },
                    Implementation("PropertyListSerialization", units: objects, bytes: xml.count) {
                        (try Peer.deserialize(xml) as? NSArray)?.count ?? -1
                    },
                ]),
            ]
        }
        return operations
    }
}
