import KeyedArchiveTestSupport
import XCTest

/// `PropertyList.decode` picks the reader from the first bytes.
final class FormatDetectionTests: XCTestCase {
    func testEveryEncodingOfXMLIsDetectedWithOrWithoutAByteOrderMark() throws {
        let value: PropertyListValue = ["k": ["é", 1]]
        let text = String(decoding: try PropertyList.encode(value, format: .xml), as: UTF8.self)
            .replacingOccurrences(of: "encoding=\"UTF-8\"", with: "")
        let scalars = Array(text.unicodeScalars)
        func utf32(bigEndian: Bool) -> [UInt8] {
            scalars.flatMap { scalar -> [UInt8] in
                let bytes = withUnsafeBytes(of: scalar.value.bigEndian) { Array($0) }
                return bigEndian ? bytes : bytes.reversed()
            }
        }
        func utf16(bigEndian: Bool) -> [UInt8] {
            text.utf16.flatMap { unit -> [UInt8] in bigEndian ? [UInt8(unit >> 8), UInt8(unit & 0xFF)] : [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        }
        let inputs: [(String, [UInt8])] = [
            ("UTF-32BE", utf32(bigEndian: true)), ("UTF-32LE", utf32(bigEndian: false)),
            ("UTF-16BE", utf16(bigEndian: true)), ("UTF-16LE", utf16(bigEndian: false)),
            ("UTF-32BE+BOM", [0, 0, 0xFE, 0xFF] + utf32(bigEndian: true)), ("UTF-16LE+BOM", [0xFF, 0xFE] + utf16(bigEndian: false)),
        ]
        for (name, bytes) in inputs {
            XCTAssertEqual(PropertyList.detectFormat(bytes), .xml, name)
            XCTAssertEqual(try PropertyList.decode(Data(bytes)), value, name)
        }
    }

    func testBinaryLookalikesAreJudgedAsBinary() {
        XCTAssertEqual(PropertyList.detectFormat(Array("bplistl".utf8)), .binary)
        XCTAssertThrowsError(try PropertyList.decode(Data("bplist".utf8)))
        XCTAssertEqual(PropertyList.detectFormat(Array("{ a = b; }".utf8)), .openStep)
        XCTAssertEqual(PropertyList.detectFormat(Array("<0fbd>".utf8)), .openStep)
        XCTAssertNil(PropertyList.detectFormat([UInt8]()))
    }

    /// Bytes in contiguous memory take a shortcut for the binary magic; other collections do
    /// not. Both judge alike, a slice of `Data` that starts past its first byte included.
    func testTheBinaryShortcutJudgesAsTheGeneralPath() {
        for text in ["bplist00", "bplistl", "bplist", "bplis", "bplisT00", "xbplist00", " bplist00", "<plist/>"] {
            let bytes = Array(text.utf8)
            let mapped = bytes.lazy.map { $0 }
            XCTAssertNil(mapped.withContiguousStorageIfAvailable { _ in true }, "the general path's input")
            let general = PropertyList.detectFormat(mapped)
            XCTAssertEqual(PropertyList.detectFormat(bytes), general, text)
            XCTAssertEqual(PropertyList.detectFormat(Data(bytes)), general, text)
            XCTAssertEqual(PropertyList.detectFormat(Data([0x20] + bytes).dropFirst()), general, text)
            XCTAssertEqual(general == .binary, text.hasPrefix("bplist"), text)
        }
    }
}
