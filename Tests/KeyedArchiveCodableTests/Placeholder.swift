import XCTest
final class KeyedArchiveCodableTestsPlaceholder: XCTestCase {
    func testBuilds() { XCTAssertTrue(true) }
}
