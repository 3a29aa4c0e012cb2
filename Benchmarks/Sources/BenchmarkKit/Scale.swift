import Foundation

/// Workload sizes and run policy of one harness mode.
public struct Scale: Sendable {
    /// "full", "quick" or "smoke".
    public var name: String
    /// W1: bytes of the sample's image.
    public var w1ImageBytes: Int
    /// W2: Person objects for our side.
    public var w2Objects: Int
    /// W2: Person objects for NSKeyedArchiver (it is slow; time per object is compared).
    public var w2PeerObjects: Int
    /// W3: records of the mixed plist (about 39 objects and 600 bytes each in binary: 84,000 make 50 MB).
    public var w3Records: Int
    /// W4 deep: nesting depth of each chain (the root array adds one level).
    public var w4Depth: Int
    /// W4 deep: chains under the root array.
    public var w4Chains: Int
    /// W4 wide: elements of the flat array.
    public var w4WideCount: Int
    /// W5: ten-field records.
    public var w5Records: Int
    /// Scaling runs: object counts.
    public var scalingSizes: [Int]
    /// Scaling runs: the largest size peers run at (they are too slow above it).
    public var scalingPeerCap: Int
    /// Nesting runs: chain depths (the default depth limit is 512).
    public var nestingDepths: [Int]
    /// Nesting runs: nesting levels in all chains together, the same at every depth.
    public var nestingLevels: Int
    /// Nesting runs: the deepest chains Foundation's writers run at (its keyed archiver is
    /// exponential in the depth of nested arrays), and how many chains they get there.
    public var nestingPeerDepth: Int
    /// Nesting runs: chains for Foundation's keyed archiver and unarchiver.
    public var nestingPeerChains: Int
    /// Warm-up, repetitions, time box.
    public var policy: RunPolicy

    /// The published configuration (issue 7 sizes): minutes, not seconds.
    public static let full = Scale(
        name: "full", w1ImageBytes: 256 * 1024, w2Objects: 100_000, w2PeerObjects: 100_000, w3Records: 84_000,
        w4Depth: 500, w4Chains: 50, w4WideCount: 1_000_000, w5Records: 100_000,
        scalingSizes: [1_000, 10_000, 100_000, 1_000_000], scalingPeerCap: 100_000,
        nestingDepths: [8, 16, 64, 128, 500], nestingLevels: 200_000, nestingPeerDepth: 16, nestingPeerChains: 10,
        policy: RunPolicy(warmups: 1, repetitions: 5, timeBoxSeconds: 20))

    /// `--quick`: small sizes and few repetitions, under a minute with the peers.
    public static let quick = Scale(
        name: "quick", w1ImageBytes: 256 * 1024, w2Objects: 5_000, w2PeerObjects: 5_000, w3Records: 2_000,
        w4Depth: 500, w4Chains: 4, w4WideCount: 100_000, w5Records: 10_000,
        scalingSizes: [1_000, 10_000], scalingPeerCap: 1_000,
        nestingDepths: [8, 500], nestingLevels: 4_000, nestingPeerDepth: 8, nestingPeerChains: 10,
        policy: RunPolicy(warmups: 1, repetitions: 3, timeBoxSeconds: 3))

    /// The smoke test's sizes: the quick workloads shrunk for a debug build, in-process.
    public static let smoke = Scale(
        name: "smoke", w1ImageBytes: 16 * 1024, w2Objects: 300, w2PeerObjects: 300, w3Records: 200,
        w4Depth: 500, w4Chains: 2, w4WideCount: 5_000, w5Records: 300,
        scalingSizes: [100, 1_000], scalingPeerCap: 1_000,
        nestingDepths: [8, 64], nestingLevels: 256, nestingPeerDepth: 8, nestingPeerChains: 4,
        policy: RunPolicy(warmups: 1, repetitions: 2, timeBoxSeconds: 2))
}

/// Where the harness may cache generated inputs (the 50 MB W3 file takes Foundation half a
/// minute to write), or `nil` to build everything in memory.
public struct Context: Sendable {
    /// The fixed seed every workload derives its data from.
    public var seed: UInt64
    /// Sizes and policy.
    public var scale: Scale
    /// A directory for generated input files, reused across runs and child processes.
    public var cacheDirectory: URL?
    /// Progress lines go here.
    public var log: @Sendable (String) -> Void
    /// Runs only our implementations (`--ours-only`: quick iteration while profiling; the
    /// table then has no ratios).
    public var oursOnly = false
    /// When set, the scaling and nesting workloads build the inputs of this one size of a
    /// series only ("S-W5 N=1,000", "S-nest d=64"): `--profile` of one size, which otherwise
    /// waited for every size's inputs (8 s before a 10^3 loop, most of it the 10^6 graphs).
    public var onlySeriesSize: String?

    /// Whether a series size labelled `label` is to be built (see ``onlySeriesSize``).
    func builds(seriesSize label: String) -> Bool { onlySeriesSize.map { $0 == label } ?? true }

    /// A context.
    public init(seed: UInt64 = 0x4B41_5243_4849_5645, scale: Scale, cacheDirectory: URL? = nil, log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.seed = seed
        self.scale = scale
        self.cacheDirectory = cacheDirectory
        self.log = log
    }

    /// Reads the cached file `name`, or builds it with `make` and caches it.
    public func cached(_ name: String, make: () throws -> Data) rethrows -> Data {
        guard let directory = cacheDirectory else { return try make() }
        let url = directory.appendingPathComponent(name)
        if let data = try? Data(contentsOf: url) { return data }
        let data = try make()
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try? data.write(to: url, options: .atomic)
        return data
    }
}

/// SplitMix64: small, fast and seedable, so every workload is the same on every run.
public struct BenchRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator for `seed`, mixed with `stream` so workloads do not share sequences.
    public init(seed: UInt64, stream: UInt64 = 0) { state = seed ^ (stream &* 0x9E37_79B9_7F4A_7C15) }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// An integer in `0..<bound`.
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(1, bound))) }

    /// An ASCII word of `length` letters.
    public mutating func word(_ length: Int) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ".utf8)
        return String(decoding: (0..<length).map { _ in letters[below(letters.count)] }, as: UTF8.self)
    }

    /// A string with non-ASCII scalars (Latin accents, CJK, a non-BMP emoji).
    public mutating func unicodeWord(_ pieces: Int) -> String {
        let parts = ["é", "ü", "ß", "日本", "語", "Ω", "😀", "𝄞", "a", "b", "ç", "ñ", "Ж"]
        return (0..<pieces).map { _ in parts[below(parts.count)] }.joined()
    }

    /// `count` random bytes.
    public mutating func bytes(_ count: Int) -> Data {
        var out = [UInt8](repeating: 0, count: count)
        var index = 0
        while index < count {
            var word = next()
            for _ in 0..<8 where index < count {
                out[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
        }
        return Data(out)
    }
}

/// A mutable cell shared between an encode operation and the decode operation that reads its
/// output, so that slow peers are not run once more just to make decoder input.
public final class Box<Value>: @unchecked Sendable {
    /// The stored value.
    public var value: Value?
    /// An empty box.
    public init() {}
}
