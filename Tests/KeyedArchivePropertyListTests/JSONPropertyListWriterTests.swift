import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The lossy JSON writer, checked by Python's `json` module and Foundation's base64 and ISO 8601
/// formatters (independent of our code).
final class JSONPropertyListWriterTests: XCTestCase {
    /// Random values (with sets, UIDs and null) written compact and pretty parse in Python's json
    /// to the structure the documented mapping predicts.
    func testPythonJSONReadsTheDocumentedMapping() throws {
        guard Python.executable != nil else {
            print("JSONPropertyListWriterTests: python3 not found; skipping the json cross-check")
            return
        }
        var options = RandomPropertyList.Options()
        options.fractionalDates = false
        options.null = true
        options.set = true
        options.nan = false
        var values: [PropertyListValue] = []
        for seed in 0..<150 as Range<UInt64> {
            var random = RandomPropertyList(seed: seed, options: options)
            values.append(finite(random.value()))
        }
        values.append(.dictionary(PropertyListDictionary([(.integer(12), "int key"), (.bool(true), "bool key"), (.uid(3), .uid(3))])))
        let value = PropertyListValue.array(values)
        let script = """
            import sys, json
            def w(x, out):
                if x is None: out.append('N')
                elif isinstance(x, bool): out.append('B %d' % x)
                elif isinstance(x, int): out.append('I %d' % x)
                elif isinstance(x, float): out.append('R ' + x.hex())
                elif isinstance(x, str): out.append('S ' + x.encode('utf-8').hex())
                elif isinstance(x, list):
                    out.append('A %d' % len(x))
                    for e in x: w(e, out)
                elif isinstance(x, dict):
                    out.append('D %d' % len(x))
                    for k, v in x.items():
                        out.append('K ' + k.encode('utf-8').hex())
                        w(v, out)
            compact, pretty = sys.stdin.buffer.read().split(b'\\0')
            a, b = [], []
            w(json.loads(compact), a)
            w(json.loads(pretty), b)
            assert a == b, 'compact and pretty differ'
            assert b'\\n' not in compact
            print('\\n'.join(a))
            """
        let input = try JSONPropertyListWriter.write(value, pretty: false) + [0] + JSONPropertyListWriter.write(value, pretty: true)
        let lines = String(decoding: try Python.run(script, input: Data(input)), as: UTF8.self).split(separator: "\n").map(String.init)
        var expected: [String] = []
        describe(value, into: &expected)
        XCTAssertEqual(lines.count, expected.count)
        for (index, (theirs, ours)) in zip(lines, expected).enumerated() where theirs != ours {
            XCTFail("line \(index): python read \(theirs), the mapping says \(ours)")
            break
        }
    }

    /// C1 controls (U+009B, CSI, is a terminal escape on its own), DEL and U+2028/2029 were
    /// written raw: valid JSON, but `karchive convert -f json` sent them to the terminal. Now
    /// `\uXXXX`; Foundation's JSONSerialization and Python's json read the same strings back.
    func testControlCharactersAndLineSeparatorsAreEscaped() throws {
        let strings = [
            "a\u{7F}b", "\u{80}", "csi\u{9B}31m", "\u{9F}\u{A0}é", "line\u{2028}para\u{2029}end", "\u{2027}\u{202A}",
            "\u{1B}[2J\u{0}", "e\u{301}🙂\u{C2}", String(repeating: "\u{85}", count: 3),
        ]
        let value = PropertyListValue.array(strings.map { .string(PropertyListString($0)) })
        for pretty in [false, true] {
            let bytes = try JSONPropertyListWriter.write(value, pretty: pretty)
            // No control or separator left raw.
            let text = String(decoding: bytes, as: UTF8.self)
            let raw = text.unicodeScalars.filter { $0.value < 0x20 && $0 != "\n" && $0 != " " || (0x7F...0x9F).contains($0.value) || $0.value == 0x2028 || $0.value == 0x2029 }
            XCTAssertTrue(raw.isEmpty, "raw: \(raw.map { String($0.value, radix: 16) })")
            XCTAssertTrue(text.contains("\\u009b") && text.contains("\\u2028") && text.contains("\\u007f"), text)
            // Unchanged where nothing needs it: U+00A0, U+2027, U+202A and U+00C2 itself stay raw.
            XCTAssertTrue(text.contains("\u{A0}é") && text.contains("\u{2027}\u{202A}") && text.contains("🙂\u{C2}"), text)
            let foundation = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String]
            XCTAssertEqual(foundation, strings)
            if Python.executable != nil {
                let python = try Python.run("import sys, json\nfor s in json.loads(sys.stdin.buffer.read()): print(s.encode('utf-8').hex())", input: Data(bytes))
                XCTAssertEqual(String(decoding: python, as: UTF8.self), strings.map { Data($0.utf8).map { String(format: "%02x", $0) }.joined() + "\n" }.joined())
            }
        }
    }

    func testNonFiniteRealsThrowWithKeyPath() {
        for real in [Double.nan, .infinity, -.infinity] {
            let value: PropertyListValue = ["a": [1, .real(PropertyListReal(real))]]
            XCTAssertThrowsError(try JSONPropertyListWriter.write(value, pretty: false)) { error in
                XCTAssertEqual((error as? PropertyListError)?.code, .unrepresentableValue)
                XCTAssertEqual((error as? PropertyListError)?.keyPath, "a[1]")
            }
        }
        let containerKey = PropertyListValue.dictionary(PropertyListDictionary([(.array([]), 1)]))
        XCTAssertThrowsError(try JSONPropertyListWriter.write(containerKey, pretty: true))
    }

    func testPrettyLayoutAndDates() throws {
        let value: PropertyListValue = ["a": [1, "x"], "e": [:], "d": .date(Date(timeIntervalSinceReferenceDate: 0.25))]
        let text = String(decoding: try JSONPropertyListWriter.write(value, pretty: true), as: UTF8.self)
        XCTAssertEqual(text, "{\n  \"a\": [\n    1,\n    \"x\"\n  ],\n  \"e\": {},\n  \"d\": \"2001-01-01T00:00:00.250Z\"\n}\n")
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        XCTAssertEqual(formatter.date(from: "2001-01-01T00:00:00.250Z"), Date(timeIntervalSinceReferenceDate: 0.25))
    }

    /// Dates print the nearest millisecond: the double nearest a time 2 ms past a second is
    /// often just below it, and truncating printed `.001` (about half of such dates), or no
    /// fraction at all for 1.001 s. The expected text comes from Foundation's formatter for the
    /// whole second and integer arithmetic for the milliseconds.
    func testDatesPrintTheNearestMillisecond() throws {
        let iso = ISO8601DateFormatter()
        iso.timeZone = TimeZone(identifier: "UTC")
        var state: UInt64 = 0x6A5  // a fixed linear congruential sequence
        var milliseconds: [Int64] = [1_001, 700_000_000_002, -1, -1_999, 0, 999]
        for _ in 0..<2_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            milliseconds.append(Int64((state >> 11) % 2_000_000_000_000) - 500_000_000_000)
        }
        for total in milliseconds {
            let date = Date(timeIntervalSinceReferenceDate: Double(total) / 1000)
            let (second, fraction) = (total >= 0 ? total / 1000 : (total - 999) / 1000, ((total % 1000) + 1000) % 1000)
            var expected = iso.string(from: Date(timeIntervalSinceReferenceDate: Double(second)))
            if fraction != 0 {
                expected.removeLast()
                expected += "." + String(String(fraction + 1000).dropFirst()) + "Z"
            }
            let text = String(decoding: try JSONPropertyListWriter.write(.date(date), pretty: false), as: UTF8.self)
            XCTAssertEqual(text, "\"\(expected)\"", "\(total) ms")
        }
        // Within half a millisecond of the next second: that second, with no fraction.
        let carried = try JSONPropertyListWriter.write(.date(Date(timeIntervalSinceReferenceDate: 59.9996)), pretty: false)
        XCTAssertEqual(String(decoding: carried, as: UTF8.self), "\"\(iso.string(from: Date(timeIntervalSinceReferenceDate: 60)))\"")
    }

    /// Non-finite reals replaced by 1.5, so the random values are all writable.
    private func finite(_ value: PropertyListValue) -> PropertyListValue {
        XMLTestFoundation.transform(value) { leaf in
            if case .real(let real) = leaf, !real.value.isFinite { return 1.5 }
            return nil
        }
    }

    /// The documented mapping, computed with Foundation's formatters rather than our code.
    private func describe(_ value: PropertyListValue, into lines: inout [String]) {
        func hex(_ text: String) -> String { text.utf8.map { String(format: "%02x", $0) }.joined() }
        let iso = ISO8601DateFormatter()
        iso.timeZone = TimeZone(identifier: "UTC")
        switch value {
        case .null: lines.append("N")
        case .bool(let bool): lines.append("B \(bool ? 1 : 0)")
        case .integer(let integer): lines.append("I \(integer)")
        case .real(let real): lines.append("R " + pythonHex(real.value))
        case .string(let string): lines.append("S " + hex(string.value))
        case .data(let data): lines.append("S " + hex(data.base64EncodedString()))
        case .date(let date): lines.append("S " + hex(iso.string(from: date)))
        case .uid(let uid):
            lines.append("D 1")
            lines.append("K " + hex("CF$UID"))
            lines.append("I \(uid)")
        case .array(let elements), .set(let elements):
            lines.append("A \(elements.count)")
            for element in elements { describe(element, into: &lines) }
        case .dictionary(let dictionary):
            lines.append("D \(dictionary.count)")
            for entry in dictionary.entries {
                let key: String
                switch entry.key {
                case .string(let string): key = string.value
                case .integer(let integer): key = "\(integer)"
                case .bool(let bool): key = bool ? "true" : "false"
                case .uid(let uid): key = "CF$UID:\(uid)"
                default: key = "?"
                }
                lines.append("K " + hex(key))
                describe(entry.value, into: &lines)
            }
        }
    }

    /// Python's `float.hex()` spelling of a finite double.
    private func pythonHex(_ value: Double) -> String {
        if value == 0 { return value.sign == .minus ? "-0x0.0p+0" : "0x0.0p+0" }
        let sign = value.sign == .minus ? "-" : ""
        let bits = value.bitPattern
        var exponent = Int((bits >> 52) & 0x7FF)
        let mantissa = bits & 0xF_FFFF_FFFF_FFFF
        let lead: String
        if exponent == 0 {
            lead = "0"
            exponent = -1022
        } else {
            lead = "1"
            exponent -= 1023
        }
        var digits = String(mantissa, radix: 16)
        digits = String(repeating: "0", count: 13 - digits.count) + digits
        return "\(sign)0x\(lead).\(digits)p\(exponent >= 0 ? "+" : "")\(exponent)"
    }
}
