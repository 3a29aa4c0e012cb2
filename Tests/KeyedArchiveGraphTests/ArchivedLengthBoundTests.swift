import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// `KeyedArchiver.checkArchivedLength(of:format:budget:)`, the bound `karchive archive` checks
/// before archiving: never above a real archive's length, and close enough to it that shared
/// containers stop early.
final class ArchivedLengthBoundTests: XCTestCase {
    /// Arrays nested `depth` deep, each holding the next twice: 2^depth - 1 arrays once
    /// archived, from a value whose storage is shared (a few bytes in memory).
    private static func doubling(_ depth: Int) -> PropertyListValue {
        var value = PropertyListValue.array([])
        for _ in 0..<depth { value = .array([value, value]) }
        return value
    }

    private static var values: [PropertyListValue] {
        var values = (0...9).map(doubling)
        var options = RandomPropertyList.Options()
        options.uid = false
        options.set = true
        options.null = true
        for seed in 0..<150 {
            var generator = RandomPropertyList(seed: UInt64(seed), options: options)
            values.append(seed % 2 == 0 ? generator.rootDictionary() : generator.value())
        }
        values.append(.dictionary(PropertyListDictionary(stringKeys: (0..<300).map { ("k\($0)", .array([.integer(PropertyListInteger($0))])) })))
        values.append(.array((0..<70_000).map { _ in .array([]) }))
        return values
    }

    func testTheBoundIsNeverAboveARealArchive() throws {
        for (index, value) in Self.values.enumerated() {
            for format in [PropertyListFormat.binary, .xml] {
                let archive = try KeyedArchiver.archivedData(withRootObject: value, format: format)
                XCTAssertNoThrow(
                    try KeyedArchiver.checkArchivedLength(of: value, format: format, budget: OutputBudget(archive.count)),
                    "value \(index), \(format): the bound passed the real length \(archive.count)")
            }
        }
    }

    func testTheBoundIsWithinAFactorOfTwoOfAnArchiveOfManyContainers() throws {
        for value in [Self.doubling(12), .array((0..<70_000).map { _ in .array([]) })] {
            for format in [PropertyListFormat.binary, .xml] {
                let archive = try KeyedArchiver.archivedData(withRootObject: value, format: format)
                XCTAssertThrowsError(
                    try KeyedArchiver.checkArchivedLength(of: value, format: format, budget: OutputBudget(archive.count / 2)),
                    "\(format): the bound is under half of \(archive.count)")
            }
        }
    }

    func testSharedContainersStopAtTheBudgetWithoutArchiving() {
        // 2^40 arrays once archived; the check stops after about a million.
        for format in [PropertyListFormat.binary, .xml] {
            XCTAssertThrowsError(try KeyedArchiver.checkArchivedLength(of: Self.doubling(40), format: format, budget: OutputBudget(8 << 20))) { error in
                XCTAssertEqual((error as? PropertyListError)?.code, .lengthLimitExceeded)
            }
        }
    }
}
