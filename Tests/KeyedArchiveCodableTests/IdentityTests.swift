import Foundation
import KeyedArchive
import XCTest

final class Person: Codable {
    var name: String
    var friends: [Person]
    init(_ name: String, friends: [Person] = []) {
        self.name = name
        self.friends = friends
    }
}

/// Uses encodeConditional for `favorite`, before or after `pet` depending on `conditionalFirst`.
final class Owner: Codable {
    var pet: Pet?
    var favorite: Pet?
    var conditionalFirst: Bool

    init(pet: Pet?, favorite: Pet?, conditionalFirst: Bool) {
        self.pet = pet
        self.favorite = favorite
        self.conditionalFirst = conditionalFirst
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: NameKeys.self)
        try container.encode(conditionalFirst, forKey: .c)
        if conditionalFirst, let favorite { try container.encodeConditional(favorite, forKey: .favorite) }
        try container.encodeIfPresent(pet, forKey: .pet)
        if !conditionalFirst, let favorite { try container.encodeConditional(favorite, forKey: .favorite) }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: NameKeys.self)
        conditionalFirst = try container.decode(Bool.self, forKey: .c)
        pet = try container.decodeIfPresent(Pet.self, forKey: .pet)
        favorite = try container.decodeIfPresent(Pet.self, forKey: .favorite)
    }
}

final class Pet: Codable {
    var name: String
    init(_ name: String) { self.name = name }
}

/// A node whose `next` is encoded conditionally (a weak back pointer in a real model).
extension Link {
    /// `count` links named "0"... in order of making, each holding the one before as `next`;
    /// the last made, the head.
    static func chain(_ count: Int) -> Link {
        var head = Link("0")
        for index in 1..<count {
            let link = Link(String(index))
            link.next = head
            head = link
        }
        return head
    }
}

final class Link: Codable {
    var name: String
    var next: Link?
    var weakBack: Link?
    init(_ name: String) { self.name = name }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: NameKeys.self)
        try container.encode(name, forKey: .a)
        try container.encodeIfPresent(next, forKey: .next)
        if let weakBack { try container.encodeConditional(weakBack, forKey: .b) }
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: NameKeys.self)
        name = try container.decode(String.self, forKey: .a)
        next = try container.decodeIfPresent(Link.self, forKey: .next)
        weakBack = try container.decodeIfPresent(Link.self, forKey: .b)
    }
}

/// A class instance that encodes as its one value (a single-value container).
final class SingleValueBox<Value: Codable>: Codable {
    let value: Value
    init(_ value: Value) { self.value = value }
    init(from decoder: any Decoder) throws { value = try decoder.singleValueContainer().decode(Value.self) }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }
}

/// Holds a conditional reference inside a nested container (`nested: true`, stored in
/// NSDictionary form) or a super encoder's container.
final class ForwardHolder: Codable {
    var target: Pet?
    let nested: Bool
    enum CodingKeys: String, CodingKey { case nested, inner }
    enum InnerKeys: String, CodingKey { case weak }
    init(target: Pet?, nested: Bool) {
        self.target = target
        self.nested = nested
    }
    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        nested = try container.decode(Bool.self, forKey: .nested)
        let inner = nested
            ? try container.nestedContainer(keyedBy: InnerKeys.self, forKey: .inner)
            : try container.superDecoder(forKey: .inner).container(keyedBy: InnerKeys.self)
        target = try inner.decodeIfPresent(Pet.self, forKey: .weak)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(nested, forKey: .nested)
        var inner = nested
            ? container.nestedContainer(keyedBy: InnerKeys.self, forKey: .inner)
            : container.superEncoder(forKey: .inner).container(keyedBy: InnerKeys.self)
        if let target { try inner.encodeConditional(target, forKey: .weak) }
    }
}

/// A holder encoded before the only unconditional reference to its target.
struct ForwardPair: Codable {
    var holder: ForwardHolder
    var target: Pet
}

/// A struct holding a conditional reference.
struct ConditionalPet: Codable {
    var pet: Pet?
    enum CodingKeys: String, CodingKey { case pet }
    init(pet: Pet?) { self.pet = pet }
    init(from decoder: any Decoder) throws {
        pet = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(Pet.self, forKey: .pet)
    }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let pet { try container.encodeConditional(pet, forKey: .pet) }
    }
}

/// A class instance encoding as a struct with a conditional reference, then the target.
struct BoxedPair: Codable {
    var boxed: SingleValueBox<ConditionalPet>
    var pet: Pet
}

final class IdentityTests: XCTestCase {
    /// A conditional reference in a nested or super encoder's container whose target is
    /// encoded only later: the entry holding it waits to be patched, and decodes as the one
    /// shared instance.
    func testForwardConditionalsInNestedContainersArePatched() throws {
        for nested in [true, false] {
            let target = Pet("later")
            let pair = ForwardPair(holder: ForwardHolder(target: target, nested: nested), target: target)
            let data = try KeyedArchiver.archivedData(withRootObject: pair)
            let decoded = try KeyedUnarchiver.unarchivedObject(ofType: ForwardPair.self, from: data)
            XCTAssertEqual(decoded.holder.target?.name, "later", "nested: \(nested)")
            XCTAssertTrue(decoded.holder.target === decoded.target, "nested: \(nested)")
            // Never encoded unconditionally: nil.
            let alone = ForwardHolder(target: Pet("nobody"), nested: nested)
            let aloneData = try KeyedArchiver.archivedData(withRootObject: alone)
            XCTAssertNil(try KeyedUnarchiver.unarchivedObject(ofType: ForwardHolder.self, from: aloneData).target, "nested: \(nested)")
        }
        // The class instance's entry is a copy of its single value's entry, which is patched
        // later: the copy must be patched too.
        let pet = Pet("copied")
        let boxedData = try KeyedArchiver.archivedData(withRootObject: BoxedPair(boxed: SingleValueBox(ConditionalPet(pet: pet)), pet: pet))
        let boxed = try KeyedUnarchiver.unarchivedObject(ofType: BoxedPair.self, from: boxedData)
        XCTAssertEqual(boxed.boxed.value.pet?.name, "copied")
        XCTAssertTrue(boxed.boxed.value.pet === boxed.pet)
    }

    /// A class instance encoded as a single value gets its own entry holding that value (a copy
    /// of the string's entry), and a shared one stays shared.
    func testClassInstancesEncodedAsSingleValuesKeepTheirValue() throws {
        let shared = SingleValueBox("shared")
        let tags = [SingleValueBox("first"), shared, shared, SingleValueBox("shared")]
        let data = try KeyedArchiver.archivedData(withRootObject: tags)
        let decoded = try KeyedUnarchiver.unarchivedObject(ofType: [SingleValueBox<String>].self, from: data)
        XCTAssertEqual(decoded.map(\.value), ["first", "shared", "shared", "shared"])
        XCTAssertTrue(decoded[1] === decoded[2])
        XCTAssertFalse(decoded[1] === decoded[3])
        let archive = try PropertyList.decode(data)
        let objects = try XCTUnwrap(archive["$objects"]?.arrayValue)
        // "first", and "shared" for two instances (one entry each) plus the string leaf itself.
        XCTAssertEqual(objects.filter { $0 == "first" }.count, 2)
        XCTAssertEqual(objects.filter { $0 == "shared" }.count, 3)
    }

    func testSharedInstancesDecodeAsOneInstance() throws {
        let shared = Person("shared")
        let a = Person("a", friends: [shared])
        let b = Person("b", friends: [shared, a])
        let data = try KeyedArchiver.archivedData(withRootObject: [a, b, shared])
        let back = try KeyedUnarchiver.unarchivedObject(ofType: [Person].self, from: data)
        XCTAssertEqual(back.map(\.name), ["a", "b", "shared"])
        XCTAssertTrue(back[0].friends[0] === back[2])
        XCTAssertTrue(back[1].friends[0] === back[2])
        XCTAssertTrue(back[1].friends[1] === back[0])
        // The peer duplicates shared instances.
        let peer = try PropertyListDecoder().decode([Person].self, from: PropertyListEncoder().encode([a, b, shared]))
        XCTAssertFalse(peer[0].friends[0] === peer[2])
        // Archived once: one object per person, found by counting objects with Person's class.
        let plist = try PropertyList.decode(data)
        let persons = plist["$objects"]?.arrayValue?.filter { $0["name"] != nil }.count
        XCTAssertEqual(persons, 3)
    }

    /// Instances reached through an `Optional` (`[Person?]`, a `Person??` field) keep their
    /// identity too: the optional's decode of its value was not remembered (the wrapper
    /// decodes it again without the cycle mark), so each use made a new instance.
    func testSharedInstancesThroughOptionalsDecodeAsOneInstance() throws {
        struct Holder: Codable {
            var one: Person?
            var two: Person??
            var list: [Person?]
        }
        let shared = Person("shared")
        let data = try KeyedArchiver.archivedData(withRootObject: Holder(one: shared, two: .some(shared), list: [shared, nil, shared]))
        let back = try KeyedUnarchiver.unarchivedObject(ofType: Holder.self, from: data)
        let one = try XCTUnwrap(back.one)
        XCTAssertTrue(back.two.flatMap { $0 } === one)
        XCTAssertEqual(back.list.count, 3)
        XCTAssertTrue(back.list.first.flatMap { $0 } === one && back.list.last.flatMap { $0 } === one)
        XCTAssertNil(back.list.count == 3 ? back.list[1] : shared)
        let list = try KeyedUnarchiver.unarchivedObject(ofType: [Person?].self, from: try KeyedArchiver.archivedData(withRootObject: [shared, shared] as [Person?]))
        XCTAssertTrue(list.count == 2 && list[0] != nil && list[0] === list[1])
    }

    /// Arrays of instances of every length around the table's lookahead, and a long one, with
    /// instances repeated within them and across them: each comes back as the same instances
    /// (the table loads the slots of later elements ahead of their lookups), each archived once.
    func testArraysOfRepeatedInstancesKeepTheirIdentityAtEveryLength() throws {
        let pool = (0..<40).map { Person("p\($0)") }
        // Lengths on either side of the longest array whose instances are loaded ahead (32).
        var lists = (Array(0..<10) + [31, 32, 33]).map { length in (0..<length).map { pool[($0 * 7 + length) % 13] } }
        lists.append((0..<300).map { pool[($0 * 11) % pool.count] })
        // Friends among the people made before (a Decodable graph has no cycles), some twice.
        for (index, person) in pool.enumerated() where index > 0 { person.friends = (0..<index % 4).map { pool[(index / 2 + $0 * 3) % index] } }
        let data = try KeyedArchiver.archivedData(withRootObject: lists)
        let back = try KeyedUnarchiver.unarchivedObject(ofType: [[Person]].self, from: data)
        XCTAssertEqual(back.map(\.count), lists.map(\.count))
        var decodedByName: [String: Person] = [:]
        for (list, decodedList) in zip(lists, back) {
            for (person, decoded) in zip(list, decodedList) {
                XCTAssertEqual(decoded.name, person.name)
                XCTAssertEqual(decoded.friends.map(\.name), person.friends.map(\.name))
                if let seen = decodedByName[person.name] { XCTAssertTrue(seen === decoded, person.name) }
                decodedByName[person.name] = decoded
            }
        }
        // Friends are the same instances as the people in the arrays.
        for decoded in decodedByName.values {
            for friend in decoded.friends { XCTAssertTrue(decodedByName[friend.name] === friend, "\(decoded.name)'s friend \(friend.name)") }
        }
        XCTAssertGreaterThan(Set(decodedByName.values.flatMap { $0.friends.map(\.name) }).count, 10, "friends of many kinds")
        // Each person archived once, counted in what Foundation reads.
        let foundation = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
        let objects = try XCTUnwrap(foundation?["$objects"] as? [Any])
        XCTAssertEqual(objects.filter { ($0 as? [String: Any])?["name"] != nil }.count, decodedByName.count)
    }

    /// One archived object read as two class types: each type gets its own instance, shared by
    /// every reference read as that type (the first type's instance is kept by UID, the other's
    /// beside it).
    func testOneEntryDecodedAsTwoTypesGivesOneInstancePerType() throws {
        typealias Node = NamedNode
        typealias ViewA = NamedViewA
        typealias ViewB = NamedViewB
        struct Views: Decodable {
            let a1: ViewA, b1: ViewB, a2: ViewA, b2: ViewB, b3: ViewB
            init(from decoder: any Decoder) throws {
                var container = try decoder.unkeyedContainer()
                a1 = try container.decode(ViewA.self)
                b1 = try container.decode(ViewB.self)
                a2 = try container.decode(ViewA.self)
                b2 = try container.decode(ViewB.self)
                b3 = try container.decode(ViewB.self)
            }
        }
        let node = Node("x")
        let data = try KeyedArchiveEncoder().encode([node, node, node, node, node])
        // One object in the archive for the five references.
        let objects = try XCTUnwrap(PropertyList.decode(data)["$objects"]?.arrayValue)
        XCTAssertEqual(objects.filter { $0["name"] != nil }.count, 1)
        let views = try KeyedArchiveDecoder().decode(Views.self, from: data)
        XCTAssertTrue(views.a1 === views.a2)
        XCTAssertTrue(views.b1 === views.b2)
        XCTAssertTrue(views.b1 === views.b3)
        XCTAssertEqual([views.a1.name, views.b1.name], ["x", "x"])
        // Each is an instance of its own class, not the other's instance reinterpreted (the
        // two classes have one layout, so only the class tells them apart).
        XCTAssertTrue(type(of: views.a2) == ViewA.self && type(of: views.b1) == ViewB.self && type(of: views.b3) == ViewB.self)
        XCTAssertFalse((views.a1 as AnyObject) === (views.b1 as AnyObject))
        // A tree read decodes the same way.
        let xml = try PropertyList.convert(data, to: .xml)
        let fromXML = try KeyedArchiveDecoder().decode(Views.self, from: xml)
        XCTAssertTrue(fromXML.a1 === fromXML.a2 && fromXML.b1 === fromXML.b3)
    }

    /// Arrays of the same entries read as two class types: the second array's elements are
    /// found under the first type's instances (loaded ahead, never taken), and each type still
    /// gets its own instance per entry.
    func testArraysOfOneEntryReadAsTwoTypesGiveOneInstancePerType() throws {
        typealias Node = NamedNode
        typealias ViewA = NamedViewA
        typealias ViewB = NamedViewB
        struct Views: Decodable {
            let b: [ViewB], a: [ViewA], again: [ViewB]
        }
        struct Root: Encodable {
            let b: [Node], a: [Node], again: [Node]
        }
        let nodes = (0..<6).map { Node("n\($0)") }
        let order = [3, 1, 4, 1, 5, 0, 2]
        let list = order.map { nodes[$0] }
        let data = try KeyedArchiveEncoder().encode(Root(b: list, a: list.reversed(), again: list))
        let views = try KeyedArchiveDecoder().decode(Views.self, from: data)
        XCTAssertEqual(views.b.map(\.name), list.map(\.name))
        XCTAssertEqual(views.a.map(\.name), list.reversed().map(\.name))
        for (index, number) in order.enumerated() {
            XCTAssertTrue(views.again[index] === views.b[index])
            let twin = try XCTUnwrap(order.firstIndex(of: number))
            XCTAssertTrue(views.b[index] === views.b[twin])
            XCTAssertTrue(views.a[order.count - 1 - index] === views.a[order.count - 1 - twin])
            XCTAssertFalse((views.a[order.count - 1 - index] as AnyObject) === (views.b[index] as AnyObject))
        }
    }

    func testCycleMakesEncodingThrowWithThePath() throws {
        let a = Person("a")
        let b = Person("b", friends: [a])
        a.friends = [b]
        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: ["root": a])) { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(context.debugDescription.contains("cycle"), context.debugDescription)
            XCTAssertEqual(context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }, ["root", "friends", "0", "friends", "0"])
        }
        // The message names where the instance started, which need not be the innermost one.
        let start = Person("start"), middle = Person("middle"), inner = Person("inner")
        start.friends = [middle]
        middle.friends = [inner]
        inner.friends = [middle]
        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: ["root": start])) { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(
                context.debugDescription.contains(
                    "being encoded at root.friends.[0] and is referenced again inside itself at root.friends.[0].friends.[0].friends.[0]"),
                context.debugDescription)
        }
        let selfish = Person("self")
        selfish.friends = [selfish]
        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: selfish)) { error in
            XCTAssertTrue(error is EncodingError)
        }
    }

    func testACycleDeepInALongChainReportsBothPaths() throws {
        // Deeper than the encoder's first room for instances in progress (16), UIDs (64) and
        // coding-path keys (16): each grows on the way down and still reports both paths.
        let people = (0..<40).map { Person("p\($0)") }
        for index in 0..<39 { people[index].friends = [people[index + 1]] }
        people[39].friends = [people[5]]
        defer { for person in people { person.friends = [] } }
        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: ["root": people[0]])) { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(
                context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue },
                ["root"] + Array(repeating: ["friends", "0"], count: 40).flatMap { $0 })
            let started = "root" + String(repeating: ".friends.[0]", count: 5)
            let again = "root" + String(repeating: ".friends.[0]", count: 40)
            XCTAssertTrue(
                context.debugDescription.contains("being encoded at \(started) and is referenced again inside itself at \(again)"),
                context.debugDescription)
        }
        // Without the cycle, the same chain archives and reads back whole.
        people[39].friends = []
        let back = try KeyedUnarchiver.unarchivedObject(ofType: Person.self, from: KeyedArchiver.archivedData(withRootObject: people[0]))
        var names: [String] = []
        var current: Person? = back
        while let person = current, names.count < 50 {
            names.append(person.name)
            current = person.friends.first
        }
        XCTAssertEqual(names, people.map(\.name))
    }

    func testADecodingErrorDeepInALongChainReportsItsPath() throws {
        // Deeper than the decoder's first room for coding-path keys (16).
        struct Link: Codable {
            var name: String
            var next: [Link]
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                // The innermost link's name is written as a number: it cannot decode as a String.
                if name == "bad" { try container.encode(42, forKey: .name) } else { try container.encode(name, forKey: .name) }
                try container.encode(next, forKey: .next)
            }
        }
        var chain = Link(name: "bad", next: [])
        for index in 0..<30 { chain = Link(name: "l\(index)", next: [chain]) }
        let data = try KeyedArchiver.archivedData(withRootObject: chain)
        XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofType: Link.self, from: data)) { error in
            guard case DecodingError.typeMismatch(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertEqual(
                context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue },
                Array(repeating: ["next", "0"], count: 30).flatMap { $0 } + ["name"])
        }
    }

    func testConditionalObjectsInBothOrders() throws {
        for conditionalFirst in [true, false] {
            let pet = Pet("rex")
            let owner = Owner(pet: pet, favorite: pet, conditionalFirst: conditionalFirst)
            let back = try KeyedUnarchiver.unarchivedObject(ofType: Owner.self, from: KeyedArchiver.archivedData(withRootObject: owner))
            XCTAssertEqual(back.pet?.name, "rex")
            XCTAssertTrue(back.favorite === back.pet, "conditionalFirst \(conditionalFirst)")
        }
        // Never encoded unconditionally: nil.
        let lonely = Owner(pet: nil, favorite: Pet("ghost"), conditionalFirst: true)
        let back = try KeyedUnarchiver.unarchivedObject(ofType: Owner.self, from: KeyedArchiver.archivedData(withRootObject: lonely))
        XCTAssertNil(back.favorite)
        // Encoded later, in another object (back-patched at the end).
        let pet = Pet("later")
        let first = Owner(pet: nil, favorite: pet, conditionalFirst: true)
        let second = Owner(pet: pet, favorite: nil, conditionalFirst: true)
        let pair = try KeyedUnarchiver.unarchivedObject(ofType: [Owner].self, from: KeyedArchiver.archivedData(withRootObject: [first, second]))
        XCTAssertTrue(pair[0].favorite === pair[1].pet)
        XCTAssertEqual(pair[0].favorite?.name, "later")
    }

    func testConditionalReferenceThatClosesACycleIsAnEncodingError() throws {
        // Back pointer to an ancestor: a cycle through a conditional reference.
        let parent = Link("parent")
        let child = Link("child")
        parent.next = child
        child.weakBack = parent
        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: parent)) { error in
            XCTAssertTrue(error is EncodingError, "\(error)")
        }
        // Forward conditional reference whose target, encoded later, leads back: also refused.
        let a = Link("a")
        let b = Link("b")
        a.weakBack = b
        b.next = a
        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: [a, b])) { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(context.debugDescription.contains("cycle"), context.debugDescription)
        }
    }

    func testLongChainsAreDepthBoundedNotCrashing() throws {
        let head = Link.chain(2_000)
        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: head)) { error in
            guard case EncodingError.invalidValue(_, let context) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(context.debugDescription.contains("depth"))
        }
        let encoder = KeyedArchiveEncoder()
        encoder.maximumDepth = 3_000
        let data = try encoder.encode(head)
        XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofType: Link.self, from: data)) { error in
            XCTAssertTrue(error is DecodingError)
        }
        let decoder = KeyedArchiveDecoder()
        decoder.limits.maximumDepth = 3_000
        var node: Link? = try decoder.decode(Link.self, from: data)
        var count = 0
        while let current = node {
            count += 1
            node = current.next
        }
        XCTAssertEqual(count, 2_000)
    }
}

/// An entry archived once and read back as two class types of one layout (``NamedViewA``,
/// ``NamedViewB``), for the tests of one entry decoded as two types.
private final class NamedNode: Encodable {
    let name: String
    init(_ name: String) { self.name = name }
}

/// One of two class types with the same layout, read from a ``NamedNode``.
private final class NamedViewA: Decodable { let name: String }

/// The other of two class types with the same layout, read from a ``NamedNode``.
private final class NamedViewB: Decodable { let name: String }
