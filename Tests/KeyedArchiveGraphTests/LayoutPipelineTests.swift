@_spi(KeyedArchiveInternals) import KeyedArchiveGraph
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// A table lays its entries out on a second thread once it has many (``ArchiveObjectTable``'s
/// pipeline): the archive must be the same bytes as when it lays them out itself, whatever the
/// table was asked in between, and the thread must be joined on every path.
final class LayoutPipelineTests: XCTestCase {
    override func tearDown() {
        ArchiveObjectTable.pipelineThresholdOverride.value = nil
        super.tearDown()
    }

    /// Random graphs with shared nodes, cycles and conditional links (pinned entries patched at
    /// the end), in both formats, pipelined from their second entry and from their hundredth.
    func testRandomGraphsAreTheSameBytesWithTheLayoutOnASecondThread() throws {
        var pipelinedRuns = 0
        for seed in UInt64(1)...40 {
            var random = SeededGenerator(seed: seed)
            let count = Int.random(in: 1...400, using: &random)
            let nodes = Node.randomGraph(count: count, maximumLinks: 4, weakChance: 0.3, using: &random)
            defer { for node in nodes { node.links = []; node.weak = nil } }
            let format: PropertyListFormat = random.chance(0.5) ? .binary : .xml
            for threshold in [2, 100] {
                let result = try withAndWithoutLayoutPipeline(threshold: threshold) {
                    try KeyedArchiver.archivedData(withRootObject: nodes[0], format: format)
                }
                XCTAssertEqual(result.direct, result.pipelined, "seed \(seed), threshold \(threshold)")
                pipelinedRuns += result.started
            }
        }
        // Every archive has its second entry; most of them a hundredth.
        XCTAssertGreaterThan(pipelinedRuns, 60)
        XCTAssertEqual(layoutPipelineCounts.running, 0)
    }

    /// An array of at least the threshold's number of objects starts the second thread when it
    /// is stored (its identities are reserved then), not at the threshold-th entry: 300 links
    /// to 3 nodes make a handful of entries, never 256, and start it; 200 do not. The bytes
    /// are the same either way.
    func testAnArrayOfManyObjectsStartsTheSecondThreadAtOnce() throws {
        let shared = (0..<3).map { Node(label: $0) }
        for (count, expected) in [(300, 1), (200, 0)] {
            let root = Node(label: -1)
            root.links = (0..<count).map { shared[$0 % 3] }
            let result = try withAndWithoutLayoutPipeline(threshold: 256) {
                try KeyedArchiver.archivedData(withRootObject: root, format: .binary)
            }
            XCTAssertEqual(result.direct, result.pipelined, "\(count) links")
            XCTAssertEqual(result.started, expected, "\(count) links")
        }
        XCTAssertEqual(layoutPipelineCounts.running, 0)
    }

    /// Class descriptions are laid out by a path of their own, here or recorded as a step of
    /// their own for the second thread: chains of one to three names, with and without hints,
    /// sharing names with each other, with the keys and with strings set before them, are the
    /// same bytes both ways.
    func testClassDescriptionsAreTheSameBytesLaidOutEitherWay() throws {
        let result = try withAndWithoutLayoutPipeline(threshold: 2) { () throws -> Data in
            let table = ArchiveObjectTable()
            var members: [PropertyListValue] = []
            for number in 0..<24 {
                members.append(.uid(table.leafUID(PropertyListValue(number % 5 == 0 ? "$classes" : "Kind\(number % 7)"))))
                let chain = Array(["Kind\(number % 7)", "Base\(number % 3)", "NSObject"].suffix(1 + number % 3))
                let hints: [String]? = number % 4 == 1 ? ["Hint\(number % 2)", chain[0]] : nil
                members.append(.uid(table.classUID(chain: chain, hints: hints)))
            }
            let root = table.reserveUID()
            table.setObject(.array(members), at: root)
            return try table.encodedData(
                top: PropertyListDictionary([("root", .uid(root)), ("$classname", .uid(1))]), format: .binary)
        }
        XCTAssertEqual(result.started, 1)
        XCTAssertEqual(result.direct, result.pipelined)
        let objects = try XCTUnwrap(PropertyList.decode(result.direct)["$objects"]?.arrayValue)
        let descriptions = objects.filter { $0["$classname"] != nil }
        XCTAssertGreaterThan(descriptions.count, 10)
        XCTAssertTrue(descriptions.contains { $0["$classhints"] != nil })
        XCTAssertEqual(layoutPipelineCounts.running, 0)
    }

    /// A table asked to reserve identities for more objects than its threshold starts the
    /// second thread at once, before any entry.
    func testReservingManyIdentitiesStartsTheSecondThread() {
        ArchiveObjectTable.pipelineThresholdOverride.value = 1_000
        let before = layoutPipelineCounts.started
        let small = ArchiveObjectTable()
        small.reserveIdentities(900)
        XCTAssertEqual(layoutPipelineCounts.started, before)
        let large = ArchiveObjectTable()
        large.reserveIdentities(1_000)
        XCTAssertEqual(layoutPipelineCounts.started, before + 1)
        // Dropped unwritten: the thread is joined all the same.
        _ = consume large
        XCTAssertEqual(layoutPipelineCounts.running, 0)
        _ = small
    }

    /// Everything a table is asked while its layout is on the other thread: stored keys and
    /// values kept aside (read back at once), copies, leaves, class descriptions, pinned
    /// entries, and the references of an entry (which take the layout back mid-way).
    func testEveryTableCallWhilePipelined() throws {
        func build(readReferences: Bool) throws -> (data: Data, values: [PropertyListValue], references: [[UInt32]]) {
            let table = ArchiveObjectTable()
            var values: [PropertyListValue] = []
            var references: [[UInt32]] = []
            let classUID = table.classUID(chain: ["Thing", "NSObject"])
            let nameKey = table.internStoredKey(PropertyListValue("name"))
            let listKey = table.internStoredKey(PropertyListValue("NS.objects"))
            var uids: [UInt32] = []
            for index in 0..<300 {
                let uid = table.reserveUID()
                uids.append(uid)
                let name = table.leafUID(string: "thing \(index % 37)")
                let aside = table.slot(for: .array([.integer(PropertyListInteger(index)), .string(PropertyListString("x\(index)"))]))
                values.append(table.value(of: aside))
                let key = table.internStoredKey(PropertyListValue("field\(index % 20)"))
                values.append(table.value(of: key))
                let fields = [
                    ArchiveField(key: table.internStoredKey(PropertyListValue("$class")), value: .uid(classUID)),
                    ArchiveField(key: nameKey, value: .uid(name)),
                    ArchiveField(key: key, value: aside),
                    ArchiveField(key: table.internStoredKey(PropertyListValue("count")), value: .integer(Int64(index))),
                ]
                let elements = uids.suffix(3).map { ArchiveSlot.uid($0) }
                table.setObject(fields: fields, array: index % 2 == 0 ? (listKey, elements) : nil, at: uid)
                if index % 50 == 7 {
                    let copy = table.reserveUID()
                    table.setObject(copyOf: uid, at: copy)
                }
                if index % 60 == 11 {
                    let pinned = table.reserveUID()
                    table.pin(pinned)
                    table.setObject(.dictionary(PropertyListDictionary(stringKeys: [("$class", .uid(classUID)), ("late", .uid(uid))])), at: pinned)
                }
                _ = table.leafUID(.real(PropertyListReal(Double(index) / 4)))
                if readReferences && index % 100 == 99 { references.append(table.references(from: uid)) }
            }
            let data = try table.encodedData(top: PropertyListDictionary(stringKeys: [("root", .uid(uids[0]))]))
            return (data, values, references)
        }
        for readReferences in [false, true] {
            let result = try withAndWithoutLayoutPipeline { try build(readReferences: readReferences) }
            XCTAssertEqual(result.started, 1)
            XCTAssertEqual(result.direct.data, result.pipelined.data, "references read: \(readReferences)")
            // Compared whole, reported briefly (the lists are long).
            XCTAssertTrue(result.direct.values == result.pipelined.values, "slot values differ")
            XCTAssertTrue(result.direct.references == result.pipelined.references, "references differ")
            if readReferences { XCTAssertFalse(result.pipelined.references.allSatisfy(\.isEmpty)) }
        }
        XCTAssertEqual(layoutPipelineCounts.running, 0)
    }

    /// A table dropped before it is written (an encoder that failed) joins its second thread.
    func testATableDroppedWhilePipelinedJoinsItsThread() throws {
        ArchiveObjectTable.pipelineThresholdOverride.value = 2
        let before = layoutPipelineCounts.started
        do {
            let table = ArchiveObjectTable()
            for index in 0..<50_000 {
                let uid = table.reserveUID()
                table.setObject(fields: [ArchiveField(key: table.internStoredKey(PropertyListValue("n")), value: .integer(Int64(index)))], at: uid)
            }
            XCTAssertEqual(layoutPipelineCounts.running, 1)
        }
        XCTAssertEqual(layoutPipelineCounts.started, before + 1)
        XCTAssertEqual(layoutPipelineCounts.running, 0)
    }
}
