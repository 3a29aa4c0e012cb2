import KeyedArchive
import XCTest

/// Refers to a shared `Dog` and holds strings and a number as objects, and decodes them inside
/// itself, where the unarchiver answers two kinds of reference without its full path: an
/// instance already made and checked, asked for as its own class, and a short ASCII string
/// asked for as `String`. Each way of asking is recorded for the test to check.
final class ReferenceProbe: KeyedArchiving {
    /// Short and long (the shortcut stops at 63 bytes), ASCII and not, empty, and the text of
    /// the `$null` marker.
    static let strings = [
        "", "a", "Person 12 abcdef", String(repeating: "x", count: 63), String(repeating: "y", count: 64),
        "Zo\u{EB}", "\u{65E5}\u{672C}", "$null",
    ]
    let dog: Dog?

    var decodedStrings: [String?] = []
    var nilAsString: String?
    var missingAsString: String?
    var numberAsString: Result<String?, any Error> = .success(nil)
    var stringAsInt: Result<Int?, any Error> = .success(nil)
    var dogAsked: [(String, Result<Animal?, any Error>)] = []

    init(dog: Dog) { self.dog = dog }

    func encode(with coder: KeyedArchiver) throws {
        for (index, string) in Self.strings.enumerated() { try coder.encode(string, forKey: "s\(index)") }
        try coder.encode(nil as Any?, forKey: "nothing")
        try coder.encode(7 as Any, forKey: "boxed")
        try coder.encode(dog, forKey: "dog")
    }

    init(coder: KeyedUnarchiver) throws {
        dog = nil
        decodedStrings = try Self.strings.indices.map { try coder.decodeObject(of: String.self, forKey: "s\($0)") }
        nilAsString = try coder.decodeObject(of: String.self, forKey: "nothing")
        missingAsString = try coder.decodeObject(of: String.self, forKey: "absent")
        numberAsString = Result { try coder.decodeObject(of: String.self, forKey: "boxed") }
        stringAsInt = Result { try coder.decodeObject(of: Int.self, forKey: "s1") }
    }

    func decodeReferences(with coder: KeyedUnarchiver) throws {
        // The dog was made and checked by the root array's decode (another allowed set), so
        // the first request goes the full way; the second finds it checked for `Dog`. As
        // `Animal` it is not of exactly the class asked for; as `Node` it is refused.
        func ask<T: Animal>(_ label: String, _ type: T.Type) {
            dogAsked.append((label, Result { try coder.decodeObject(of: type, forKey: "dog") }))
        }
        ask("Dog", Dog.self)
        ask("Dog again", Dog.self)
        ask("Animal", Animal.self)
        ask("Dog after Animal", Dog.self)
        dogAsked.append(("Node", Result {
            _ = try coder.decodeObject(of: Node.self, forKey: "dog")
            return nil
        }))
    }
}

/// References inside an object decode as the full path decodes them, whether or not the
/// unarchiver can answer them at hand (instances already made, short ASCII strings), in a
/// binary archive (read by index) and an XML one (read whole).
final class InnerReferenceTests: XCTestCase {
    func testReferencesInsideAnObjectDecodeAsTheFullPathDoes() throws {
        for format in [PropertyListFormat.binary, .xml] {
            let dog = Dog(name: "Rex", goodBoy: true)
            let data = try KeyedArchiver.archivedData(withRootObject: [dog, ReferenceProbe(dog: dog)] as [Any], format: format)
            let unarchiver = try KeyedUnarchiver(data: data)
            let root = try XCTUnwrap(
                unarchiver.decodeTopLevelObject(of: [.array, .type(Dog.self), .type(ReferenceProbe.self)]) as? [Any], "\(format)")
            let decodedDog = try XCTUnwrap(root.first as? Dog, "\(format)")
            let probe = try XCTUnwrap(root.last as? ReferenceProbe, "\(format)")
            XCTAssertEqual(decodedDog.name, "Rex")

            XCTAssertEqual(probe.decodedStrings, ReferenceProbe.strings, "\(format)")
            XCTAssertNil(probe.nilAsString, "\(format): UID 0 is nil, not the $null marker's text")
            XCTAssertNil(probe.missingAsString, "\(format)")
            XCTAssertThrowsError(try probe.numberAsString.get(), "\(format)") { error in
                XCTAssertEqual((error as? KeyedArchiveError)?.code, .classNotAllowed, "\(format): \(error)")
            }
            XCTAssertThrowsError(try probe.stringAsInt.get(), "\(format)") { error in
                XCTAssertEqual((error as? KeyedArchiveError)?.code, .classNotAllowed, "\(format): \(error)")
            }

            XCTAssertEqual(probe.dogAsked.map(\.0), ["Dog", "Dog again", "Animal", "Dog after Animal", "Node"])
            for (label, result) in probe.dogAsked.dropLast() {
                let animal = try XCTUnwrap(try result.get(), "\(format): \(label)")
                XCTAssertTrue(animal === decodedDog, "\(format): \(label) gave another instance")
                XCTAssertTrue(type(of: animal) == Dog.self, "\(format): \(label)")
            }
            let asNode = try XCTUnwrap(probe.dogAsked.last)
            XCTAssertThrowsError(try asNode.1.get(), "\(format)") { error in
                XCTAssertEqual((error as? KeyedArchiveError)?.code, .classNotAllowed, "\(format): \(error)")
            }
        }
    }

    /// Instances answered at hand come back with one reference of their own: the graph outlives
    /// its unarchiver intact, and is freed with its last reference (a stray retain would keep
    /// nodes alive; a missing one would free them while the graph still points at them). Each
    /// node's `weak` link is decoded in phase 2 as `Node`, under another allowed set than the
    /// root array's: some nodes are linked once (the first request checks them), some many
    /// times (later requests find them checked).
    func testInstancesAtHandOutliveTheUnarchiverAndAreFreedWithTheGraph() throws {
        final class WeakNode {
            weak var node: Node?
            init(_ node: Node) { self.node = node }
        }
        let count = 300
        let target = { (index: Int) in index * index % count }
        for format in [PropertyListFormat.binary, .xml] {
            let data: Data
            do {
                let nodes = (0..<count).map { Node(label: $0) }
                for (index, node) in nodes.enumerated() { node.weak = nodes[target(index)] }
                data = try KeyedArchiver.archivedData(withRootObject: nodes, format: format)
            }
            var decoded: [Node]? = try {
                let unarchiver = try KeyedUnarchiver(data: data)
                return try unarchiver.decodeTopLevelObject(of: [.array, .type(Node.self)]) as? [Node]
            }()
            let nodes = try XCTUnwrap(decoded, "\(format)")
            XCTAssertEqual(nodes.map(\.label), Array(0..<count), "\(format)")
            for (index, node) in nodes.enumerated() {
                XCTAssertTrue(node.weak === nodes[target(index)], "\(format): node \(index)")
                XCTAssertEqual(node.weak?.label, target(index), "\(format): node \(index)")
            }
            let watchers = nodes.map(WeakNode.init)
            // Node links hold strongly: i -> i * i forms cycles (0 -> 0, ...), broken here.
            for node in nodes { node.weak = nil }
            decoded = nil
            withExtendedLifetime(nodes) {}
            _ = consume nodes
            XCTAssertEqual(watchers.filter { $0.node != nil }.count, 0, "\(format): nodes still alive after the graph was dropped")
        }
    }

    /// A number stored as an object, asked for as a number of another type, and a subclass
    /// instance asked for as its superclass at the top level (its class mapped, so that it is
    /// made as the subclass): the conversions behind the cast that takes values of exactly the
    /// type asked for.
    func testConversionsBehindTheExactCastStillApply() throws {
        let archiver = KeyedArchiver()
        try archiver.encode(7 as Any, forKey: "seven")
        try archiver.encode(Dog(name: "Fido", goodBoy: false), forKey: "dog")
        try archiver.encode("text", forKey: "text")
        let unarchiver = try KeyedUnarchiver(data: try archiver.finishEncoding())
        unarchiver.setClass(Dog.self, forClassName: "Dog")
        XCTAssertEqual(try unarchiver.decodeTopLevelObject(of: Double.self, forKey: "seven"), 7.0)
        XCTAssertEqual(try unarchiver.decodeTopLevelObject(of: Int64.self, forKey: "seven"), 7)
        let animal = try XCTUnwrap(unarchiver.decodeTopLevelObject(of: Animal.self, forKey: "dog"))
        XCTAssertEqual((animal as? Dog)?.goodBoy, false)
        XCTAssertEqual(try unarchiver.decodeTopLevelObject(of: String.self, forKey: "text"), "text")
        XCTAssertThrowsError(try unarchiver.decodeTopLevelObject(of: Bool.self, forKey: "text"))
    }
}
