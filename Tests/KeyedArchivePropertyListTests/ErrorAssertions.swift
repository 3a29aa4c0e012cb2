import KeyedArchive
import XCTest

/// Asserts that two property-list errors agree in every detail a caller sees: code, key path,
/// byte offset, object index and message (for the two-thread paths, which must fail exactly as
/// one thread does).
func XCTAssertSameError(
    _ actual: PropertyListError, _ expected: PropertyListError, _ context: @autoclosure () -> String,
    file: StaticString = #filePath, line: UInt = #line
) {
    XCTAssertEqual(actual.code, expected.code, "\(context())", file: file, line: line)
    XCTAssertEqual(actual.keyPath, expected.keyPath, "\(context())", file: file, line: line)
    XCTAssertEqual(actual.byteOffset, expected.byteOffset, "\(context())", file: file, line: line)
    XCTAssertEqual(actual.objectIndex, expected.objectIndex, "\(context())", file: file, line: line)
    XCTAssertEqual("\(actual)", "\(expected)", "\(context())", file: file, line: line)
}
