import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// Both directions against swift-corelibs-foundation's NSKeyedArchiver / NSKeyedUnarchiver.
///
/// Known peer bugs are avoided rather than papered over (Docs: peers-on-linux.md): no cycles
/// are given to Foundation (its unarchiver overflows the stack), no NSSet with more than one
/// member in random graphs (it can drop members), and Foundation-written archives are judged
/// against Foundation's own reading of the same bytes (its archiver merges 1 with true).
final class FoundationPeerTests: XCTestCase {
    static let foundationAllowed: [AnyClass] = [
        NSArray.self, NSMutableArray.self, NSDictionary.self, NSMutableDictionary.self, NSString.self, NSNumber.self,
        NSData.self, NSDate.self, NSSet.self, NSOrderedSet.self, NSNull.self, NSURL.self, NSUUID.self,
    ]

    // MARK: Canonical forms, independent of either side's Swift types

    /// A Foundation object graph as a plain value: containers, strings, numbers by their CF type.
    static func canonical(foundation object: Any) throws -> PropertyListValue {
        switch object {
        case let string as NSString: return PropertyListValue(string as String)
        case let number as NSNumber:
            let type = String(cString: number.objCType)
            switch type {
            case "c", "B": return .bool(number.boolValue)
            case "f": return .real(PropertyListReal(number.floatValue))
            case "d": return .real(PropertyListReal(number.doubleValue))
            case "Q", "L", "I", "S", "C": return .integer(PropertyListInteger(number.uint64Value))
            default: return .integer(PropertyListInteger(number.int64Value))
            }
        case let data as NSData: return .data(data as Data)
        case let date as NSDate: return .date(date as Date)
        case let array as NSArray: return .array(try array.map { try canonical(foundation: $0) })
        case let dictionary as NSDictionary:
            var result = PropertyListDictionary()
            for (key, value) in dictionary { result.entries.append((try canonical(foundation: key), try canonical(foundation: value))) }
            return .dictionary(result)
        default:
            throw KeyedArchiveError(.unsupportedValue, "unexpected Foundation object \(type(of: object))")
        }
    }

    /// Our decoded Swift values as a plain value.
    static func canonical(ours value: Any) throws -> PropertyListValue {
        switch value {
        case let string as String: return PropertyListValue(string)
        case let bool as Bool: return .bool(bool)
        case let int as Int: return PropertyListValue(int)
        case let unsigned as UInt64: return PropertyListValue(unsigned)
        case let double as Double: return PropertyListValue(double)
        case let float as Float: return PropertyListValue(float)
        case let data as Data: return .data(data)
        case let date as Date: return .date(date)
        case let array as [Any]: return .array(try array.map { try canonical(ours: $0) })
        case let dictionary as [AnyHashable: Any]:
            var result = PropertyListDictionary()
            for (key, value) in dictionary { result.entries.append((try canonical(ours: key.base), try canonical(ours: value))) }
            return .dictionary(result)
        default:
            throw KeyedArchiveError(.unsupportedValue, "unexpected decoded value \(type(of: value))")
        }
    }

    /// Removes what swift-corelibs-foundation is known to misread (peers-on-linux.md): a
    /// leading U+FEFF in XML strings is dropped, "$null" reads as nil, and dictionary keys that are NFC/NFD
    /// spellings of each other are merged. Keys equal under Swift's canonical equivalence are
    /// therefore dropped, and U+FEFF removed from strings.
    static func avoidingPeerBugs(_ value: PropertyListValue) -> PropertyListValue {
        switch value {
        case .string(let string):
            // Every NSKeyedUnarchiver reads the string "$null" as nil.
            let cleaned = string.value.replacingOccurrences(of: "\u{FEFF}", with: "")
            return PropertyListValue(cleaned == "$null" ? "$null!" : cleaned)
        case .array(let items): return .array(items.map(avoidingPeerBugs))
        case .dictionary(let dictionary):
            var seen: Set<String> = []
            var result = PropertyListDictionary()
            for entry in dictionary.entries {
                guard case .string(let key) = avoidingPeerBugs(entry.key), seen.insert(key.value).inserted else { continue }
                result.entries.append((.string(key), avoidingPeerBugs(entry.value)))
            }
            return .dictionary(result)
        default: return value
        }
    }

    /// The first place two values differ, for readable failures.
    static func difference(_ a: PropertyListValue, _ b: PropertyListValue, path: String = "") -> String? {
        switch (a, b) {
        case (.array(let x), .array(let y)):
            guard x.count == y.count else { return "\(path): \(x.count) vs \(y.count) elements" }
            for index in x.indices {
                if let found = difference(x[index], y[index], path: path + "[\(index)]") { return found }
            }
            return nil
        case (.dictionary(let x), .dictionary(let y)):
            guard x.count == y.count else {
                let xs = Set(x.keys.compactMap(\.stringValue).map { Array($0.unicodeScalars.map(\.value)) })
                let ys = Set(y.keys.compactMap(\.stringValue).map { Array($0.unicodeScalars.map(\.value)) })
                return "\(path): \(x.count) vs \(y.count) entries; only in second: \(ys.subtracting(xs))"
            }
            for entry in x.entries {
                guard let other = y[entry.key] else { return "\(path): key \(entry.key) missing" }
                if let found = difference(entry.value, other, path: path + "." + (entry.key.stringValue ?? "?")) { return found }
            }
            return nil
        default:
            return a == b ? nil : "\(path): \(a) vs \(b)"
        }
    }

    // MARK: Foundation -> ours

    /// Random acyclic Foundation graphs whose containers are shared between parents.
    private func randomFoundationGraph(_ random: inout SeededGenerator, depth: Int, pool: inout [NSObject]) -> NSObject {
        if depth > 0, !pool.isEmpty, random.chance(0.25) {
            return pool[Int.random(in: 0..<pool.count, using: &random)]  // a shared reference
        }
        let choice = depth >= 3 ? Int.random(in: 2..<9, using: &random) : Int.random(in: 0..<9, using: &random)
        switch choice {
        case 0:
            let array = NSMutableArray()
            for _ in 0..<Int.random(in: 0...5, using: &random) { array.add(randomFoundationGraph(&random, depth: depth + 1, pool: &pool)) }
            pool.append(array)
            return array
        case 1:
            let dictionary = NSMutableDictionary()
            for index in 0..<Int.random(in: 0...5, using: &random) {
                dictionary["k\(index)-\(random.next() % 100)"] = randomFoundationGraph(&random, depth: depth + 1, pool: &pool)
            }
            pool.append(dictionary)
            return dictionary
        case 2: return NSString(string: ["", "a", "héllo", "日本語", "$null?", "x\u{0}y", "🎉"].randomElement(using: &random) ?? "")
        case 3: return NSNumber(value: Int64.random(in: -1_000_000...1_000_000, using: &random))
        case 4: return NSNumber(value: Double.random(in: -1e6...1e6, using: &random))
        case 5: return NSData(data: Data((0..<Int.random(in: 0...20, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
        case 6: return NSDate(timeIntervalSinceReferenceDate: Double(Int.random(in: -1_000_000...1_000_000, using: &random)) / 8)
        case 7: return NSNumber(value: Int64.random(in: Int64.min...Int64.max, using: &random))
        default: return NSString(string: String(random.next() % 1000))
        }
    }

    func testRandomFoundationGraphsDecodeLikeFoundationReadsThem() throws {
        for seed in UInt64(1)...40 {
            var random = SeededGenerator(seed: seed)
            var pool: [NSObject] = []
            let root = NSMutableArray()
            for _ in 0..<Int.random(in: 1...6, using: &random) { root.add(randomFoundationGraph(&random, depth: 1, pool: &pool)) }
            let data = try NSKeyedArchiver.archivedData(withRootObject: root, requiringSecureCoding: false)

            let theirs = try XCTUnwrap(try NSKeyedUnarchiver.unarchivedObject(ofClasses: Self.foundationAllowed, from: data))
            let ours = try XCTUnwrap(try KeyedUnarchiver.unarchivedObject(ofClasses: KeyedArchiveClass.propertyListClasses, from: data))
            XCTAssertEqual(try Self.canonical(ours: ours), try Self.canonical(foundation: theirs), "seed \(seed)")

            // Shared containers are stored once: the archive has no more NSArray/NSDictionary
            // objects than distinct containers were created.
            let plist = try PropertyList.decode(data)
            let containerObjects = (plist["$objects"]?.arrayValue ?? []).filter { $0["NS.objects"] != nil }.count
            XCTAssertLessThanOrEqual(containerObjects, pool.count + 1, "seed \(seed)")
        }
    }

    // MARK: ours -> Foundation

    func testOurArchivesOfRandomPropertyListsDecodeInFoundation() throws {
        var options = RandomPropertyList.Options()
        options.uid = false
        options.null = false
        options.set = false
        options.nan = false
        options.maximumDepth = 4
        for seed in UInt64(1)...40 {
            var generator = RandomPropertyList(seed: seed, options: options)
            let value = Self.avoidingPeerBugs(generator.rootDictionary())
            let format: PropertyListFormat = seed % 2 == 0 ? .binary : .xml
            let data = try KeyedArchiver.archivedData(withRootObject: value, format: format)
            let theirs = try XCTUnwrap(try NSKeyedUnarchiver.unarchivedObject(ofClasses: Self.foundationAllowed, from: data), "seed \(seed)")
            let canonicalTheirs = try Self.canonical(foundation: theirs)
            XCTAssertNil(Self.difference(canonicalTheirs, value), "seed \(seed)")
            // And our own reading agrees.
            let ours = try XCTUnwrap(try KeyedUnarchiver.unarchivedObject(ofClasses: KeyedArchiveClass.propertyListClasses, from: data))
            XCTAssertNil(Self.difference(try Self.canonical(ours: ours), value), "seed \(seed)")
        }
    }

    /// The root array of `Primitives` in `data`, as Foundation's unarchiver reads it.
    private func primitivesInFoundation(_ data: Data) throws -> [FPrimitives] {
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
        unarchiver.requiresSecureCoding = false
        unarchiver.setClass(FPrimitives.self, forClassName: Primitives.archivedClassName)
        return try XCTUnwrap(unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? [FPrimitives])
    }

    /// The root array of `Primitives` in `data`, as our unarchiver reads it.
    private func primitivesInOurs(_ data: Data) throws -> [Primitives] {
        try XCTUnwrap(try KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .type(Primitives.self)], from: data) as? [Primitives])
    }

    /// What plistlib prints for the objects of the root array of `data`: `expression` of `e`
    /// (an object's dictionary) and `o` (`$objects`) for each, joined by `separator`; `nil`
    /// (and a SKIP line) without python3.
    private func plistlibRootObjects(_ data: Data, _ expression: String, separator: String) throws -> String? {
        guard Python.executable != nil else {
            print("SKIP: python3 not found: no plistlib check")
            return nil
        }
        let summary = try Python.run(
            "import sys, plistlib; p = plistlib.loads(sys.stdin.buffer.read()); o = p['$objects']; "
                + "root = o[p['$top']['root'].data]; "
                + "print('\(separator)'.join(\(expression) for e in (o[u.data] for u in root['NS.objects'])))",
            input: data)
        return String(decoding: summary, as: UTF8.self)
    }

    /// Our archiver shares a number inside objects only with an equal one written lately
    /// (BinaryPropertyListObjects.NumberSharing.nearby): numbers that recur are one object each,
    /// one equal to a number thousands of objects back is stored again. Foundation's
    /// unarchiver, plistlib and our own reader read every field as it was.
    func testNumbersSharedNearbyDecodeInFoundationAndPlistlib() throws {
        let count = 4_000
        let echoFrom = 3_000
        let objects = (0..<count).map { index -> Primitives in
            let object = Primitives()
            object.int = index % 150 - 20  // recurring
            object.int32 = Int32(200_000 + index * 3)  // unique
            object.int64 = Int64(index % 7) << 40  // recurring
            // Recurring, then equal to the int32 of the object 3,000 back (far).
            object.dollarKey = index >= echoFrom ? 200_000 + (index - echoFrom) * 3 : index % 97
            object.double = Double(index) / 4  // unique
            object.name = "object \(index % 50)"
            return object
        }
        let data = try KeyedArchiver.archivedData(withRootObject: objects, format: .binary)

        // Integer objects in the file: one per distinct value (the envelope's $version too),
        // plus those stored again. Most of the 1,000 far repeats are; few others are.
        let layout = try XCTUnwrap(BinaryObjectLayout(data))
        let stored = layout.objects.indices.filter(layout.isInteger).count
        var distinct: Set<Int> = [100_000]
        for object in objects { distinct.formUnion([object.int, Int(object.int32), Int(object.int64), object.dollarKey]) }
        let storedAgain = stored - distinct.count
        XCTAssertGreaterThanOrEqual(storedAgain, 500, "far repeats are stored again")
        XCTAssertLessThanOrEqual(storedAgain, count - echoFrom + 100, "recurring numbers stay shared")

        // Foundation.
        let theirs = try primitivesInFoundation(data)
        XCTAssertEqual(theirs.map(\.int), objects.map(\.int))
        XCTAssertEqual(theirs.map(\.int32), objects.map(\.int32))
        XCTAssertEqual(theirs.map(\.int64), objects.map(\.int64))
        XCTAssertEqual(theirs.map(\.dollarKey), objects.map(\.dollarKey))
        XCTAssertEqual(theirs.map(\.double), objects.map(\.double))
        XCTAssertEqual(theirs.map(\.name), objects.map(\.name))

        // Ours.
        let ours = try primitivesInOurs(data)
        XCTAssertEqual(ours.map(\.int32), objects.map(\.int32))
        XCTAssertEqual(ours.map(\.dollarKey), objects.map(\.dollarKey))
        XCTAssertEqual(ours.map(\.double), objects.map(\.double))

        // plistlib.
        guard let summary = try plistlibRootObjects(data, "str(e['int32']) + ',' + str(e['$$dollar'])", separator: " ") else { return }
        XCTAssertEqual(summary, objects.map { "\($0.int32),\($0.dollarKey)" }.joined(separator: " ") + "\n")
    }

    /// Our archiver shares a string leaf only with an equal one stored since its string table
    /// last started over (every 4,096 new strings): strings that recur are stored about once
    /// per window, one repeated thousands of strings later is stored again. Foundation's
    /// unarchiver, plistlib and our own reader read every name as it was.
    func testStringsSharedWithinAWindowDecodeInFoundationAndPlistlib() throws {
        let count = 12_000
        // Every fourth object has one of 7 recurring names; the others "name k" for k the
        // index modulo 6,000, so each of those comes back 6,000 objects (4,500 new names)
        // later: 4,500 far repeats.
        let objects = (0..<count).map { index -> Primitives in
            let object = Primitives()
            object.int = index
            object.name = index % 4 == 0 ? "recurring \(index % 7)" : "name \(index % 6_000)"
            return object
        }
        let data = try KeyedArchiver.archivedData(withRootObject: objects, format: .binary)

        // String objects in the file: each distinct name, the far repeats stored again, the
        // recurring names once per window (about four), and the few keys and class names.
        let layout = try XCTUnwrap(BinaryObjectLayout(data))
        let strings = layout.objects.indices.filter(layout.isString).count
        let distinct = Set(objects.compactMap(\.name)).count
        let storedAgain = strings - distinct
        XCTAssertGreaterThanOrEqual(storedAgain, 4_500, "far repeats are stored again")
        XCTAssertLessThanOrEqual(storedAgain, 4_500 + 7 * 4 + 40, "recurring names stay shared within a window")

        try assertNamesReadBack(data, objects)
    }

    /// Foundation's unarchiver, ours and plistlib read every object's name and number in
    /// `data` (a root array of `Primitives`) as `objects` have them.
    private func assertNamesReadBack(_ data: Data, _ objects: [Primitives], file: StaticString = #filePath, line: UInt = #line) throws {
        let theirs = try primitivesInFoundation(data)
        XCTAssertEqual(theirs.map(\.name), objects.map(\.name), "Foundation", file: file, line: line)
        XCTAssertEqual(theirs.map(\.int), objects.map(\.int), "Foundation", file: file, line: line)
        let ours = try primitivesInOurs(data)
        XCTAssertEqual(ours.map(\.name), objects.map(\.name), "ours", file: file, line: line)
        guard let summary = try plistlibRootObjects(data, "o[e['name'].data]", separator: "|") else { return }
        XCTAssertEqual(summary, objects.compactMap(\.name).joined(separator: "|") + "\n", "plistlib", file: file, line: line)
    }

    /// While strings do not recur, the archiver stores them without looking them up, and goes
    /// back to sharing them once they do: windows of 4,096 new strings, and after a window in
    /// which fewer than one in 64 strings was found again, one skipped window, then two, four...
    /// A window looking strings up ends early, as one of rare repeats, when its first 512 new
    /// strings had fewer than 8 repeats (`StringLeafSharing`). Foundation, plistlib and our
    /// reader read every name as it was.
    func testStringsStoredWithoutLookupsWhileTheyDoNotRecurDecodeInFoundationAndPlistlib() throws {
        let window = ArchiveObjectTable.stringLeafWindow
        let verdict = ArchiveObjectTable.stringLeafVerdict
        XCTAssertEqual(window, 4_096, "the counts below assume windows of 4,096")
        XCTAssertEqual(verdict, 512, "the counts below assume verdicts after 512 new strings")
        // 16,384 names that never recur, then 30,000 objects cycling through 7 names.
        let unique = 4 * window
        let objects = (0..<(unique + 30_000)).map { index -> Primitives in
            let object = Primitives()
            object.int = index
            object.name = index < unique ? "unique \(index)" : "recurring \(index % 7)"
            return object
        }
        let data = try KeyedArchiver.archivedData(withRootObject: objects, format: .binary)

        // The first 512 unique names are looked up, none is found again: one window (4,096
        // strings) is skipped. The next 512 likewise: two windows skipped. The next 512: four
        // windows skipped, which end after 3 * 512 + 7 * 4,096 = 30,208 strings. The recurring
        // names begin at 16,384, so 13,824 of them are stored each in the skipped windows; the
        // window after looks them up and stores each of the 7 once (it never reaches 512 new
        // strings).
        let skippedEnd = 3 * verdict + 7 * window
        var stored: [String: Int] = [:]
        for case .string(let text) in try XCTUnwrap(PropertyList.decode(data)["$objects"]?.arrayValue) {
            stored[text.value, default: 0] += 1
        }
        let storedUnique = stored.filter { $0.key.hasPrefix("unique ") }.values.reduce(0, +)
        let storedRecurring = stored.filter { $0.key.hasPrefix("recurring ") }.values.reduce(0, +)
        XCTAssertEqual(storedUnique, unique)
        XCTAssertEqual(storedRecurring, skippedEnd - unique + 7)
        try assertNamesReadBack(data, objects)

        // Repeats among the first 512 new strings keep the window looking up to its end: 8
        // names recurring at every other object, unique names between them. The window's
        // 4,096 new strings are the 8 and 4,088 unique ones (the last at object 8,175), so
        // each recurring name is stored once.
        let mixed = (0..<(2 * (window - 8))).map { index -> Primitives in
            let object = Primitives()
            object.int = index
            object.name = index % 2 == 0 ? "every other \(index / 2 % 8)" : "unique \(index)"
            return object
        }
        let mixedData = try KeyedArchiver.archivedData(withRootObject: mixed, format: .binary)
        var mixedStored: [String: Int] = [:]
        for case .string(let text) in try XCTUnwrap(PropertyList.decode(mixedData)["$objects"]?.arrayValue) {
            mixedStored[text.value, default: 0] += 1
        }
        XCTAssertEqual(mixedStored.filter { $0.key.hasPrefix("every other ") }.values.reduce(0, +), 8)
        XCTAssertEqual(mixedStored.filter { $0.key.hasPrefix("unique ") }.values.reduce(0, +), window - 8)
        try assertNamesReadBack(mixedData, mixed)

        // The verdict's edge: one name, then `repeats` more of it, then 511 unique names (the
        // 512th new string), then the name once more. With 7 repeats (fewer than 512 / 64) the
        // window ends at the 512th new string and the next is skipped, so the last one is
        // stored again; with 8 it goes on looking up and finds it.
        for (repeats, expected) in [(7, 2), (8, 1)] {
            let names = Array(repeating: "edge", count: 1 + repeats) + (0..<(verdict - 1)).map { "edge unique \($0)" } + ["edge"]
            let edge = names.enumerated().map { index, name -> Primitives in
                let object = Primitives()
                object.int = index
                object.name = name
                return object
            }
            let edgeData = try KeyedArchiver.archivedData(withRootObject: edge, format: .binary)
            let storedEdge = try XCTUnwrap(PropertyList.decode(edgeData)["$objects"]?.arrayValue).filter {
                if case .string(let text) = $0 { return text.value == "edge" }
                return false
            }.count
            XCTAssertEqual(storedEdge, expected, "\(repeats) repeats in the first \(verdict) new strings")
            try assertNamesReadBack(edgeData, edge)
        }
    }

    // MARK: NSCoding classes with every primitive

    func testPrimitiveCoderOperationsMatchFoundationBothWays() throws {
        let foundationObject = FPrimitives()
        let foundationData = try NSKeyedArchiver.archivedData(withRootObject: foundationObject, requiringSecureCoding: false)
        // Linux NSKeyedArchiver ignores setClassName: map the Swift name it wrote instead.
        let foundationName = NSStringFromClass(FPrimitives.self)

        // Foundation -> ours.
        let unarchiver = try KeyedUnarchiver(data: foundationData)
        unarchiver.setClass(Primitives.self, forClassName: foundationName)
        let ours = try XCTUnwrap(try unarchiver.decodeTopLevelObject(of: Primitives.self))
        XCTAssertEqual(ours.flag, foundationObject.flag)
        XCTAssertEqual(ours.int, foundationObject.int)
        XCTAssertEqual(ours.int32, foundationObject.int32)
        XCTAssertEqual(ours.int64, foundationObject.int64)
        XCTAssertEqual(ours.float, foundationObject.float)
        XCTAssertEqual(ours.double, foundationObject.double)
        XCTAssertEqual(ours.bytes, foundationObject.bytes)
        XCTAssertEqual(ours.name, foundationObject.name)
        XCTAssertEqual(ours.dollarKey, foundationObject.dollarKey)

        // ours -> Foundation.
        let mine = Primitives()
        mine.flag = true
        mine.int = Int.min
        mine.int32 = -5
        mine.int64 = 1 << 40
        mine.float = 0.1
        mine.double = 1e300
        mine.bytes = Data([1, 2, 3])
        mine.name = "ünïcode"
        mine.dollarKey = 99
        let ourData = try KeyedArchiver.archivedData(withRootObject: mine, format: .binary)
        let foundationUnarchiver = try NSKeyedUnarchiver(forReadingFrom: ourData)
        foundationUnarchiver.requiresSecureCoding = false
        foundationUnarchiver.setClass(FPrimitives.self, forClassName: Primitives.archivedClassName)
        let theirs = try XCTUnwrap(foundationUnarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? FPrimitives)
        XCTAssertEqual(theirs.flag, mine.flag)
        XCTAssertEqual(theirs.int, mine.int)
        XCTAssertEqual(theirs.int32, mine.int32)
        XCTAssertEqual(theirs.int64, mine.int64)
        XCTAssertEqual(theirs.float, mine.float)
        XCTAssertEqual(theirs.double, mine.double)
        XCTAssertEqual(theirs.bytes, mine.bytes)
        XCTAssertEqual(theirs.name, mine.name)
        XCTAssertEqual(theirs.dollarKey, mine.dollarKey)

        // The object dictionaries have the same keys and value kinds (inline primitives, 4-byte
        // float, escaped "$$dollar", the name by UID).
        func objectDictionary(_ data: Data) throws -> PropertyListDictionary {
            let plist = try PropertyList.decode(data)
            let uid = try XCTUnwrap(plist["$top"]?["root"]?.uidValue)
            return try XCTUnwrap(plist["$objects"]?.arrayValue?[Int(uid)].dictionaryValue)
        }
        func shape(_ dictionary: PropertyListDictionary) -> [String: String] {
            var result: [String: String] = [:]
            for entry in dictionary.entries {
                var kind = entry.value.typeName
                if case .real(let real) = entry.value { kind += real.isSinglePrecision ? "4" : "8" }
                result[entry.key.stringValue ?? "?"] = kind
            }
            return result
        }
        XCTAssertEqual(shape(try objectDictionary(ourData)), shape(try objectDictionary(foundationData)))
    }

    // MARK: Foundation classes both ways

    func testFoundationClassesBothWays() throws {
        let uuid = UUID()
        let base = try XCTUnwrap(URL(string: "https://example.com/dir/"))
        let relative = try XCTUnwrap(URL(string: "file.txt?q=1", relativeTo: base))
        let date = Date(timeIntervalSinceReferenceDate: 1234.5)
        let mutableString = NSMutableString(string: "mutable ✓")
        let mutableData = NSMutableData(data: Data([5, 6, 7]))
        let foundationRoot: NSDictionary = [
            "uuid": NSUUID(uuidString: uuid.uuidString) as Any, "url": relative as NSURL, "null": NSNull(),
            "set": NSSet(object: "only"), "ordered": NSOrderedSet(array: ["one"]), "date": date as NSDate,
            "mstring": mutableString, "mdata": mutableData, "intKeys": NSDictionary(dictionary: [1: "one"]),
        ]
        // Foundation -> ours.
        let foundationData = try NSKeyedArchiver.archivedData(withRootObject: foundationRoot, requiringSecureCoding: false)
        let ours = try XCTUnwrap(try KeyedUnarchiver.unarchivedObject(ofClasses: KeyedArchiveClass.foundationClasses, from: foundationData) as? [AnyHashable: Any])
        XCTAssertEqual(ours["uuid"] as? UUID, uuid)
        XCTAssertEqual((ours["url"] as? URL)?.absoluteString, relative.absoluteString)
        XCTAssertTrue(ours["null"] is ArchivedNull)
        XCTAssertEqual(ours["set"] as? Set<AnyHashable>, ["only"])
        XCTAssertEqual((ours["ordered"] as? ArchivedOrderedSet)?.elements as? [String], ["one"])
        XCTAssertEqual(ours["date"] as? Date, date)
        XCTAssertEqual(ours["mstring"] as? String, "mutable ✓")
        XCTAssertEqual(ours["mdata"] as? Data, Data([5, 6, 7]))
        XCTAssertEqual((ours["intKeys"] as? [AnyHashable: Any])?[1] as? String, "one")

        // ours -> Foundation.
        let ourRoot: [String: Any] = [
            "uuid": uuid, "url": relative, "null": ArchivedNull.null, "set": Set<AnyHashable>(["only"]),
            "ordered": ArchivedOrderedSet(["one"]), "date": date, "intKeys": [1: "one"],
        ]
        let ourData = try KeyedArchiver.archivedData(withRootObject: ourRoot, format: .binary)
        let theirs = try XCTUnwrap(try NSKeyedUnarchiver.unarchivedObject(ofClasses: Self.foundationAllowed, from: ourData) as? NSDictionary)
        XCTAssertEqual((theirs["uuid"] as? NSUUID)?.uuidString, uuid.uuidString)
        XCTAssertEqual((theirs["url"] as? NSURL)?.absoluteString, relative.absoluteString)
        XCTAssertTrue(theirs["null"] is NSNull)
        XCTAssertEqual((theirs["set"] as? NSSet)?.allObjects as? [String], ["only"])
        XCTAssertEqual((theirs["ordered"] as? NSOrderedSet)?.array as? [String], ["one"])
        XCTAssertEqual(theirs["date"] as? Date, date)
        XCTAssertEqual((theirs["intKeys"] as? NSDictionary)?[1] as? String, "one")
    }

    /// NSNumbers keep their kind: `NSNumber(value: 1) as? Bool` succeeds in Swift, so a cast
    /// alone archived the integers 0 and 1 (as `PropertyListSerialization` returns them) as
    /// booleans, which Foundation then read back as booleans.
    func testNSNumbersKeepTheirKindBothWays() throws {
        let plist = try PropertyListSerialization.data(fromPropertyList: [1, 0, true, 7, 2.5] as [Any], format: .binary, options: 0)
        let fromFoundation = try XCTUnwrap(try PropertyListSerialization.propertyList(from: plist, format: nil) as? [Any])
        let numbers: [Any] = fromFoundation + [
            NSNumber(value: 1), NSNumber(value: 0), NSNumber(value: true), NSNumber(value: false), NSNumber(value: -5),
            NSNumber(value: UInt64.max), NSNumber(value: 0.1), NSNumber(value: Float(0.25)), NSNumber(value: Int8(1)),
            NSNumber(value: -0.0),
        ]
        let data = try KeyedArchiver.archivedData(withRootObject: numbers, format: .binary)

        // Ours: integers come back as integers, booleans as booleans, reals as reals.
        let ours = try XCTUnwrap(try KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .number], from: data) as? [Any])
        XCTAssertEqual(ours.count, numbers.count)
        let expected: [String] = [
            "Int 1", "Int 0", "Bool true", "Int 7", "Double 2.5",
            "Int 1", "Int 0", "Bool true", "Bool false", "Int -5", "UInt64 18446744073709551615", "Double 0.1", "Double 0.25", "Int 1",
            "Double -0.0",
        ]
        XCTAssertEqual(ours.map { "\(type(of: $0)) \($0)" }, expected)

        // Foundation: the same kinds, by each NSNumber's type encoding ("c" is a boolean).
        let theirs = try XCTUnwrap(try NSKeyedUnarchiver.unarchivedObject(ofClasses: Self.foundationAllowed, from: data) as? [NSNumber])
        XCTAssertEqual(theirs.count, numbers.count)
        for (index, kind) in expected.enumerated() {
            let isBoolean = String(cString: theirs[index].objCType) == "c"
            XCTAssertEqual(isBoolean, kind.hasPrefix("Bool"), "element \(index): \(kind) read as \(theirs[index]) (\(String(cString: theirs[index].objCType)))")
        }
        XCTAssertEqual(theirs.map(\.doubleValue), [1, 0, 1, 7, 2.5, 1, 0, 1, 0, -5, Double(UInt64.max), 0.1, 0.25, 1, 0])
        XCTAssertEqual(theirs.last?.doubleValue.sign, .minus)

        // An NSDecimalNumber is archived as its own class, as Foundation archives it, not
        // rounded to a number (it was refused before session 66): its Decimal, exactly, is
        // what comes back, and the object's fields are the ones Apple writes for that Decimal.
        let decimalNumber = NSDecimalNumber(string: "12345678901234567890.123")
        let decimalArchive = try KeyedArchiver.archivedData(withRootObject: ["amount": decimalNumber] as [String: Any], format: .binary)
        let unarchiver = try KeyedUnarchiver(data: decimalArchive)
        let holder = try XCTUnwrap(unarchiver.decodeObject(of: [.dictionary, .string, .archivedObject], forKey: "root") as? [AnyHashable: Any])
        XCTAssertNotNil(holder["amount"])
        let stored = try PropertyList.decode(decimalArchive)
        guard case .array(let objects)? = stored["$objects"] else { return XCTFail("no $objects") }
        let decimalObject = try XCTUnwrap(objects.first { $0["NS.mantissa"] != nil })
        XCTAssertEqual(decimalObject["NS.exponent"], -3)
        XCTAssertEqual(decimalObject["NS.length"], .integer(PropertyListInteger(Int64(DecimalNumberPartsCheck.length(of: decimalNumber.decimalValue)))))
        // Read back through the Codable bridge, which takes the same object.
        XCTAssertEqual(try KeyedUnarchiver.unarchivedObject(ofType: [String: Decimal].self, from: decimalArchive)["amount"], decimalNumber.decimalValue)
    }

    /// NSNull and NSOrderedSet bridge to no Swift type; passed as they are (from
    /// JSONSerialization, say), they are archived as the classes they are.
    func testFoundationNullAndOrderedSetObjectsBothWays() throws {
        let root: [Any] = [NSNull(), NSOrderedSet(array: [3, "b", 1]), NSMutableOrderedSet(array: ["m"]), "end"]
        let data = try KeyedArchiver.archivedData(withRootObject: root, format: .binary)

        let ours = try XCTUnwrap(try KeyedUnarchiver.unarchivedObject(ofClasses: KeyedArchiveClass.foundationClasses, from: data) as? [Any])
        XCTAssertEqual(ours.count, 4)
        XCTAssertTrue(ours.first is ArchivedNull)
        XCTAssertEqual(ours.count == 4 ? (ours[1] as? ArchivedOrderedSet)?.elements.map { "\($0)" } : nil, ["3", "b", "1"])
        XCTAssertEqual(ours.count == 4 ? (ours[2] as? ArchivedOrderedSet)?.elements as? [String] : nil, ["m"])

        let theirs = try XCTUnwrap(try NSKeyedUnarchiver.unarchivedObject(ofClasses: Self.foundationAllowed, from: data) as? [Any])
        XCTAssertEqual(theirs.count, 4)
        XCTAssertTrue(theirs.first is NSNull)
        XCTAssertEqual(theirs.count == 4 ? (theirs[1] as? NSOrderedSet)?.array.map { "\($0)" } : nil, ["3", "b", "1"])
        XCTAssertEqual(theirs.count == 4 ? theirs[3] as? String : nil, "end")

        // Told by Foundation's class, not by a name alone: a class of this module called NSNull
        // is no NSNull (and, being neither KeyedArchiving nor a Foundation value, is refused).
        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: [OwnClasses.NSNull()] as [Any], format: .binary)) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .unsupportedValue)
        }
    }

    private enum OwnClasses {
        final class NSNull {}
    }

    /// NSDate takes any finite time, and so do both unarchivers (ours read what we write);
    /// only the resolver, whose output is a property list, keeps to years 0...9999 (and shows
    /// another NSDate as its fields). NaN is
    /// refused on both sides (a `Date` of NaN traps in FoundationEssentials' `description`).
    func testDatesOutsidePropertyListYearsBothWays() throws {
        for seconds in [1e12, -1e12, 1e15, 252_423_993_600, -63_145_526_401] {
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            let ours = try KeyedArchiver.archivedData(withRootObject: ["when": date] as [String: Any], format: .binary)
            let theirs = try NSKeyedArchiver.archivedData(withRootObject: ["when": NSDate(timeIntervalSinceReferenceDate: seconds)] as NSDictionary, requiringSecureCoding: false)
            for (name, data) in [("ours", ours), ("Foundation's", theirs)] {
                let decoded = try KeyedUnarchiver.unarchivedObject(ofClasses: [.dictionary, .string, .date], from: data) as? [AnyHashable: Any]
                XCTAssertEqual(decoded?["when"] as? Date, date, "\(name) archive of \(seconds)")
                // The resolver's output is a property list, whose dates are years 0...9999: such
                // an NSDate is shown as its fields (it refused the whole archive before session 66).
                let shown = try ArchiveResolver.resolve(data)["when"]
                XCTAssertEqual(shown?["$class"], "NSDate", "\(name) archive of \(seconds)")
                switch shown?["NS.time"] {
                case .real(let real)?: XCTAssertEqual(real.value, seconds, name)
                case .integer(let integer)?: XCTAssertEqual(integer.int64Value.map(Double.init), seconds, name)
                default: XCTFail("\(name) archive of \(seconds): \(String(describing: shown))")
                }
            }
            let back = try NSKeyedUnarchiver.unarchivedObject(ofClasses: Self.foundationAllowed, from: ours) as? NSDictionary
            XCTAssertEqual(back?["when"] as? Date, date)
        }
        // A date just inside the property-list years resolves.
        let inside = try KeyedArchiver.archivedData(withRootObject: Date(timeIntervalSinceReferenceDate: 252_423_993_599), format: .binary)
        XCTAssertEqual(try ArchiveResolver.resolve(inside), .date(Date(timeIntervalSinceReferenceDate: 252_423_993_599)))

        XCTAssertThrowsError(try KeyedArchiver.archivedData(withRootObject: Date(timeIntervalSinceReferenceDate: .nan), format: .binary)) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .unsupportedValue)
        }
        let infinite = try NSKeyedArchiver.archivedData(withRootObject: NSDate(timeIntervalSinceReferenceDate: .infinity), requiringSecureCoding: false)
        XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofClasses: [.date], from: infinite)) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .invalidObject)
        }
    }

    func testConditionalForwardReferenceIsVisibleToFoundation() throws {
        // The conditional "weak" link is written before its target is encoded unconditionally;
        // we back-patch it, so Foundation (which would drop it when writing) reads the link.
        let root = Node(label: 0)
        let first = Node(label: 1)
        let target = Node(label: 2)
        first.weak = target
        root.links = [first, target]
        let data = try KeyedArchiver.archivedData(withRootObject: root, format: .binary)
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
        unarchiver.requiresSecureCoding = false
        unarchiver.setClass(FNode.self, forClassName: Node.archivedClassName)
        let decoded = try XCTUnwrap(unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? FNode)
        XCTAssertEqual(decoded.links.count, 2)
        XCTAssertTrue(decoded.links[0].weak === decoded.links[1])
    }
}

/// Foundation's side of ``Primitives``.
final class FPrimitives: NSObject, NSSecureCoding {
    static var supportsSecureCoding: Bool { true }
    var flag = true
    var int = -12345
    var int32: Int32 = Int32.max
    var int64: Int64 = Int64.min
    var float: Float = 3.75
    var double = 2.5e-300
    var bytes = Data([0xDE, 0xAD])
    var name: String? = "Foundation"
    var dollarKey = 3

    override init() {}

    func encode(with coder: NSCoder) {
        coder.encode(flag, forKey: "flag")
        coder.encode(int, forKey: "int")
        coder.encode(int32, forKey: "int32")
        coder.encode(int64, forKey: "int64")
        coder.encode(float, forKey: "float")
        coder.encode(double, forKey: "double")
        bytes.withUnsafeBytes { coder.encodeBytes($0.bindMemory(to: UInt8.self).baseAddress, length: $0.count, forKey: "bytes") }
        coder.encode(name.map { NSString(string: $0) }, forKey: "name")
        coder.encode(dollarKey, forKey: "$dollar")
    }

    init?(coder: NSCoder) {
        flag = coder.decodeBool(forKey: "flag")
        int = coder.decodeInteger(forKey: "int")
        int32 = coder.decodeInt32(forKey: "int32")
        int64 = coder.decodeInt64(forKey: "int64")
        float = coder.decodeFloat(forKey: "float")
        double = coder.decodeDouble(forKey: "double")
        // corelibs spells decodeBytes(forKey:returnedLength:) as withDecodedUnsafeBytes.
        bytes = (coder as? NSKeyedUnarchiver)?.withDecodedUnsafeBytes(forKey: "bytes") { buffer in
            buffer.map { Data($0) }
        } ?? Data()
        name = coder.decodeObject(of: NSString.self, forKey: "name") as String?
        dollarKey = coder.decodeInteger(forKey: "$dollar")
    }
}

/// Foundation's side of ``Node`` (acyclic use only: Foundation's unarchiver cannot do cycles).
final class FNode: NSObject, NSCoding {
    var label = 0
    var links: [FNode] = []
    var weak: FNode?
    func encode(with coder: NSCoder) {}
    init?(coder: NSCoder) {
        label = coder.decodeInteger(forKey: "label")
        links = (coder.decodeObject(forKey: "links") as? [FNode]) ?? []
        weak = coder.decodeObject(forKey: "weak") as? FNode
    }
}

/// The mantissa's length in 16-bit words, by Foundation's own coding of a Decimal (its raw
/// parts through PropertyListEncoder).
enum DecimalNumberPartsCheck {
    static func length(of decimal: Decimal) -> Int {
        guard let data = try? PropertyListEncoder().encode([decimal]),
              let parts = (try? PropertyListSerialization.propertyList(from: data, format: nil)) as? [[String: Any]] else { return -1 }
        return parts.first?["length"] as? Int ?? -1
    }
}
