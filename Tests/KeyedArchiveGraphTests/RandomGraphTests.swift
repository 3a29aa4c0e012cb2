import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// Seeded random object graphs with sharing, self-references and cycles round-trip with
/// identity and topology intact (checked with ===, through a bijection of the nodes).
final class RandomGraphTests: XCTestCase {
    func testRandomGraphsRoundTripWithIdentityAndTopology() throws {
        for seed in UInt64(1)...60 {
            var random = SeededGenerator(seed: seed)
            let count = Int.random(in: 1...60, using: &random)
            let nodes = Node.randomGraph(count: count, maximumLinks: 4, weakChance: 0.3, using: &random)
            let format: PropertyListFormat = random.chance(0.5) ? .binary : .xml
            let data = try KeyedArchiver.archivedData(withRootObject: nodes[0], format: format)
            let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Node.self, from: data), "seed \(seed)")
            try assertSameTopology(nodes[0], decoded, seed: seed)
            for node in nodes { node.links = []; node.weak = nil }  // break cycles
        }
    }

    /// Walks both graphs in step: the mapping original -> decoded must be a bijection that
    /// preserves labels, link order and conditional links (present iff the target is reachable
    /// through unconditional links).
    private func assertSameTopology(_ original: Node, _ decoded: Node, seed: UInt64) throws {
        // Reachable through unconditional links.
        var reachable: Set<ObjectIdentifier> = [ObjectIdentifier(original)]
        var stack = [original]
        while let node = stack.popLast() {
            for link in node.links where reachable.insert(ObjectIdentifier(link)).inserted { stack.append(link) }
        }
        var forward: [ObjectIdentifier: ObjectIdentifier] = [:]
        var backward: [ObjectIdentifier: ObjectIdentifier] = [:]
        var work = [(original, decoded)]
        func pair(_ a: Node, _ b: Node) -> Bool {
            if let mapped = forward[ObjectIdentifier(a)] { return mapped == ObjectIdentifier(b) }
            guard backward[ObjectIdentifier(b)] == nil else { return false }
            forward[ObjectIdentifier(a)] = ObjectIdentifier(b)
            backward[ObjectIdentifier(b)] = ObjectIdentifier(a)
            work.append((a, b))
            return true
        }
        forward[ObjectIdentifier(original)] = ObjectIdentifier(decoded)
        backward[ObjectIdentifier(decoded)] = ObjectIdentifier(original)
        while let (a, b) = work.popLast() {
            XCTAssertEqual(a.label, b.label, "seed \(seed)")
            XCTAssertEqual(a.links.count, b.links.count, "seed \(seed) node \(a.label)")
            for (x, y) in zip(a.links, b.links) {
                XCTAssertTrue(pair(x, y), "seed \(seed): link \(a.label)->\(x.label) maps inconsistently")
            }
            if let weak = a.weak, reachable.contains(ObjectIdentifier(weak)) {
                let other = try XCTUnwrap(b.weak, "seed \(seed): conditional link lost")
                XCTAssertTrue(pair(weak, other), "seed \(seed): conditional link maps inconsistently")
            } else {
                XCTAssertNil(b.weak, "seed \(seed): conditional link to an unencoded object must be nil")
            }
        }
        XCTAssertEqual(forward.count, reachable.count, "seed \(seed)")
    }

    func testGenericObjectGraphsWithCyclesReArchiveLosslessly() throws {
        for seed in UInt64(100)...120 {
            var random = SeededGenerator(seed: seed)
            let count = Int.random(in: 1...30, using: &random)
            let nodes = Node.randomGraph(count: count, maximumLinks: 3, using: &random)
            let data = try KeyedArchiver.archivedData(withRootObject: nodes[0], format: .binary)
            // Nobody allows Node: it decodes as ArchivedObject, a cyclic graph of inert objects.
            let generic = try KeyedUnarchiver.unarchivedObject(
                ofClasses: [.archivedObject, .array, .number], from: data)
            XCTAssertTrue(generic is ArchivedObject)
            let again = try KeyedArchiver.archivedData(withRootObject: generic, format: .binary)
            // The re-archive decodes as Node with the same topology as the original.
            let decoded = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Node.self, from: again))
            try assertSameTopology(nodes[0], decoded, seed: seed)
            for node in nodes { node.links = [] }
        }
    }
}
