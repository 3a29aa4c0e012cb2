import XCTest
@testable import KeyedArchiveCodable

/// The coders' stacks live in memory of their own cache lines (``CacheLineMemory``), taken
/// from `malloc` and aligned by hand: every block starts on a line, holds what was put in it
/// through its growth, and is freed through the address `malloc` gave.
final class CacheLineMemoryTests: XCTestCase {
    func testBlocksStartOnALineAndKeepTheirValuesWhenMoved() {
        var blocks: [UnsafeMutablePointer<UInt64>] = []
        for capacity in [1, 2, 7, 8, 9, 63, 64, 65, 1000] {
            let block = CacheLineMemory.allocate(UInt64.self, capacity: capacity)
            XCTAssertEqual(UInt(bitPattern: block) % UInt(CacheLineMemory.lineSize), 0, "capacity \(capacity)")
            for index in 0..<capacity { (block + index).initialize(to: UInt64(capacity) &* 1_000 &+ UInt64(index)) }
            let grown = CacheLineMemory.moving(block, count: capacity, toCapacity: capacity * 3)
            XCTAssertEqual(UInt(bitPattern: grown) % UInt(CacheLineMemory.lineSize), 0, "capacity \(capacity), grown")
            for index in 0..<capacity { XCTAssertEqual(grown[index], UInt64(capacity) &* 1_000 &+ UInt64(index)) }
            // The whole grown block is usable, up to its last value.
            (grown + capacity * 3 - 1).initialize(to: 7)
            XCTAssertEqual(grown[capacity * 3 - 1], 7)
            blocks.append(grown)
        }
        // Distinct blocks do not overlap (each was written whole above and read back).
        let starts = blocks.map { UInt(bitPattern: $0) }
        XCTAssertEqual(Set(starts).count, blocks.count)
        for block in blocks { CacheLineMemory.deallocate(block) }
        // Moving from no memory yet allocates.
        let fresh: UnsafeMutablePointer<Bool> = CacheLineMemory.moving(nil, count: 0, toCapacity: 64)
        XCTAssertEqual(UInt(bitPattern: fresh) % UInt(CacheLineMemory.lineSize), 0)
        CacheLineMemory.deallocate(fresh)
    }
}
