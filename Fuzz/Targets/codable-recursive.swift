import KeyedArchive
import KeyedArchiveGraph

/// A recursive Codable model: nested structs, optionals, dictionaries, enums with payloads and
/// a class (identity is kept by the decoder).
struct FuzzTree: Codable, Equatable {
    enum Kind: Codable, Equatable {
        case leaf(Int)
        case named(String, tags: [String])
        case empty
    }
    var name: String
    var kind: Kind
    var weights: [String: Double]
    var blob: Data?
    var children: [FuzzTree]
    var shared: FuzzBox?
}

final class FuzzBox: Codable, Equatable {
    var label: String
    var numbers: [Int64]
    // Arrays of the leaves the bridge decodes on a path of its own (Int, Double, Bool, String).
    var counts: [Int] = []
    var ratios: [Double] = []
    var flags: [Bool] = []
    // NSDecimalNumber objects (since session 66).
    var amounts: [Decimal] = []
    init(label: String, numbers: [Int64], counts: [Int] = [], ratios: [Double] = [], flags: [Bool] = [], amounts: [Decimal] = []) {
        self.label = label
        self.numbers = numbers
        self.counts = counts
        self.ratios = ratios
        self.flags = flags
        self.amounts = amounts
    }
    /// Ratios by bit pattern, amounts by description (NaN is not equal to itself).
    static func == (lhs: FuzzBox, rhs: FuzzBox) -> Bool {
        lhs.label == rhs.label && lhs.numbers == rhs.numbers && lhs.counts == rhs.counts && lhs.flags == rhs.flags
            && lhs.ratios.map(\.bitPattern) == rhs.ratios.map(\.bitPattern) && lhs.amounts.map(\.description) == rhs.amounts.map(\.description)
    }
}

/// The Codable decoder on a recursive model: throw or return, never trap, hang or
/// over-allocate; what it decodes must survive an encode and a second decode unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCodableRecursive(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Data(FuzzSupport.buffer(data, size))
    guard let tree = try? KeyedUnarchiver.unarchivedObject(ofType: FuzzTree.self, from: input, limits: FuzzSupport.limits) else { return 0 }
    let again: FuzzTree
    let archive: Data
    do {
        archive = try KeyedArchiveEncoder().encode(tree)
        again = try KeyedUnarchiver.unarchivedObject(ofType: FuzzTree.self, from: archive, limits: FuzzSupport.limits)
    } catch {
        FuzzSupport.fail("re-encoding a decoded FuzzTree failed: \(error)")
    }
    if !sameTree(again, tree) {
        FuzzSupport.fail("FuzzTree round trip changed the value:\n\(tree)\n->\n\(again)")
    }
    // The encoder's kept keyed containers (one per coding-key type and nesting level) must
    // write the same bytes as containers made anew for every value.
    KeyedArchiveEncoder.keptContainerLimitOverride.value = 0
    let anew = try? KeyedArchiveEncoder().encode(tree)
    KeyedArchiveEncoder.keptContainerLimitOverride.value = nil
    if anew != archive {
        FuzzSupport.fail("kept keyed containers wrote other bytes than containers made anew for:\n\(tree)")
    }
    if FuzzSupport.checksLayoutPipeline {
        // The table's layout made on a second thread from its second entry on must write the
        // same bytes as the table laying out entries itself.
        func encoded(threshold: Int) -> Data {
            ArchiveObjectTable.pipelineThresholdOverride.value = threshold
            defer { ArchiveObjectTable.pipelineThresholdOverride.value = nil }
            do { return try KeyedArchiveEncoder().encode(tree) } catch { FuzzSupport.fail("encoding a decoded FuzzTree failed: \(error)") }
        }
        if encoded(threshold: .max) != encoded(threshold: 2) {
            FuzzSupport.fail("the pipelined layout wrote other bytes for:\n\(tree)")
        }
    }
    return 0
}

/// `==` with weights compared by bit pattern: NaN is not equal to itself, and comparing the
/// encodings instead is no help (two equal dictionaries can list their keys in different orders).
/// Recursion is bounded by the decoder's depth limit.
func sameTree(_ a: FuzzTree, _ b: FuzzTree) -> Bool {
    guard a.name == b.name, a.kind == b.kind, a.blob == b.blob, a.shared == b.shared,
          a.children.count == b.children.count, a.weights.count == b.weights.count else { return false }
    for (key, weight) in a.weights where b.weights[key]?.bitPattern != weight.bitPattern { return false }
    return zip(a.children, b.children).allSatisfy { sameTree($0, $1) }
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzCodableRecursiveInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    var made: UInt64 = 0
    FuzzSupport.generateSeedsIfAsked({ _ in
        made += 1
        var random = SeededGenerator(seed: made)
        let box = FuzzBox(
            label: "box\(made)", numbers: (0..<Int.random(in: 0...4, using: &random)).map { _ in Int64.random(in: -1000...1000, using: &random) },
            counts: (0..<Int.random(in: 0...3, using: &random)).map { _ in Int.random(in: -70_000...70_000, using: &random) },
            ratios: random.chance(0.5) ? [0.5, -2, 1e300] : [], flags: random.chance(0.5) ? [true, false] : [],
            amounts: random.chance(0.5) ? [Decimal(string: "-3.14") ?? 0, .nan, Decimal(UInt64.max), Decimal(sign: .plus, exponent: -128, significand: 7)] : [])
        func tree(_ depth: Int) -> FuzzTree {
            let kinds: [FuzzTree.Kind] = [.leaf(Int.random(in: -5...5, using: &random)), .named("n", tags: ["a", "b"]), .empty]
            return FuzzTree(
                name: "t\(depth)", kind: kinds.randomElement(using: &random) ?? .empty,
                weights: random.chance(0.5) ? ["w": 0.5, "v": -1] : [:], blob: random.chance(0.3) ? Data([1, 2, 3]) : nil,
                children: depth < 3 ? (0..<Int.random(in: 0...3, using: &random)).map { _ in tree(depth + 1) } : [],
                shared: random.chance(0.5) ? box : nil)
        }
        return [UInt8](try KeyedArchiveEncoder().encode(tree(0)))
    })
    return 0
}
