import Foundation
import KeyedArchive
import XCTest

/// The bridge decides per Swift type (once per run) whether a value is a primitive, a
/// Foundation value, an array, a dictionary, a class instance or a plain value. These tests
/// check that decision where a per-value check used to make it: types of the same shape that
/// differ only in being a class, nested generic types, more types than the short lists hold,
/// arrays coded by the bridge itself, and an optional dictionary encoded directly.
final class TypeKindTests: XCTestCase {
    struct PointS: Codable, Equatable {
        var x: Int
        var y: Int
    }

    final class PointC: Codable {
        var x: Int
        var y: Int
        init(_ x: Int, _ y: Int) {
            self.x = x
            self.y = y
        }
    }

    struct Shapes: Codable {
        var structs: [PointS]
        var classes: [PointC]
        var single: PointS
    }

    /// The class first, then a struct of the same shape (the other order than `Shapes`).
    struct ClassFirst: Codable {
        var shared: PointC
        var again: PointC
        var plain: PointS
    }

    func testClassAndStructOfTheSameShapeKeepTheirKinds() throws {
        let shared = PointC(1, 2)
        let shapes = Shapes(structs: [PointS(x: 1, y: 2), PointS(x: 1, y: 2)], classes: [shared, shared, PointC(1, 2)], single: PointS(x: 5, y: 6))
        let decoded = try KeyedUnarchiver.unarchivedObject(ofType: Shapes.self, from: KeyedArchiver.archivedData(withRootObject: shapes))
        XCTAssertEqual(decoded.structs, shapes.structs)
        XCTAssertEqual(decoded.single, shapes.single)
        XCTAssertEqual(decoded.classes.count, 3)
        // Identity is kept for the class (one instance twice), not invented for the equal third one.
        XCTAssertTrue(decoded.classes[0] === decoded.classes[1])
        XCTAssertFalse(decoded.classes[0] === decoded.classes[2])
        XCTAssertEqual(decoded.classes.map { [$0.x, $0.y] }, [[1, 2], [1, 2], [1, 2]])

        let other = ClassFirst(shared: shared, again: shared, plain: PointS(x: 3, y: 4))
        let back = try KeyedUnarchiver.unarchivedObject(ofType: ClassFirst.self, from: KeyedArchiver.archivedData(withRootObject: other))
        XCTAssertTrue(back.shared === back.again)
        XCTAssertEqual(back.plain, other.plain)
    }

    struct Box<T: Codable & Equatable>: Codable, Equatable {
        var value: T
    }

    /// More distinct types than the bridge's short per-run lists hold (16), nested generics
    /// among them, and every leaf kind.
    struct ManyTypes: Codable, Equatable {
        var a: Box<Int8>
        var b: Box<Int16>
        var c: Box<Int32>
        var d: Box<Int64>
        var e: Box<UInt>
        var f: Box<UInt8>
        var g: Box<UInt16>
        var h: Box<UInt32>
        var i: Box<UInt64>
        var j: Box<Float>
        var k: Box<Double>
        var l: Box<Bool>
        var m: Box<String>
        var n: Box<Box<Int>>
        var o: Box<[Box<String>]>
        var p: Box<[[Int]]>
        var q: Box<[Int?]>
        var r: Box<[String: [Int]]>
        var s: Box<Set<Int>>
        var t: Box<Date>
        var u: Box<Data>
        var v: Box<URL>
        var w: Box<UUID>
        var x: [Box<Int8>]
        var y: [[Box<Box<String>>]]
        var z: Box<Int>?
    }

    private func sampleManyTypes() throws -> ManyTypes {
        ManyTypes(
            a: Box(value: -8), b: Box(value: -16), c: Box(value: -32), d: Box(value: .min), e: Box(value: .max), f: Box(value: 8),
            g: Box(value: 16), h: Box(value: 32), i: Box(value: .max), j: Box(value: 1.5), k: Box(value: -0.25), l: Box(value: true),
            m: Box(value: "m"), n: Box(value: Box(value: 42)), o: Box(value: [Box(value: "o1"), Box(value: "o2")]),
            p: Box(value: [[1, 2], [], [3]]), q: Box(value: [1, nil, 3]), r: Box(value: ["r": [1, 2], "s": []]),
            s: Box(value: [3, 1, 2]), t: Box(value: Date(timeIntervalSinceReferenceDate: 12_345.5)), u: Box(value: Data([1, 2, 3])),
            v: Box(value: try XCTUnwrap(URL(string: "https://example.com/a?b=c"))),
            w: Box(value: try XCTUnwrap(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))),
            x: [Box(value: 1), Box(value: 2)], y: [[Box(value: Box(value: "y"))], []], z: nil)
    }

    func testNestedGenericTypesAndManyTypesRoundTrip() throws {
        let value = try sampleManyTypes()
        for format in [PropertyListFormat.binary, .xml] {
            let encoder = KeyedArchiveEncoder()
            encoder.outputFormat = format
            let data = try encoder.encode(value)
            XCTAssertEqual(try KeyedArchiveDecoder().decode(ManyTypes.self, from: data), value, "\(format)")
            // The same value through Foundation's property-list coder (an independent round trip).
            let peer = try PropertyListDecoder().decode(ManyTypes.self, from: PropertyListEncoder().encode(value))
            XCTAssertEqual(peer, value)
        }
    }

    /// Many distinct classes (more than the short class caches hold), each instance shared.
    final class Node<T: Codable>: Codable {
        var value: T
        init(_ value: T) { self.value = value }
    }

    struct ManyClasses: Codable {
        var a: [Node<Int8>]
        var b: [Node<Int16>]
        var c: [Node<Int32>]
        var d: [Node<Int64>]
        var e: [Node<UInt8>]
        var f: [Node<UInt16>]
        var g: [Node<UInt32>]
        var h: [Node<UInt64>]
        var i: [Node<String>]
        var j: [Node<Double>]
        var k: [Node<Float>]
        var l: [Node<Bool>]
        var m: [Node<[Int]>]
        var n: [Node<Date>]
        var o: [Node<Data>]
        var p: [Node<Int>]
        var q: [Node<UInt>]
        var r: [Node<[String]>]
    }

    func testManyClassesKeepIdentity() throws {
        func two<T>(_ value: T) -> [Node<T>] {
            let node = Node(value)
            return [node, node]
        }
        let value = ManyClasses(
            a: two(1), b: two(2), c: two(3), d: two(4), e: two(5), f: two(6), g: two(7), h: two(8), i: two("i"), j: two(1.5),
            k: two(2.5), l: two(true), m: two([1, 2]), n: two(Date(timeIntervalSinceReferenceDate: 7)), o: two(Data([9])),
            p: two(-1), q: two(11), r: two(["r"]))
        let back = try KeyedUnarchiver.unarchivedObject(ofType: ManyClasses.self, from: KeyedArchiver.archivedData(withRootObject: value))
        XCTAssertTrue(back.a[0] === back.a[1])
        XCTAssertTrue(back.i[0] === back.i[1])
        XCTAssertTrue(back.p[0] === back.p[1])
        XCTAssertTrue(back.r[0] === back.r[1])
        XCTAssertFalse((back.a[0] as AnyObject) === (back.b[0] as AnyObject))
        XCTAssertEqual(back.a[1].value, 1)
        XCTAssertEqual(back.i[1].value, "i")
        XCTAssertEqual(back.m[1].value, [1, 2])
        XCTAssertEqual(back.n[0].value, Date(timeIntervalSinceReferenceDate: 7))
        XCTAssertEqual(back.o[0].value, Data([9]))
        XCTAssertEqual(back.p[0].value, -1)
        XCTAssertEqual(back.q[0].value, 11)
        XCTAssertEqual(back.r[0].value, ["r"])
    }

    /// A type whose archive name is computed at each use: the process-wide cache of names keeps
    /// whether a type adopts ``KeyedArchiveClassNaming``, never the name it gave, so a name
    /// that changes between archives is written as it is at each.
    struct Renamed: Codable, KeyedArchiveClassNaming {
        static let current = NameBox("FirstName")
        static var archiveClassName: String { current.name }
        var value: Int
    }

    final class NameBox: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: String
        init(_ name: String) { stored = name }
        var name: String {
            get { lock.withLock { stored } }
            set { lock.withLock { stored = newValue } }
        }
    }

    struct Unnamed: Codable { var value: Int }

    func testArchiveNamesAreAskedForAtEachArchive() throws {
        func className(of data: Data) throws -> String? {
            let objects = try XCTUnwrap(PropertyList.decode(data)["$objects"]?.arrayValue)
            return objects.compactMap { $0["$classname"]?.stringValue }.first
        }
        defer { Renamed.current.name = "FirstName" }
        Renamed.current.name = "FirstName"
        XCTAssertEqual(try className(of: KeyedArchiver.archivedData(withRootObject: Renamed(value: 1))), "FirstName")
        Renamed.current.name = "SecondName"
        let second = try KeyedArchiver.archivedData(withRootObject: Renamed(value: 2))
        XCTAssertEqual(try className(of: second), "SecondName")
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: Renamed.self, from: second).value, 2)
        // A type without the protocol: its Swift name, and an encoder's override still wins
        // after the type's name was cached.
        XCTAssertEqual(try className(of: KeyedArchiver.archivedData(withRootObject: Unnamed(value: 3))), "TypeKindTests.Unnamed")
        let encoder = KeyedArchiveEncoder()
        encoder.setClassName("Legacy", for: Unnamed.self)
        XCTAssertEqual(try className(of: encoder.encode(Unnamed(value: 4))), "Legacy")
        XCTAssertEqual(try className(of: KeyedArchiver.archivedData(withRootObject: Unnamed(value: 5))), "TypeKindTests.Unnamed")
    }

    /// Types no other test uses, so that this test meets them first.
    struct ThreadBox<T: Codable & Equatable & Sendable>: Codable, Equatable, Sendable {
        var value: T
        var list: [T]
    }

    struct ThreadMany: Codable, Equatable, Sendable {
        var a: ThreadBox<Int8>
        var b: ThreadBox<String>
        var c: ThreadBox<[Int]>
        var d: [ThreadBox<Double>]
        var e: ThreadBox<Set<Int>>
        var f: ThreadBox<[String: [UInt16]]>
        var g: ThreadBox<ThreadBox<Bool>>?
        var h: [[ThreadBox<Data>]]
    }

    /// Kinds and names are shared by every encoder and decoder of the process: archives of
    /// types no other test meets, made and read on several threads at once (so each type is
    /// first classified and named on whichever thread gets there), read back the same values.
    func testTypeKindsAndNamesSharedAcrossThreads() throws {
        let value = ThreadMany(
            a: ThreadBox(value: -3, list: [1, 2]), b: ThreadBox(value: "b", list: ["x", "é"]), c: ThreadBox(value: [1], list: [[], [2, 3]]),
            d: [ThreadBox(value: 0.5, list: [1.5])], e: ThreadBox(value: [1, 2], list: [[3]]),
            f: ThreadBox(value: ["k": [1]], list: [[:], ["m": [2, 3]]]), g: ThreadBox(value: ThreadBox(value: true, list: [false]), list: []),
            h: [[ThreadBox(value: Data([1]), list: [Data()])], []])
        let failures = Failures()
        DispatchQueue.concurrentPerform(iterations: 16) { round in
            do {
                let data: Data
                if round % 2 == 0 {
                    data = try KeyedArchiver.archivedData(withRootObject: value)
                } else {
                    let encoder = KeyedArchiveEncoder()
                    encoder.outputFormat = .xml
                    data = try encoder.encode(value)
                }
                if try KeyedArchiveDecoder().decode(ThreadMany.self, from: data) != value { failures.add("round \(round) differs") }
            } catch {
                failures.add("round \(round): \(error)")
            }
        }
        XCTAssertEqual(failures.all, [])
    }

    /// Messages added from several threads.
    final class Failures: @unchecked Sendable {
        private let lock = NSLock()
        private var messages: [String] = []
        func add(_ message: String) { lock.withLock { messages.append(message) } }
        var all: [String] { lock.withLock { messages } }
    }

    /// Arrays written by the bridge are NSArrays Foundation reads as such.
    func testFoundationReadsArraysAsNestedNSArrays() throws {
        let value: [[Int]] = [[1, 2], [], [3]]
        let data = try KeyedArchiver.archivedData(withRootObject: value)
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
        unarchiver.requiresSecureCoding = false
        let object = unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey)
        let arrays = try XCTUnwrap(object as? [[Int]], "Foundation read \(String(describing: object))")
        XCTAssertEqual(arrays, value)
    }

    struct Numbers: Codable { var numbers: [Int] }
    struct Words: Codable { var numbers: [String] }

    /// An error inside an array names the element's index, as Foundation's decoder does.
    func testArrayElementErrorsCarryTheIndexPath() throws {
        let ours = try KeyedArchiver.archivedData(withRootObject: Numbers(numbers: [1, 2]))
        let peer = try PropertyListEncoder().encode(Numbers(numbers: [1, 2]))
        var paths: [[any CodingKey]] = []
        for decode in [{ try KeyedUnarchiver.unarchivedObject(ofType: Words.self, from: ours) }, { try PropertyListDecoder().decode(Words.self, from: peer) }] {
            XCTAssertThrowsError(try decode()) { error in
                guard case DecodingError.typeMismatch(_, let context) = error else { return XCTFail("\(error)") }
                paths.append(context.codingPath)
            }
        }
        XCTAssertEqual(paths.count, 2)
        guard paths.count == 2 else { return }
        // The same path as Foundation's, from the root value's keys down.
        XCTAssertEqual(paths[0].map(\.stringValue), paths[1].map(\.stringValue))
        XCTAssertEqual(paths[0].map(\.intValue), paths[1].map(\.intValue))
        XCTAssertEqual(paths[0].last?.intValue, 0)
    }

    /// One element of any leaf type, or nil: arrays of it hold what an array of one leaf type
    /// must reject.
    enum Element: Codable, Equatable {
        case string(String), int(Int), double(Double), bool(Bool), none
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() { self = .none; return }
            if let value = try? container.decode(Bool.self) { self = .bool(value); return }
            if let value = try? container.decode(Int.self) { self = .int(value); return }
            if let value = try? container.decode(Double.self) { self = .double(value); return }
            self = .string(try container.decode(String.self))
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let value): try container.encode(value)
            case .int(let value): try container.encode(value)
            case .double(let value): try container.encode(value)
            case .bool(let value): try container.encode(value)
            case .none: try container.encodeNil()
            }
        }
    }

    struct List<T: Codable & Equatable>: Codable, Equatable { var items: [T] }

    /// A string that codes itself through a single-value container: an array of it takes the
    /// bridge's general path (a value per element), an array of `String` the leaf path.
    struct Wrapped: Codable, Equatable {
        var text: String
        init(_ text: String) { self.text = text }
        init(from decoder: any Decoder) throws { text = try decoder.singleValueContainer().decode(String.self) }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(text)
        }
    }

    /// Arrays of strings, integers, doubles and booleans are coded by a path of their own; it
    /// writes the bytes the general path writes, reads back what was written, and Foundation's
    /// unarchiver reads the arrays too.
    func testLeafArraysMatchTheGeneralPathAndFoundation() throws {
        let words = ["", "a", "é", "naïve", "😀 emoji", "a", String(repeating: "long ", count: 20), "$dollar"]
        // One class name for both list types, so that only the elements' path differs.
        let encoder = KeyedArchiveEncoder()
        encoder.setClassName("List", for: List<String>.self)
        encoder.setClassName("List", for: List<Wrapped>.self)
        let leaf = try encoder.encode(List(items: words))
        let general = try encoder.encode(List(items: words.map(Wrapped.init)))
        XCTAssertEqual(leaf, general, "an array of String is archived as an array of values coding a String each")
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: List<String>.self, from: general).items, words)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: List<Wrapped>.self, from: leaf).items.map(\.text), words)

        let ints = [0, 1, -1, Int.max, Int.min, 255, 256, 65_536, 1 << 40]
        let doubles = [0.0, -0.0, 1.5, -1e300, .infinity, .leastNonzeroMagnitude]
        let bools = [true, false, false, true]
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: List<Int>.self, from: KeyedArchiver.archivedData(withRootObject: List(items: ints))).items, ints)
        let doublesBack = try KeyedUnarchiver.unarchivedObject(ofType: List<Double>.self, from: KeyedArchiver.archivedData(withRootObject: List(items: doubles))).items
        XCTAssertEqual(doublesBack.map(\.bitPattern), doubles.map(\.bitPattern))
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: List<Bool>.self, from: KeyedArchiver.archivedData(withRootObject: List(items: bools))).items, bools)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: [String].self, from: KeyedArchiver.archivedData(withRootObject: [String]())), [])

        for (value, expected) in [(words as Any, words as NSArray), (ints as Any, ints as NSArray), (doubles as Any, doubles as NSArray), (bools as Any, bools as NSArray)] {
            let data: Data
            switch value {
            case let value as [String]: data = try KeyedArchiver.archivedData(withRootObject: value)
            case let value as [Int]: data = try KeyedArchiver.archivedData(withRootObject: value)
            case let value as [Double]: data = try KeyedArchiver.archivedData(withRootObject: value)
            case let value as [Bool]: data = try KeyedArchiver.archivedData(withRootObject: value)
            default: return XCTFail("unexpected value")
            }
            let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
            unarchiver.requiresSecureCoding = false
            let object = unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey)
            XCTAssertEqual(object as? NSArray, expected, "Foundation read \(String(describing: object))")
        }
    }

    /// A wrong or missing element in an array of a leaf type is reported at its index, with the
    /// error Foundation's PropertyListDecoder gives for the same array, and as the general path
    /// (an array of a type that decodes a single value) reports it.
    func testLeafArrayElementErrorsMatchFoundation() throws {
        let cases: [(items: [Element], decode: (Data, Bool) throws -> Void)] = [
            ([.string("a"), .int(5)], { data, ours in _ = ours ? try KeyedUnarchiver.unarchivedObject(ofType: List<String>.self, from: data) : try PropertyListDecoder().decode(List<String>.self, from: data) }),
            ([.string("a"), .none], { data, ours in _ = ours ? try KeyedUnarchiver.unarchivedObject(ofType: List<String>.self, from: data) : try PropertyListDecoder().decode(List<String>.self, from: data) }),
            ([.int(1), .string("x")], { data, ours in _ = ours ? try KeyedUnarchiver.unarchivedObject(ofType: List<Int>.self, from: data) : try PropertyListDecoder().decode(List<Int>.self, from: data) }),
            ([.int(1), .none], { data, ours in _ = ours ? try KeyedUnarchiver.unarchivedObject(ofType: List<Int>.self, from: data) : try PropertyListDecoder().decode(List<Int>.self, from: data) }),
            ([.double(1.5), .string("x")], { data, ours in _ = ours ? try KeyedUnarchiver.unarchivedObject(ofType: List<Double>.self, from: data) : try PropertyListDecoder().decode(List<Double>.self, from: data) }),
            ([.bool(true), .string("x")], { data, ours in _ = ours ? try KeyedUnarchiver.unarchivedObject(ofType: List<Bool>.self, from: data) : try PropertyListDecoder().decode(List<Bool>.self, from: data) }),
        ]
        func failure(_ body: () throws -> Void) -> (kind: String, path: [any CodingKey])? {
            do {
                try body()
            } catch DecodingError.typeMismatch(_, let context) {
                return ("typeMismatch", context.codingPath)
            } catch DecodingError.valueNotFound(_, let context) {
                return ("valueNotFound", context.codingPath)
            } catch {
                XCTFail("unexpected error \(error)")
            }
            return nil
        }
        for (number, testCase) in cases.enumerated() {
            let value = List(items: testCase.items)
            let ours = try XCTUnwrap(failure { try testCase.decode(KeyedArchiver.archivedData(withRootObject: value), true) }, "case \(number) decoded")
            let peer = try XCTUnwrap(failure { try testCase.decode(PropertyListEncoder().encode(value), false) }, "case \(number): Foundation decoded")
            XCTAssertEqual(ours.kind, peer.kind, "case \(number)")
            // The same path as Foundation's, from the root value's keys down.
            XCTAssertEqual(ours.path.map(\.stringValue), peer.path.map(\.stringValue), "case \(number)")
            XCTAssertEqual(ours.path.map(\.intValue), peer.path.map(\.intValue), "case \(number)")
            XCTAssertEqual(ours.path.first?.stringValue, "items", "case \(number)")
            XCTAssertEqual(ours.path.last?.intValue, 1, "case \(number)")
        }
        // The general path, for strings: the same kind of error at the same path.
        let data = try KeyedArchiver.archivedData(withRootObject: List(items: [Element.string("a"), .int(5)]))
        let leaf = try XCTUnwrap(failure { _ = try KeyedUnarchiver.unarchivedObject(ofType: List<String>.self, from: data) })
        let general = try XCTUnwrap(failure { _ = try KeyedUnarchiver.unarchivedObject(ofType: List<Wrapped>.self, from: data) })
        XCTAssertEqual(leaf.kind, general.kind)
        XCTAssertEqual(leaf.path.map(\.stringValue), general.path.map(\.stringValue))
        XCTAssertEqual(leaf.path.map(\.intValue), general.path.map(\.intValue))
    }

    /// Encodes an optional dictionary with `encode(_:forKey:)` (not `encodeIfPresent`).
    struct DirectOptional: Codable, Equatable {
        var table: [String: Int]?
        enum CodingKeys: String, CodingKey { case table }
        init(table: [String: Int]?) { self.table = table }
        init(from decoder: any Decoder) throws {
            table = try decoder.container(keyedBy: CodingKeys.self).decode([String: Int]?.self, forKey: .table)
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(table, forKey: .table)
        }
    }

    func testOptionalDictionaryEncodedDirectlyIsAnNSDictionary() throws {
        let value = DirectOptional(table: ["a": 1, "b": 2])
        let data = try KeyedArchiver.archivedData(withRootObject: value)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: DirectOptional.self, from: data), value)
        // Follow the format by hand: $top.root -> the object, its "table" -> an object whose
        // class description names NSDictionary.
        guard case .dictionary(let envelope) = try PropertyList.decode(data), case .array(let objects)? = envelope["$objects"],
            case .dictionary(let top)? = envelope["$top"], case .uid(let rootUID)? = top["root"],
            case .dictionary(let root) = objects[Int(rootUID)], case .uid(let tableUID)? = root["table"],
            case .dictionary(let table) = objects[Int(tableUID)], case .uid(let classUID)? = table["$class"],
            case .dictionary(let description) = objects[Int(classUID)], case .string(let name)? = description["$classname"]
        else {
            return XCTFail("unexpected archive shape")
        }
        XCTAssertEqual(name.value, "NSDictionary")
        let none = DirectOptional(table: nil)
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: DirectOptional.self, from: KeyedArchiver.archivedData(withRootObject: none)), none)
    }
}
