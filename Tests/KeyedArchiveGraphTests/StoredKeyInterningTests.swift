@_spi(KeyedArchiveInternals) import KeyedArchiveGraph
import KeyedArchivePropertyList
import XCTest

/// A table interns each stored key once: equal keys get one slot, different keys their own, also
/// when they share the length and first and last bytes that the search compares first; past
/// the linear search's sixteen keys, a dictionary takes over with the same ids. Both ways of
/// laying out (on this thread and on the second) give the same slots.
final class StoredKeyInterningTests: XCTestCase {
    private static let keys: [PropertyListValue] = [
        "abc", "axc", "abc", "ab", "", "a", "é", "e\u{301}", "x", "aXc", 7, "$class", "abcc", "abc",
    ] + (0..<30).map { PropertyListValue("key \($0 % 20) " + String(repeating: "z", count: $0 % 3)) } + ["axc", ""]

    private func interned(pipelined: Bool) -> [ArchiveSlot] {
        ArchiveObjectTable.pipelineThresholdOverride.value = pipelined ? 1 : .max
        defer { ArchiveObjectTable.pipelineThresholdOverride.value = nil }
        let table = ArchiveObjectTable()
        let slots = Self.keys.map { table.internStoredKey($0) }
        for (slot, key) in zip(slots, Self.keys) {
            XCTAssertEqual(table.value(of: slot), key)
        }
        return slots
    }

    func testEqualKeysShareASlotAndOthersDoNot() {
        let slots = interned(pipelined: false)
        for i in Self.keys.indices {
            for j in Self.keys.indices {
                XCTAssertEqual(slots[i] == slots[j], Self.keys[i] == Self.keys[j], "\(Self.keys[i]) and \(Self.keys[j])")
            }
        }
        // Ids are given in order of first use.
        var distinct: [PropertyListValue] = []
        for key in Self.keys where !distinct.contains(key) { distinct.append(key) }
        XCTAssertGreaterThan(distinct.count, 16)
        XCTAssertEqual(Set(slots.map(\.bits)).count, distinct.count)
        XCTAssertEqual(interned(pipelined: true), slots)
    }
}
