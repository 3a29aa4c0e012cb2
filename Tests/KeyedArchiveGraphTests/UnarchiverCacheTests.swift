import KeyedArchive
import XCTest

/// The unarchiver caches per class description (resolution), per object (the allowed set it
/// was last checked against) and builds element paths only on error; these tests pin down
/// that the caches never mix up classes or allowed sets and that paths read as before.
final class UnarchiverCacheTests: XCTestCase {
    /// Interleaved objects of two classes (one a subclass of the other, same keys) come back
    /// as their own classes: the class cache must key on the description, not reuse the last.
    func testInterleavedClassesKeepTheirTypes() throws {
        var originals: [Animal] = []
        for index in 0..<40 {
            originals.append(index % 3 == 0 ? Dog(name: "dog \(index)", goodBoy: index % 2 == 0) : Animal(name: "animal \(index)"))
        }
        let data = try KeyedArchiver.archivedData(withRootObject: originals as [Any], format: .binary)
        let unarchiver = try KeyedUnarchiver(data: data)
        let decoded = try XCTUnwrap(unarchiver.decodeTopLevelObject(of: [.array, .type(Animal.self), .type(Dog.self)]) as? [Any])
        XCTAssertEqual(decoded.count, originals.count)
        for (original, value) in zip(originals, decoded) {
            let animal = try XCTUnwrap(value as? Animal)
            XCTAssertTrue(type(of: animal) == type(of: original), "\(type(of: animal)) for \(original.name)")
            XCTAssertEqual(animal.name, original.name)
            if let dog = original as? Dog { XCTAssertEqual((animal as? Dog)?.goodBoy, dog.goodBoy) }
        }
    }

    /// An object already decoded under one allowed set is checked again under another: a set
    /// without its class must be refused even though the instance exists, and asking again with
    /// its class returns the same instance.
    func testSharedInstanceIsCheckedPerAllowedSet() throws {
        let node = Node(label: 7)
        let archiver = KeyedArchiver()
        try archiver.encode(node, forKey: "root")
        try archiver.encode(node, forKey: "again")
        try archiver.encode(node, forKey: "third")
        let unarchiver = try KeyedUnarchiver(data: try archiver.finishEncoding())
        let first = try XCTUnwrap(unarchiver.decodeTopLevelObject(of: Node.self))
        XCTAssertEqual(first.label, 7)
        XCTAssertThrowsError(try unarchiver.decodeTopLevelObject(of: [.string, .array], forKey: "again")) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .classNotAllowed, "\(error)")
        }
        let third = try XCTUnwrap(unarchiver.decodeTopLevelObject(of: Node.self, forKey: "third"))
        XCTAssertTrue(first === third)
        // And the refusal repeats (nothing cached the failed check as a pass).
        XCTAssertThrowsError(try unarchiver.decodeTopLevelObject(of: [.string], forKey: "again")) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .classNotAllowed, "\(error)")
        }
    }

    /// One class description resolved under two allowed sets: refused where its class is not
    /// allowed, accepted where it is, in either order.
    func testResolutionIsPerAllowedSet() throws {
        let data = try KeyedArchiver.archivedData(withRootObject: [Node(label: 1), Node(label: 2)] as [Any], format: .binary)
        let unarchiver = try KeyedUnarchiver(data: data)
        XCTAssertThrowsError(try unarchiver.decodeTopLevelObject(of: [.array, .string])) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .classNotAllowed, "\(error)")
        }
        let nodes = try XCTUnwrap(unarchiver.decodeArrayOfObjects(ofClass: Node.self, forKey: "root"))
        XCTAssertEqual(nodes.map(\.label), [1, 2])
        XCTAssertThrowsError(try unarchiver.decodeTopLevelObject(of: [.array, .string])) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .classNotAllowed, "\(error)")
        }
    }

    /// Paths name collection elements as the format documents them: `NS.objects[i]` for the
    /// array form, `NS.object.i` for the numbered form, `NS.keys[i]` / `NS.objects[i]` in a
    /// dictionary.
    func testElementPathsOnError() {
        func archive(_ objects: [PropertyListValue]) -> PropertyListValue {
            ["$archiver": "NSKeyedArchiver", "$version": 100000, "$top": ["root": .uid(1)], "$objects": .array(objects)]
        }
        let arrayClass: PropertyListValue = ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]]
        let dictionaryClass: PropertyListValue = ["$classname": "NSDictionary", "$classes": ["NSDictionary", "NSObject"]]
        let cases: [(PropertyListValue, String)] = [
            (archive(["$null", ["$class": .uid(2), "NS.objects": [.uid(3), .uid(0)]], arrayClass, "x"]),
             "$top.root > $objects[1] (NSArray) NS.objects[1]: collection element is nil (UID 0)"),
            (archive(["$null", ["$class": .uid(2), "NS.object.0": .uid(3), "NS.object.1": .uid(3), "NS.object.2": .uid(0)], arrayClass, "x"]),
             "$top.root > $objects[1] (NSArray) NS.object.2: collection element is nil (UID 0)"),
            (archive(["$null", ["$class": .uid(2), "NS.keys": [.uid(3), .uid(3)], "NS.objects": [.uid(3), .uid(4)]], dictionaryClass, "k", 3.5]),
             "$top.root > $objects[1] (NSDictionary) NS.objects[1]: NSNumber at $objects[4] is not among the allowed classes (NSDictionary, NSArray, NSString)"),
        ]
        for (value, expected) in cases {
            do {
                _ = try KeyedUnarchiver(propertyList: value).decodeTopLevelObject(of: [.dictionary, .array, .string])
                XCTFail("accepted: \(expected)")
            } catch let error as KeyedArchiveError {
                XCTAssertEqual(error.description, expected)
            } catch {
                XCTFail("untyped \(error)")
            }
        }
    }
}
