import XCTest
@testable import KeyedArchiveCodable

/// The coders' stacks live in memory of their own cache lines (``CacheLineMemory``), taken
/// from `malloc` and aligned by hand: every block starts on a line, holds what was put in it
/// through its growth, and is freed through the address `malloc` gave.
final class CacheLineMemoryTests: XCTestCase {
    func testBlocksStartOnALineAndKeepTheirValuesWhenMoved() {
        let capacities = [1, 2, 7, 8, 9, 63, 64, 65, 1000]
        var blocks: [UnsafeMutablePointer<UInt64>] = []
        for capacity in capacities {
            let block = CacheLineMemory.allocate(UInt64.self, capacity: capacity)
            XCTAssertEqual(UInt(bitPattern: block) % UInt(CacheLineMemory.lineSize), 0, "capacity \(capacity)")
            for index in 0..<capacity { (block + index).initialize(to: UInt64(capacity) &* 1_000 &+ UInt64(index)) }
            let grown = CacheLineMemory.moving(block, count: capacity, toCapacity: capacity * 3)
            XCTAssertEqual(UInt(bitPattern: grown) % UInt(CacheLineMemory.lineSize), 0, "capacity \(capacity), grown")
            for index in 0..<capacity { XCTAssertEqual(grown[index], UInt64(capacity) &* 1_000 &+ UInt64(index)) }
            // The whole grown block is usable: filled to its last value.
            for index in capacity..<(capacity * 3) { (grown + index).initialize(to: UInt64(capacity) &* 1_000 &+ UInt64(index)) }
            blocks.append(grown)
        }
        // Every block still holds all its values once all are filled: none overlaps another,
        // nor the words kept below them.
        for (block, capacity) in zip(blocks, capacities) {
            for index in 0..<(capacity * 3) { XCTAssertEqual(block[index], UInt64(capacity) &* 1_000 &+ UInt64(index), "capacity \(capacity)") }
        }
        for block in blocks { CacheLineMemory.deallocate(block) }
        // Moving from no memory yet allocates.
        let fresh: UnsafeMutablePointer<Bool> = CacheLineMemory.moving(nil, count: 0, toCapacity: 64)
        XCTAssertEqual(UInt(bitPattern: fresh) % UInt(CacheLineMemory.lineSize), 0)
        CacheLineMemory.deallocate(fresh)
    }
}
