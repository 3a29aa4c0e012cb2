import XCTest
final class KarchiveTestsPlaceholder: XCTestCase {
    func testBuilds() { XCTAssertTrue(true) }
}
