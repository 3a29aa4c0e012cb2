import Foundation
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
            ("UTF-32LE+BOM", [0xFF, 0xFE, 0, 0] + utf32(bigEndian: false)), ("UTF-16BE+BOM", [0xFE, 0xFF] + utf16(bigEndian: true)),
        ]
        for (name, bytes) in inputs {
            XCTAssertEqual(PropertyList.detectFormat(bytes), .xml, name)
            XCTAssertEqual(try PropertyList.decode(Data(bytes)), value, name)
        }
    }

    /// A UTF-16 or UTF-32 byte-order mark says how wide the characters are, not the format:
    /// strings files and OpenStep text behind one are read as Foundation reads them (it used to
    /// be taken for XML: "text before the root element"), and XML behind one still is XML.
    func testWideTextBehindAByteOrderMarkIsReadAsFoundationReadsIt() throws {
        func encoded(_ text: String, _ encoding: String) -> [UInt8] {
            switch encoding {
            case "UTF-16LE": return [0xFF, 0xFE] + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
            case "UTF-16BE": return [0xFE, 0xFF] + text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
            case "UTF-32LE": return [0xFF, 0xFE, 0, 0] + text.unicodeScalars.flatMap { withUnsafeBytes(of: $0.value.littleEndian, Array.init) }
            default: return [0, 0, 0xFE, 0xFF] + text.unicodeScalars.flatMap { withUnsafeBytes(of: $0.value.bigEndian, Array.init) }
            }
        }
        let documents: [(String, PropertyListFormat)] = [
            ("\"greeting\" = \"Hello\";\n", .openStep),
            ("/* Localizable.strings */\n\"clé\" = \"valeur 😀\";\n\"k2\" = \"v\\n2\";\n", .openStep),
            ("  { key = value; list = (1, \"two\", <0fbd>); }", .openStep),
            ("<0fbd 12>", .openStep),
            ("\"just a string\"", .openStep),
            ("\n \t", .openStep),
            ("<?xml version=\"1.0\" encoding=\"UTF-16\"?><plist version=\"1.0\"><dict><key>k</key><string>é</string></dict></plist>", .xml),
            (String(repeating: "\n", count: 100) + "<plist><array><string>x</string></array></plist>", .xml),
        ]
        for (text, format) in documents {
            for encoding in ["UTF-16LE", "UTF-16BE", "UTF-32LE", "UTF-32BE"] {
                let bytes = encoded(text, encoding)
                let name = "\(encoding) \(text.debugDescription)"
                XCTAssertEqual(PropertyList.detectFormat(bytes), format, name)
                let foundation = try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil)
                XCTAssertEqual(try PropertyList.decode(Data(bytes)), try FoundationBridge.value(foundation), name)
            }
        }
        // Without a mark, Foundation reads such text as 8-bit and fails on its zero bytes; so do
        // we (only XML is recognised in wide text without a mark, by a `<` next to zero bytes).
        for encoding in ["UTF-16LE", "UTF-16BE", "UTF-32LE", "UTF-32BE"] {
            let unmarked = Data(encoded("\"greeting\" = \"Hello\";\n", encoding).dropFirst(encoding.hasPrefix("UTF-16") ? 2 : 4))
            XCTAssertThrowsError(try PropertyListSerialization.propertyList(from: unmarked, options: [], format: nil), encoding)
            XCTAssertThrowsError(try PropertyList.decode(unmarked), encoding)
        }
        // A mark with nothing after it is no document, as no bytes are none; Foundation
        // refuses all three ("Conversion of string failed"); they read as `{}` before session
        // 65. White space alone is an empty dictionary to both, mark or not.
        for (mark, space): ([UInt8], [UInt8]) in [([0xEF, 0xBB, 0xBF], [0x20]), ([0xFF, 0xFE], [0x20, 0]), ([0xFE, 0xFF], [0, 0x20])] {
            XCTAssertThrowsError(try PropertyListSerialization.propertyList(from: Data(mark), options: [], format: nil), "\(mark)")
            XCTAssertThrowsError(try PropertyList.decode(Data(mark)), "\(mark)") { error in
                XCTAssertEqual((error as? PropertyListError)?.code, .unrecognizedFormat)
            }
            XCTAssertThrowsError(try mark.withUnsafeBytes { try OpenStepPropertyListReader.read($0) }, "\(mark)")
            XCTAssertEqual(try PropertyList.decode(Data(mark + space)), .dictionary([:]), "\(mark + space)")
        }
        XCTAssertEqual(try PropertyList.decode(Data(" \n".utf8)), .dictionary([:]))
        XCTAssertEqual(try PropertyListSerialization.propertyList(from: Data(" \n".utf8), options: [], format: nil) as? NSDictionary, NSDictionary())
    }

    /// Top-level OpenStep data whose first digit is a letter (`<deadbeef>`) was taken for an XML
    /// element and refused, and XML after 63 or more bytes of white space was taken for
    /// OpenStep: Foundation reads both, and so do we, in the same format.
    func testDataThatStartsWithAHexLetterAndXMLAfterLongWhiteSpaceReadAsFoundationReadsThem() throws {
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\"><string>a</string></plist>\n"
        let documents: [(String, [UInt8], PropertyListFormat)] = [
            ("<deadbeef>", Array("<deadbeef>".utf8), .openStep),
            ("<face>", Array("<face>".utf8), .openStep),
            ("  <CAFE babe>", Array("  <CAFE babe>".utf8), .openStep),
            ("<Ab\n\tcD 01>", Array("<Ab\n\tcD 01>".utf8), .openStep),
            ("UTF-8 mark <face>", [0xEF, 0xBB, 0xBF] + Array("<face>".utf8), .openStep),
            ("UTF-16LE mark <ab>", [0xFF, 0xFE] + "<ab>".utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }, .openStep),
            ("UTF-16BE mark <dead beef>", [0xFE, 0xFF] + "<dead beef>".utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }, .openStep),
            ("63 spaces, XML", Array((String(repeating: " ", count: 63) + xml).utf8), .xml),
            ("64 spaces, XML", Array((String(repeating: " ", count: 64) + xml).utf8), .xml),
            ("100 newlines, XML", Array((String(repeating: "\n", count: 100) + xml).utf8), .xml),
            ("UTF-8 mark, 70 spaces, XML", [0xEF, 0xBB, 0xBF] + Array((String(repeating: " ", count: 70) + xml).utf8), .xml),
            ("70 newlines, <plist>", Array((String(repeating: "\n", count: 70) + "<plist><dict><key>k</key><data>AAE=</data></dict></plist>").utf8), .xml),
            ("<data>", Array("<plist><data>AAE=</data></plist>".utf8), .xml),
            ("<dict/>", Array("<dict/>".utf8), .xml),
            ("<date>", Array("<date>2001-01-01T00:00:00Z</date>".utf8), .xml),
            ("<array>", Array("<array><false/></array>".utf8), .xml),
        ]
        for (name, bytes, format) in documents {
            XCTAssertEqual(PropertyList.detectFormat(bytes), format, name)
            var foundationFormat = PropertyListSerialization.PropertyListFormat.binary
            let foundation = try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: &foundationFormat)
            XCTAssertEqual(foundationFormat, format == .xml ? .xml : .openStep, name)
            XCTAssertEqual(try PropertyList.decode(Data(bytes)), try FoundationBridge.value(foundation), name)
        }
        // Hex letters that do not close with `>` before anything else stay XML to the reader
        // (an unknown element), as they are to Foundation's.
        for text in ["<deadbeef/>", "<abc def=\"1\">"] {
            XCTAssertEqual(PropertyList.detectFormat(Array(text.utf8)), .xml, text)
            XCTAssertThrowsError(try PropertyList.decode(Data(text.utf8)), text)
            XCTAssertThrowsError(try PropertyListSerialization.propertyList(from: Data(text.utf8), options: [], format: nil), text)
        }
    }

    /// Wide XML without a byte-order mark was recognised only when `<` was its first character:
    /// after white space it went to the OpenStep reader. The XML reader takes the width from
    /// the zero bytes around the first character, whatever it is, and so does detection now.
    func testUnmarkedWideXMLAfterWhiteSpaceIsXML() throws {
        let text = "\n  <plist version=\"1.0\"><string>hi</string></plist>"
        let utf16LE = text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let inputs: [(String, [UInt8])] = [
            ("UTF-16LE", utf16LE),
            ("UTF-16BE", text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }),
            ("UTF-32LE", text.unicodeScalars.flatMap { withUnsafeBytes(of: $0.value.littleEndian, Array.init) }),
            ("UTF-32BE", text.unicodeScalars.flatMap { withUnsafeBytes(of: $0.value.bigEndian, Array.init) }),
        ]
        for (name, bytes) in inputs {
            XCTAssertEqual(PropertyList.detectFormat(bytes), .xml, name)
            XCTAssertEqual(try PropertyList.decode(Data(bytes)), "hi", name)
        }
        // Foundation reads the UTF-16LE one so too.
        XCTAssertEqual(try PropertyListSerialization.propertyList(from: Data(utf16LE), options: [], format: nil) as? String, "hi")
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
