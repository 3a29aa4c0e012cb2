import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The XML reader on hand-written documents: accepted forms checked against Foundation's reader
/// (CoreFoundation's XML parser), refusals and error locations checked directly.
final class XMLReaderTests: XCTestCase {
    private func document(_ body: String) -> [UInt8] {
        Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n<plist version=\"1.0\">\n\(body)\n</plist>\n".utf8)
    }

    private func read(_ bytes: [UInt8], limits: DecodingLimits = .default) throws -> PropertyListValue {
        try XMLPropertyListReader.read(Data(bytes), limits: limits)
    }

    private func assertRejects(_ bytes: [UInt8], _ code: PropertyListError.Code, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try read(bytes), file: file, line: line) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, code, "\(error)", file: file, line: line)
        }
    }

    /// Forms CF accepts read to the values Foundation reads.
    func testAcceptedFormsMatchFoundation() throws {
        let bodies = [
            "<integer>0x1F</integer>", "<integer>-0x10</integer>", "<integer> 12</integer>", "<integer>+5</integer>",
            "<integer>- 5</integer>", "<integer>000</integer>", "<integer>-0</integer>", "<integer>18446744073709551615</integer>",
            "<integer>-9223372036854775808</integer>", "<integer>0xFFFFFFFFFFFFFFFF</integer>",
            "<real>-0.0</real>", "<real> 1.5</real>", "<real>.5</real>", "<real>5.</real>", "<real>1E5</real>", "<real>+1.5</real>",
            "<real>INF</real>", "<real>Infinity</real>", "<real>-infinity</real>", "<real>+inf</real>", "<real>NaN</real>",
            "<real>1e400</real>", "<real>1e-400</real>", "<real>&#49;</real>", "<real><![CDATA[2.5]]></real>", "<real>0.10000000000000001</real>",
            "<date>2011-11-28T09:21:30Z</date>", "<date>0000-01-01T00:00:00Z</date>", "<date>9999-12-31T23:59:59Z</date>",
            "<date>1600-02-29T23:59:59Z</date>",
            "<data>AQID</data>", "<data>\n\tAQ\n ID\r\n</data>", "<data></data>", "<data>AQ==</data>", "<data>AQI=</data>",
            "<string>a &lt; b &gt; c &amp; &quot;d&quot; &apos;e&apos;</string>", "<string>&#x1F600;&#233;&#0;&#8;</string>",
            "<string><![CDATA[<not> &markup;]]>tail</string>", "<string>line\r\nbreaks\rkept</string>", "<string/>", "<string></string>",
            "<string>\u{FEFF}kept? no</string>", "<true/>", "<false/>", "<true></true>", "<array/>", "<dict/>", "<array></array>",
            "<dict>\n<!-- c --><key>a</key><?pi x?><string>1</string>\n</dict>", "<dict><key>CF$UID</key><integer>5</integer></dict>",
            "<dict><key>k</key><string>1</string><key>k</key><string>2</string></dict>",
            "<dict><key/><string>empty key</string></dict>",
        ]
        for body in bodies {
            let bytes = document(body)
            let ours = try read(bytes)
            let theirs = try XCTUnwrap(XMLTestFoundation.value(try XMLTestFoundation.read(bytes)), body)
            XCTAssertEqual(XMLTestFoundation.opaqueUIDs(XMLTestFoundation.avoidingLeadingBOMForComparison(ours)), theirs, body)
        }
    }

    /// Years outside 0...9999 are refused, as the binary reader refuses them (CF's XML reader
    /// would take any 32-bit year), so every date read can be written in every format.
    func testDatesOutsideYearsZeroToNineThousandNineHundredNinetyNineAreRefused() throws {
        for body in ["<date>-002-04-10T12:26:40Z</date>", "<date>12345-01-01T00:00:00Z</date>", "<date>-0001-12-31T23:59:59Z</date>"] {
            XCTAssertThrowsError(try read(document(body)), body) { error in
                XCTAssertNotNil(error as? PropertyListError, body)
            }
        }
    }

    func testUIDsAndLookalikes() throws {
        XCTAssertEqual(try read(document("<dict><key>CF$UID</key><integer>4294967295</integer></dict>")), .uid(UInt32.max))
        // Out of UID range, with a second key or a non-integer: stays a dictionary (CF would truncate).
        for body in [
            "<dict><key>CF$UID</key><integer>4294967296</integer></dict>", "<dict><key>CF$UID</key><integer>-1</integer></dict>",
            "<dict><key>CF$UID</key><real>1</real></dict>", "<dict><key>CF$UID</key><integer>1</integer><key>x</key><true/></dict>",
        ] {
            XCTAssertNotNil(try read(document(body)).dictionaryValue, body)
        }
    }

    /// A bare value without `<plist>`, as CF reads it, and strings keep no storage hint.
    func testBareTopLevelValueAndHints() throws {
        XCTAssertEqual(try read(Array("<string>x</string>".utf8)), "x")
        XCTAssertEqual(try read(Array("  <!-- c -->\n<array><integer>1</integer></array>\n".utf8)), [1])
        guard case .string(let string) = try read(document("<string>abc</string>")) else { return XCTFail("not a string") }
        XCTAssertNil(string.storage)
        guard case .integer(let integer) = try read(document("<integer>1</integer>")) else { return XCTFail("not an integer") }
        XCTAssertNil(integer.storedWidth)
    }

    /// Where we deliberately differ from CF (see Docs/PropertyListFormat.md): comments inside
    /// text, `<data/>`, unpadded base64, out-of-range dates, content after the root, entity
    /// declarations.
    func testDocumentedDifferencesFromCF() throws {
        XCTAssertEqual(try read(document("<string>a<!-- c -->b</string>")), "ab")
        XCTAssertEqual(try read(document("<data/>")), .data(Data()))
        XCTAssertEqual(try read(document("<data>AQI</data>")), .data(Data([1, 2])))
        for date in ["2011-13-28T09:21:30Z", "2011-02-30T09:21:30Z", "2011-11-28T25:21:30Z", "2011-11-28T09:21:60Z", "2011-11-28", "2011-11-28T09:21:30.5Z", " 2011-11-28T09:21:30Z"] {
            assertRejects(document("<date>\(date)</date>"), .invalidValue)
        }
        assertRejects(document("<string>x</string>") + Array("junk".utf8), .syntax)
        assertRejects(Array("<plist><true/></plist><plist/>".utf8), .syntax)
    }

    func testMalformedValuesAreRejected() {
        for body in [
            "<integer>12abc</integer>", "<integer>12 </integer>", "<integer>0x</integer>", "<integer>00x1</integer>", "<integer></integer>",
            "<integer>18446744073709551616</integer>", "<integer>-9223372036854775809</integer>", "<integer>&#49;</integer>", "<integer/>",
            "<real>1.5 </real>", "<real>0x10</real>", "<real>1e</real>", "<real>-nan</real>", "<real>1,5</real>", "<real></real>", "<real/>",
            "<data>A!==</data>", "<data>A</data>", "<data>AQ==AQ==</data>", "<date/>", "<foo/>",
        ] {
            assertRejects(document(body), .invalidValue)
        }
        for body in ["<true>x</true>", "<string>&bogus;</string>", "<string>&amp</string>", "<string>&#xD800;</string>", "<string>&#x110000;</string>"] {
            XCTAssertThrowsError(try read(document(body)), body)
        }
    }

    /// Structural errors say what, where (byte offset and line) and at which key path.
    func testStructuralErrorsHaveLocations() throws {
        let cases: [(String, PropertyListError.Code, String)] = [
            ("<dict><key>a</key></dict>", .invalidValue, "a"),
            ("<dict><string>v</string></dict>", .invalidValue, ""),
            ("<dict><key>a</key><array><true/><string>x</dict></array></dict>", .syntax, "a[1]"),
            ("<dict><key>a</key><array>\n<integer>1</integer>\n<integer>x</integer></array></dict>", .invalidValue, "a[1]"),
            ("<array>text<true/></array>", .syntax, "[0]"),
            ("<array><key>k</key></array>", .invalidValue, "[0]"),
            ("<true/><false/>", .invalidValue, ""),
            ("<array><true/>", .syntax, "[1]"),
        ]
        for (body, code, path) in cases {
            XCTAssertThrowsError(try read(document(body)), body) { error in
                guard let error = error as? PropertyListError else { return XCTFail("\(body): \(error)") }
                XCTAssertEqual(error.code, code, "\(body): \(error)")
                XCTAssertEqual(error.keyPath ?? "", path, "\(body): \(error)")
                XCTAssertNotNil(error.byteOffset)
                XCTAssertGreaterThanOrEqual(error.line ?? 0, 4, "\(body): \(error)")
            }
        }
        XCTAssertThrowsError(try read(Array("<plist><array><true/>".utf8))) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .truncated)
        }
        // The line and offset point at the bad integer.
        let bytes = document("<array>\n<integer>1</integer>\n<integer>x</integer></array>")
        XCTAssertThrowsError(try read(bytes)) { error in
            let error = error as? PropertyListError
            XCTAssertEqual(error?.line, 6)
            let offset = error?.byteOffset ?? 0
            XCTAssertEqual(String(decoding: bytes[offset...].prefix(1), as: UTF8.self), "x")
        }
    }

    /// Entity expansion ("billion laughs") and external entities are refused before anything is
    /// expanded or fetched; undeclared entities are errors.
    func testEntityAttacksAreRefused() {
        let laughs = """
            <?xml version="1.0"?>
            <!DOCTYPE plist [
              <!ENTITY lol "lol">
              <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
              <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
            ]>
            <plist version="1.0"><string>&lol2;</string></plist>
            """
        assertRejects(Array(laughs.utf8), .forbiddenDeclaration)
        let external = """
            <?xml version="1.0"?>
            <!DOCTYPE plist [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
            <plist version="1.0"><string>&xxe;</string></plist>
            """
        assertRejects(Array(external.utf8), .forbiddenDeclaration)
        assertRejects(document("<string>&xxe;</string>"), .syntax)
        assertRejects(document("<array><!ENTITY x \"y\"></array>"), .forbiddenDeclaration)
        // A DOCTYPE naming an external DTD is only skipped: nothing is fetched.
        XCTAssertEqual(try read(Array("<!DOCTYPE plist SYSTEM \"file:///nonexistent\"><plist><true/></plist>".utf8)), true)
    }

    /// 100,000 nested arrays throw the depth error without touching the call stack; with the
    /// limit raised, deep documents parse iteratively.
    func testDeepNesting() throws {
        let depth = 100_000
        let deep = Array(String(repeating: "<array>", count: depth).utf8) + Array(String(repeating: "</array>", count: depth).utf8)
        assertRejects(deep, .depthLimitExceeded)
        let limit = DecodingLimits(maximumDepth: 512)
        let ok = Array(String(repeating: "<array>", count: 512).utf8) + Array(String(repeating: "</array>", count: 512).utf8)
        XCTAssertNoThrow(try read(ok, limits: limit))
        XCTAssertThrowsError(try read(Array("<array>".utf8) + ok + Array("</array>".utf8), limits: limit))
        let fiveThousand = Array(String(repeating: "<array>", count: 5_000).utf8) + Array(String(repeating: "</array>", count: 5_000).utf8)
        var value = try read(fiveThousand, limits: DecodingLimits(maximumDepth: 10_000))
        var levels = 0
        while case .array(let elements) = value, let first = elements.first {
            value = first
            levels += 1
        }
        XCTAssertEqual(levels, 4_999)
    }

    /// Any mix of white space between elements (runs of tabs or spaces longer and shorter than
    /// eight, CR LF, runs broken by another space character) reads to the same value, and white
    /// space inside a string is kept.
    func testWhiteSpaceBetweenElements() throws {
        var generator = SeededGenerator(seed: 0x7AB5)
        func space() -> String {
            var text = ""
            for _ in 0..<Int.random(in: 0...3, using: &generator) {
                let newline = ["\n", "\r\n", "\r", ""][Int.random(in: 0...3, using: &generator)]
                let run = String(repeating: ["\t", " "][Int.random(in: 0...1, using: &generator)], count: Int.random(in: 0...40, using: &generator))
                let tail = ["", "\t", " ", " \t", "\n"][Int.random(in: 0...4, using: &generator)]
                text += newline + run + tail
            }
            return text
        }
        func element(_ depth: Int) -> (String, PropertyListValue) {
            switch depth > 6 ? 0 : Int.random(in: 0...3, using: &generator) {
            case 0:
                let number = Int.random(in: -1000...1000, using: &generator)
                return ("<integer>\(number)</integer>", .integer(PropertyListInteger(number)))
            case 1:
                let text = "a\n\t\t\t\t\t\t\t\t\tb \(Int.random(in: 0...9, using: &generator))"
                return ("<string>\(text)</string>", PropertyListValue(text))
            case 2:
                var xml = "<array>", members: [PropertyListValue] = []
                for _ in 0..<Int.random(in: 0...4, using: &generator) {
                    let (text, value) = element(depth + 1)
                    xml += space() + text
                    members.append(value)
                }
                return (xml + space() + "</array>", .array(members))
            default:
                var xml = "<dict>", dictionary = PropertyListDictionary()
                for index in 0..<Int.random(in: 0...4, using: &generator) {
                    let (text, value) = element(depth + 1)
                    xml += space() + "<key>k\(index)</key>" + space() + text
                    dictionary.entries.append((PropertyListValue("k\(index)"), value))
                }
                return (xml + space() + "</dict>", .dictionary(dictionary))
            }
        }
        for round in 0..<300 {
            let (body, value) = element(0)
            XCTAssertEqual(try read(document(space() + body + space())), value, "round \(round): \(body)")
        }
    }

    /// A `>` inside a quoted DOCTYPE literal or an attribute value: the XML rules (ours before,
    /// plistlib's expat) skip it, CoreFoundation ends the markup there, and the two read
    /// different values from one file. Refused, with Foundation shown to read it otherwise.
    func testMarkupCoreFoundationEndsEarlierIsRefused() throws {
        let cases: [(String, Any)] = [
            ("<!DOCTYPE plist SYSTEM \"><dict><key>admin</key><true/></dict><!--\">\n<plist version=\"1.0\"><dict><key>admin</key><false/></dict></plist>",
             ["admin": true]),
            ("<plist version=\"1.0\"><string x=\">EVIL\">GOOD</string></plist>", "EVIL\">GOOD"),
            ("<plist version=\"1.0\"><dict><key Q='>'>test</key><string>libplist</string></dict></plist>", ["'>test": "libplist"]),
            // `<?>`: CF ends the instruction at once, we looked for `?>` after `<?` (the second read).
            ("<plist version=\"1.0\"><dict><key>admin</key><false/><?><key>admin</key><true/><?x?></dict></plist>", ["admin": true]),
        ]
        for (text, foundationReads) in cases {
            let bytes = Array(text.utf8)
            XCTAssertThrowsError(try read(bytes), text) { error in
                XCTAssertEqual((error as? PropertyListError)?.code, .syntax, "\(error)")
            }
            let theirs = try XMLTestFoundation.read(bytes)
            if let dictionary = foundationReads as? [String: Any] {
                XCTAssertEqual(theirs as? NSDictionary, NSDictionary(dictionary: dictionary), "Foundation's reading of \(text)")
            } else {
                XCTAssertEqual(theirs as? String, foundationReads as? String, "Foundation's reading of \(text)")
            }
        }
        XCTAssertThrowsError(try read(document("<array><?><string>EVIL</string><?x?><string>GOOD</string></array>")))
        // Quotes without `>`, and instructions with a target, are read as before.
        XCTAssertEqual(try read(document("<array><?x?><string>GOOD</string><?y z?></array>")), ["GOOD"])
        XCTAssertEqual(try read(Array("<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" 'x'><plist><string a='1' b=\"2\">v</string></plist>".utf8)), "v")
    }

    /// The string limit held for plain text but not after an entity, a CDATA section or a
    /// comment: from then on only the decoded part was counted, not the bytes after it.
    func testStringLimitCountsTextAfterAnEntityOrSection() throws {
        let limits = DecodingLimits(maximumStringLength: 10)
        let tail = String(repeating: "a", count: 30)
        for prefix in ["&amp;", "<![CDATA[x]]>", "<!-- c -->", "&#65;"] {
            XCTAssertThrowsError(try read(document("<string>\(prefix)\(tail)</string>"), limits: limits), prefix) { error in
                XCTAssertEqual((error as? PropertyListError)?.code, .lengthLimitExceeded, "\(error)")
            }
            XCTAssertThrowsError(try read(document("<string>\(tail)\(prefix)</string>"), limits: limits), prefix)
            // At the limit exactly, accepted.
            let fits = try read(document("<string>&amp;aaaaaaaaa</string>"), limits: limits)
            XCTAssertEqual(fits, "&aaaaaaaaa")
        }
        XCTAssertThrowsError(try read(document("<string>&amp;aaaaaaaaaa</string>"), limits: limits))
    }

    func testObjectAndLengthLimits() {
        let many = document("<array>" + String(repeating: "<true/>", count: 100) + "</array>")
        XCTAssertThrowsError(try read(many, limits: DecodingLimits(maximumObjectCount: 50))) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .objectLimitExceeded)
        }
        XCTAssertNoThrow(try read(many, limits: DecodingLimits(maximumObjectCount: 101)))
        XCTAssertThrowsError(try read(document("<string>" + String(repeating: "x", count: 100) + "</string>"), limits: DecodingLimits(maximumStringLength: 10)))
        XCTAssertThrowsError(try read(document("<data>" + String(repeating: "AAAA", count: 100) + "</data>"), limits: DecodingLimits(maximumDataLength: 10)))
    }

    /// UTF-16 and UTF-32 in both byte orders, with and without a byte-order mark, ISO-8859-1 by
    /// declaration; other declared encodings are refused.
    func testEncodings() throws {
        let text = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><plist version=\"1.0\"><dict><key>k</key><string>é😀</string></dict></plist>"
        let expected: PropertyListValue = ["k": "é😀"]
        var utf16BE: [UInt8] = [], utf16LE: [UInt8] = [], utf32BE: [UInt8] = [], utf32LE: [UInt8] = []
        for unit in text.utf16 {
            utf16BE += [UInt8(unit >> 8), UInt8(unit & 0xFF)]
            utf16LE += [UInt8(unit & 0xFF), UInt8(unit >> 8)]
        }
        for scalar in text.unicodeScalars {
            let value = scalar.value
            let big = [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
            utf32BE += big
            utf32LE += big.reversed()
        }
        for (name, bytes) in [
            ("UTF-16BE", utf16BE), ("UTF-16LE", utf16LE), ("UTF-16BE BOM", [0xFE, 0xFF] + utf16BE), ("UTF-16LE BOM", [0xFF, 0xFE] + utf16LE),
            ("UTF-32BE", utf32BE), ("UTF-32LE", utf32LE), ("UTF-32BE BOM", [0, 0, 0xFE, 0xFF] + utf32BE), ("UTF-32LE BOM", [0xFF, 0xFE, 0, 0] + utf32LE),
            ("UTF-8 BOM", [0xEF, 0xBB, 0xBF] + Array(text.replacingOccurrences(of: "UTF-16", with: "UTF-8").utf8)),
        ] {
            XCTAssertEqual(try read(bytes), expected, name)
        }
        let latin1 = Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><plist><string>caf".utf8) + [0xE9] + Array("</string></plist>".utf8)
        XCTAssertEqual(try read(latin1), "café")
        assertRejects(Array("<?xml version=\"1.0\" encoding=\"foobar\"?><plist><true/></plist>".utf8), .syntax)
        // 8-bit text that declares a wide encoding: refused (Foundation refuses it too), with a
        // message that says why rather than calling UTF-16 unsupported.
        for declared in ["UTF-16", "utf-32le"] {
            let bytes = Array("<?xml version=\"1.0\" encoding=\"\(declared)\"?><plist><true/></plist>".utf8)
            XCTAssertThrowsError(try read(bytes)) { error in
                XCTAssertEqual((error as? PropertyListError)?.code, .syntax)
                XCTAssertTrue("\(error)".contains("but is 8-bit text"), "\(error)")
            }
            XCTAssertThrowsError(try PropertyListSerialization.propertyList(from: Data(bytes), format: nil), declared)
        }
        assertRejects(Array("<plist><string>".utf8) + [0xC3, 0x28] + Array("</string></plist>".utf8), .invalidString)
        assertRejects([0xFF, 0xFE, 0x3C, 0x00, 0x00], .truncated)
    }

    /// The format is detected as XML and `PropertyList.decode` reads it.
    func testDecodeThroughPropertyList() throws {
        let bytes = document("<dict><key>a</key><integer>1</integer></dict>")
        let decoded = try PropertyList.decodeWithFormat(Data(bytes))
        XCTAssertEqual(decoded.format, .xml)
        XCTAssertEqual(decoded.value, ["a": 1])
        XCTAssertEqual(try PropertyList.encode(decoded.value, format: .xml), Data(try XMLTestFoundation.xml(try XMLTestFoundation.read(bytes))))
    }
}
