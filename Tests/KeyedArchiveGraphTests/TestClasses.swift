import KeyedArchive
import KeyedArchiveTestSupport

/// A class with every primitive coder operation.
final class Primitives: KeyedArchiving {
    var flag = false
    var int = 0
    var int32: Int32 = 0
    var int64: Int64 = 0
    var float: Float = 0
    var double: Double = 0
    var bytes = Data()
    var name: String?
    var dollarKey = 0

    init() {}

    func encode(with coder: KeyedArchiver) throws {
        coder.encode(flag, forKey: "flag")
        coder.encode(int, forKey: "int")
        coder.encode(int32, forKey: "int32")
        coder.encode(int64, forKey: "int64")
        coder.encode(float, forKey: "float")
        coder.encode(double, forKey: "double")
        coder.encodeBytes(bytes, forKey: "bytes")
        try coder.encode(name, forKey: "name")
        coder.encode(dollarKey, forKey: "$dollar")
    }

    init(coder: KeyedUnarchiver) throws {
        flag = try coder.decodeBool(forKey: "flag")
        int = try coder.decodeInt(forKey: "int")
        int32 = try coder.decodeInt32(forKey: "int32")
        int64 = try coder.decodeInt64(forKey: "int64")
        float = try coder.decodeFloat(forKey: "float")
        double = try coder.decodeDouble(forKey: "double")
        bytes = try coder.decodeBytes(forKey: "bytes") ?? Data()
        name = try coder.decodeObject(of: String.self, forKey: "name")
        dollarKey = try coder.decodeInt(forKey: "$dollar")
    }
}

/// A graph node: its links are decoded in phase 2, so any topology (cycles included) works.
final class Node: KeyedArchiving {
    var label: Int
    var links: [Node] = []
    var weak: Node?

    init(label: Int) { self.label = label }

    func encode(with coder: KeyedArchiver) throws {
        coder.encode(label, forKey: "label")
        try coder.encode(links, forKey: "links")
        try coder.encodeConditionalObject(weak, forKey: "weak")
    }

    init(coder: KeyedUnarchiver) throws {
        label = try coder.decodeInt(forKey: "label")
    }

    func decodeReferences(with coder: KeyedUnarchiver) throws {
        links = try coder.decodeArrayOfObjects(ofClass: Node.self, forKey: "links") ?? []
        weak = try coder.decodeObject(of: Node.self, forKey: "weak")
    }
}

extension Node {
    /// `count` nodes, each linked to `0...maximumLinks` random nodes (repeats, itself, cycles)
    /// and, with `weakChance`, conditionally to one more; the same graph for the same
    /// generator state.
    static func randomGraph(count: Int, maximumLinks: Int, weakChance: Double = 0, using random: inout SeededGenerator) -> [Node] {
        let nodes = (0..<count).map { Node(label: $0) }
        for node in nodes {
            for _ in 0..<Int.random(in: 0...maximumLinks, using: &random) {
                node.links.append(nodes[Int.random(in: 0..<count, using: &random)])
            }
            if weakChance > 0, random.chance(weakChance) { node.weak = nodes[Int.random(in: 0..<count, using: &random)] }
        }
        return nodes
    }
}

/// A node that (wrongly) decodes its link in init: a cycle through it must be a clean error.
final class EagerNode: KeyedArchiving {
    var next: EagerNode?
    init() {}
    func encode(with coder: KeyedArchiver) throws { try coder.encode(next, forKey: "next") }
    init(coder: KeyedUnarchiver) throws {
        next = try coder.decodeObject(of: EagerNode.self, forKey: "next")
    }
}

/// A singly linked list node decoded in phase 2 (long chains stay iterative).
final class ListNode: KeyedArchiving {
    var value: Int
    var next: ListNode?
    init(value: Int) { self.value = value }
    func encode(with coder: KeyedArchiver) throws {
        coder.encode(value, forKey: "v")
        try coder.encode(next, forKey: "next")
    }
    init(coder: KeyedUnarchiver) throws { value = try coder.decodeInt(forKey: "v") }
    func decodeReferences(with coder: KeyedUnarchiver) throws {
        next = try coder.decodeObject(of: ListNode.self, forKey: "next")
    }
}

class Animal: KeyedArchiving {
    var name: String
    init(name: String) { self.name = name }
    class var archivedClassName: String { "Animal" }
    class var archivedClassFallbacks: [String] { [] }
    func encode(with coder: KeyedArchiver) throws { try coder.encode(name, forKey: "name") }
    required init(coder: KeyedUnarchiver) throws {
        name = try coder.decodeObject(of: String.self, forKey: "name") ?? ""
    }
}

final class Dog: Animal {
    var goodBoy = true
    override class var archivedClassName: String { "Dog" }
    override class var archivedClassFallbacks: [String] { ["Animal"] }
    override func encode(with coder: KeyedArchiver) throws {
        try super.encode(with: coder)
        coder.encode(goodBoy, forKey: "good")
    }
    required init(coder: KeyedUnarchiver) throws {
        goodBoy = try coder.decodeBool(forKey: "good")
        try super.init(coder: coder)
    }
    init(name: String, goodBoy: Bool) {
        self.goodBoy = goodBoy
        super.init(name: name)
    }
}

/// Two keys that Swift's `String ==` calls equal but whose bytes differ ("é" precomposed and
/// decomposed), after `padding` other keys (16 or more entries switch the object to a hash index).
final class KeySpellings: KeyedArchiving {
    static let precomposed = "caf\u{E9}"
    static let decomposed = "cafe\u{301}"
    var padding: Int
    var first = 1
    var second = 2

    init(padding: Int) { self.padding = padding }

    func encode(with coder: KeyedArchiver) throws {
        coder.encode(padding, forKey: "padding")
        for index in 0..<padding { coder.encode(index, forKey: "pad\(index)") }
        coder.encode(first, forKey: Self.precomposed)
        coder.encode(second, forKey: Self.decomposed)
    }

    init(coder: KeyedUnarchiver) throws {
        padding = try coder.decodeInt(forKey: "padding")
        first = try coder.decodeInt(forKey: Self.precomposed)
        second = try coder.decodeInt(forKey: Self.decomposed)
    }
}
