import Foundation
import KeyedArchive
import KeyedArchiveGraph
import KeyedArchiveTestSupport
import XCTest

/// The Codable encoder's archives are the same bytes whether its table lays entries out itself
/// or on a second thread (see ``ArchiveObjectTable``'s pipeline), and a failed encode joins
/// that thread.
final class LayoutPipelineCodableTests: XCTestCase {
    override func tearDown() {
        ArchiveObjectTable.pipelineThresholdOverride.value = nil
        super.tearDown()
    }

    /// `encode` with the layout made by the table itself, then on a second thread from the
    /// table's second entry on.
    private func assertSameBytes(_ message: String, _ encode: () throws -> Data) throws {
        let result = try withAndWithoutLayoutPipeline(encode)
        XCTAssertGreaterThan(result.started, 0, "\(message): no second thread")
        XCTAssertEqual(result.direct, result.pipelined, message)
    }

    /// Models with every kind of value (dictionaries and sets as NSDictionary / NSSet, data,
    /// dates, URLs, UUIDs, optionals, nested arrays), in both formats.
    func testSeededModelsAreTheSameBytes() throws {
        for seed in UInt64(1)...12 {
            var generator = ModelGenerator(seed: seed)
            let models = (0..<6).map { _ in generator.model(depth: 2) }
            for format in [PropertyListFormat.binary, .xml] {
                try assertSameBytes("seed \(seed), \(format)") {
                    let encoder = KeyedArchiveEncoder()
                    encoder.outputFormat = format
                    return try encoder.encode(models)
                }
            }
        }
        XCTAssertEqual(layoutPipelineCounts.running, 0)
    }

    /// Shared class instances, cycles broken by conditional references resolved before and
    /// after their targets (the encoder reads an entry's references at the end, which takes
    /// the layout back from the second thread).
    func testSharedInstancesAndConditionalsAreTheSameBytes() throws {
        let people = (0..<200).map { Person("person \($0)") }
        // Shared, never cyclic (Codable has no cycles): friends come earlier in the list.
        for (index, person) in people.enumerated() where index > 0 {
            person.friends = [people[(index * 7 + 3) % index], people[(index * 13 + 1) % index]]
        }
        defer { for person in people { person.friends = [] } }
        let pets = (0..<50).map { Pet("pet \($0)") }
        var owners: [Owner] = []
        for index in 0..<100 {
            let pet: Pet? = index % 3 == 0 ? nil : pets[index % pets.count]
            owners.append(Owner(pet: pet, favorite: pets[(index * 3) % pets.count], conditionalFirst: index % 2 == 0))
        }
        try assertSameBytes("people") { try KeyedArchiveEncoder().encode(people) }
        try assertSameBytes("owners") { try KeyedArchiveEncoder().encode(owners) }
        XCTAssertEqual(layoutPipelineCounts.running, 0)
    }

    /// An array of at least the threshold's number of class instances starts the second thread
    /// as it begins (its identities are reserved then), not at the threshold-th entry: 300
    /// references to 3 people make a few dozen entries, never 256, and start it; 200 do not.
    /// The bytes are the same either way.
    func testAnArrayOfManyInstancesStartsTheSecondThreadAtOnce() throws {
        let shared = (0..<3).map { Person("shared \($0)") }
        let many = (0..<300).map { shared[$0 % 3] }
        let started = try withAndWithoutLayoutPipeline(threshold: 256) { try KeyedArchiveEncoder().encode(many) }
        XCTAssertEqual(started.pipelined, started.direct)
        XCTAssertEqual(started.started, 1)
        let notStarted = try withAndWithoutLayoutPipeline(threshold: 256) { try KeyedArchiveEncoder().encode(Array(many.prefix(200))) }
        XCTAssertEqual(notStarted.pipelined, notStarted.direct)
        XCTAssertEqual(notStarted.started, 0)
        XCTAssertEqual(layoutPipelineCounts.running, 0)
    }

    /// A long array makes room for its elements from its first sixteen (see
    /// ``ArchiveObjectTable/reserveForRepeats(since:times:)``); with the layout on the second
    /// thread nothing is reserved. The bytes are the same either way, whether the first
    /// elements are larger or smaller than the rest, and Foundation reads them back.
    func testLongArraysAreTheSameBytesWhateverTheirFirstElements() throws {
        func element(_ index: Int, large: Bool) -> [String: [Int]] {
            large ? ["values \(index)": Array(0..<(40 + index)), "more": [index, -index]] : ["v": [index]]
        }
        let shapes: [(String, [[String: [Int]]])] = [
            ("large first", (0..<300).map { element($0, large: $0 < 16) }),
            ("small first", (0..<300).map { element($0, large: $0 >= 16) }),
            ("uniform, 256", (0..<256).map { element($0, large: true) }),
            ("uniform, 255", (0..<255).map { element($0, large: true) }),
        ]
        for (name, array) in shapes {
            let result = try withAndWithoutLayoutPipeline { try KeyedArchiveEncoder().encode(array) }
            XCTAssertEqual(result.direct, result.pipelined, name)
            XCTAssertEqual(try KeyedArchiveDecoder().decode([[String: [Int]]].self, from: result.direct), array, name)
            let unarchiver = try NSKeyedUnarchiver(forReadingFrom: result.direct)
            unarchiver.requiresSecureCoding = false
            XCTAssertEqual(unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? [[String: [Int]]], array, name)
        }
        XCTAssertEqual(layoutPipelineCounts.running, 0)
    }

    /// An encode that fails half way, with the layout on the second thread: the error comes
    /// out and the thread is joined.
    func testAFailedEncodeJoinsTheSecondThread() {
        struct Failing: Encodable {
            var index: Int
            func encode(to encoder: any Encoder) throws {
                var container = encoder.unkeyedContainer()
                try container.encode("record \(index)")
                if index == 3_000 { throw EncodingError.invalidValue(index, .init(codingPath: [], debugDescription: "stop")) }
            }
        }
        ArchiveObjectTable.pipelineThresholdOverride.value = 2
        let started = layoutPipelineCounts.started
        XCTAssertThrowsError(try KeyedArchiveEncoder().encode((0..<6_000).map(Failing.init)))
        ArchiveObjectTable.pipelineThresholdOverride.value = nil
        XCTAssertEqual(layoutPipelineCounts.started, started + 1)
        XCTAssertEqual(layoutPipelineCounts.running, 0)
    }
}
