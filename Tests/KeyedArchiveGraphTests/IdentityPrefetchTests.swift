#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import KeyedArchiveGraph
import XCTest

/// An array of objects has the identity table load its elements' slots ahead of their lookups
/// (``ArchiveObjectTable/prefetchIdentity(ofElement:in:count:)``): a hint that reads the array's
/// words, never one outside it, and changes no UID.
final class IdentityPrefetchTests: XCTestCase {
    private final class Item {}

    /// The words of each array sit against an inaccessible page, after them and then before
    /// them: reading one word past either end stops the test with a fault. Negative indexes
    /// and counts (no caller passes one) read nothing.
    func testPrefetchReadsOnlyTheArraysWords() throws {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        guard let mapping = mmap(nil, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              mapping != MAP_FAILED else { throw XCTSkip("mmap failed") }
        defer { munmap(mapping, 3 * page) }
        XCTAssertEqual(mprotect(mapping, page, PROT_NONE), 0)
        XCTAssertEqual(mprotect(mapping + 2 * page, page, PROT_NONE), 0)
        let data = mapping + page

        let items = (0..<12).map { _ in Item() }
        let table = ArchiveObjectTable()
        var uids: [UInt32] = []
        // Prefetching in an empty table, then in one holding the first half of the items.
        for filled in [0, 6] {
            for item in items[uids.count..<filled] { uids.append(table.uidOrReserve(for: item).uid) }
            for count in [Int.min, -1] + Array(0...items.count) {
                let length = Swift.max(count, 0) * MemoryLayout<UInt>.stride
                for start in [data + page - length, data] {
                    for (index, item) in items.prefix(Swift.max(count, 0)).enumerated() {
                        start.storeBytes(of: UInt(bitPattern: ObjectIdentifier(item)), toByteOffset: index * MemoryLayout<UInt>.stride, as: UInt.self)
                    }
                    for index in [Int.min, -5, -1] + Array(0..<(Swift.max(count, 0) + 6)) + [Int.max] {
                        table.prefetchIdentity(ofElement: index, in: UnsafeRawPointer(start), count: count)
                    }
                }
            }
            for (item, uid) in zip(items, uids) { XCTAssertEqual(table.uid(for: item), uid) }
            for item in items[uids.count...] { XCTAssertNil(table.uid(for: item)) }
        }
    }
}
