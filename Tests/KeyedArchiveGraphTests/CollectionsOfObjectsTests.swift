import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// `decodeArrayOfObjects(ofClass:forKey:)` inside an object or under a `$top` key, which an
/// archive read by index reads in place (elements already made, or short strings, taken as they
/// are; others decoded the full way). Each case decodes the same archive twice: from binary
/// bytes, read in place, and from the value tree (`KeyedUnarchiver(propertyList:)`), which
/// always takes the full path. The two must agree on the objects, on their identity, and on
/// every error. `DictionaryOfObjectsTests` below does the same for `decodeDictionary`.
final class ArrayOfObjectsTests: XCTestCase {
    /// A root array of nodes whose links (made in phase 1 as root elements, linked in phase 2)
    /// are random, repeated and shared: both paths give the same graph, with each link the very
    /// instance of the root array.
    func testLinksToMadeObjectsMatchTheFullPath() throws {
        for seed in UInt64(1)...20 {
            var random = SeededGenerator(seed: seed)
            let count = Int.random(in: 1...200, using: &random)
            let nodes = Node.randomGraph(count: count, maximumLinks: 5, using: &random)
            let data = try KeyedArchiver.archivedData(withRootObject: nodes, format: .binary)
            for node in nodes { node.links = [] }  // break cycles
            let inPlace = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .type(Node.self)], from: data) as? [Node])
            let tree = try XCTUnwrap(
                KeyedUnarchiver(propertyList: PropertyList.decode(data)).decodeTopLevelObject(of: [.array, .type(Node.self)]) as? [Node])
            XCTAssertEqual(inPlace.map(\.label), Array(0..<count), "seed \(seed)")
            for (a, b) in zip(inPlace, tree) {
                XCTAssertEqual(a.links.map(\.label), b.links.map(\.label), "seed \(seed) node \(a.label)")
                for link in a.links {
                    XCTAssertTrue(link === inPlace[link.label], "seed \(seed): a link is not the root array's instance")
                }
            }
            for node in inPlace + tree { node.links = [] }
        }
    }

    /// Arrays of strings inside an object: short ASCII ones (at hand), long and non-ASCII ones
    /// (read the full way) and empty ones, alone and mixed.
    func testStringArraysMatchTheFullPath() throws {
        let lists: [[String]] = [
            [], ["a"], ["alpha", "beta", "alpha", "gamma"], [String(repeating: "x", count: 300)], ["δέλτα", "e"], ["", "f", "ü", "g"],
        ]
        let holders = lists.map { Tagged(tags: $0) }
        let data = try KeyedArchiver.archivedData(withRootObject: holders, format: .binary)
        let inPlace = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .type(Tagged.self)], from: data) as? [Tagged])
        let tree = try XCTUnwrap(
            KeyedUnarchiver(propertyList: PropertyList.decode(data)).decodeTopLevelObject(of: [.array, .type(Tagged.self)]) as? [Tagged])
        XCTAssertEqual(inPlace.map(\.tags), lists)
        XCTAssertEqual(tree.map(\.tags), lists)
    }

    /// Hand-made archives: a root array of two nodes, the second's links damaged or unusual.
    /// Both paths report the same error, or decode the same links.
    func testIrregularArraysFailOrDecodeAsOnTheFullPath() throws {
        func archive(_ secondLinks: PropertyListValue) -> PropertyListValue {
            let arrayClass: PropertyListValue = ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]]
            let nodeClass: PropertyListValue = ["$classname": PropertyListValue(Node.archivedClassName), "$classes": [PropertyListValue(Node.archivedClassName), "NSObject"]]
            let objects: [PropertyListValue] = [
                "$null",
                ["$class": .uid(2), "NS.objects": [.uid(3), .uid(5)]],
                arrayClass,
                ["$class": .uid(4), "label": 0, "links": .uid(6)],
                nodeClass,
                ["$class": .uid(4), "label": 1, "links": .uid(7)],
                ["$class": .uid(2), "NS.objects": [.uid(5), .uid(3), .uid(3)]],
                secondLinks,
                ["$class": .uid(9), "NS.string": "not a node"],
                ["$classname": "NSString", "$classes": ["NSString", "NSObject"]],
                ["$class": .uid(2), "NS.objects": [.uid(3), .uid(8)]],
            ]
            return ["$archiver": "NSKeyedArchiver", "$version": 100000, "$top": ["root": .uid(1)], "$objects": .array(objects)]
        }
        let cases: [(name: String, links: PropertyListValue, expected: [Int]?)] = [
            ("regular", ["$class": .uid(2), "NS.objects": [.uid(3), .uid(5), .uid(5)]], [0, 1, 1]),
            ("numbered members", ["$class": .uid(2), "NS.object.0": .uid(5), "NS.object.1": .uid(3)], [1, 0]),
            ("an integer member", ["$class": .uid(2), "NS.objects": [.uid(3), 42]], nil),
            ("a member past the objects", ["$class": .uid(2), "NS.objects": [.uid(3), .uid(99)]], nil),
            ("a nil member", ["$class": .uid(2), "NS.objects": [.uid(3), .uid(0)]], nil),
            ("a member of a class not allowed", ["$class": .uid(2), "NS.objects": [.uid(3), .uid(8)]], nil),
            ("an array as a member", ["$class": .uid(2), "NS.objects": [.uid(3), .uid(10)]], nil),
            ("members not in an array", ["$class": .uid(2), "NS.objects": .uid(3)], nil),
            ("no members (the numbered form, empty)", ["$class": .uid(2)], []),
            ("a string, not an array", ["$class": .uid(9), "NS.string": "links"], nil),
            ("the links are the node itself", ["$class": .uid(4), "label": 2], nil),
        ]
        for entry in cases {
            try assertBothPaths(entry.name, archive(entry.links), classes: [.array, .type(Node.self)], decodes: entry.expected != nil) { root in
                let nodes = try XCTUnwrap(root as? [Node], entry.name)
                XCTAssertEqual(nodes[0].links.map(\.label), [1, 0, 0], entry.name)
                XCTAssertEqual(nodes[1].links.map(\.label), entry.expected, entry.name)
                XCTAssertTrue((nodes[0].links + nodes[1].links).allSatisfy { $0 === nodes[$0.label] }, entry.name)
                for node in nodes { node.links = [] }
            }
        }
    }
}

extension ArrayOfObjectsTests {
    /// `decodeArrayOfObjects` under a `$top` key (its own top-level decode, phase 2 included):
    /// random graphs with cycles, and root arrays with a member of another class, a nil member,
    /// members that are no objects, and the array itself as a member. Both paths give the same
    /// nodes and links or the same error, and after an error the unarchiver decodes the next
    /// request as a fresh one would.
    func testTopLevelArraysMatchTheFullPath() throws {
        /// Each path's nodes with their links' labels as the decode returned them (before the
        /// later request, whose own phase 2 must not be what fills them).
        func decodeBoth(_ archive: PropertyListValue) throws -> [Result<(nodes: [Node], links: [[Int]]), any Error>] {
            try [KeyedUnarchiver(data: PropertyList.encode(archive, format: .binary)), KeyedUnarchiver(propertyList: archive)].map { unarchiver in
                let result = Result {
                    let nodes = try unarchiver.decodeArrayOfObjects(ofClass: Node.self, forKey: "root") ?? []
                    return (nodes: nodes, links: nodes.map { $0.links.map(\.label) })
                }
                // Whatever happened, a later request decodes as on a new unarchiver.
                XCTAssertEqual(try unarchiver.decodeObject(of: Node.self, forKey: "first")?.label, 0)
                return result
            }
        }
        for seed in UInt64(1)...10 {
            var random = SeededGenerator(seed: seed)
            let nodes = (0..<Int.random(in: 1...80, using: &random)).map { Node(label: $0) }
            for node in nodes {
                for _ in 0..<Int.random(in: 0...3, using: &random) { node.links.append(nodes[Int.random(in: 0..<nodes.count, using: &random)]) }
            }
            let archiver = KeyedArchiver()
            try archiver.encode(nodes, forKey: "root")
            try archiver.encode(nodes[0], forKey: "first")
            let archive = try PropertyList.decode(archiver.finishEncoding())
            let links = nodes.map { $0.links.map(\.label) }
            for node in nodes { node.links = [] }
            let results = try decodeBoth(archive)
            for result in results {
                let (decoded, decodedLinks) = try result.get()
                XCTAssertEqual(decoded.map(\.label), nodes.map(\.label), "seed \(seed)")
                XCTAssertEqual(decodedLinks, links, "seed \(seed)")
                XCTAssertTrue(decoded.allSatisfy { $0.links.allSatisfy { link in link === decoded[link.label] } }, "seed \(seed)")
                for node in decoded { node.links = [] }
            }
        }
        let nodeName = PropertyListValue(Node.archivedClassName)
        let members: [(name: String, members: PropertyListValue, decodes: Bool)] = [
            ("regular", [.uid(3), .uid(5), .uid(3)], true),
            ("a string member", [.uid(3), .uid(7)], false),
            ("a nil member", [.uid(3), .uid(0)], false),
            ("a member past the objects", [.uid(3), .uid(99)], false),
            ("an integer member", [.uid(3), 42], false),
            ("the array itself as a member", [.uid(3), .uid(1)], false),
        ]
        for entry in members {
            let archive: PropertyListValue = [
                "$archiver": "NSKeyedArchiver", "$version": 100000, "$top": ["root": .uid(1), "first": .uid(3)],
                "$objects": [
                    "$null",
                    ["$class": .uid(2), "NS.objects": entry.members],
                    ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]],
                    ["$class": .uid(4), "label": 0, "links": .uid(6)],
                    ["$classname": nodeName, "$classes": [nodeName, "NSObject"]],
                    ["$class": .uid(4), "label": 1, "links": .uid(6)],
                    ["$class": .uid(2), "NS.objects": [.uid(5), .uid(3)]],
                    "not a node",
                ],
            ]
            let results = try decodeBoth(archive)
            switch (results[0], results[1]) {
            case (.success(let a), .success(let b)):
                XCTAssertTrue(entry.decodes, "\(entry.name): decoded, expected an error")
                for (decoded, links) in [a, b] {
                    XCTAssertEqual(decoded.map(\.label), [0, 1, 0], entry.name)
                    XCTAssertEqual(links, [[1, 0], [1, 0], [1, 0]], entry.name)
                    XCTAssertTrue(decoded[0] === decoded[2] && decoded[0].links[0] === decoded[1], entry.name)
                    for node in decoded { node.links = [] }
                }
            case (.failure(let a), .failure(let b)):
                XCTAssertFalse(entry.decodes, "\(entry.name): failed, expected to decode: \(a)")
                XCTAssertEqual((a as? KeyedArchiveError)?.description, (b as? KeyedArchiveError)?.description, entry.name)
                XCTAssertNotNil(a as? KeyedArchiveError, entry.name)
            default:
                XCTFail("\(entry.name): in place \(results[0]), tree \(results[1])")
            }
        }
    }

    /// Trees and DAGs whose children are decoded in `init(coder:)` (phase 1: most elements not
    /// made yet when their array is read): both paths give the same graph, a shared child
    /// once.
    func testChildrenDecodedInInitMatchTheFullPath() throws {
        for seed in UInt64(1)...20 {
            var random = SeededGenerator(seed: seed)
            let count = Int.random(in: 1...120, using: &random)
            let branches = (0..<count).map { Branch(label: $0) }
            // Children only point forward: no cycle, which init(coder:) cannot decode.
            for (index, branch) in branches.enumerated() where index + 1 < count {
                for _ in 0..<Int.random(in: 0...4, using: &random) {
                    branch.children.append(branches[Int.random(in: (index + 1)..<count, using: &random)])
                }
            }
            let data = try KeyedArchiver.archivedData(withRootObject: branches[0], format: .binary)
            let inPlace = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClass: Branch.self, from: data))
            let tree = try XCTUnwrap(KeyedUnarchiver(propertyList: PropertyList.decode(data)).decodeTopLevelObject(of: Branch.self))
            XCTAssertEqual(inPlace.shape(), branches[0].shape(), "seed \(seed)")
            XCTAssertEqual(tree.shape(), branches[0].shape(), "seed \(seed)")
            // One instance per archived object, wherever it is reached from.
            var instances: [Int: ObjectIdentifier] = [:]
            var stack = [inPlace]
            while let branch = stack.popLast() {
                if let seen = instances[branch.label] {
                    XCTAssertEqual(seen, ObjectIdentifier(branch), "seed \(seed): branch \(branch.label) decoded twice")
                    continue
                }
                instances[branch.label] = ObjectIdentifier(branch)
                stack += branch.children
            }
        }
    }

    /// Hand-made archives whose arrays are read in `init(coder:)`: A's children are [B, C, B],
    /// B's are damaged or unusual, and B and C are made while A's array is read. Both paths
    /// report the same error (nested ones included), or decode the same children.
    func testIrregularArraysInInitFailOrDecodeAsOnTheFullPath() throws {
        func archive(_ secondChildren: PropertyListValue) -> PropertyListValue {
            let branchName = PropertyListValue(Branch.archivedClassName)
            let objects: [PropertyListValue] = [
                "$null",
                ["$class": .uid(2), "NS.objects": [.uid(3), .uid(5)]],
                ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]],
                ["$class": .uid(4), "label": 0, "children": .uid(6)],
                ["$classname": branchName, "$classes": [branchName, "NSObject"]],
                ["$class": .uid(4), "label": 1, "children": .uid(7)],
                ["$class": .uid(2), "NS.objects": [.uid(5), .uid(11), .uid(5)]],
                secondChildren,
                ["$class": .uid(9), "NS.string": "not a branch"],
                ["$classname": "NSString", "$classes": ["NSString", "NSObject"]],
                ["$class": .uid(2), "NS.objects": [.uid(11), .uid(8)]],
                ["$class": .uid(4), "label": 2, "children": .uid(12)],
                ["$class": .uid(2), "NS.objects": []],
            ]
            return ["$archiver": "NSKeyedArchiver", "$version": 100000, "$top": ["root": .uid(1)], "$objects": .array(objects)]
        }
        let cases: [(name: String, children: PropertyListValue, expected: [Int]?)] = [
            ("regular", ["$class": .uid(2), "NS.objects": [.uid(11), .uid(11)]], [2, 2]),
            ("numbered members", ["$class": .uid(2), "NS.object.0": .uid(11)], [2]),
            ("an integer member", ["$class": .uid(2), "NS.objects": [.uid(11), 42]], nil),
            ("a member past the objects", ["$class": .uid(2), "NS.objects": [.uid(11), .uid(99)]], nil),
            ("a nil member", ["$class": .uid(2), "NS.objects": [.uid(11), .uid(0)]], nil),
            ("a member of a class not allowed", ["$class": .uid(2), "NS.objects": [.uid(11), .uid(8)]], nil),
            ("an array with a string as a member", ["$class": .uid(2), "NS.objects": [.uid(11), .uid(10)]], nil),
            ("the array itself as a member", ["$class": .uid(2), "NS.objects": [.uid(11), .uid(7)]], nil),
            ("a member whose init(coder:) is running", ["$class": .uid(2), "NS.objects": [.uid(3)]], nil),
            ("members not in an array", ["$class": .uid(2), "NS.objects": .uid(11)], nil),
        ]
        for entry in cases {
            try assertBothPaths(entry.name, archive(entry.children), classes: [.array, .type(Branch.self)], decodes: entry.expected != nil) { root in
                let branches = try XCTUnwrap(root as? [Branch], entry.name)
                XCTAssertEqual(branches[0].children.map(\.label), [1, 2, 1], entry.name)
                XCTAssertEqual(branches[1].children.map(\.label), entry.expected, entry.name)
                XCTAssertTrue(branches[0].children[0] === branches[1], entry.name)
            }
        }
    }

}

/// A node whose children are decoded in `init(coder:)`, as most NSCoding classes decode theirs
/// (so no cycle through them can be decoded).
final class Branch: KeyedArchiving {
    var label: Int
    var children: [Branch] = []

    init(label: Int) { self.label = label }

    func encode(with coder: KeyedArchiver) throws {
        coder.encode(label, forKey: "label")
        try coder.encode(children, forKey: "children")
    }

    init(coder: KeyedUnarchiver) throws {
        label = try coder.decodeInt(forKey: "label")
        children = try coder.decodeArrayOfObjects(ofClass: Branch.self, forKey: "children") ?? []
    }

    /// The children's labels of every branch reachable from this one, by label (each branch
    /// once: a DAG's paths can be exponentially many).
    func shape() -> [Int: [Int]] {
        var result: [Int: [Int]] = [:]
        var stack = [self]
        while let branch = stack.popLast() {
            guard result[branch.label] == nil else { continue }
            result[branch.label] = branch.children.map(\.label)
            stack += branch.children
        }
        return result
    }
}

/// An object whose string array is decoded in phase 2 as an array of objects.
final class Tagged: KeyedArchiving {
    var tags: [String]

    init(tags: [String]) { self.tags = tags }

    func encode(with coder: KeyedArchiver) throws { try coder.encode(tags, forKey: "tags") }

    init(coder: KeyedUnarchiver) throws { tags = [] }

    func decodeReferences(with coder: KeyedUnarchiver) throws {
        tags = try coder.decodeArrayOfObjects(ofClass: String.self, forKey: "tags") ?? []
    }
}

/// `decodeDictionary(withKeyClass:objectClass:forKey:)` inside an object, read in place like
/// the arrays above: both paths must agree.
final class DictionaryOfObjectsTests: XCTestCase {
    /// Dictionaries of nodes made before them (phase 2) and of branches made while they are
    /// read (phase 1), with keys short and long: the same entries and identities both ways.
    func testDictionariesMatchTheFullPath() throws {
        for seed in UInt64(1)...12 {
            var random = SeededGenerator(seed: seed)
            let nodes = (0..<Int.random(in: 1...60, using: &random)).map { Node(label: $0) }
            let branches = (0..<Int.random(in: 1...60, using: &random)).map { Branch(label: $0) }
            let index = NodeIndex()
            for _ in 0..<Int.random(in: 0...40, using: &random) {
                let name = random.chance(0.2) ? String(repeating: "k", count: 200) + "\(random.next() % 50)" : "k\(random.next() % 50)"
                index.nodes[name] = nodes[Int.random(in: 0..<nodes.count, using: &random)]
                index.branches[name] = branches[Int.random(in: 0..<branches.count, using: &random)]
            }
            let data = try KeyedArchiver.archivedData(withRootObject: [nodes, index] as [Any], format: .binary)
            let classes: [KeyedArchiveClass] = [.array, .type(Node.self), .type(NodeIndex.self)]
            let inPlace = try XCTUnwrap(KeyedUnarchiver.unarchivedObject(ofClasses: classes, from: data) as? [Any])
            let tree = try XCTUnwrap(KeyedUnarchiver(propertyList: PropertyList.decode(data)).decodeTopLevelObject(of: classes) as? [Any])
            for decoded in [inPlace, tree] {
                let decodedNodes = try XCTUnwrap(decoded.first as? [Node])
                let decodedIndex = try XCTUnwrap(decoded.last as? NodeIndex)
                XCTAssertEqual(decodedIndex.nodes.mapValues(\.label), index.nodes.mapValues(\.label), "seed \(seed)")
                XCTAssertEqual(decodedIndex.branches.mapValues(\.label), index.branches.mapValues(\.label), "seed \(seed)")
                XCTAssertTrue(decodedIndex.nodes.values.allSatisfy { $0 === decodedNodes[$0.label] }, "seed \(seed)")
                // A branch shared by several keys is one instance.
                var byLabel: [Int: ObjectIdentifier] = [:]
                for branch in decodedIndex.branches.values {
                    XCTAssertEqual(byLabel.updateValue(ObjectIdentifier(branch), forKey: branch.label) ?? ObjectIdentifier(branch), ObjectIdentifier(branch))
                }
            }
        }
    }

    /// Hand-made archives: a root array of two nodes and an index whose dictionary is damaged or
    /// unusual. Both paths report the same error, or decode the same entries.
    func testIrregularDictionariesFailOrDecodeAsOnTheFullPath() throws {
        func archive(_ dictionary: PropertyListValue) -> PropertyListValue {
            let nodeName = PropertyListValue(Node.archivedClassName)
            let indexName = PropertyListValue(NodeIndex.archivedClassName)
            let objects: [PropertyListValue] = [
                "$null",
                ["$class": .uid(2), "NS.objects": [.uid(3), .uid(5), .uid(13)]],
                ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]],
                ["$class": .uid(4), "label": 0],
                ["$classname": nodeName, "$classes": [nodeName, "NSObject"]],
                ["$class": .uid(4), "label": 1],
                ["$classname": "NSDictionary", "$classes": ["NSDictionary", "NSObject"]],
                "a",
                "b",
                ["$class": .uid(10), "NS.string": "not a node"],
                ["$classname": "NSString", "$classes": ["NSString", "NSObject"]],
                .string(PropertyListString(String(repeating: "long", count: 80))),
                dictionary,
                ["$class": .uid(14), "nodes": .uid(12)],
                ["$classname": indexName, "$classes": [indexName, "NSObject"]],
                ["$class": .uid(4), "label": "not a number"],
            ]
            return ["$archiver": "NSKeyedArchiver", "$version": 100000, "$top": ["root": .uid(1)], "$objects": .array(objects)]
        }
        let long = String(repeating: "long", count: 80)
        let cases: [(name: String, dictionary: PropertyListValue, expected: [String: Int]?)] = [
            ("regular", ["$class": .uid(6), "NS.keys": [.uid(7), .uid(8)], "NS.objects": [.uid(3), .uid(5)]], ["a": 0, "b": 1]),
            ("a repeated key", ["$class": .uid(6), "NS.keys": [.uid(7), .uid(8), .uid(7)], "NS.objects": [.uid(3), .uid(5), .uid(5)]], ["a": 1, "b": 1]),
            ("a dropped value of a class not allowed", ["$class": .uid(6), "NS.keys": [.uid(7), .uid(7)], "NS.objects": [.uid(1), .uid(3)]], nil),
            ("a dropped value that would not decode", ["$class": .uid(6), "NS.keys": [.uid(7), .uid(7)], "NS.objects": [.uid(15), .uid(3)]], ["a": 0]),
            ("a dropped value of a class allowed", ["$class": .uid(6), "NS.keys": [.uid(7), .uid(7)], "NS.objects": [.uid(9), .uid(3)]], ["a": 0]),
            ("a long key", ["$class": .uid(6), "NS.keys": [.uid(11)], "NS.objects": [.uid(5)]], [long: 1]),
            ("a node as a key", ["$class": .uid(6), "NS.keys": [.uid(3)], "NS.objects": [.uid(5)]], nil),
            ("an integer as a key", ["$class": .uid(6), "NS.keys": [42], "NS.objects": [.uid(5)]], nil),
            ("more keys than values", ["$class": .uid(6), "NS.keys": [.uid(7), .uid(8)], "NS.objects": [.uid(3)]], nil),
            ("numbered entries", ["$class": .uid(6), "NS.key.0": .uid(8), "NS.object.0": .uid(3)], ["b": 0]),
            ("a nil value", ["$class": .uid(6), "NS.keys": [.uid(7)], "NS.objects": [.uid(0)]], nil),
            ("a value of a class not allowed", ["$class": .uid(6), "NS.keys": [.uid(7), .uid(8)], "NS.objects": [.uid(3), .uid(9)]], nil),
            ("a value past the objects", ["$class": .uid(6), "NS.keys": [.uid(7)], "NS.objects": [.uid(99)]], nil),
            ("the dictionary itself as a value", ["$class": .uid(6), "NS.keys": [.uid(7)], "NS.objects": [.uid(12)]], nil),
        ]
        for entry in cases {
            let classes: [KeyedArchiveClass] = [.array, .type(Node.self), .type(NodeIndex.self)]
            try assertBothPaths(entry.name, archive(entry.dictionary), classes: classes, decodes: entry.expected != nil) { root in
                let objects = try XCTUnwrap(root as? [Any], entry.name)
                let index = try XCTUnwrap(objects.last as? NodeIndex, entry.name)
                XCTAssertEqual(index.nodes.mapValues(\.label), entry.expected, entry.name)
                XCTAssertTrue(index.nodes.values.allSatisfy { $0 === objects[$0.label] as? Node }, entry.name)
            }
        }
    }
}

/// Nodes by name, decoded in phase 2 (made before), and branches by name, decoded in
/// `init(coder:)` (made while the dictionary is read).
final class NodeIndex: KeyedArchiving {
    var nodes: [String: Node] = [:]
    var branches: [String: Branch] = [:]

    init() {}

    func encode(with coder: KeyedArchiver) throws {
        try coder.encode(nodes, forKey: "nodes")
        try coder.encode(branches, forKey: "branches")
    }

    init(coder: KeyedUnarchiver) throws {
        branches = try coder.decodeDictionary(withKeyClass: String.self, objectClass: Branch.self, forKey: "branches") ?? [:]
    }

    func decodeReferences(with coder: KeyedUnarchiver) throws {
        nodes = try coder.decodeDictionary(withKeyClass: String.self, objectClass: Node.self, forKey: "nodes") ?? [:]
    }
}

/// Decodes `archive`'s root allowing `classes` from binary bytes, read in place, and from the
/// value tree (the full path). When `decodes`, both must decode and `check` is run on each
/// root; otherwise both must throw the same error, message included.
func assertBothPaths(
    _ name: String, _ archive: PropertyListValue, classes: [KeyedArchiveClass], decodes: Bool, check: (Any?) throws -> Void
) throws {
    let inPlace = Result { try KeyedUnarchiver.unarchivedObject(ofClasses: classes, from: PropertyList.encode(archive, format: .binary)) }
    let tree = Result { try KeyedUnarchiver(propertyList: archive).decodeTopLevelObject(of: classes) }
    switch (inPlace, tree) {
    case (.success(let a), .success(let b)):
        XCTAssertTrue(decodes, "\(name): decoded, expected an error")
        try check(a)
        try check(b)
    case (.failure(let a), .failure(let b)):
        XCTAssertFalse(decodes, "\(name): failed, expected to decode: \(a)")
        let (first, second) = (try XCTUnwrap(a as? KeyedArchiveError, name), try XCTUnwrap(b as? KeyedArchiveError, name))
        XCTAssertEqual(first.code, second.code, name)
        XCTAssertEqual(first.description, second.description, name)
    default:
        XCTFail("\(name): in place \(inPlace), tree \(tree)")
    }
}

/// Foundation collections decoded untyped (`unarchivedObject(ofClasses:)`), whose element
/// references an archive read by index takes from the file without reading the collection's
/// dictionary into a tree: the same values, or the same errors, as from the value tree.
final class UntypedCollectionsTests: XCTestCase {
    /// Hand-made archives: a root NSArray whose second member is the collection under test,
    /// regular or damaged, of every collection class (arrays, sets, ordered sets,
    /// dictionaries). Members are strings, numbers (inline) and a nested array.
    func testCollectionsMatchTheTreePath() throws {
        func archive(_ collection: PropertyListValue) -> PropertyListValue {
            let objects: [PropertyListValue] = [
                "$null",
                ["$class": .uid(2), "NS.objects": [.uid(3), .uid(4)]],
                ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]],
                "first",
                collection,
                "a",
                "b",
                ["$class": .uid(2), "NS.objects": [.uid(5), .uid(6)]],
                ["$classname": "NSSet", "$classes": ["NSSet", "NSObject"]],
                ["$classname": "NSOrderedSet", "$classes": ["NSOrderedSet", "NSObject"]],
                ["$classname": "NSDictionary", "$classes": ["NSDictionary", "NSObject"]],
                ["$class": .uid(12), "name": "not allowed"],
                ["$classname": "Unknown", "$classes": ["Unknown", "NSObject"]],
                7,
            ]
            return ["$archiver": "NSKeyedArchiver", "$version": 100000, "$top": ["root": .uid(1)], "$objects": .array(objects)]
        }
        let cases: [(name: String, collection: PropertyListValue, expected: String?)] = [
            ("array", ["$class": .uid(2), "NS.objects": [.uid(5), .uid(13), .uid(7), .uid(5)]], #"["a", 7, ["a", "b"], "a"]"#),
            ("empty array", ["$class": .uid(2), "NS.objects": []], "[]"),
            ("numbered array", ["$class": .uid(2), "NS.object.0": .uid(6), "NS.object.1": .uid(5)], #"["b", "a"]"#),
            ("array with NS.objects and numbered keys", ["$class": .uid(2), "NS.object.0": .uid(6), "NS.objects": [.uid(5)]], #"["a"]"#),
            ("array with a nil member", ["$class": .uid(2), "NS.objects": [.uid(5), .uid(0)]], nil),
            ("array with an integer member", ["$class": .uid(2), "NS.objects": [.uid(5), 42]], nil),
            ("array with a member past the objects", ["$class": .uid(2), "NS.objects": [.uid(99)]], nil),
            ("array with a member not allowed", ["$class": .uid(2), "NS.objects": [.uid(11)]], nil),
            ("array containing itself", ["$class": .uid(2), "NS.objects": [.uid(4)]], nil),
            ("array whose members are no array", ["$class": .uid(2), "NS.objects": .uid(5)], nil),
            ("set", ["$class": .uid(8), "NS.objects": [.uid(5), .uid(6), .uid(5)]], #"set ["a", "b"]"#),
            ("set with a nil member", ["$class": .uid(8), "NS.objects": [.uid(0)]], nil),
            ("ordered set", ["$class": .uid(9), "NS.objects": [.uid(6), .uid(5)]], #"ordered ["b", "a"]"#),
            ("dictionary", ["$class": .uid(10), "NS.keys": [.uid(5), .uid(6)], "NS.objects": [.uid(7), .uid(13)]], #"["a": ["a", "b"], "b": 7]"#),
            ("dictionary with a repeated key", ["$class": .uid(10), "NS.keys": [.uid(5), .uid(5)], "NS.objects": [.uid(6), .uid(13)]], #"["a": 7]"#),
            ("dictionary with more keys than values", ["$class": .uid(10), "NS.keys": [.uid(5), .uid(6)], "NS.objects": [.uid(6)]], nil),
            ("dictionary with a nil value", ["$class": .uid(10), "NS.keys": [.uid(5)], "NS.objects": [.uid(0)]], nil),
            ("dictionary with a dropped value not allowed", ["$class": .uid(10), "NS.keys": [.uid(5), .uid(5)], "NS.objects": [.uid(11), .uid(6)]], nil),
            ("numbered dictionary", ["$class": .uid(10), "NS.key.0": .uid(6), "NS.object.0": .uid(5)], #"["b": "a"]"#),
            ("dictionary with numbered values only", ["$class": .uid(10), "NS.keys": [.uid(6)], "NS.object.0": .uid(5)], #"["b": "a"]"#),
        ]
        func describe(_ value: Any) -> String {
            switch value {
            case let array as [Any]: return "[" + array.map(describe).joined(separator: ", ") + "]"
            case let set as Set<AnyHashable>: return "set [" + set.map { describe($0.base) }.sorted().joined(separator: ", ") + "]"
            case let ordered as ArchivedOrderedSet: return "ordered " + describe(ordered.elements)
            case let dictionary as [AnyHashable: Any]:
                return "[" + dictionary.map { describe($0.key.base) + ": " + describe($0.value) }.sorted().joined(separator: ", ") + "]"
            case let string as String: return "\"\(string)\""
            default: return "\(value)"
            }
        }
        let classes: [KeyedArchiveClass] = [.array, .set, .orderedSet, .dictionary, .string, .number]
        for entry in cases {
            try assertBothPaths(entry.name, archive(entry.collection), classes: classes, decodes: entry.expected != nil) { root in
                let members = try XCTUnwrap(root as? [Any], entry.name)
                XCTAssertEqual(members.count, 2, entry.name)
                XCTAssertEqual(members.first as? String, "first", entry.name)
                XCTAssertEqual(members.last.map(describe), entry.expected, entry.name)
            }
        }
    }
}
