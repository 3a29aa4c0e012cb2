/// A small, fast, seedable random number generator (SplitMix64), so every randomised test is
/// repeatable from the seed it prints.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator that produces the same sequence for the same seed.
    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// True with the given probability.
    public mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &self) < probability
    }

    /// `bytes` with one to three random bits flipped after the 8-byte `bplist00` header.
    public mutating func flippingBits(in bytes: [UInt8]) -> [UInt8] {
        var bytes = bytes
        guard bytes.count > 8 else { return bytes }
        for _ in 0..<Int.random(in: 1...3, using: &self) {
            let index = Int.random(in: 8..<bytes.count, using: &self)
            bytes[index] ^= 1 << UInt8.random(in: 0...7, using: &self)
        }
        return bytes
    }
}
