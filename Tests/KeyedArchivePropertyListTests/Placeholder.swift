import XCTest
final class KeyedArchivePropertyListTestsPlaceholder: XCTestCase {
    func testBuilds() { XCTAssertTrue(true) }
}
