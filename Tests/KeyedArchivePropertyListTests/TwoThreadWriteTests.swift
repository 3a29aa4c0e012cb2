import Foundation
import KeyedArchiveTestSupport
import XCTest
@testable import KeyedArchivePropertyList

/// The binary writer writes large lists on two threads, each into its own part of the buffer.
/// Whatever the list, the bytes must be exactly those of the one-thread write, and its internal
/// errors the same; and so must the write that takes the objects out of the list as it goes
/// (``BinaryPropertyListObjects/takeSerializedData(secondThreadObjectCount:)``, what the writers
/// use), which leaves the list with no objects.
final class TwoThreadWriteTests: XCTestCase {
    /// The bytes (or the error's text) of `objects` written on one thread and on two, the
    /// second forced whatever the list's size.
    private func write(_ objects: BinaryPropertyListObjects) -> (one: Result<Data, Error>, two: Result<Data, Error>) {
        (Result { try objects.serializedData(secondThreadObjectCount: .max) }, Result { try objects.serializedData(secondThreadObjectCount: 2) })
    }

    /// The same by the taking write, each on a copy of `objects` (which must not change it),
    /// with the copies' object counts after it.
    private func takingWrite(_ objects: BinaryPropertyListObjects) -> [(result: Result<Data, Error>, countAfter: Int)] {
        [Int.max, 2].map { threshold in
            var copy = objects
            let result = Result { try copy.takeSerializedData(secondThreadObjectCount: threshold) }
            return (result, copy.objects.count)
        }
    }

    @discardableResult
    private func assertTwoThreadsMatchOne(
        _ objects: BinaryPropertyListObjects, _ context: @autoclosure () -> String, file: StaticString = #filePath, line: UInt = #line
    ) -> Data? {
        let storedCount = objects.objects.count
        // The taking writes first, on copies: the reading writes after them must find the list
        // as it was (a taking write that reached the shared storage would show in their bytes).
        let taken = takingWrite(objects)
        XCTAssertEqual(objects.objects.count, storedCount, "\(context()): the taking write changed a copy", file: file, line: line)
        let (one, two) = write(objects)
        for (index, (result, countAfter)) in taken.enumerated() {
            let name = "\(context()), taking write on \(index + 1) thread(s)"
            switch (one, result) {
            case (.success(let a), .success(let b)):
                XCTAssertTrue(a == b, "\(name): bytes differ (\(a.count) and \(b.count) bytes)", file: file, line: line)
                XCTAssertEqual(countAfter, 0, "\(name): objects left", file: file, line: line)
            case (.failure(let a), .failure(let b)):
                XCTAssertEqual("\(b)", "\(a)", name, file: file, line: line)
                // After an error the list keeps its objects (some emptied), to be freed as usual.
                XCTAssertEqual(countAfter, storedCount, "\(name): objects after an error", file: file, line: line)
            default:
                XCTFail("\(name): \(result), one thread \(one)", file: file, line: line)
            }
        }
        switch (one, two) {
        case (.success(let a), .success(let b)):
            XCTAssertTrue(a == b, "\(context()): bytes differ (\(a.count) and \(b.count) bytes)", file: file, line: line)
            return a
        case (.failure(let a), .failure(let b)):
            XCTAssertEqual("\(b)", "\(a)", "\(context())", file: file, line: line)
        default:
            XCTFail("\(context()): one thread \(one), two \(two)", file: file, line: line)
        }
        return nil
    }

    /// A value tree of about `size` leaves: strings of several lengths (ASCII and not, some
    /// repeated), integers of every width, reals, dates, data, booleans, nested containers.
    static func randomValue(_ generator: inout SeededGenerator, size: Int, depth: Int = 0) -> PropertyListValue {
        if size <= 1 || depth > 6 {
            switch generator.next() % 9 {
            case 0: return .string(PropertyListString(String(repeating: "k", count: Int(generator.next() % 40)) + "\(generator.next() % 50)"))
            case 1: return .string(PropertyListString("ü\(generator.next() % 30)" + String(repeating: "€", count: Int(generator.next() % 20))))
            case 2: return .integer(PropertyListInteger(Int64(bitPattern: generator.next()) >> (generator.next() % 64)))
            case 3: return .integer(PropertyListInteger(UInt64.max - generator.next() % 3))
            case 4: return .real(PropertyListReal(Double(generator.next() % 1000) / 8, isSinglePrecision: generator.chance(0.3)))
            case 5: return .date(Date(timeIntervalSinceReferenceDate: Double(generator.next() % 1_000_000)))
            case 6: return .data(Data((0..<Int(generator.next() % 300)).map { UInt8(truncatingIfNeeded: $0 &* 7) }))
            case 7: return .bool(generator.chance(0.5))
            default: return .uid(UInt32(truncatingIfNeeded: generator.next() % 70_000))
            }
        }
        let parts = Int(generator.next() % 20) + 1
        let each = Swift.max(1, size / parts)
        if generator.chance(0.5) {
            return .array((0..<parts).map { _ in Self.randomValue(&generator, size: each, depth: depth + 1) })
        }
        var dictionary = PropertyListDictionary()
        for index in 0..<parts {
            dictionary.entries.append((.string(PropertyListString("key\(index)")), Self.randomValue(&generator, size: each, depth: depth + 1)))
        }
        return .dictionary(dictionary)
    }

    /// Random trees from two objects to about 40,000: parts of a few objects each, and parts
    /// that end inside long strings and data.
    func testRandomListsWriteAlikeOnOneAndTwoThreads() throws {
        var generator = SeededGenerator(seed: 0x7_0007)
        for size in [1, 2, 3, 5, 17, 31, 100, 1_000, 40_000] {
            for round in 0..<(size < 1_000 ? 8 : 2) {
                var objects = BinaryPropertyListObjects()
                let value = Self.randomValue(&generator, size: size)
                _ = try objects.add(value)
                let bytes = try XCTUnwrap(assertTwoThreadsMatchOne(objects, "size \(size) round \(round)"))
                // And they are the file: read back to the same value.
                XCTAssertEqual(try PropertyList.decode(bytes), value, "size \(size) round \(round)")
            }
        }
    }

    /// Every readable binary file of the corpus, flattened and written both ways.
    func testCorpusFilesWriteAlikeOnOneAndTwoThreads() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus)"); return }
        var written = 0
        for entry in BinaryCorpusTests.binaryEntries() {
            guard let value = try? PropertyList.decode(entry.data) else { continue }
            var objects = BinaryPropertyListObjects()
            guard (try? objects.add(value)) != nil else { continue }
            if assertTwoThreadsMatchOne(objects, entry.path) != nil { written += 1 }
        }
        XCTAssertGreaterThan(written, 20)
    }

    /// Implicit UID objects come after the stored ones and belong to the second thread's part;
    /// UIDs of one, two and four bytes, referred to from containers of both parts.
    func testImplicitUIDObjectsWriteAlikeAndReadInPlistlib() throws {
        var objects = BinaryPropertyListObjects()
        objects.implicitUIDCount = 70_000
        let root = objects.appendPlaceholder()
        var members: [Int] = []
        for uid in stride(from: 0, to: 70_000, by: 997) {
            members.append(BinaryPropertyListObjects.implicitUIDReference(uid))
            members.append(try objects.add(.string(PropertyListString("s\(uid)"))))
        }
        objects.setContainer(kind: 0xA0, references: members, at: root)
        let bytes = try XCTUnwrap(assertTwoThreadsMatchOne(objects, "implicit UIDs"))
        guard case .array(let items) = try PropertyList.decode(bytes) else { return XCTFail("not an array") }
        XCTAssertEqual(items.count, members.count)
        XCTAssertEqual(items.first, .uid(0))
        XCTAssertEqual(items.last, .string(PropertyListString("s\(997 * 70)")))
        guard Python.executable != nil else { print("SKIP: python3 not found: no plistlib check"); return }
        // Written with the default threshold: over 70,000 objects, two threads here.
        let defaultBytes = try objects.serializedData()
        XCTAssertEqual(defaultBytes, bytes)
        let summary = try Python.run(
            "import sys, plistlib; v = plistlib.loads(sys.stdin.buffer.read()); "
                + "print(len(v), v[0].data, v[2].data, v[-2].data, v[-1])",
            input: defaultBytes)
        XCTAssertEqual(String(decoding: summary, as: UTF8.self), "\(members.count) 0 997 \(997 * 70) s\(997 * 70)\n")
    }

    /// A container referring to an implicit UID object that does not exist: both ways throw
    /// the same error, whether the container falls in the first part or the second.
    func testAnInternalErrorIsTheSameInEitherPart() throws {
        for position in [0, 50, 99] {
            var objects = BinaryPropertyListObjects()
            objects.implicitUIDCount = 2
            let root = objects.appendPlaceholder()
            var members: [Int] = []
            for index in 0..<100 {
                if index == position {
                    members.append(objects.addContainer(kind: 0xA0, references: [BinaryPropertyListObjects.implicitUIDReference(5)]))
                } else {
                    members.append(try objects.add(.integer(PropertyListInteger(Int64(index) * 1_000))))
                }
            }
            objects.setContainer(kind: 0xA0, references: members, at: root)
            let (one, two) = write(objects)
            XCTAssertThrowsError(try one.get())
            XCTAssertThrowsError(try two.get()) { error in
                XCTAssertTrue("\(error)".contains("refers to UID object 5 of 2"), "\(error)")
            }
            assertTwoThreadsMatchOne(objects, "bad container at \(position)")
        }
    }

    /// The writer knows each part's start from sizes counted as objects are stored, replaced
    /// and copied (``BinaryPropertyListObjects/sizeBlockLength`` to a block): a list whose
    /// placeholders are set, set again (to strings of other lengths, ASCII and UTF-16,
    /// containers, numbers) and copied over, across several blocks, writes the same bytes as
    /// a list given each final object once, on one thread and on two.
    func testObjectsReplacedAcrossSizeBlocksWriteAsIfSetOnce() throws {
        var generator = SeededGenerator(seed: 0x5_12E5)
        let count = 3 * BinaryPropertyListObjects.sizeBlockLength + 123
        func leaf(_ index: Int, _ round: Int) -> PropertyListValue {
            switch (index + round) % 5 {
            case 0: return .string(PropertyListString(String(repeating: "a", count: (index * 7 + round) % 40)))
            case 1: return .string(PropertyListString("ü€" + String(repeating: "x", count: (index + round) % 30)))
            case 2: return .integer(PropertyListInteger(Int64(index) << (round * 9)))
            case 3: return .real(PropertyListReal(Double(index) / 3))
            default: return .data(Data(repeating: UInt8(truncatingIfNeeded: index), count: (index + round) % 20))
            }
        }
        var replaced = BinaryPropertyListObjects()
        var members: [[Int]] = Array(repeating: [], count: count)
        var final: [PropertyListValue?] = Array(repeating: nil, count: count)
        _ = replaced.reserve(count)
        for round in 0..<3 {
            for index in 1..<count where generator.next() % 3 != 0 || round == 2 {
                if index % 11 == 0 {
                    let list = (0..<Int(generator.next() % 20)).map { _ in 1 + Int(generator.next() % UInt64(count - 1)) }
                    replaced.setContainer(kind: index % 2 == 0 ? 0xA0 : 0xD0, references: index % 2 == 0 ? list : list + list, at: index)
                    members[index] = index % 2 == 0 ? list : list + list
                    final[index] = nil
                } else {
                    try replaced.setLeaf(leaf(index, round), at: index)
                    final[index] = leaf(index, round)
                }
            }
        }
        for target in stride(from: 5, to: count, by: 997) {
            replaced.copyObject(from: target - 4, to: target)
            final[target] = final[target - 4]
            members[target] = members[target - 4]
        }
        replaced.setContainer(kind: 0xA0, references: Array(1..<count), at: 0)
        var once = BinaryPropertyListObjects()
        _ = once.reserve(count)
        for index in 1..<count {
            if let value = final[index] {
                try once.setLeaf(value, at: index)
            } else {
                once.setContainer(kind: index % 2 == 0 ? 0xA0 : 0xD0, references: members[index], at: index)
            }
        }
        once.setContainer(kind: 0xA0, references: Array(1..<count), at: 0)
        let expected = try once.serializedData(secondThreadObjectCount: .max)
        let (one, two) = write(replaced)
        XCTAssertTrue(try one.get() == expected, "one thread")
        XCTAssertTrue(try two.get() == expected, "two threads")
    }

    /// The parts are whole runs: the run bounds cover every object once, in order.
    func testRunsCoverTheObjectsInOrder() {
        for count in [1, 2, 15, 16, 17, 33, 1_000] {
            var objects = BinaryPropertyListObjects()
            for index in 0..<count { _ = objects.addContainer(kind: 0xA0, references: index == 0 ? [] : [index - 1]) }
            let blocks = BinaryPropertyListObjects.serializationBlockCount
            let ranges = objects.serializationRuns(blocks: blocks)
            XCTAssertEqual(ranges.count, blocks, "count \(count)")
            XCTAssertEqual(ranges.first?.lowerBound, 0)
            XCTAssertEqual(ranges.last?.upperBound, count)
            for (a, b) in zip(ranges, ranges.dropFirst()) { XCTAssertEqual(a.upperBound, b.lowerBound, "count \(count)") }
            let sizes = ranges.map(\.count)
            XCTAssertLessThanOrEqual((sizes.max() ?? 0) - (sizes.min() ?? 0), 1, "count \(count): \(sizes)")
        }
    }
}
