import XCTest
final class KeyedArchivePreferencesTestsPlaceholder: XCTestCase {
    func testBuilds() { XCTAssertTrue(true) }
}
