import Foundation
import KeyedArchiveGraph
import KeyedArchivePropertyList
import KeyedArchiveTestSupport
import XCTest

/// A long array makes room in the table's lists for all its elements once its first ones are
/// in (``ArchiveObjectTable/reserveForRepeats(since:times:)``): the lists then do not grow for
/// the rest, never reserve more than the limit ahead, and the archive is the same.
final class ListReservationTests: XCTestCase {
    override func tearDown() {
        ArchiveObjectTable.pipelineThresholdOverride.value = nil
        super.tearDown()
    }

    /// One record of a uniform shape: an entry holding a dictionary of a distinct string, a
    /// distinct integer and a reference to a string entry of its own.
    private func addRecord(_ number: Int, to table: ArchiveObjectTable) {
        let uid = table.reserveUID()
        let label = table.leafUID(string: "label \(number)")
        let fields = PropertyListDictionary([
            (PropertyListValue("name"), PropertyListValue("record number \(number)")),
            (PropertyListValue("number"), .integer(PropertyListInteger(Int64(1_000_000 + number)))),
            (PropertyListValue("label"), .uid(label)),
        ])
        table.setObject(.dictionary(fields), at: uid)
    }

    func testTheListsDoNotGrowAfterTheReservation() throws {
        let table = ArchiveObjectTable()
        let start = try XCTUnwrap(table.growthMark)
        for number in 0..<16 { addRecord(number, to: table) }
        let sampled = try XCTUnwrap(table.growthMark)
        // The first records hold what later ones share (the keys), so they are no smaller.
        table.reserveForRepeats(since: start, times: 63)
        let room = try XCTUnwrap(table.layoutRoom)
        XCTAssertGreaterThanOrEqual(room.objects, sampled.objects + 63 * (sampled.objects - start.objects))
        for number in 16..<1_024 { addRecord(number, to: table) }
        let end = try XCTUnwrap(table.growthMark)
        XCTAssertEqual(end.entries - start.entries, 1_024 * 2, "an entry for each record and its label")
        XCTAssertEqual(try XCTUnwrap(table.layoutRoom), room, "the lists grew after the reservation")
        XCTAssertLessThanOrEqual(end.objects, room.objects)
        // `$objects`, added when the archive is written, refers to every entry.
        XCTAssertLessThanOrEqual(end.references + end.entries, room.references)
        XCTAssertLessThanOrEqual(end.entries, room.entries)
    }

    /// A reservation from elements much larger than the rest, or for a huge number of
    /// repeats, stops at the limit ahead of what the lists hold.
    func testAReservationStopsAtTheLimit() throws {
        let table = ArchiveObjectTable()
        let start = try XCTUnwrap(table.growthMark)
        for number in 0..<16 { addRecord(number, to: table) }
        let now = try XCTUnwrap(table.growthMark)
        table.reserveForRepeats(since: start, times: .max)
        let room = try XCTUnwrap(table.layoutRoom)
        let limit = ArchiveGrowthMark.reservationLimit
        XCTAssertGreaterThanOrEqual(room.objects, now.objects + limit)
        XCTAssertLessThanOrEqual(room.objects, now.objects + limit)
        // And a reference for each entry, which `$objects` takes at the end.
        XCTAssertLessThanOrEqual(room.references, now.references + limit + room.entries)
        // The entries are arrays, whose capacity is what the allocator gave (a little more).
        XCTAssertLessThanOrEqual(room.entries, now.entries + limit + limit / 100)
        // No growth since the mark (or a mark from the future) reserves nothing.
        let same = try XCTUnwrap(table.growthMark)
        table.reserveForRepeats(since: same, times: 1_000)
        table.reserveForRepeats(since: ArchiveGrowthMark(entries: .max, objects: .max, references: .max), times: 1_000)
        table.reserveForRepeats(since: start, times: 0)
        table.reserveForRepeats(since: start, times: -5)
        XCTAssertEqual(try XCTUnwrap(table.layoutRoom), room)
    }

    /// With the layout on the second thread there is no mark and nothing is reserved; the
    /// archive is the same bytes as one reserved for.
    func testAPipelinedTableHasNoMarkAndTheSameBytes() throws {
        func archive(reserving: Bool) throws -> Data {
            let table = ArchiveObjectTable()
            let start = table.growthMark
            for number in 0..<16 { addRecord(number, to: table) }
            if reserving, let start { table.reserveForRepeats(since: start, times: 20) }
            for number in 16..<300 { addRecord(number, to: table) }
            return try table.encodedData(top: PropertyListDictionary([(PropertyListValue("root"), .uid(1))]), format: .binary)
        }
        let reserved = try archive(reserving: true)
        let plain = try archive(reserving: false)
        XCTAssertEqual(reserved, plain)
        ArchiveObjectTable.pipelineThresholdOverride.value = 2
        let table = ArchiveObjectTable()
        addRecord(0, to: table)
        XCTAssertNil(table.growthMark)
        XCTAssertNil(table.layoutRoom)
        let pipelined = try archive(reserving: true)
        XCTAssertEqual(pipelined, plain)
        // Foundation reads the records back.
        let objects = try XCTUnwrap(try PropertyListSerialization.propertyList(from: reserved, format: nil) as? [String: Any])["$objects"] as? [Any]
        let names = Set((objects ?? []).compactMap { ($0 as? [String: Any])?["name"] as? String })
        XCTAssertEqual(names, Set((0..<300).map { "record number \($0)" }))
    }
}
