import Foundation
import KeyedArchiveTestSupport
import XCTest
@testable import KeyedArchivePropertyList

/// How the binary writer shares equal numbers: everywhere (CoreFoundation's way, for property
/// lists) or only with one added lately (``BinaryPropertyListObjects/NumberSharing/nearby``,
/// the keyed archiver's way). Either way the file reads back to the same value, in our reader
/// and in plistlib.
final class NumberSharingTests: XCTestCase {
    /// The number of stored objects of `value` written with `sharing` (the file is checked to
    /// read back to `value`).
    private func written(_ value: PropertyListValue, _ sharing: BinaryPropertyListObjects.NumberSharing) throws -> Int {
        var objects = BinaryPropertyListObjects()
        objects.numberSharing = sharing
        _ = try objects.add(value)
        XCTAssertEqual(try PropertyList.decode(try objects.serializedData()), value, "read back (\(sharing))")
        return objects.count
    }

    private func integers(_ values: some Sequence<Int>) -> PropertyListValue {
        .array(values.map { .integer(PropertyListInteger(Int64($0))) })
    }

    /// A number right after an equal one is the same object; one equal to a number thousands of
    /// distinct numbers back is stored again (everywhere-sharing stores each once).
    func testNearbyNumbersAreSharedAndFarOnesStoredAgain() throws {
        // Pairs: each number twice in a row, 6,000 distinct 4-byte integers.
        let pairs = integers((0..<6_000).flatMap { [100_000 + $0, 100_000 + $0] })
        XCTAssertEqual(try written(pairs, .nearby), 1 + 6_000)
        XCTAssertEqual(try written(pairs, .everywhere), 1 + 6_000)

        // The same 20,000 distinct numbers twice over: the second time, each is 19,999 other
        // numbers back, past the cache (4,096 slots).
        let twice = integers(Array(0..<20_000).map { 70_000 + $0 * 3 } + Array(0..<20_000).map { 70_000 + $0 * 3 })
        let nearby = try written(twice, .nearby)
        XCTAssertGreaterThan(nearby, 1 + 20_000 + 19_000, "far repeats are stored again")
        XCTAssertLessThanOrEqual(nearby, 1 + 40_000)
        XCTAssertEqual(try written(twice, .everywhere), 1 + 20_000)
    }

    /// A small set of numbers that recur among many new ones (ages, flags, codes among unique
    /// identifiers) stays shared: each is stored about once, not once per use.
    func testRecurringNumbersStayShared() throws {
        var members: [PropertyListValue] = []
        for record in 0..<30_000 {
            members.append(.integer(PropertyListInteger(Int64(1_000_000 + record))))  // unique
            members.append(.integer(PropertyListInteger(Int64(18 + record % 80))))  // 80 recurring
            members.append(.real(PropertyListReal(Double(record) * 0.37, isSinglePrecision: false)))  // unique
            members.append(.real(PropertyListReal(Double(record % 50) / 10, isSinglePrecision: false)))  // 50 recurring
        }
        let value = PropertyListValue.array(members)
        let everywhere = try written(value, .everywhere)
        let nearby = try written(value, .nearby)
        var distinct = Set<PropertyListValue>()
        for member in members { distinct.insert(member) }
        XCTAssertEqual(everywhere, 1 + distinct.count, "everywhere: one object per distinct number")
        // The 130 recurring numbers are each in the cache when they come back (a bucket holds
        // two; a third key in one pushes the oldest out, and it is stored again).
        XCTAssertLessThan(nearby - everywhere, 2_000, "recurring numbers are shared")
    }

    /// Numbers of different kinds with the same bits never share an object, nor do integers of
    /// the same low bits but different widths: each reads back as what was added.
    func testKindsAreNeverConfused() throws {
        let one = PropertyListValue.array([
            .integer(PropertyListInteger(Int64(1))),
            .real(PropertyListReal(1, isSinglePrecision: false)),
            .real(PropertyListReal(1, isSinglePrecision: true)),
            .date(Date(timeIntervalSinceReferenceDate: 1)),
            .integer(PropertyListInteger(Int64(-1))),
            .integer(PropertyListInteger(UInt64.max)),
            .integer(PropertyListInteger(Int64(1))),
            .real(PropertyListReal(1, isSinglePrecision: true)),
            .date(Date(timeIntervalSinceReferenceDate: 1)),
            .integer(PropertyListInteger(UInt64.max)),
            .bool(true),
        ])
        XCTAssertEqual(try written(one, .nearby), 1 + 7)
        XCTAssertEqual(try written(one, .everywhere), 1 + 7)
    }

    /// When the cache grows (after 128 numbers not found in its first 64 slots), what it held
    /// is still found: the last two numbers added before it grew are shared after.
    func testNumbersAddedBeforeTheCacheGrowsAreFoundAfter() throws {
        let distinct = Array(0..<129).map { 5_000 + $0 * 7 }
        let value = integers(distinct + [distinct[128], distinct[127]])
        XCTAssertEqual(try written(value, .nearby), 1 + 129)
    }

    /// Random trees with nearby sharing: the same bytes on one thread and two, the same value
    /// back in our reader and, for the largest, in plistlib as from the everywhere-shared file;
    /// never fewer objects than everywhere-sharing, whose count is the fewest possible.
    func testRandomListsWithNearbySharingReadBackAlike() throws {
        var generator = SeededGenerator(seed: 0x5_4A1E)
        var plistlibChecked = false
        for size in [1, 2, 17, 100, 1_000, 40_000] {
            for round in 0..<(size < 1_000 ? 6 : 2) {
                let value = TwoThreadWriteTests.randomValue(&generator, size: size)
                let context = "size \(size) round \(round)"
                // Half the rounds refer to implicit UID objects (all of `randomValue`'s UIDs),
                // unless the root is one (it would not be object 0).
                var implicitUIDs = round % 2 == 1
                if case .uid = value { implicitUIDs = false }
                var objects = BinaryPropertyListObjects()
                objects.numberSharing = .nearby
                if implicitUIDs { objects.implicitUIDCount = 70_000 }
                _ = try objects.add(value)
                let one = try objects.serializedData(secondThreadObjectCount: .max)
                let two = try objects.serializedData(secondThreadObjectCount: 2)
                XCTAssertTrue(one == two, "\(context): bytes differ on two threads")
                XCTAssertEqual(try PropertyList.decode(one), value, context)

                var everywhere = BinaryPropertyListObjects()
                if implicitUIDs { everywhere.implicitUIDCount = 70_000 }
                _ = try everywhere.add(value)
                XCTAssertGreaterThanOrEqual(objects.count, everywhere.count, context)
                if size == 40_000, round == 1, Python.executable != nil {
                    let script = "import sys, plistlib, hashlib; v = plistlib.loads(sys.stdin.buffer.read()); "
                        + "print(hashlib.sha256(repr(v).encode()).hexdigest(), len(repr(v)))"
                    XCTAssertEqual(try Python.run(script, input: one), try Python.run(script, input: try everywhere.serializedData()), context)
                    plistlibChecked = true
                }
            }
        }
        if !plistlibChecked { print("SKIP: python3 not found: no plistlib check") }
    }
}
