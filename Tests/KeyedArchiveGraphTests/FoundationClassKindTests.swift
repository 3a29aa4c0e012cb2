import KeyedArchiveGraph
import XCTest

/// How a class description maps to a built-in Foundation kind: the first mapped name along the
/// chain, then the hints, stopping at the names that must not map (`FoundationClassNames.kind`).
final class FoundationClassKindTests: XCTestCase {
    /// The shortcut that skips hashing must never skip a name the tables hold.
    func testEveryMappedOrStoppingNamePassesTheShortcut() {
        for name in FoundationClassNames.kinds.keys {
            XCTAssertTrue(FoundationClassNames.mayBeMapped(name), name)
        }
        for name in FoundationClassNames.stopNames {
            XCTAssertTrue(FoundationClassNames.mayBeMapped(name), name)
        }
        for name in ["NSObject", "ArchivingData", "", "N", "nsarray", "XNSArray", "__NSArrayM"] {
            XCTAssertFalse(FoundationClassNames.mayBeMapped(name), name)
        }
    }

    func testKindsFollowTheChainThenTheHints() {
        func kind(_ chain: [String], hints: [String] = []) -> KeyedArchiveClass.Kind? {
            FoundationClassNames.kind(of: ArchivedClassDescription(name: chain[0], chain: chain, hints: hints))
        }
        XCTAssertEqual(kind(["__NSArrayM", "NSMutableArray", "NSArray", "NSObject"]), .array)
        XCTAssertEqual(kind(["__NSCFString", "NSMutableString", "NSString", "NSObject"]), .string)
        XCTAssertEqual(kind(["NSMutableDictionary", "NSDictionary", "NSObject"]), .dictionary)
        XCTAssertNil(kind(["ArchivingData", "NSObject"]))
        XCTAssertNil(kind(["NSObject"]))
        // A stop name ends the walk, even with a mapped name after it.
        XCTAssertNil(kind(["NSCountedSet", "NSMutableSet", "NSSet", "NSObject"]))
        XCTAssertNil(kind(["NSDecimalNumber", "NSNumber", "NSObject"]))
        // Hints come after the chain, and count only when the chain maps nothing.
        XCTAssertEqual(kind(["Model", "NSObject"], hints: ["NSDictionary"]), .dictionary)
        XCTAssertEqual(kind(["NSArray", "NSObject"], hints: ["NSDictionary"]), .array)
        XCTAssertNil(kind(["Model"], hints: ["NSCountedSet", "NSSet"]))
        XCTAssertEqual(kind(["Model"], hints: ["Other", "NSSet"]), .set)
    }
}
