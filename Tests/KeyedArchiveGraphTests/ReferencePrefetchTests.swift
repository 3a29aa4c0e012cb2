import Foundation
import KeyedArchive
import KeyedArchiveGraph
import KeyedArchivePropertyList
import KeyedArchiveTestSupport
import XCTest

/// The unarchiver starts loading what an object's references will read some objects before it
/// decodes them (phase 2), and what the members of a short array of objects will read before
/// it takes them: hints that read only inside the file and the unarchiver's lists, and change
/// no result. The UIDs it looks ahead at come from
/// ``BinaryPropertyListObjectReader/forEachUIDValue(of:maximumEntries:_:)``.
final class ReferencePrefetchTests: XCTestCase {
    // MARK: The UIDs among a dictionary's values

    /// A dictionary written by Python's plistlib, with UIDs of each width among other values:
    /// the UIDs come back in entry order, up to the entries asked for, as the full read of
    /// each value reads them.
    func testUIDValuesAreThoseAmongTheValuesInEntryOrder() throws {
        guard Python.executable != nil else { throw XCTSkip("python3 not found; plistlib-made dictionary not available") }
        // UIDs of 1, 2 and 4 bytes (plistlib picks the width), one of 8 bytes (not a UInt32:
        // skipped, as the full read does not read it as one) and values of other kinds, among
        // them a UID inside an array (not a value of the dictionary itself).
        let script = """
            import plistlib, sys
            from plistlib import UID
            d = {'a': UID(0), 'b': 5, 'c': UID(7), 'd': 'text', 'e': UID(255), 'f': UID(256), 'g': [UID(3)],
                 'h': UID(65535), 'i': 2.5, 'j': UID(65536), 'k': True, 'l': UID(4294967295), 'm': UID(2**40), 'n': UID(9)}
            sys.stdout.buffer.write(plistlib.dumps(d, fmt=plistlib.FMT_BINARY, sort_keys=False))
            """
        let file = try Python.run(script)
        let expected: [UInt32] = [0, 7, 255, 256, 65535, 65536, 4_294_967_295, 9]
        let reader = try BinaryPropertyListObjectReader(file, limits: .default)
        let span = try XCTUnwrap(reader.dictionarySpan(ofObject: reader.topObject))
        XCTAssertEqual(span.count, 14)

        // What the full read of each value finds (the 8-byte UID aside, which it reads as
        // something other than a UInt32 UID or rejects).
        var fullRead: [UInt32] = []
        for entry in 0..<span.count {
            if case .uid(let uid)? = try? reader.value(ofObject: reader.valueObject(entry, of: span)) { fullRead.append(uid) }
        }
        XCTAssertEqual(fullRead.filter { expected.contains($0) }, expected)

        for maximum in [Int.min, -1, 0, 1, 2, 3, 6, 13, 14, 15, Int.max] {
            var found: [UInt32] = []
            reader.forEachUIDValue(of: span, maximumEntries: maximum) { found.append($0) }
            // The UIDs among the first `maximum` entries: 'a' is entry 0, 'c' 2, 'e' 4, 'f' 5,
            // 'h' 7, 'j' 9, 'l' 11, 'n' 13.
            let entriesOfExpected = [0, 2, 4, 5, 7, 9, 11, 13]
            let wanted = zip(expected, entriesOfExpected).filter { $0.1 < Swift.max(maximum, 0) }.map(\.0)
            XCTAssertEqual(found, wanted, "maximumEntries \(maximum)")
        }

        reader.close()
        var afterClose = 0
        reader.forEachUIDValue(of: span, maximumEntries: .max) { _ in afterClose += 1 }
        XCTAssertEqual(afterClose, 0, "a closed reader reads nothing")
    }

    /// A span is a plain value: one that does not lie inside the object area (made by hand,
    /// since the reader never makes one) is read as empty, never past the file.
    func testSpansOutsideTheObjectAreaReadNothing() throws {
        let file = try PropertyList.encode(
            .dictionary(PropertyListDictionary(stringKeys: [("a", .uid(1)), ("b", .uid(2))])), format: .binary)
        let reader = try BinaryPropertyListObjectReader(file, limits: .default)
        let good = try XCTUnwrap(reader.dictionarySpan(ofObject: reader.topObject))
        var found: [UInt32] = []
        reader.forEachUIDValue(of: good, maximumEntries: .max) { found.append($0) }
        XCTAssertEqual(found, [1, 2])
        let spans: [BinaryPropertyListObjectReader.ContainerSpan] = [
            .init(object: 0, count: Int.max, start: good.start), .init(object: 0, count: Int.min, start: good.start),
            .init(object: 0, count: -1, start: good.start), .init(object: 0, count: 2, start: -1),
            .init(object: 0, count: 2, start: Int.min), .init(object: 0, count: 2, start: Int.max),
            .init(object: 0, count: 2, start: file.count), .init(object: 0, count: file.count, start: 0),
            .init(object: 0, count: Int.max / 2, start: 8), .init(object: 0, count: 1 << 60, start: 8),
        ]
        for span in spans {
            var calls = 0
            reader.forEachUIDValue(of: span, maximumEntries: .max) { _ in calls += 1 }
            XCTAssertEqual(calls, 0, "span \(span.start) / \(span.count)")
        }
    }

    /// Damaged files (seeded byte changes to an archive): whatever the reader still opens, the
    /// look-ahead reports, in order, exactly the UIDs that the full read of those entries
    /// finds, and never faults (the suite also runs under the address sanitizer).
    func testDamagedFilesGiveOnlyUIDsTheFullReadFinds() throws {
        let people = Person.graph(count: 40, seed: 7)
        let original = [UInt8](try KeyedArchiver.archivedData(withRootObject: people as [Any], format: .binary))
        var random = SeededGenerator(seed: 0x5EED)
        var opened = 0
        for _ in 0..<400 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                bytes[Int.random(in: 8..<bytes.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            }
            guard let reader = try? BinaryPropertyListObjectReader(Data(bytes), limits: .default) else { continue }
            opened += 1
            for object in 0..<reader.objectCount {
                guard let span = try? reader.dictionarySpan(ofObject: object) else { continue }
                var found: [UInt32] = []
                reader.forEachUIDValue(of: span, maximumEntries: 16) { found.append($0) }
                var fullRead: [UInt32] = []
                for entry in 0..<Swift.min(span.count, 16) {
                    if case .uid(let uid)? = try? reader.value(ofObject: reader.valueObject(entry, of: span)) { fullRead.append(uid) }
                }
                XCTAssertEqual(found, fullRead, "object \(object)")
            }
        }
        XCTAssertGreaterThan(opened, 100, "most damaged files should still open for the test to mean something")
    }

    // MARK: UIDs read by arithmetic

    /// Python's plistlib's reading of each object of `file`, by index: a UID's value, a
    /// dictionary's UID values in entry order, nil for anything else.
    private func plistlibObjects(_ file: Data) throws -> (uids: [UInt32?], dictionaryUIDs: [[UInt32]?], entries: Int) {
        // plistlib's own binary parser, asked for each object by index after the whole read.
        let script = """
            import io, plistlib, sys
            data = sys.stdin.buffer.read()
            parser = plistlib._BinaryPlistParser(dict_type=dict)
            top = parser.parse(io.BytesIO(data))
            print(len(top['$objects']) if isinstance(top, dict) and '$objects' in top else -1)
            for index in range(len(parser._object_offsets)):
                value = parser._read_object(index)
                if isinstance(value, plistlib.UID):
                    print('u', value.data)
                elif isinstance(value, dict):
                    print('d', *[v.data for v in value.values() if isinstance(v, plistlib.UID)])
                else:
                    print('-')
            """
        let lines = String(decoding: try Python.run(script, input: file), as: UTF8.self).split(separator: "\n")
        let entries = Int(lines.first ?? "") ?? -1
        var uids: [UInt32?] = [], dictionaryUIDs: [[UInt32]?] = []
        for line in lines.dropFirst() {
            let words = line.split(separator: " ")
            uids.append(words.first == "u" ? UInt32(words[1]) : nil)
            dictionaryUIDs.append(words.first == "d" ? words.dropFirst().compactMap { UInt32($0) } : nil)
        }
        return (uids, dictionaryUIDs, entries)
    }

    /// `reader`'s reading of each object as a UID (nil for anything else, or an error), and of
    /// each dictionary's UID values through the look-ahead.
    private func readerObjects(_ reader: BinaryPropertyListObjectReader) -> (uids: [UInt32?], dictionaryUIDs: [[UInt32]?]) {
        var uids: [UInt32?] = [], dictionaryUIDs: [[UInt32]?] = []
        for object in 0..<reader.objectCount {
            if case .uid(let uid)? = try? reader.value(ofObject: object) { uids.append(uid) } else { uids.append(nil) }
            if let span = try? reader.dictionarySpan(ofObject: object) {
                var found: [UInt32] = []
                reader.forEachUIDValue(of: span, maximumEntries: .max) { found.append($0) }
                dictionaryUIDs.append(found)
            } else {
                dictionaryUIDs.append(nil)
            }
        }
        return (uids, dictionaryUIDs)
    }

    /// Our archiver writes one UID object per `$objects` entry after all the other objects: the
    /// reader finds that run (as many objects as plistlib counts entries, UIDs of 1, 2 and 4
    /// bytes) and reads every object, in the run and before it, as plistlib does, alone and
    /// among a dictionary's values.
    func testOurArchivesEndInUIDsReadByArithmetic() throws {
        guard Python.executable != nil else { throw XCTSkip("python3 not found; plistlib is the peer here") }
        for count in [0, 1, 40, 35_000] {
            let people = Person.graph(count: count, seed: UInt64(count) &+ 5)
            defer { for person in people { person.friends = []; person.best = nil; person.other = nil } }
            let file = try KeyedArchiver.archivedData(withRootObject: people as [Any], format: .binary)
            let reader = try BinaryPropertyListObjectReader(file, limits: .default)
            let expected = try plistlibObjects(file)
            XCTAssertEqual(reader.arithmeticUIDObjects.count, expected.entries, "\(count) people")
            XCTAssertEqual(reader.arithmeticUIDObjects.upperBound, reader.objectCount)
            if count == 35_000 { XCTAssertGreaterThan(expected.entries, 65_536, "4-byte UIDs in the run") }
            let read = readerObjects(reader)
            XCTAssertEqual(read.uids, expected.uids, "\(count) people")
            XCTAssertEqual(read.dictionaryUIDs, expected.dictionaryUIDs, "\(count) people")
            try Person.assertSameGraph(people, try Person.decode(file), "\(count) people")
        }
    }

    /// A run broken by a damaged UID object (another value, another kind of object) starts
    /// after it; the objects before it are read from the file, as plistlib reads them, and
    /// the unarchiver decodes what the whole read decodes or throws a `KeyedArchiveError`.
    func testARunStopsAtTheFirstObjectThatBreaksIt() throws {
        guard Python.executable != nil else { throw XCTSkip("python3 not found; plistlib is the peer here") }
        let people = Person.graph(count: 60, seed: 21)
        defer { for person in people { person.friends = []; person.best = nil; person.other = nil } }
        let original = [UInt8](try KeyedArchiver.archivedData(withRootObject: people as [Any], format: .binary))
        let run = try BinaryPropertyListObjectReader(Data(original), limits: .default).arithmeticUIDObjects
        XCTAssertGreaterThan(run.count, 60)
        // The objects' offsets read from the trailer and offset table, not by the reader under test.
        let layout = try XCTUnwrap(BinaryObjectLayout(Data(original)))
        for broken in [run.lowerBound, run.lowerBound + 1, run.lowerBound + run.count / 2, run.upperBound - 2, run.upperBound - 1] {
            let offset = layout.objects[broken].offset
            XCTAssertEqual(original[offset] & 0xF0, 0x80, "object \(broken) is a UID")
            // The UID's first value byte one more, or its marker an integer's (0x10).
            for (position, byte) in [(offset + 1, original[offset + 1] &+ 1), (offset, UInt8(0x10))] {
                var bytes = original
                bytes[position] = byte
                let file = Data(bytes)
                let reader = try BinaryPropertyListObjectReader(file, limits: .default)
                // The last object, still a UID of another value, is a run of its own.
                let stillAUID = broken == run.upperBound - 1 && position == offset + 1
                XCTAssertEqual(reader.arithmeticUIDObjects, (stillAUID ? broken : broken + 1)..<run.upperBound, "object \(broken) broken")
                let expected = try plistlibObjects(file)
                let read = readerObjects(reader)
                XCTAssertEqual(read.uids, expected.uids, "object \(broken) broken")
                XCTAssertEqual(read.dictionaryUIDs, expected.dictionaryUIDs, "object \(broken) broken")
                // The unarchiver: what the whole read decodes (another graph, since a UID
                // changed), or a typed error.
                switch (Result { try graphDescription(file, wholeRead: true) }, Result { try graphDescription(file, wholeRead: false) }) {
                case (.success(let whole), .success(let byIndex)): XCTAssertEqual(byIndex, whole, "object \(broken) broken")
                case (.success, .failure(let error)): XCTFail("object \(broken) broken: the whole read decodes, reading by index throws \(error)")
                case (.failure, .success): break  // damage the by-index read does not reach
                case (.failure, .failure(let error)): XCTAssertTrue(error is KeyedArchiveError, "\(error)")
                }
            }
        }
    }

    /// The people an unarchiver decodes from `data`, described by labels (their links cut
    /// afterwards), read by index or, `wholeRead`, from the whole tree.
    private func graphDescription(_ data: Data, wholeRead: Bool) throws -> String {
        let unarchiver = wholeRead
            ? KeyedUnarchiver(document: try ArchiveDocument(data: data, limits: .default, byIndex: false))
            : try KeyedUnarchiver(data: data)
        let root = try unarchiver.decodeTopLevelObject(of: [.type(Person.self), .array], forKey: "root") as? [Any] ?? []
        let people = root.compactMap { $0 as? Person }
        defer { for person in people { person.friends = []; person.best = nil; person.other = nil } }
        return people.map { "\($0.label): \($0.best?.label ?? -1) \($0.other?.label ?? -1) \($0.friends.map(\.label))" }
            .joined(separator: "; ") + " of \(root.count)"
    }

    /// Files of other writers (plistlib): a run whose UIDs are above their indices, a last
    /// UID that starts no longer run, UIDs of 8 bytes and a file that does not end in a UID.
    func testRunsInOtherFilesAreOnlyWhatTheBytesSay() throws {
        guard Python.executable != nil else { throw XCTSkip("python3 not found; plistlib is the peer here") }
        let cases: [(String, Range<Int>)] = [
            // plistlib writes the array (object 0), then its members in order.
            ("[UID(5), UID(6), UID(7)]", 1..<4),
            ("[UID(1), UID(3)]", 2..<3),
            ("[UID(9), UID(2**40)]", 3..<3),
            ("[UID(0), UID(1), 'text']", 4..<4),
            ("{'a': UID(300), 'b': UID(301), 'c': UID(70000), 'd': UID(70001)}", 7..<9),
        ]
        for (literal, run) in cases {
            let file = try Python.run("""
                import plistlib, sys
                from plistlib import UID
                sys.stdout.buffer.write(plistlib.dumps(\(literal), fmt=plistlib.FMT_BINARY, sort_keys=False))
                """)
            let reader = try BinaryPropertyListObjectReader(file, limits: .default)
            XCTAssertEqual(reader.arithmeticUIDObjects, run, literal)
            let expected = try plistlibObjects(file)
            let read = readerObjects(reader)
            // (The 8-byte UID is not a UInt32: neither side reads it as one.)
            XCTAssertEqual(read.uids, expected.uids, literal)
            XCTAssertEqual(read.dictionaryUIDs, expected.dictionaryUIDs, literal)
        }
    }

    // MARK: Unarchiving with the look-ahead

    /// Graphs of every size around the look-ahead distances, friends by key and in arrays
    /// (earlier, later, repeated and the person itself: cycles, decoded in phase 2), keep
    /// every identity through our archiver and our unarchiver.
    func testGraphsAroundTheLookaheadKeepEveryIdentity() throws {
        for count in Array(0...20) + [33, 300] {
            let people = Person.graph(count: count, seed: UInt64(count) &+ 11)
            let data = try KeyedArchiver.archivedData(withRootObject: people as [Any], format: .binary)
            try Person.assertSameGraph(people, try Person.decode(data), "\(count) people")
            for person in people { person.friends = []; person.best = nil; person.other = nil }
        }
    }

    /// The same graphs written by Foundation's NSKeyedArchiver (acyclic: its unarchiver and
    /// archiver are the peer, and it cannot read cycles back) decode with every identity.
    func testFoundationArchivesOfGraphsAroundTheLookaheadDecode() throws {
        for count in [1, 2, 3, 5, 8, 9, 12, 17, 40, 300] {
            let people = Person.graph(count: count, seed: UInt64(count) &+ 101, acyclic: true)
            let theirs = FPerson.mirror(of: people)
            let data = try NSKeyedArchiver.archivedData(withRootObject: theirs, requiringSecureCoding: false)
            let decoded = try Person.decode(data, className: NSStringFromClass(FPerson.self))
            try Person.assertSameGraph(people, decoded, "\(count) people from Foundation")
        }
    }

    /// A friend's reference out of range, or a value that is not a reference, in an object
    /// decoded in phase 2: the look-ahead skips it and the decode reports it as before.
    func testBadReferencesAheadAreLeftForTheDecodeToReport() throws {
        let people = Person.graph(count: 20, seed: 3, acyclic: true)
        let data = try KeyedArchiver.archivedData(withRootObject: people as [Any], format: .binary)
        let tree = try PropertyList.decode(data)
        guard case .dictionary(var envelope) = tree, case .array(let objects)? = envelope["$objects"] else {
            return XCTFail("not an archive")
        }
        // The last person whose "best" friend is a reference.
        let index = try XCTUnwrap(objects.indices.last { index in
            if case .dictionary(let fields) = objects[index], case .uid? = fields["best"] { return true }
            return false
        })
        let cases: [(PropertyListValue, String)] = [
            (.uid(UInt32(objects.count + 5)), "best: UID \(objects.count + 5) is out of range"),
            (PropertyListValue(17), "best: expected UID, found integer"),
        ]
        for (bad, message) in cases {
            guard case .dictionary(var fields) = objects[index] else { return XCTFail("not a dictionary") }
            fields["best"] = bad
            var patched = objects
            patched[index] = .dictionary(fields)
            envelope["$objects"] = .array(patched)
            let damaged = try PropertyList.encode(.dictionary(envelope), format: .binary)
            XCTAssertThrowsError(try Person.decode(damaged)) { error in
                XCTAssertTrue(error is KeyedArchiveError, "\(error)")
                XCTAssertTrue("\(error)".contains("$objects[\(index)] (\(NSStringFromClass(Person.self))) \(message)"), "\(error)")
            }
        }
    }
}

/// A person whose friends are decoded in phase 2: one by each of two keys and some in an array.
final class Person: KeyedArchiving {
    var label: Int
    var best: Person?
    var other: Person?
    var friends: [Person] = []

    init(label: Int) { self.label = label }

    func encode(with coder: KeyedArchiver) throws {
        coder.encode(label, forKey: "label")
        try coder.encode(best, forKey: "best")
        try coder.encode(other, forKey: "other")
        try coder.encode(friends, forKey: "friends")
    }

    init(coder: KeyedUnarchiver) throws {
        label = try coder.decodeInt(forKey: "label")
    }

    func decodeReferences(with coder: KeyedUnarchiver) throws {
        best = try coder.decodeObject(of: Person.self, forKey: "best")
        other = try coder.decodeObject(of: Person.self, forKey: "other")
        friends = try coder.decodeArrayOfObjects(ofClass: Person.self, forKey: "friends") ?? []
    }

    /// The people of an archive whose root is an array of them (archived under `className`).
    static func decode(_ data: Data, className: String? = nil) throws -> [Person] {
        let unarchiver = try KeyedUnarchiver(data: data)
        if let className { unarchiver.setClass(Person.self, forClassName: className) }
        let value = try unarchiver.decodeTopLevelObject(of: [.type(Person.self), .array], forKey: "root")
        let root = try XCTUnwrap(value as? [Any])
        let people = root.compactMap { $0 as? Person }
        XCTAssertEqual(people.count, root.count, "every element is a person")
        return people
    }

    /// `count` people with random friends: anyone (cycles) or, `acyclic`, only people before
    /// them; some have none, some the same friend twice.
    static func graph(count: Int, seed: UInt64, acyclic: Bool = false) -> [Person] {
        var random = SeededGenerator(seed: seed)
        let people = (0..<count).map { Person(label: $0) }
        func pick(_ index: Int) -> Person? {
            let range = acyclic ? 0..<index : 0..<count
            guard !range.isEmpty, Int.random(in: 0..<8, using: &random) != 0 else { return nil }
            return people[Int.random(in: range, using: &random)]
        }
        for (index, person) in people.enumerated() {
            person.best = pick(index)
            person.other = pick(index)
            for _ in 0..<Int.random(in: 0...5, using: &random) {
                if let friend = pick(index) { person.friends.append(friend) }
            }
        }
        return people
    }

    /// `decoded` is `people` again: the same labels, and each reference to the same person.
    static func assertSameGraph(_ people: [Person], _ decoded: [Person], _ context: String) throws {
        XCTAssertEqual(decoded.map(\.label), people.map(\.label), context)
        guard decoded.count == people.count else { return }
        // Decoded people by label: a decoded reference must be that very instance.
        for (person, copy) in zip(people, decoded) {
            XCTAssertTrue(copy.best === person.best.map { decoded[$0.label] }, "\(context): \(person.label).best")
            XCTAssertTrue(copy.other === person.other.map { decoded[$0.label] }, "\(context): \(person.label).other")
            XCTAssertEqual(copy.friends.count, person.friends.count, "\(context): \(person.label).friends")
            for (friend, copied) in zip(person.friends, copy.friends) {
                XCTAssertTrue(copied === decoded[friend.label], "\(context): \(person.label)'s friend \(friend.label)")
            }
        }
    }
}

/// Foundation's side of ``Person``, for archives written by NSKeyedArchiver.
final class FPerson: NSObject, NSCoding {
    var label = 0
    var best: FPerson?
    var other: FPerson?
    var friends: [FPerson] = []

    init(label: Int) { self.label = label }

    func encode(with coder: NSCoder) {
        coder.encode(label, forKey: "label")
        coder.encode(best, forKey: "best")
        coder.encode(other, forKey: "other")
        coder.encode(friends as NSArray, forKey: "friends")
    }

    init?(coder: NSCoder) { nil }

    /// Foundation people linked as `people` are.
    static func mirror(of people: [Person]) -> [FPerson] {
        let mirrored = people.map { FPerson(label: $0.label) }
        for (person, copy) in zip(people, mirrored) {
            copy.best = person.best.map { mirrored[$0.label] }
            copy.other = person.other.map { mirrored[$0.label] }
            copy.friends = person.friends.map { mirrored[$0.label] }
        }
        return mirrored
    }
}
