import XCTest
final class KeyedArchiveGraphTestsPlaceholder: XCTestCase {
    func testBuilds() { XCTAssertTrue(true) }
}
