import Foundation
@testable import KeyedArchivePropertyList
import KeyedArchiveTestSupport
import XCTest

/// The writers' own data structures, each checked against a plain Swift model: the uniquing
/// tables (against `Dictionary`) and the growable output buffer (against `[UInt8]`).
final class WriterBuffersTests: XCTestCase {
    func testWordPairTableAgreesWithDictionary() {
        checkWordPairTable(WordPairTable())
    }

    /// Room reserved ahead (as the archiver does before an array's elements are referenced),
    /// below, at and far above the count, keeps every key and value, and the table goes on
    /// finding and adding keys as before.
    func testWordPairTableKeepsItsKeysWhenRoomIsReserved() {
        var random = SeededGenerator(seed: 47)
        var table = WordPairTable()
        var model: [[UInt64]: Int] = [:]
        for step in 0..<40_000 {
            if step % 997 == 0 {
                let reserves = [0, table.count / 2, table.count, table.count + 1, table.count + 20_000, Int.max]
                let countBefore = table.count
                table.reserveCapacity(reserves[step / 997 % reserves.count])
                XCTAssertEqual(table.count, countBefore, "reserve at step \(step)")
            }
            let a = random.next() % 30_000, b = random.next() % 2
            checkStep(table.findOrInsert(a, b, step), &model, (a, b), modelKey: [a, b], step: step)
        }
        XCTAssertEqual(table.count, model.count)
        for (key, value) in model { XCTAssertEqual(table.find(key[0], key[1]), value) }
    }

    /// The archivers' identity table: keys that look like object addresses (16-byte aligned,
    /// many sharing their high bits) and random ones, found and added as a `Dictionary` does,
    /// across growth and room reserved ahead (below, at and far above the count).
    func testAddressTableAgreesWithDictionary() {
        var random = SeededGenerator(seed: 53)
        var table = AddressTable()
        var model: [UInt64: Int] = [:]
        XCTAssertNil(table.find(0x7F00_0000_1000))
        for step in 0..<60_000 {
            if step % 1_009 == 0 {
                let reserves = [0, table.count / 2, table.count, table.count + 1, table.count + 30_000, Int.max]
                let countBefore = table.count
                table.reserveCapacity(reserves[step / 1_009 % reserves.count])
                XCTAssertEqual(table.count, countBefore, "reserve at step \(step)")
            }
            let key = step % 3 == 0 ? random.next() : 0x7F00_0000_0000 + (random.next() % 40_000) * 16
            checkStep(table.findOrInsert(key, step), &model, key, modelKey: key, step: step)
            if step % 7 == 0 {
                let probe = 0x7F00_0000_0000 + (random.next() % 40_000) * 16
                XCTAssertEqual(table.find(probe), model[probe], "find \(probe) at step \(step)")
            }
        }
        XCTAssertEqual(table.count, model.count)
        for (key, value) in model { XCTAssertEqual(table.find(key), value) }
    }

    /// A prefetch is a hint: in an empty table, for keys it holds and keys it does not, it
    /// changes no key's value and adds none.
    func testAddressTablePrefetchChangesNothing() {
        var random = SeededGenerator(seed: 59)
        var table = AddressTable()
        table.prefetch(0x7F00_0000_1000)
        XCTAssertEqual(table.count, 0)
        let keys = (0..<5_000).map { _ in 0x7F00_0000_0000 + (random.next() % 1_000_000) * 16 }
        var model: [UInt64: Int] = [:]
        for (step, key) in keys.enumerated() {
            table.prefetch(key)
            checkStep(table.findOrInsert(key, step), &model, key, modelKey: key, step: step)
            table.prefetch(random.next())
        }
        XCTAssertEqual(table.count, model.count)
        for (key, value) in model {
            table.prefetch(key)
            XCTAssertEqual(table.find(key), value)
        }
    }

    func testUniquingWordPairTableAgreesWithDictionary() {
        checkWordPairTable(UniquingWordPairTable())
    }

    /// Past 16,384 keys the keys move from the slots to blocks of entries, and fill several.
    func testUniquingWordPairTableMovesToBlocksPastItsInlineLimit() {
        checkWordPairTable(UniquingWordPairTable(), keysA: 20_000, steps: 150_000)
    }

    /// With no tag bits every occupied slot on a probe's way matches by tag: only the
    /// comparison with the entry it names keeps different keys apart.
    func testUniquingWordPairTableComparesEntriesWhenTagsMatch() {
        checkWordPairTable(UniquingWordPairTable(tagMask: 0, inlineLimit: 100))
    }

    /// New keys wait for their slots (pending, placed 64 at a time): a key found again while
    /// it waits, found by `find` while it waits, keys placed across the table's growth, and
    /// keys whose filter bits are set by others (tag mask 0: every slot's tag matches too).
    func testUniquingWordPairTableFindsKeysWaitingForTheirSlots() {
        for table in [UniquingWordPairTable(tagMask: ~0, inlineLimit: 0), UniquingWordPairTable(tagMask: 0, inlineLimit: 0)] {
            var table = table
            var random = SeededGenerator(seed: 43)
            var values: [UInt64: Int] = [:]
            for step in 0..<40_000 {
                let a = UInt64(step) &* 0x9E37_79B9_7F4A_7C15
                XCTAssertNil(table.find(a, 1), "not added yet at step \(step)")
                XCTAssertNil(table.findOrInsert(a, 1, step), "new at step \(step)")
                values[a] = step
                XCTAssertEqual(table.find(a, 1), step, "found while pending at step \(step)")
                XCTAssertNil(table.find(a, 2), "same first word, other second at step \(step)")
                // A recent key (pending, or just placed) and an old one, found again.
                let recent = UInt64(max(0, step - Int(random.next() % 70))) &* 0x9E37_79B9_7F4A_7C15
                XCTAssertEqual(table.findOrInsert(recent, 1, -1), values[recent], "recent key at step \(step)")
                let old = UInt64(Int(random.next() % UInt64(step + 1))) &* 0x9E37_79B9_7F4A_7C15
                XCTAssertEqual(table.findOrInsert(old, 1, -1), values[old], "old key at step \(step)")
            }
            for (a, value) in values { XCTAssertEqual(table.find(a, 1), value) }
        }
    }

    /// Integers through the direct table (small ones, sparse ones past its coverage that move in
    /// as it grows, and ones past its largest coverage) and other numbers through the hash table,
    /// interleaved, against a dictionary.
    func testNumberTableAgreesWithDictionary() {
        var random = SeededGenerator(seed: 43)
        var table = NumberTable()
        var model: [[UInt64]: Int] = [:]
        let ranges: [UInt64] = [300, 5_000, 200_000, UInt64(NumberTable.maximumCoverage) * 3]
        for step in 0..<120_000 {
            let isInteger = random.next() % 4 != 0
            // Integers are keyed by value alone ([a]); other numbers by value and kind (1...3).
            let a = random.next() % ranges[Int(random.next() % UInt64(ranges.count))]
            let key = isInteger ? [a] : [a, 1 + random.next() % 3]
            let found = isInteger ? table.findOrInsert(integer: a, tag: 0, step) : table.findOrInsert(a, key[1], step)
            checkStep(found, &model, key, modelKey: key, step: step)
        }
        // Identifiers counting up: the coverage grows with them.
        for identifier in UInt64(0)..<300_000 {
            let step = 200_000 + Int(identifier)
            checkStep(table.findOrInsert(integer: identifier, tag: 0, step), &model, [identifier], modelKey: [identifier], step: step)
        }
        for (key, value) in model {
            let found = key.count == 1 ? table.findOrInsert(integer: key[0], tag: 0, -1) : table.findOrInsert(key[0], key[1], -1)
            XCTAssertEqual(found, value, "\(key)")
        }
    }

    /// An integer seen while the direct table is small goes to the hash table; once the
    /// coverage grows past it, it is found in the direct table with its first value.
    func testNumberTableMovesPendingIntegersIntoTheGrownTable() {
        var table = NumberTable()
        XCTAssertNil(table.findOrInsert(integer: 100_000, tag: 0, 7))
        XCTAssertNil(table.findOrInsert(integer: 3, tag: 0, 8))
        XCTAssertEqual(table.findOrInsert(integer: 100_000, tag: 0, 9), 7)
        for value in UInt64(0)..<70_000 where value != 3 { XCTAssertNil(table.findOrInsert(integer: value, tag: 0, 10 + Int(value))) }
        XCTAssertEqual(table.findOrInsert(integer: 100_000, tag: 0, 1), 7)
        XCTAssertEqual(table.findOrInsert(integer: 3, tag: 0, 1), 8)
        XCTAssertEqual(table.findOrInsert(integer: 69_999, tag: 0, 1), 10 + 69_999)
        // The same bits as another kind are another number.
        XCTAssertNil(table.findOrInsert(100_000, 5, 11))
        XCTAssertEqual(table.findOrInsert(100_000, 5, 12), 11)
    }

    /// Values a direct entry cannot hold (past `UInt32.max - 1` objects, or negative) are kept
    /// apart, and the coverage stops growing; every integer keeps its first value.
    func testNumberTableKeepsValuesTooLargeForTheDirectTable() {
        var table = NumberTable()
        let huge = Int(UInt32.max) + 5
        XCTAssertNil(table.findOrInsert(integer: 1, tag: 0, 1))
        XCTAssertNil(table.findOrInsert(integer: 2, tag: 0, huge))
        XCTAssertNil(table.findOrInsert(integer: 5_000, tag: 0, huge + 1))
        XCTAssertNil(table.findOrInsert(integer: 4, tag: 0, 3))
        // A negative value cannot be an entry either (0 marks an empty one).
        XCTAssertNil(table.findOrInsert(integer: 7, tag: 0, -5))
        XCTAssertEqual(table.findOrInsert(integer: 7, tag: 0, 0), -5)
        for _ in 0..<2 {
            XCTAssertEqual(table.findOrInsert(integer: 1, tag: 0, 0), 1)
            XCTAssertEqual(table.findOrInsert(integer: 2, tag: 0, 0), huge)
            XCTAssertEqual(table.findOrInsert(integer: 5_000, tag: 0, 0), huge + 1)
            XCTAssertEqual(table.findOrInsert(integer: 4, tag: 0, 0), 3)
        }
        for value in UInt64(10)..<3_000 { XCTAssertNil(table.findOrInsert(integer: value, tag: 0, Int(value))) }
        XCTAssertEqual(table.findOrInsert(integer: 2_999, tag: 0, 0), 2_999)
        XCTAssertEqual(table.findOrInsert(integer: 5_000, tag: 0, 0), huge + 1)
    }

    private func checkWordPairTable<Table: WordPairMap>(
        _ empty: Table, keysA: UInt64 = 2_000, steps: Int = 50_000, file: StaticString = #filePath, line: UInt = #line
    ) {
        var random = SeededGenerator(seed: 41)
        var table = empty
        var model: [[UInt64]: Int] = [:]
        for step in 0..<steps {
            // Small key ranges make repeats (hits) as common as new keys.
            let a = random.next() % keysA, b = random.next() % 3
            let found = table.findOrInsert(a, b, step)
            if let existing = model[[a, b]] {
                XCTAssertEqual(found, existing, "key (\(a), \(b)) at step \(step)", file: file, line: line)
            } else {
                XCTAssertNil(found, "new key (\(a), \(b)) at step \(step)", file: file, line: line)
                model[[a, b]] = step
            }
        }
        for (key, value) in model { XCTAssertEqual(table.find(key[0], key[1]), value, file: file, line: line) }
        XCTAssertNil(table.find(keysA &+ 3_000, 0), file: file, line: line)
    }

    /// One find-or-insert of `key` (`found`, what the table returned for it), checked against
    /// `model` (keyed by `modelKey`, the key's exact bytes): the value stored for an earlier
    /// equal key, or nil for a new key.
    private func checkStep<Key, ModelKey: Hashable>(
        _ found: Int?, _ model: inout [ModelKey: Int], _ key: Key, modelKey: ModelKey, step: Int,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        if let existing = model[modelKey] {
            XCTAssertEqual(found, existing, "\(key) at step \(step)", file: file, line: line)
        } else {
            XCTAssertNil(found, "new \(key) at step \(step)", file: file, line: line)
            model[modelKey] = step
        }
    }

    /// Emptied (in place while small, anew once in blocks), a table forgets every key and then
    /// takes the same keys again as new ones, with new values, any number of times.
    func testTablesEmptiedForgetEveryKeyAndFillAgain() {
        func check<Table: WordPairMap>(_ table: Table, keys: Int, _ name: String) {
            var table = table
            for round in 0..<3 {
                for key in 0..<keys {
                    let a = UInt64(key) &* 0x9E37_79B9_7F4A_7C15
                    XCTAssertNil(table.find(a, 7), "\(name): key \(key) forgotten, round \(round)")
                    XCTAssertNil(table.findOrInsert(a, 7, key + round), "\(name): key \(key) new, round \(round)")
                }
                for key in 0..<keys {
                    XCTAssertEqual(table.find(UInt64(key) &* 0x9E37_79B9_7F4A_7C15, 7), key + round, "\(name): round \(round)")
                }
                table.removeAll()
            }
        }
        check(WordPairTable(), keys: 5_000, "WordPairTable")
        check(UniquingWordPairTable(), keys: 5_000, "UniquingWordPairTable, small")
        check(UniquingWordPairTable(), keys: 20_000, "UniquingWordPairTable, in blocks")
        check(UniquingWordPairTable(tagMask: 0, inlineLimit: 0), keys: 3_000, "UniquingWordPairTable, blocks from the first key")

        var strings = LiteralStringTable()
        let texts = (0..<3_000).map { "string \($0)" + String(repeating: "·", count: $0 % 20) }
        for round in 0..<3 {
            for (index, text) in texts.enumerated() {
                XCTAssertNil(strings.findOrInsert(text, index + round), "\(text) new in round \(round)")
            }
            for (index, text) in texts.enumerated() {
                XCTAssertEqual(strings.findOrInsert(text, -1), index + round, "\(text) found in round \(round)")
            }
            strings.removeAll()
        }
    }

    func testLiteralStringTableKeysByExactText() {
        var random = SeededGenerator(seed: 42)
        var table = LiteralStringTable()
        var model: [[UInt8]: Int] = [:]
        // Lengths around the 15-byte boundary of the packed form, long shared prefixes, non-ASCII
        // text, the empty string, and NFC/NFD spellings that Swift's == would call equal.
        let pieces = ["a", "é", "e\u{301}", "\u{1F600}", "key", "0123456789abcdef", String(repeating: "x", count: 40)]
        for step in 0..<20_000 {
            var text = ""
            for _ in 0..<Int(random.next() % 4) { text += pieces[Int(random.next() % UInt64(pieces.count))] }
            checkStep(table.findOrInsert(PropertyListString(text), step), &model, text, modelKey: Array(text.utf8), step: step)
        }
        XCTAssertNotEqual(table.findOrInsert("é", -1), table.findOrInsert("e\u{301}", -1), "canonically equal spellings stay apart")
    }

    func testLiteralDataTableKeysByExactBytes() throws {
        var random = SeededGenerator(seed: 44)
        var table = LiteralDataTable()
        var model: [Data: Int] = [:]
        // Lengths around the 15-byte packed form and the 8-byte hash steps, data that differ
        // only in their last byte, and slices of larger data (not starting at index 0).
        let backing = Data((0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37) })
        for step in 0..<20_000 {
            let length = Int(random.next() % 48)
            var data: Data
            if random.next() % 2 == 0 {
                let start = Int(random.next() % 100)
                data = backing[start..<(start + length)]
            } else {
                data = Data(repeating: UInt8(random.next() % 3), count: length)
                if length > 0 { data[data.startIndex + length - 1] = UInt8(random.next() % 2) }
            }
            checkStep(table.findOrInsert(data, step), &model, data, modelKey: data, step: step)
        }
        // Long keys are hashed by their ends: keys alike at both ends and of one length, apart
        // only in the middle, all collide and must still be told apart.
        var middles = LiteralDataTable()
        for round in 0..<2 {
            for value in 0..<300 {
                var data = Data(repeating: 0xAB, count: 1_000)
                data[500] = UInt8(value % 256)
                data[501] = UInt8(value / 256)
                let found = middles.findOrInsert(data, value)
                if round == 0 { XCTAssertNil(found, "middle \(value) is new") } else { XCTAssertEqual(found, value, "middle \(value) again") }
            }
        }
        // The binary writer stores equal data once, wherever they come from.
        let shared = Data(repeating: 7, count: 100)
        let list: PropertyListValue = .array([.data(shared), .data(Data(shared)), .data(backing[10..<110]), .data(Data(backing[10..<110]))])
        let encoded = try PropertyList.encode(list, format: .binary)
        let objectCount = try encoded.withUnsafeBytes { try BinaryPropertyListTrailer(validating: $0, limits: .default).objectCount }
        XCTAssertEqual(objectCount, 3, "the array and two distinct data")
        XCTAssertEqual(try PropertyList.decode(encoded), list)
    }

    func testGrowableBytesMatchesArray() {
        var random = SeededGenerator(seed: 43)
        let buffer = GrowableBytes(capacity: 1)
        var model: [UInt8] = []
        for _ in 0..<5_000 {
            switch random.next() % 4 {
            case 0:
                let byte = UInt8(truncatingIfNeeded: random.next())
                buffer.append(byte)
                model.append(byte)
            case 1:
                let chunk = (0..<Int(random.next() % 300)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                buffer.append(contentsOf: chunk)
                model.append(contentsOf: chunk)
            case 2:
                let count = Int(random.next() % 20)
                buffer.append(repeating: 9, count: count)
                model.append(contentsOf: repeatElement(9, count: count))
            default:
                buffer.append(contentsOf: "<key>".utf8)
                model.append(contentsOf: "<key>".utf8)
            }
        }
        XCTAssertFalse(buffer.failed)
        XCTAssertEqual(buffer.count, model.count)
        XCTAssertEqual(buffer.takeData(), Data(model))
        XCTAssertEqual(buffer.count, 0, "taking the data empties the buffer")
        XCTAssertEqual(buffer.takeData(), Data())
    }

    func testGrowableBytesSmallCopiesChunksAndHugeGuesses() {
        // Every piece length around the word-copy paths (4-7 and 8-16 bytes), back to back.
        let buffer = GrowableBytes(capacity: 16)
        var model: [UInt8] = []
        for length in 0...40 {
            let piece = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ length) }
            piece.withUnsafeBytes { buffer.append($0) }
            model += piece
        }
        buffer.append(uninitialized: 5) { target in for index in 0..<5 { target[index] = UInt8(index) } }
        model += [0, 1, 2, 3, 4]
        XCTAssertEqual(buffer.withBytes { Array($0) }, model)
        buffer.removeAll()
        XCTAssertEqual(buffer.count, 0)
        buffer.append(contentsOf: [7, 8])
        XCTAssertEqual(buffer.takeData(), Data([7, 8]))
        // A capacity guess that cannot be reserved falls back to growing as needed.
        let huge = GrowableBytes(capacity: Int.max / 2)
        XCTAssertFalse(huge.failed)
        huge.append(contentsOf: Array(repeating: 1, count: 10_000))
        XCTAssertFalse(huge.failed)
        XCTAssertEqual(huge.count, 10_000)
    }

    /// The writer's object and reference lists, against `Array`: appends one at a time and in
    /// runs (growing in place with `realloc`, to several megabytes),
    /// changes, and copies that must not see each other's changes. The elements are strings
    /// (reference counted), so a growth that lost or duplicated one would show, and the test
    /// process's leak-free exit under the address sanitizer (`Fuzz/`) covers their release.
    func testLargeListMatchesArray() {
        var random = SeededGenerator(seed: 47)
        var list = LargeList<String>()
        // An empty array appended to a list with no buffer yet (an empty array's storage has an
        // address: the debug build trapped on the list's missing one).
        list.append(contentsOf: [String]())
        XCTAssertTrue(list.isEmpty)
        var model: [String] = []
        var snapshots: [(LargeList<String>, [String])] = []
        for step in 0..<120_000 {
            // A few copies, each changed afterwards (copying the list on the next change).
            if step % 10_000 == 5_000 { snapshots.append((list, model)) }
            switch random.next() % 16 {
            case 0:
                let run = (0..<Int(random.next() % 40)).map { "run \(step) \($0) " + String(repeating: "x", count: $0) }
                list.append(contentsOf: run)
                model.append(contentsOf: run)
            case 1 where !model.isEmpty:
                let index = Int(random.next() % UInt64(model.count))
                list[index] = "changed \(step)"
                model[index] = "changed \(step)"
            default:
                let element = step % 3 == 0 ? "a long string, stored out of line, number \(step)" : "\(step)"
                list.append(element)
                model.append(element)
            }
        }
        list.append(contentsOf: repeatElement("repeated", count: 1_000))
        model.append(contentsOf: repeatElement("repeated", count: 1_000))
        XCTAssertGreaterThan(model.count * MemoryLayout<String>.stride, 2 << 20, "grew to megabytes")
        XCTAssertEqual(Array(list), model)
        XCTAssertEqual(list.withUnsafeBufferPointer { Array($0) }, model)
        XCTAssertEqual(snapshots.count, 12)
        for (copy, expected) in snapshots { XCTAssertEqual(Array(copy), expected, "a copy keeps what it had when it was made") }
        var reserved = LargeList<Int>()
        reserved.reserveCapacity(1_000_000)
        XCTAssertTrue(reserved.isEmpty)
        reserved.append(contentsOf: 0..<1_000_000)
        XCTAssertEqual(reserved.count, 1_000_000)
        XCTAssertEqual(reserved[999_999], 999_999)
        XCTAssertEqual(reserved.reduce(0, &+), 999_999 * 1_000_000 / 2)
    }

    /// `append(_:converting:)` (the binary writer's 4-byte references) agrees with an array,
    /// grows the list, and leaves a copy made before it alone.
    func testLargeListAppendsConvertedElements() {
        var list = LargeList<Int32>()
        var model: [Int32] = []
        var copies: [(LargeList<Int32>, [Int32])] = []
        for run in 0..<3_000 {
            let source = (0..<(run % 37)).map { run % 2 == 0 ? run &* 1_000 &+ $0 : ~(run &* 1_000 &+ $0) }
            if run % 500 == 250 { copies.append((list, model)) }
            source.withUnsafeBufferPointer { list.append($0) { Int32(truncatingIfNeeded: $0) } }
            model.append(contentsOf: source.map { Int32(truncatingIfNeeded: $0) })
        }
        [Int]().withUnsafeBufferPointer { list.append($0) { Int32(truncatingIfNeeded: $0) } }
        XCTAssertGreaterThan(model.count, 50_000)
        XCTAssertEqual(Array(list), model)
        XCTAssertTrue(model.contains { $0 < 0 }, "negative references (implicit UID objects) survive")
        XCTAssertEqual(copies.count, 6)
        for (copy, expected) in copies { XCTAssertEqual(Array(copy), expected, "a copy keeps what it had when it was made") }
    }

    /// The binary writer's object descriptions stay 24 bytes apart (a container's kind byte
    /// after its two integers; first, it padded the payload to 24 bytes and the stride to 32).
    func testBinaryWriterObjectsStay24BytesApart() {
        XCTAssertLessThanOrEqual(MemoryLayout<BinaryPropertyListObjects.Object>.stride, 24)
    }

    /// Past ``BinaryPropertyListObjects/maximumObjectCount`` objects (its references are 4
    /// bytes) a list throws when it is written instead of writing references cut short. The
    /// implicit UID objects take no memory, so the limit is reached without allocating it.
    func testBinaryWriterThrowsPastItsObjectLimit() throws {
        var list = BinaryPropertyListObjects()
        let members = (0..<3).map { BinaryPropertyListObjects.implicitUIDReference($0) }
        _ = list.addContainer(kind: 0xA0, references: members)
        list.implicitUIDCount = BinaryPropertyListObjects.maximumObjectCount
        XCTAssertThrowsError(try list.serializedData()) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .lengthLimitExceeded, "\(error)")
            XCTAssertTrue("\(error)".contains("\(BinaryPropertyListObjects.maximumObjectCount) objects"), "the object limit, not memory: \(error)")
        }
        // The same list with a count within the limit is written, and reads back.
        list.implicitUIDCount = 3
        let data = try list.serializedData()
        XCTAssertEqual(try BinaryPropertyListReader.read(data), .array([.uid(0), .uid(1), .uid(2)]))
    }

    /// A large buffer is advised for large pages on Linux (the kernel marks its mapping `hg`
    /// in `/proc/self/smaps`), and only its own whole large pages are.
    func testHugePagesAdviseOnlyInsideLargeBuffers() throws {
        #if os(Linux)
        let smaps = "/proc/self/smaps"
        guard FileManager.default.isReadableFile(atPath: smaps) else { throw XCTSkip("no \(smaps)") }
        let length = 3 * HugePages.pageLength + 12_345
        guard let buffer = HugePages.allocate(length) else { return XCTFail("no memory") }
        defer { free(buffer) }
        XCTAssertEqual(UInt(bitPattern: buffer) % UInt(HugePages.pageLength), 0, "starts on a large-page boundary")
        let advised = try advisedRanges(smaps)
        let start = UInt(bitPattern: buffer), end = start + UInt(length)
        XCTAssertTrue(advised.contains { $0.contains(start) }, "the buffer's first page is advised: \(String(start, radix: 16)) in \(advised.map { String($0.lowerBound, radix: 16) + "-" + String($0.upperBound, radix: 16) })")
        let tail = start + 3 * UInt(HugePages.pageLength)
        XCTAssertFalse(advised.contains { $0.contains(tail) || $0.contains(end - 1) }, "the part past the last whole large page is not")
        // Small buffers are left alone.
        let small = HugePages.allocate(4096)
        defer { free(small) }
        let smallStart = UInt(bitPattern: small)
        XCTAssertFalse(try advisedRanges(smaps).contains { $0.contains(smallStart) })
        #else
        throw XCTSkip("large-page advice is Linux only")
        #endif
    }

    /// A table probed at random (the writers' uniquing slots), 8 MiB or more, gets its whole
    /// large pages advised before it is written, and holds exactly what was asked.
    func testHugePagesArrayIsAdvisedAndFilled() throws {
        XCTAssertEqual(HugePages.array(repeating: UInt64(1), count: 0), [])
        XCTAssertEqual(HugePages.array(repeating: UInt64(1), count: -5), [])
        #if os(Linux)
        let smaps = "/proc/self/smaps"
        guard FileManager.default.isReadableFile(atPath: smaps) else { throw XCTSkip("no \(smaps)") }
        // Advice stays on memory that malloc hands out again, so an address already advised
        // before these allocations proves nothing either way: the "left alone" checks are made
        // only for addresses that were not.
        let before = try advisedRanges(smaps)
        #endif
        let small = HugePages.array(repeating: Int32(-2), count: 1000)
        XCTAssertEqual(small, [Int32](repeating: -2, count: 1000))
        let count = HugePages.tableMinimumLength / 8 + HugePages.pageLength / 4 + 3
        let table = HugePages.array(repeating: UInt64(0xDEAD_BEEF), count: count)
        XCTAssertEqual(table.count, count)
        XCTAssertTrue(table.allSatisfy { $0 == 0xDEAD_BEEF })
        // Under the threshold, even with whole large pages inside.
        let midCount = (HugePages.tableMinimumLength - HugePages.pageLength) / 8
        let mid = HugePages.array(repeating: UInt64(3), count: midCount)
        XCTAssertEqual(mid.count, midCount)
        XCTAssertTrue(mid.allSatisfy { $0 == 3 })
        #if os(Linux)
        let advised = try advisedRanges(smaps)
        func wasFresh(_ address: UInt) -> Bool { !before.contains { $0.contains(address) } }
        let mask = UInt(HugePages.pageLength - 1)
        let start = UInt(bitPattern: table.withUnsafeBufferPointer { $0.baseAddress }), end = start + UInt(count * 8)
        let firstWhole = (start + mask) & ~mask
        XCTAssertTrue(advised.contains { $0.contains(firstWhole) && $0.contains(firstWhole + 4 * UInt(HugePages.pageLength)) }, "the table's whole large pages are advised")
        if end & mask != 0, wasFresh(end - 1) {
            XCTAssertFalse(advised.contains { $0.contains(end - 1) }, "nothing past its last whole large page is")
        }
        let smallStart = UInt(bitPattern: small.withUnsafeBufferPointer { $0.baseAddress })
        if wasFresh(smallStart) { XCTAssertFalse(advised.contains { $0.contains(smallStart) }, "a small table is left alone") }
        let midWhole = (UInt(bitPattern: mid.withUnsafeBufferPointer { $0.baseAddress }) + mask) & ~mask
        if wasFresh(midWhole) { XCTAssertFalse(advised.contains { $0.contains(midWhole) }, "a table under the threshold is left alone") }
        #endif
    }

    /// The address ranges of the mappings advised for large pages (`VmFlags` with `hg`).
    private func advisedRanges(_ smaps: String) throws -> [Range<UInt>] {
        var ranges: [Range<UInt>] = []
        var current: Range<UInt>?
        // Read to the end: /proc files report a size of 0, which a whole-file read may trust.
        guard let handle = FileHandle(forReadingAtPath: smaps) else { throw XCTSkip("cannot open \(smaps)") }
        defer { try? handle.close() }
        let text = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        XCTAssertTrue(text.contains("VmFlags"), "read \(smaps)")
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if let first = fields.first, first.contains("-"), !first.hasSuffix(":") {
                let bounds = first.split(separator: "-").compactMap { UInt($0, radix: 16) }
                current = bounds.count == 2 ? bounds[0]..<bounds[1] : nil
            } else if line.hasPrefix("VmFlags:"), fields.contains("hg"), let range = current {
                ranges.append(range)
            }
        }
        return ranges
    }

    func testBinarySerializerWritesExactlyTheComputedSize() throws {
        // Every marker width the size pass must predict: counts below and at 15, 1/2/4-byte
        // counts, UTF-16 strings (surrogate pairs), all integer widths, both real widths, UIDs.
        let long = String(repeating: "é\u{1F600}", count: 200)
        let value: PropertyListValue = .array([
            PropertyListValue(String(repeating: "a", count: 14)), PropertyListValue(String(repeating: "a", count: 15)),
            PropertyListValue(String(repeating: "b", count: 70_000)), PropertyListValue(long),
            .integer(PropertyListInteger(Int64(-1))), .integer(PropertyListInteger(UInt64.max)),
            .integer(PropertyListInteger(Int64(300))), .integer(PropertyListInteger(Int64(70_000))),
            .real(PropertyListReal(Float(1.5))), .real(PropertyListReal(2.5)), .uid(7), .uid(300), .uid(70_000),
            .data(Data(count: 16)), .data(Data(count: 300)), .date(Date(timeIntervalSinceReferenceDate: 0)),
            .bool(true), .dictionary(PropertyListDictionary(stringKeys: (0..<20).map { ("k\($0)", PropertyListValue($0)) })),
        ])
        let data = try BinaryPropertyListWriter.writeData(value)
        XCTAssertEqual(try BinaryPropertyListReader.read(data), value)
        // Foundation reads the same bytes (it would refuse a trailer that disagreed with the size).
        XCTAssertNoThrow(try PropertyListSerialization.propertyList(from: data, options: [], format: nil))
    }
}

/// The two word-pair tables' common calls, for one model test of both.
private protocol WordPairMap {
    func find(_ a: UInt64, _ b: UInt64) -> Int?
    mutating func findOrInsert(_ a: UInt64, _ b: UInt64, _ value: Int) -> Int?
    mutating func removeAll()
}

extension WordPairTable: WordPairMap {}
extension UniquingWordPairTable: WordPairMap {}
