import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// Malformed archives give typed errors (with a path), never a crash or a hang.
final class MalformedArchiveTests: XCTestCase {
    static let everything = KeyedArchiveClass.foundationClasses + [.archivedObject]

    /// An archive envelope around `objects` with the root at UID 1.
    private func archive(_ objects: [PropertyListValue], root: PropertyListValue = .uid(1)) -> PropertyListValue {
        ["$archiver": "NSKeyedArchiver", "$version": 100000, "$top": ["root": root], "$objects": .array(objects)]
    }

    private func classDescription(_ name: String, _ chain: [String]? = nil) -> PropertyListValue {
        ["$classname": PropertyListValue(name), "$classes": .array((chain ?? [name, "NSObject"]).map { PropertyListValue($0) })]
    }

    /// Decodes with the unarchiver and the resolver; both must throw `code` (resolver: `resolverCode`).
    private func assertRejected(
        _ archive: PropertyListValue, _ code: KeyedArchiveError.Code, resolver resolverCode: KeyedArchiveError.Code? = nil,
        pathContains: String? = nil, limits: DecodingLimits = .default, file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            let unarchiver = try KeyedUnarchiver(propertyList: archive, limits: limits)
            _ = try unarchiver.decodeTopLevelObject(of: Self.everything)
            XCTFail("unarchiver accepted it", file: file, line: line)
        } catch let error as KeyedArchiveError {
            XCTAssertEqual(error.code, code, "\(error)", file: file, line: line)
            if let pathContains {
                XCTAssertTrue(error.path.contains(pathContains), "path of \(error)", file: file, line: line)
            }
        } catch {
            XCTFail("untyped error \(error)", file: file, line: line)
        }
        do {
            _ = try ArchiveResolver(propertyList: archive, limits: limits).resolve()
            if resolverCode != nil { XCTFail("resolver accepted it", file: file, line: line) }
        } catch let error as KeyedArchiveError {
            XCTAssertEqual(error.code, resolverCode ?? code, "resolver: \(error)", file: file, line: line)
        } catch {
            XCTFail("untyped error \(error)", file: file, line: line)
        }
    }

    /// Repeated keys in an object: every lookup returns the first entry, as CoreFoundation
    /// keeps it (Security.md), whatever order `init(coder:)` reads the fields in; and keys match
    /// byte for byte, not by canonical equivalence.
    func testRepeatedAndEquivalentKeysResolveToTheFirstLiteralMatch() throws {
        final class OutOfOrder: KeyedArchiving {
            static var archivedClassName: String { "OutOfOrder" }
            var read: [Int] = []
            init() {}
            func encode(with coder: KeyedArchiver) throws {}
            init(coder: KeyedUnarchiver) throws {
                for key in ["b", "a", "a", "\u{E9}"] { read.append(try coder.decodeInt(forKey: key)) }
            }
        }
        let fields = PropertyListDictionary([
            ("$class", .uid(2)), ("a", 1), ("e\u{301}", 5), ("b", 2), ("a", 3), ("\u{E9}", 4),
        ])
        let unarchiver = try KeyedUnarchiver(propertyList: archive([.string("$null"), .dictionary(fields), classDescription("OutOfOrder")]))
        unarchiver.setClass(OutOfOrder.self, forClassName: "OutOfOrder")
        let decoded = try unarchiver.decodeTopLevelObject(of: OutOfOrder.self)
        XCTAssertEqual(decoded?.read, [2, 1, 1, 4])
    }

    /// An NSDictionary whose keys repeat keeps each key's last value, as Foundation's does, and
    /// never decodes the values it drops (decoded, they would be objects no caller can reach:
    /// a dropped ArchivedObject that refers to itself leaked until session 8). A dropped value
    /// is still checked as a reference.
    func testRepeatedDictionaryKeysKeepTheLastValueAndDropTheOthersUndecoded() throws {
        final class Counted: KeyedArchiving {
            nonisolated(unsafe) static var made: [Int] = []
            static var archivedClassName: String { "Counted" }
            let number: Int
            func encode(with coder: KeyedArchiver) throws {}
            init(coder: KeyedUnarchiver) throws {
                number = try coder.decodeInt(forKey: "n")
                Self.made.append(number)
            }
        }
        // Keys: "a" (UID 2), "b" (UID 3), "a" again as the same UID, and "a" as another string
        // object (UID 4); values: Counted objects 1...4 (UIDs 5...8).
        var objects: [PropertyListValue] = [
            "$null",
            ["$class": .uid(10), "NS.keys": [.uid(2), .uid(3), .uid(2), .uid(4)], "NS.objects": [.uid(5), .uid(6), .uid(7), .uid(8)]],
            "a", "b", "a",
        ]
        for number in 1...4 { objects.append(["$class": .uid(9), "n": PropertyListValue(number)]) }
        objects += [classDescription("Counted"), classDescription("NSDictionary")]
        Counted.made = []
        let unarchiver = try KeyedUnarchiver(propertyList: archive(objects))
        unarchiver.setClass(Counted.self, forClassName: "Counted")
        let decoded = try XCTUnwrap(try unarchiver.decodeTopLevelObject(of: [.dictionary, .string, KeyedArchiveClass(userType: Counted.self)]) as? [AnyHashable: Any])
        XCTAssertEqual(decoded.count, 2)
        XCTAssertEqual((decoded["a"] as? Counted)?.number, 4)
        XCTAssertEqual((decoded["b"] as? Counted)?.number, 2)
        XCTAssertEqual(Counted.made.sorted(), [2, 4], "a dropped value was decoded")

        // Foundation keeps the same value: strings in place of the Counted objects.
        var strings = objects
        for number in 1...4 { strings[4 + number] = PropertyListValue("value \(number)") }
        let data = try PropertyList.encode(archive(strings), format: .binary)
        let theirs = try XCTUnwrap(try NSKeyedUnarchiver.unarchivedObject(ofClasses: [NSDictionary.self, NSString.self], from: data) as? NSDictionary)
        let ours = try XCTUnwrap(try KeyedUnarchiver.unarchivedObject(ofClasses: [.dictionary, .string], from: data) as? [AnyHashable: Any])
        XCTAssertEqual(theirs.count, ours.count)
        for key in ["a", "b"] {
            XCTAssertEqual(theirs[key] as? String, ours[key] as? String, key)
            XCTAssertNotNil(ours[key] as? String)
        }

        // A dropped value must still be a reference, and not nil.
        for (bad, code) in [(PropertyListValue.uid(0), KeyedArchiveError.Code.invalidObject), (.uid(99), .invalidReference), ("x", .invalidReference)] {
            var broken = strings
            broken[1] = ["$class": .uid(10), "NS.keys": [.uid(2), .uid(2)], "NS.objects": [bad, .uid(5)]]
            assertRejected(archive(broken), code, resolver: code == .invalidObject ? nil : code, pathContains: code == .invalidObject ? "NSDictionary" : "NS.objects[0]")
        }
    }

    /// Keys that equal no other key, NaN among them, keep their values (review of session 8: a
    /// NaN key, never equal to itself, was taken for a repeated one and dropped). A dropped
    /// value is still checked for its class, without being decoded.
    func testNaNKeysAreKeptAndDroppedValuesAreClassChecked() throws {
        let nan = PropertyListValue.real(PropertyListReal(Double.nan))
        let dictionary: PropertyListValue = ["$class": .uid(4), "NS.keys": [.uid(2), .uid(3)], "NS.objects": [.uid(5), .uid(6)]]
        let nanKeys = archive(["$null", dictionary, nan, nan, classDescription("NSDictionary"), "x", "y"])
        let decoded = try XCTUnwrap(
            try KeyedUnarchiver(propertyList: nanKeys).decodeTopLevelObject(of: [.dictionary, .number, .string]) as? [AnyHashable: Any])
        XCTAssertEqual(decoded.count, 2)
        XCTAssertEqual(Set(decoded.values.compactMap { $0 as? String }), ["x", "y"])

        // "a" twice: the first value is dropped; as an NSDate, which the caller did not allow, it
        // still stops the decode, as it would if it were kept.
        let repeated: PropertyListValue = ["$class": .uid(4), "NS.keys": [.uid(2), .uid(2)], "NS.objects": [.uid(3), .uid(5)]]
        let date: PropertyListValue = ["$class": .uid(6), "NS.time": 5.0]
        let withDate = archive(["$null", repeated, "a", date, classDescription("NSDictionary"), "kept", classDescription("NSDate")])
        XCTAssertThrowsError(try KeyedUnarchiver(propertyList: withDate).decodeTopLevelObject(of: [.dictionary, .string])) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .classNotAllowed, "\(error)")
            XCTAssertTrue((error as? KeyedArchiveError)?.path.contains("NS.objects[0]") ?? false, "\(error)")
        }
        let allowed = try KeyedUnarchiver(propertyList: withDate).decodeTopLevelObject(of: [.dictionary, .string, .date]) as? [AnyHashable: Any]
        XCTAssertEqual(allowed?["a"] as? String, "kept")
    }

    /// A typed decode whose result does not convert to the caller's type is taken back like one
    /// that failed inside: the objects it made are not kept (review of session 8: they stayed
    /// cached, and ArchivedObject cycles among them could never be freed).
    func testAFailedConversionAtTheTopLevelKeepsNothing() throws {
        final class Tracked: KeyedArchiving {
            nonisolated(unsafe) static weak var lastMade: Tracked?
            static var archivedClassName: String { "Tracked" }
            func encode(with coder: KeyedArchiver) throws {}
            init(coder: KeyedUnarchiver) throws { Self.lastMade = self }
        }
        // {"k": a Tracked, "s": "text"}: every class is allowed when the keys are strings and the
        // values Tracked, but "text" is no Tracked, so the conversion fails after the decode.
        let dictionary: PropertyListValue = ["$class": .uid(4), "NS.keys": [.uid(2), .uid(6)], "NS.objects": [.uid(3), .uid(7)]]
        let value = archive([
            "$null", dictionary, "k", ["$class": .uid(5)], classDescription("NSDictionary"), classDescription("Tracked"), "s", "text",
        ])
        for attempt in 0..<3 {
            let unarchiver = try KeyedUnarchiver(propertyList: value)
            unarchiver.setClass(Tracked.self, forClassName: "Tracked")
            Tracked.lastMade = nil
            XCTAssertThrowsError(try {
                switch attempt {
                case 0: _ = try unarchiver.decodeDictionary(withKeyClass: String.self, objectClass: Tracked.self, forKey: "root")
                case 1: _ = try unarchiver.decodeObject(of: Tracked.self, forKey: "root")
                default: _ = try unarchiver.decodeArrayOfObjects(ofClass: Tracked.self, forKey: "root")
                }
            }()) { error in
                XCTAssertEqual((error as? KeyedArchiveError)?.code, attempt == 0 ? .typeMismatch : .classNotAllowed, "\(error)")
            }
            // The unarchiver is alive, but the Tracked it made is gone: nothing was kept.
            XCTAssertNil(Tracked.lastMade, "attempt \(attempt): a failed decode kept what it made")
            // And a later decode that converts succeeds with a fresh object.
            let untyped = try unarchiver.decodeTopLevelObject(of: [.dictionary, .string, KeyedArchiveClass(userType: Tracked.self)])
            XCTAssertNotNil((untyped as? [AnyHashable: Any])?["k"] as? Tracked)
        }
    }

    /// A top-level decode that fails in phase 1 leaves no phase-2 work behind (session 30: the
    /// phase-2 jobs of the objects it had made stayed queued, and the next top-level decode ran
    /// them, so that decoding an unrelated string failed with the first decode's error).
    func testAFailedDecodeLeavesNoPhase2WorkForTheNext() throws {
        // root: [A, B]; A links to B in phase 2; B's init(coder:) fails (its label is no number).
        let value: PropertyListValue = [
            "$archiver": "NSKeyedArchiver", "$version": 100000, "$top": ["root": .uid(1), "other": .uid(7)],
            "$objects": [
                "$null",
                ["$class": .uid(2), "NS.objects": [.uid(3), .uid(5)]],
                classDescription("NSArray"),
                ["$class": .uid(4), "label": 0, "links": .uid(6)],
                classDescription(Node.archivedClassName),
                ["$class": .uid(4), "label": "not a number"],
                ["$class": .uid(2), "NS.objects": [.uid(5)]],
                "unrelated",
            ],
        ]
        for unarchiver in [try KeyedUnarchiver(propertyList: value), try KeyedUnarchiver(data: PropertyList.encode(value, format: .binary))] {
            XCTAssertThrowsError(try unarchiver.decodeTopLevelObject(of: [.array, .type(Node.self)], forKey: "root")) { error in
                XCTAssertEqual((error as? KeyedArchiveError)?.code, .typeMismatch, "\(error)")
            }
            XCTAssertEqual(try unarchiver.decodeTopLevelObject(of: [.string], forKey: "other") as? String, "unrelated")
        }
    }

    func testUIDOutOfRange() {
        assertRejected(archive(["$null"], root: .uid(5)), .invalidReference, resolver: .invalidReference)
        assertRejected(
            archive(["$null", ["$class": .uid(2), "NS.objects": [.uid(3), .uid(99)]], classDescription("NSArray"), "x"]),
            .invalidReference, resolver: .invalidReference, pathContains: "NS.objects[1]")
        assertRejected(archive(["$null", ["$class": .uid(77)]]), .invalidReference, resolver: .invalidReference)
    }

    func testExpectedUIDPath() {
        let dictionary: PropertyListValue = [
            "$class": .uid(3), "NS.keys": [.uid(2), .uid(2), .uid(2), "oops"], "NS.objects": [.uid(2), .uid(2), .uid(2), .uid(2)],
        ]
        let value = archive(["$null", dictionary, "k", classDescription("NSDictionary")])
        do {
            _ = try KeyedUnarchiver(propertyList: value).decodeTopLevelObject(of: Self.everything)
            XCTFail("accepted")
        } catch let error as KeyedArchiveError {
            XCTAssertEqual(error.code, .invalidReference)
            XCTAssertEqual(error.description, "$top.root > $objects[1] (NSDictionary) NS.keys[3]: expected UID, found string")
        } catch { XCTFail("\(error)") }
    }

    func testMissingOrLoopingClass() {
        assertRejected(archive(["$null", ["x": 1]]), .invalidClass, resolver: .invalidClass)
        // $class pointing at itself, at an object with its own $class, at a string, at nil.
        assertRejected(archive(["$null", ["$class": .uid(1)]]), .invalidClass, resolver: .invalidClass)
        assertRejected(archive(["$null", ["$class": .uid(2)], ["$class": .uid(1)]]), .invalidClass, resolver: .invalidClass)
        assertRejected(archive(["$null", ["$class": .uid(2)], "NSArray"]), .invalidClass, resolver: .invalidClass)
        assertRejected(archive(["$null", ["$class": .uid(0)]]), .invalidClass, resolver: .invalidClass)
        assertRejected(archive(["$null", ["$class": "NSArray"]]), .invalidReference, resolver: .invalidReference)
    }

    func testClassesNotAnArrayAndMissingClassName() {
        assertRejected(
            archive(["$null", ["$class": .uid(2)], ["$classname": "X", "$classes": "X"]]), .invalidClass, resolver: .invalidClass)
        assertRejected(
            archive(["$null", ["$class": .uid(2)], ["$classname": "X", "$classes": ["X", 3]]]), .invalidClass, resolver: .invalidClass)
        assertRejected(archive(["$null", ["$class": .uid(2)], ["$classes": ["X"]]]), .invalidClass, resolver: .invalidClass)
    }

    /// The unarchiver refuses these; the resolver (`karchive print`, `unarchive`) shows an
    /// object without its class's shape as its fields and class since session 66
    /// (``ResolverFidelityTests``), so only the unarchiver's refusal is asserted for those.
    func testWrongContainerShapes() throws {
        let shownAsFields: [PropertyListValue] = [
            archive(["$null", ["$class": .uid(2), "NS.objects": .uid(1)], classDescription("NSArray")]),
            archive(["$null", ["$class": .uid(2), "NS.keys": [.uid(3)], "NS.objects": []], classDescription("NSDictionary"), "k"]),
            archive(["$null", ["$class": .uid(2), "NS.uuidbytes": .data(Data([1, 2]))], classDescription("NSUUID")]),
            archive(["$null", ["$class": .uid(2), "NS.bytes": .data(Data([0xFF, 0xFE]))], classDescription("NSMutableString", ["NSMutableString", "NSString", "NSObject"])]),
            // Huge legacy index: one NS.object.99999999 key, no others.
            archive(["$null", ["$class": .uid(2), "NS.object.99999999": .uid(1)], classDescription("NSArray")]),
        ]
        for archive in shownAsFields {
            assertRejected(archive, .invalidObject)
            let resolved = try ArchiveResolver(propertyList: archive).resolve()
            XCTAssertNotNil(resolved["$class"], "\(resolved)")
        }
        assertRejected(archive(["$null", [1, 2]]), .invalidObject, resolver: .invalidObject)
    }

    func testSelfReferencingEntries() throws {
        // An NSArray that contains itself: no Swift array can hold that; the resolver emits $ref.
        let value = archive(["$null", ["$class": .uid(2), "NS.objects": [.uid(1)]], classDescription("NSMutableArray", ["NSMutableArray", "NSArray", "NSObject"])])
        assertRejected(value, .unsupportedCycle, resolver: nil)
        XCTAssertEqual(try ArchiveResolver(propertyList: value).resolve(), [["$ref": 1]])
        // The same through an unknown class decodes (ArchivedObject is a reference type).
        let generic = archive(["$null", ["$class": .uid(2), "me": .uid(1)], classDescription("Mystery")])
        let object = try XCTUnwrap(KeyedUnarchiver(propertyList: generic).decodeTopLevelObject(of: [.archivedObject]) as? ArchivedObject)
        XCTAssertTrue(object["me"]?.objectValue as? ArchivedObject === object)
    }

    func testDeepNestingStopsAtTheDepthLimit() {
        // 100,000 nested NSArrays: each at UID i holds UID i+1.
        let depth = 100_000
        var objects: [PropertyListValue] = ["$null", classDescription("NSArray")]
        for index in 0..<depth {
            objects.append(["$class": .uid(1), "NS.objects": index + 1 < depth ? [.uid(UInt32(index + 3))] : []])
        }
        assertRejected(archive(objects, root: .uid(2)), .depthLimitExceeded, resolver: .depthLimitExceeded)
    }

    func testObjectReferencedAMillionTimesIsDecodedOnceAndBombsStop() throws {
        // NS.objects with 1,000,000 references to one shared inner array.
        let references = [PropertyListValue](repeating: .uid(2), count: 1_000_000)
        let value = archive(["$null", ["$class": .uid(4), "NS.objects": .array(references)], ["$class": .uid(4), "NS.objects": [.uid(3)]], "x", classDescription("NSArray")])
        let decoded = try XCTUnwrap(KeyedUnarchiver(propertyList: value).decodeTopLevelObject(of: [.array, .string]) as? [Any])
        XCTAssertEqual(decoded.count, 1_000_000)
        XCTAssertEqual(decoded.last as? [String], ["x"])
        // The resolver expands it (2,000,001 values) unless the limit is lower.
        XCTAssertEqual(try ArchiveResolver(propertyList: value).resolve().arrayValue?.count, 1_000_000)
        XCTAssertThrowsError(try ArchiveResolver(propertyList: value, limits: DecodingLimits(maximumExpandedNodeCount: 100_000)).resolve()) {
            XCTAssertEqual(($0 as? KeyedArchiveError)?.code, .objectLimitExceeded)
        }

        // A reference bomb: 64 levels, each an array holding the next level twice (2^64 leaves).
        var objects: [PropertyListValue] = ["$null", classDescription("NSArray")]
        for level in 0..<64 {
            let next = PropertyListValue.uid(UInt32(level + 3))
            let children: PropertyListValue = level < 63 ? [next, next] : [.uid(66)]
            objects.append(["$class": .uid(1), "NS.objects": children])
        }
        objects.append("leaf")
        let bomb = archive(objects, root: .uid(2))
        XCTAssertThrowsError(try ArchiveResolver(propertyList: bomb).resolve()) {
            XCTAssertEqual(($0 as? KeyedArchiveError)?.code, .objectLimitExceeded, "\($0)")
        }
        // The unarchiver decodes each level once; Swift arrays share the storage.
        XCTAssertNotNil(try KeyedUnarchiver(propertyList: bomb).decodeTopLevelObject(of: [.array, .string]))
    }

    func testObjectCountLimit() {
        let value = archive(["$null", "a", "b", "c"])
        XCTAssertThrowsError(try KeyedUnarchiver(propertyList: value, limits: DecodingLimits(maximumObjectCount: 3))) {
            XCTAssertEqual(($0 as? KeyedArchiveError)?.code, .objectLimitExceeded)
        }
    }

    func testEnvelopeTolerance() throws {
        // Any *KeyedArchiver name and any $top key are accepted.
        var value = archive(["$null", "hello"])
        value = .dictionary({
            var d = value.dictionaryValue ?? PropertyListDictionary()
            d["$archiver"] = "NRKeyedArchiver"
            d["$top"] = ["foundItems": .uid(1)]
            return d
        }())
        let unarchiver = try KeyedUnarchiver(propertyList: value)
        XCTAssertEqual(unarchiver.topLevelKeys, ["foundItems"])
        XCTAssertEqual(try unarchiver.decodeTopLevelObject(of: [.string], forKey: "foundItems") as? String, "hello")
        XCTAssertThrowsError(try unarchiver.decodeTopLevelObject(of: [.string])) {
            XCTAssertEqual(($0 as? KeyedArchiveError)?.code, .missingTopLevelKey)
        }
        XCTAssertEqual(try ArchiveResolver(propertyList: value).resolveTopLevel(), ["foundItems": "hello"])
    }

    /// `$top` keys must be strings: a number key is refused, read whole and read by index (a
    /// binary file; XML has string keys only), wherever it is among the string keys.
    func testTopWithANonStringKeyIsRefused() throws {
        for top: PropertyListDictionary in [
            PropertyListDictionary([(.integer(PropertyListInteger(1)), .uid(1))]),
            PropertyListDictionary([("root", .uid(1)), (.integer(PropertyListInteger(1)), .uid(1))]),
            PropertyListDictionary([("root", .uid(1)), (.real(PropertyListReal(2.5)), .uid(1)), ("other", .uid(1))]),
        ] {
            var envelope = archive(["$null", "hello"]).dictionaryValue ?? PropertyListDictionary()
            envelope["$top"] = .dictionary(top)
            let value = PropertyListValue.dictionary(envelope)
            XCTAssertThrowsError(try KeyedUnarchiver(data: try PropertyList.encode(value, format: .binary))) {
                XCTAssertEqual(($0 as? KeyedArchiveError)?.code, .invalidEnvelope, "\($0)")
                XCTAssertTrue("\($0)".contains("keys must be strings"), "\($0)")
            }
            XCTAssertThrowsError(try KeyedUnarchiver(propertyList: value)) {
                XCTAssertEqual(($0 as? KeyedArchiveError)?.code, .invalidEnvelope, "\($0)")
            }
        }
        // The same envelope with string keys only is read.
        var envelope = archive(["$null", "hello"]).dictionaryValue ?? PropertyListDictionary()
        envelope["$top"] = ["root": .uid(1), "other": .uid(1)]
        XCTAssertEqual(try KeyedUnarchiver(data: try PropertyList.encode(.dictionary(envelope), format: .binary)).topLevelKeys, ["root", "other"])
    }

    /// An `$archiver` name is accepted exactly when Swift's `hasSuffix("KeyedArchiver")` says
    /// so (the reader compares bytes first), read whole and read by index: canonically
    /// equivalent forms (a Kelvin sign for the K) pass, a prepended character that joins the K
    /// into its cluster does not, nor a combining mark after the last letter.
    func testArchiverNamesAreAcceptedAsHasSuffixSays() throws {
        let names = [
            "NSKeyedArchiver", "NRKeyedArchiver", "KeyedArchiver", "xKeyedArchiver", "", "NSArchiver", "NSKeyedArchive",
            "eyedArchiver", "NSKeyedArchiveR", "NSKeyedArchiver ", "NS\u{212A}eyedArchiver", "\u{0600}KeyedArchiver",
            "a\u{0600}KeyedArchiver", "éKeyedArchiver", "NSKeyedArchiver\u{301}", "\u{FF2B}eyedArchiver",
            "\u{1F1FA}KeyedArchiver", "\u{200D}KeyedArchiver",
        ]
        var accepted = 0
        for name in names {
            var envelope = archive(["$null", "hello"]).dictionaryValue ?? PropertyListDictionary()
            envelope["$archiver"] = PropertyListValue(name)
            let value = PropertyListValue.dictionary(envelope)
            let expected = name.hasSuffix("KeyedArchiver")
            if expected { accepted += 1 }
            for format in [PropertyListFormat.binary, .xml] {
                let data = try PropertyList.encode(value, format: format)
                do {
                    let unarchiver = try KeyedUnarchiver(data: data)
                    XCTAssertTrue(expected, "\(format) \(name.unicodeScalars.map(\.value)) accepted")
                    XCTAssertEqual(unarchiver.archiverName, name)
                    XCTAssertEqual(try unarchiver.decodeTopLevelObject(of: [.string]) as? String, "hello")
                } catch let error as KeyedArchiveError {
                    XCTAssertFalse(expected, "\(format) \(name.unicodeScalars.map(\.value)) refused: \(error)")
                    XCTAssertEqual(error.code, .invalidEnvelope, "\(error)")
                }
            }
            XCTAssertEqual((try? KeyedUnarchiver(propertyList: value)) != nil, expected, "\(name.unicodeScalars.map(\.value))")
        }
        // Both outcomes are exercised: the list is no stand-in.
        XCTAssertEqual(accepted, 8)
    }

    /// Seeded mutations of real archives: every outcome is a value or a KeyedArchiveError.
    func testMutatedCorpusArchivesNeverCrash() throws {
        guard Corpus.root != nil else {
            print("MalformedArchiveTests: corpus absent; skipping mutation test")
            throw XCTSkip("corpus absent")
        }
        let archives = try Corpus.entries(in: "keyed").map { try PropertyList.decode($0.data) }
        var random = SeededGenerator(seed: 7)
        var rejected = 0
        for _ in 0..<1500 {
            guard var archive = archives.randomElement(using: &random) else { break }
            for _ in 0..<Int.random(in: 1...3, using: &random) { mutate(&archive, using: &random) }
            do {
                let unarchiver = try KeyedUnarchiver(propertyList: archive)
                for key in unarchiver.topLevelKeys { _ = try unarchiver.decodeTopLevelObject(of: Self.everything, forKey: key) }
                _ = try ArchiveResolver(propertyList: archive).resolveTopLevel()
            } catch is KeyedArchiveError {
                rejected += 1
            }
        }
        XCTAssertGreaterThan(rejected, 100)
    }

    private func mutate(_ value: inout PropertyListValue, using random: inout SeededGenerator) {
        guard case .dictionary(var envelope) = value, case .array(var objects)? = envelope["$objects"], !objects.isEmpty else { return }
        let index = Int.random(in: 0..<objects.count, using: &random)
        let replacements: [PropertyListValue] = [
            .uid(UInt32.random(in: 0...UInt32(objects.count + 2), using: &random)), "NSArray", 7, [.uid(1)], [:],
            ["$class": .uid(UInt32.random(in: 0...UInt32(objects.count), using: &random))],
        ]
        if case .dictionary(var object) = objects[index], !object.isEmpty, random.chance(0.7) {
            let entry = Int.random(in: 0..<object.count, using: &random)
            object.entries[entry].value = replacements.randomElement(using: &random) ?? .uid(0)
            objects[index] = .dictionary(object)
        } else {
            objects[index] = replacements.randomElement(using: &random) ?? .uid(0)
        }
        envelope["$objects"] = .array(objects)
        value = .dictionary(envelope)
    }
}
