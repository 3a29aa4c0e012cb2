import Foundation
import KeyedArchiveTestSupport
import XCTest

@testable import KeyedArchivePropertyList

/// OpenStep text: compared against Apple's CoreFoundation output in the corpus, Foundation's
/// PropertyListSerialization on this machine, and round trips through our writer.
final class OpenStepTests: XCTestCase {
    private func read(_ text: String, limits: DecodingLimits = .default) throws -> PropertyListValue {
        try OpenStepPropertyListReader.read(text, limits: limits)
    }

    // MARK: Against Apple's output (swift-foundation's expected files, made by CF on Darwin)

    /// swift-foundation's input is `('\0', '\00', '\000', '\1', ..., '\777')`; it is not in the
    /// corpus, so it is rebuilt from that comment: every value 0...0o777 in each of its 1-, 2- and
    /// 3-digit spellings, skipping \376, \377, \776 and \777 (unassigned in NeXTSTEP Latin: the
    /// expected file has 580 strings, 4 fewer than the full list, and lacks exactly those).
    func testOctalEscapesMatchCoreFoundation() throws {
        let expected = try corpusStrings("bplist/sfnd-test_oldStylePlist_getSlashedChars_octal_expected.bplist")
        guard let expected else { return }
        var items: [String] = []
        for value in 0...0o777 where ![0o376, 0o377, 0o776, 0o777].contains(value) {
            let digits = String(value, radix: 8)
            for width in digits.count...3 {
                items.append("'\\" + String(repeating: "0", count: width - digits.count) + digits + "'")
            }
        }
        let actual = try read("(" + items.joined(separator: ", ") + ")")
        XCTAssertEqual(items.count, expected.count)
        XCTAssertEqual(actual.arrayValue?.compactMap(\.stringValue), expected)
    }

    /// Input `('\U0', '\U00', '\U000', '\U0000', '\U1', ..., '\UFFFF')`, rebuilt likewise: the
    /// expected file lacks the surrogates and U+FEFF.
    func testUnicodeEscapesMatchCoreFoundation() throws {
        let expected = try corpusStrings("bplist/sfnd-test_oldStylePlist_getSlashedChars_unicode_expected.bplist")
        guard let expected else { return }
        var text = "("
        var count = 0
        for value in 0...0xFFFF where !(0xD800...0xDFFF).contains(value) && value != 0xFEFF {
            let digits = String(value, radix: 16, uppercase: true)
            for width in digits.count...4 {
                text += (count == 0 ? "" : ", ") + "'\\U" + String(repeating: "0", count: width - digits.count) + digits + "'"
                count += 1
            }
        }
        text += ")"
        let actual = try read(text)
        XCTAssertEqual(count, expected.count)
        let strings = actual.arrayValue?.compactMap(\.stringValue) ?? []
        XCTAssertEqual(strings.count, expected.count)
        // Compare by scalars: Swift's String == would merge canonically equivalent spellings.
        let mismatches = zip(strings, expected).enumerated().filter { !$0.element.0.unicodeScalars.elementsEqual($0.element.1.unicodeScalars) }
        XCTAssertTrue(mismatches.isEmpty, "first mismatch at \(mismatches.first.map { "\($0.offset)" } ?? "")")
    }

    /// Reads a corpus binary plist of strings with Foundation (Apple-made files, safe input).
    private func corpusStrings(_ path: String) throws -> [String]? {
        guard let root = Corpus.root else {
            print("OpenStepTests: corpus not found (../shared/corpus); skipping the CoreFoundation comparison")
            return nil
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: root + "/" + path))
        let value = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
        return try XCTUnwrap(value as? [String])
    }

    // MARK: Grammar

    func testEscapesLiteralsAndQuotes() throws {
        // The list of swift-foundation's oldStylePlist_getSlashedChars_literals test.
        let value = try read(#"('\a', '\b', '\f', '\n', '\r', '\t', '\v', '\"', '\\n', "it's", 'say "hi"', "\'", "\é")"#)
        XCTAssertEqual(
            value.arrayValue?.compactMap(\.stringValue),
            ["\u{7}", "\u{8}", "\u{C}", "\n", "\r", "\t", "\u{B}", "\"", "\\n", "it's", "say \"hi\"", "'", "é"])
        // Surrogate pairs written as two \U escapes combine; a lone one becomes U+FFFD.
        XCTAssertEqual(try read(#""\UD83D\UDE00 \UD83D x""#).stringValue, "😀 \u{FFFD} x")
    }

    func testDictionaryArrayDataCommentsAndStringsFiles() throws {
        let text = """
            // leading comment */
            { "test key" = value; /* inline */ testData = <feed face>;
              "nested array" = (a, b, c,); empty = (); emptyDict = {}; shortcut; dup = 1; dup = 2; }
            """
        let expected: PropertyListValue = [
            "test key": "value", "testData": .data(Data([0xFE, 0xED, 0xFA, 0xCE])), "nested array": ["a", "b", "c"],
            "empty": [], "emptyDict": .dictionary([:]), "shortcut": "shortcut", "dup": "2",
        ]
        XCTAssertEqual(try read(text), expected)
        // A strings file: entries without braces.
        let strings = "string1 = \"Good morning\";\nstring2 = /*Test*/ \"Good afternoon\" /*Test// */;\n\"string3\" = 'Good evening'; // end"
        XCTAssertEqual(try read(strings), ["string1": "Good morning", "string2": "Good afternoon", "string3": "Good evening"])
        XCTAssertEqual(try read(" \n// nothing\n"), .dictionary([:]))
        XCTAssertEqual(try read("<7465\n73 74\n696E67   31\n\n323334>"), .data(Data("testing1234".utf8)))
        XCTAssertEqual(try read("hello.world/$x:-_"), "hello.world/$x:-_")
        XCTAssertEqual(try read("<*I-42>"), .integer(-42))
        XCTAssertEqual(try read("(<*R1.5>, <*BY>, <*BN>, <*D2001-01-01 00:01:00 +0000>)"), [1.5, true, false, .date(Date(timeIntervalSinceReferenceDate: 60))])
        // UTF-16 with a byte-order mark.
        var utf16: [UInt8] = [0xFF, 0xFE]
        for unit in "{ k = \"é😀\"; }".utf16 { utf16.append(UInt8(unit & 0xFF)); utf16.append(UInt8(unit >> 8)) }
        XCTAssertEqual(try utf16.withUnsafeBytes { try OpenStepPropertyListReader.read($0) }, ["k": "é😀"])
        // UTF-32 with a byte-order mark (big-endian here), as Foundation reads it too
        // (FormatDetectionTests compares every width and byte order with Foundation).
        var utf32: [UInt8] = [0, 0, 0xFE, 0xFF]
        for scalar in "\"k\" = \"é😀\";".unicodeScalars { utf32 += withUnsafeBytes(of: scalar.value.bigEndian, Array.init) }
        XCTAssertEqual(try utf32.withUnsafeBytes { try OpenStepPropertyListReader.read($0) }, ["k": "é😀"])
        // Wide text cut inside a character, or with a lone surrogate, is refused.
        for (bytes, code) in [(utf16.dropLast(), PropertyListError.Code.truncated), (utf32.dropLast(), .truncated), ([0xFF, 0xFE, 0x00, 0xD8, 0x41, 0x00], .invalidString)] {
            XCTAssertThrowsError(try Array(bytes).withUnsafeBytes { try OpenStepPropertyListReader.read($0) }) { error in
                XCTAssertEqual((error as? PropertyListError)?.code, code, "\(error)")
            }
        }
    }

    func testErrorsCarryLineAndOffset() {
        let cases: [(String, PropertyListError.Code, Int)] = [
            ("{ hello = there; }\r\nextra stuff at end", .syntax, 2),
            ("{ a = b }", .syntax, 1),
            ("{ a = \"b; }", .truncated, 1),
            ("(a,\n b\n c)", .syntax, 3),
            ("<0fb>", .syntax, 1),
            ("<0fxb>", .syntax, 1),
            ("{ a = (b, c; }", .syntax, 1),
            ("(\n\n", .truncated, 3),
            ("{ = b; }", .syntax, 1),
            ("{ a = ; }", .syntax, 1),
            ("(,)", .syntax, 1),
            ("<*Ix>", .invalidValue, 1),
            ("a = b; }", .syntax, 1),
        ]
        for (text, code, line) in cases {
            XCTAssertThrowsError(try read(text), text) { error in
                guard let error = error as? PropertyListError else { return XCTFail("\(text): \(error)") }
                XCTAssertEqual(error.code, code, "\(text): \(error)")
                XCTAssertEqual(error.line, line, "\(text): \(error)")
                XCTAssertNotNil(error.byteOffset, text)
            }
        }
        XCTAssertThrowsError(try [UInt8]([0x22, 0xFF, 0x22]).withUnsafeBytes { try OpenStepPropertyListReader.read($0) })
    }

    func testLimits() throws {
        let deep = String(repeating: "(", count: 100_000) + String(repeating: ")", count: 100_000)
        XCTAssertThrowsError(try read(deep)) { XCTAssertEqual(($0 as? PropertyListError)?.code, .depthLimitExceeded) }
        XCTAssertNoThrow(try read(String(repeating: "(", count: 50) + String(repeating: ")", count: 50), limits: DecodingLimits(maximumDepth: 50)))
        XCTAssertThrowsError(try read(String(repeating: "(", count: 51) + String(repeating: ")", count: 51), limits: DecodingLimits(maximumDepth: 50)))
        let many = "(" + Array(repeating: "a", count: 1000).joined(separator: ",") + ")"
        XCTAssertThrowsError(try read(many, limits: DecodingLimits(maximumObjectCount: 500))) {
            XCTAssertEqual(($0 as? PropertyListError)?.code, .objectLimitExceeded)
        }
        XCTAssertThrowsError(try read("\"" + String(repeating: "x", count: 100) + "\"", limits: DecodingLimits(maximumStringLength: 10)))
        XCTAssertThrowsError(try read("<" + String(repeating: "00", count: 100) + ">", limits: DecodingLimits(maximumDataLength: 10)))
    }

    /// Random bytes and mutations of valid text never trap.
    func testGarbageNeverTraps() {
        var generator = SeededGenerator(seed: 0x05E7)
        let alphabet = Array("{}()<>=;,\"'\\/*abc019 \n\t\r\u{E9}U*IRBD".utf8)
        for _ in 0..<3000 {
            let count = Int.random(in: 0...60, using: &generator)
            let bytes = (0..<count).map { _ in generator.chance(0.9) ? alphabet.randomElement(using: &generator)! : UInt8.random(in: 0...255, using: &generator) }
            _ = try? bytes.withUnsafeBytes { try OpenStepPropertyListReader.read($0) }
        }
    }

    // MARK: Writer

    /// The layout is the one Apple's `description` uses (and `defaults read` prints); Foundation's
    /// NSDictionary/NSArray description on this machine uses the same layout, so compare with it
    /// on values whose strings need no quoting (its quoting differs from Apple's).
    func testLayoutMatchesFoundationDescription() throws {
        let foundation: NSDictionary = ["outer": ["b", "c", ["k": "v", "list": [] as NSArray] as NSDictionary] as NSArray]
        let ours: PropertyListValue = ["outer": ["b", "c", ["k": "v", "list": []]]]
        let theirs = foundation.description
        // Foundation sorts nothing here (one key per dictionary); compare line sets to stay
        // independent of the order of the inner dictionary's two keys.
        let ourLines = try OpenStepPropertyListWriter.string(ours).split(separator: "\n")
        let theirLines = theirs.split(separator: "\n")
        XCTAssertEqual(ourLines.count, theirLines.count, "ours:\n\(ourLines.joined(separator: "\n"))\ntheirs:\n\(theirs)")
        XCTAssertEqual(Set(ourLines), Set(theirLines), "ours:\n\(ourLines.joined(separator: "\n"))\ntheirs:\n\(theirs)")
    }

    func testWriterSpellings() throws {
        let value: PropertyListValue = [
            "plain": "abc123", "needs quotes": "a-b", "empty": "", "esc": "é\"\\\n\t😀", "flag": true, "n": -12, "r": 1.0, "half": 0.5,
            "big": 1e100, "when": .date(Date(timeIntervalSinceReferenceDate: 0)), "bytes": .data(Data([0, 1, 2, 3, 255])), "ref": .uid(7),
        ]
        let text = try OpenStepPropertyListWriter.string(value)
        XCTAssertTrue(text.contains("    plain = abc123;\n"), text)
        XCTAssertTrue(text.contains("    \"needs quotes\" = \"a-b\";\n"), text)
        XCTAssertTrue(text.contains("    empty = \"\";\n"), text)
        XCTAssertTrue(text.contains(#"    esc = "\U00e9\"\\\n\t\Ud83d\Ude00";"#), text)
        XCTAssertTrue(text.contains("    flag = 1;\n"), text)
        XCTAssertTrue(text.contains("    n = -12;\n"), text)
        XCTAssertTrue(text.contains("    r = 1;\n"), text)
        XCTAssertTrue(text.contains("    half = 0.5;\n"), text)
        XCTAssertTrue(text.contains("    big = \"1e+100\";\n"), text)
        XCTAssertTrue(text.contains("    when = \"2001-01-01 00:00:00 +0000\";\n"), text)
        XCTAssertTrue(text.contains("    bytes = <00010203 ff>;\n"), text)
        XCTAssertTrue(text.contains("    ref = { \"CF$UID\" = 7; };\n"), text)
        XCTAssertTrue(text.utf8.allSatisfy { $0 < 0x80 })
        XCTAssertThrowsError(try OpenStepPropertyListWriter.write(.array([.null])))
        // Read back: every scalar comes back as its string.
        let back = try read(text)
        XCTAssertEqual(back["esc"], "é\"\\\n\t😀")
        XCTAssertEqual(back["big"], "1e+100")
        XCTAssertEqual(back["ref"], ["CF$UID": "7"])
    }

    /// Random trees of strings, data, arrays and dictionaries survive write + read; with the
    /// GNUstep style, integers, reals, booleans and whole-second dates do too. Foundation's
    /// PropertyListSerialization reads our output to the same values.
    func testRoundTripsAndFoundationReadsOurOutput() throws {
        var options = RandomPropertyList.Options()
        options.uid = false
        options.fractionalDates = false
        options.singlePrecision = false
        var random = RandomPropertyList(seed: 0x0F57, options: options)
        for iteration in 0..<150 {
            let value = random.rootDictionary()
            let typed = try read(String(decoding: try OpenStepPropertyListWriter.write(value, options: .init(scalarStyle: .gnustep)), as: UTF8.self))
            XCTAssertEqual(typed, withoutSinglePrecision(value), "iteration \(iteration)")

            let stringsOnly = stringify(value)
            let bytes = try OpenStepPropertyListWriter.write(value)
            XCTAssertEqual(try bytes.withUnsafeBytes { try OpenStepPropertyListReader.read($0) }, stringsOnly, "iteration \(iteration)")
            if iteration % 3 == 0 {
                var format = PropertyListSerialization.PropertyListFormat.binary
                let theirs = try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: &format)
                XCTAssertEqual(format, .openStep)
                XCTAssertEqual(fromFoundation(theirs), stringsOnly, "iteration \(iteration)")
            }
        }
    }

    /// Hand-written documents read the same by us and by Foundation.
    func testReaderAgreesWithFoundation() throws {
        let documents = [
            "{ a = b; c = (1, 2, <0fbd>); \"q\" = \"\\U00e9\\101\\351\\12x\"; 'single' = 'x\\'y'; }",
            "( \"\", '', a/b:c.d-e_f$g, <>, < 00 >, { } , ( ) )",
            "{ \"k\\n\" = \"v\\t\\\\\"; nested = { deeper = ( { x = y; } ); }; }",
            "k1 = v1; k2 = \"v 2\";",
            "{ a = b; a = c; }",
            "/* c */ ( a // x\n , b )",
        ]
        for document in documents {
            let ours = try read(document)
            let theirs = try PropertyListSerialization.propertyList(from: Data(document.utf8), options: [], format: nil)
            XCTAssertEqual(ours, fromFoundation(theirs), document)
        }
    }

    // MARK: Helpers

    /// What the strings style turns a value into once read back.
    private func stringify(_ value: PropertyListValue) -> PropertyListValue {
        switch value {
        case .array(let elements): return .array(elements.map(stringify))
        case .dictionary(let dictionary):
            return .dictionary(PropertyListDictionary(dictionary.entries.map { (stringify($0.key), stringify($0.value)) }))
        case .string, .data: return value
        default: return .string(PropertyListString(OpenStepEmitter.plainText(value) ?? ""))
        }
    }

    private func withoutSinglePrecision(_ value: PropertyListValue) -> PropertyListValue {
        switch value {
        case .array(let elements): return .array(elements.map(withoutSinglePrecision))
        case .dictionary(let dictionary):
            return .dictionary(PropertyListDictionary(dictionary.entries.map { ($0.key, withoutSinglePrecision($0.value)) }))
        default: return value
        }
    }

    private func fromFoundation(_ object: Any) -> PropertyListValue {
        switch object {
        case let string as String: return .string(PropertyListString(string))
        case let data as Data: return .data(data)
        case let array as [Any]: return .array(array.map(fromFoundation))
        case let dictionary as [AnyHashable: Any]:
            return .dictionary(PropertyListDictionary(dictionary.map { (fromFoundation($0.key.base), fromFoundation($0.value)) }))
        default: return .null
        }
    }

    /// `OpenStepDate.parse` (GNUstep `<*D...>` dates and `defaults write -date`) refuses a day
    /// past the month's end, as Foundation's strict formatter does; 2020-02-30 rolled over to
    /// March 1 while an hour of 25 was refused.
    func testDatesPastTheMonthsEndAreRefusedAsFoundationRefusesThem() {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
        formatter.isLenient = false
        for year in [1900, 2000, 2020, 2023, 2100] {
            for month in 1...12 {
                for day in 27...31 {
                    let text = String(format: "%04d-%02d-%02d 10:20:30 +0000", year, month, day)
                    XCTAssertEqual(OpenStepDate.parse(text), formatter.date(from: text), text)
                }
            }
        }
    }
}
