import Foundation
import XCTest
@testable import KeyedArchivePropertyList

/// The lock-free `Int?` that test overrides and once-per-process answers are read through.
final class AtomicOptionalIntTests: XCTestCase {
    func testValuesAndNilRoundTrip() {
        let word = AtomicOptionalInt()
        XCTAssertNil(word.value)
        for value in [0, 1, -1, 2, Int.max, Int.min + 1, 16_384] {
            word.value = value
            XCTAssertEqual(word.value, value)
        }
        word.value = nil
        XCTAssertNil(word.value)
        XCTAssertEqual(AtomicOptionalInt(7).value, 7)
    }
}
