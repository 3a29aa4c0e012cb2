import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The XML writer against CoreFoundation's XML writer (Foundation on this machine) and plistlib.
final class XMLWriterTests: XCTestCase {
    /// Foundation writes a random value; we read its bytes and write them back: identical bytes.
    /// Our writer on the original value gives the same bytes too (after CF's one lossy change,
    /// `-0.0` -> `0.0`), and our reader agrees with Foundation's reader on Foundation's bytes.
    func testRandomValuesMatchFoundationWriterByteForByte() throws {
        var compared = 0
        for seed in 0..<150 as Range<UInt64> {
            var random = RandomPropertyList(seed: seed, options: XMLTestFoundation.xmlOptions)
            let value = XMLTestFoundation.avoidingLeadingBOM(seed % 2 == 0 ? random.rootDictionary() : random.value())
            guard let object = XMLTestFoundation.object(value) else { continue }
            let foundationBytes = try XMLTestFoundation.xml(object)
            let read = try XMLPropertyListReader.read(Data(foundationBytes))
            XCTAssertEqual(try XMLPropertyListWriter.write(read), foundationBytes, "seed \(seed): read -> write differs from Foundation's bytes")
            let unsignedZero = XMLTestFoundation.transform(value) { leaf in
                if case .real(let real) = leaf, real.value == 0 { return .real(0.0) }
                return nil
            }
            XCTAssertEqual(try XMLPropertyListWriter.write(unsignedZero), foundationBytes, "seed \(seed): our writer differs from Foundation's")
            let foundationRead = try XCTUnwrap(XMLTestFoundation.value(try XMLTestFoundation.read(foundationBytes)))
            XMLTestFoundation.assertEqual(read, foundationRead, "seed \(seed): our reader differs from Foundation's on Foundation's bytes")
            compared += 1
        }
        XCTAssertGreaterThan(compared, 110)
    }

    /// Our writer's output for random values parses in Foundation to equal values.
    func testOurOutputParsesInFoundation() throws {
        for seed in 1000..<1150 as Range<UInt64> {
            var random = RandomPropertyList(seed: seed, options: XMLTestFoundation.xmlOptions)
            let value = XMLTestFoundation.avoidingLeadingBOM(random.rootDictionary())
            let bytes = try XMLPropertyListWriter.write(value)
            let back = try XCTUnwrap(XMLTestFoundation.value(try XMLTestFoundation.read(bytes)))
            XMLTestFoundation.assertEqual(back, value, "seed \(seed)")
        }
    }

    /// UIDs: Foundation reads a CF$UID dictionary as a UID and writes it back in CF's layout;
    /// ours writes the same bytes, at the top level and nested.
    func testUIDLayoutMatchesFoundation() throws {
        for body in [
            "<dict><key>CF$UID</key><integer>7</integer></dict>",
            "<array><dict><key>CF$UID</key><integer>4294967295</integer></dict></array>",
            "<dict><key>a</key><array><dict><key>CF$UID</key><integer>0</integer></dict></array></dict>",
        ] {
            let document = Array("<plist version=\"1.0\">\(body)</plist>".utf8)
            let foundation = try XMLTestFoundation.xml(try XMLTestFoundation.read(document))
            let ours = try XMLPropertyListWriter.write(try XMLPropertyListReader.read(Data(document)))
            XCTAssertEqual(String(decoding: ours, as: UTF8.self), String(decoding: foundation, as: UTF8.self))
        }
    }

    /// Layout edge cases against Foundation: base64 line lengths at every indentation (capped at
    /// 8), empty data, reals, dates at the ends of years 0...9999, escaping, key order.
    func testEdgeLayoutsMatchFoundation() throws {
        var values: [PropertyListValue] = []
        for length in [0, 1, 2, 3, 50, 51, 52, 53, 57, 100, 200] {
            var nested = PropertyListValue.data(Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37) }))
            var levels: [PropertyListValue] = [nested]
            for depth in 0..<11 {
                nested = depth % 2 == 0 ? .array([nested]) : ["k": nested]
                levels.append(nested)
            }
            values.append(.array(levels))
        }
        let reals: [Double] = [
            1, 1.5, 0.1, 1e20, 1e-7, 100, 1e16, 1e17, 2.5e-300, -2.25, 1.0 / 3.0, .nan, .infinity, -.infinity,
            .greatestFiniteMagnitude, .leastNonzeroMagnitude, .leastNormalMagnitude, Double(Float(0.1)), 123456789.125,
        ]
        values.append(.array(reals.map { .real(PropertyListReal($0)) }))
        // Years 0 to 9999 (the range every format here shares), at and near its ends.
        let seconds: [Double] = [0, 0.7, -0.3, -63_113_904_000, -63_113_904_001, -63_145_526_400, 252_000_000_000, 252_423_993_599]
        values.append(.array(seconds.map { .date(Date(timeIntervalSinceReferenceDate: $0)) }))
        values.append(["<&>": "a<b>c&d\"e'f\r\n\t\u{1}", "é": 1, "😀": 2, "\u{E000}": 3, "\u{FFFF}": 4, "": 5, "B": 6, "a": 7, "~": 8])
        values.append(.array([.integer(PropertyListInteger(UInt64.max)), .integer(PropertyListInteger(Int64.min)), true, false, [], [:]]))
        for value in values {
            let object = try XCTUnwrap(XMLTestFoundation.object(value))
            let foundation = try XMLTestFoundation.xml(object)
            let ours = try XMLPropertyListWriter.write(value)
            XCTAssertEqual(String(decoding: ours, as: UTF8.self), String(decoding: foundation, as: UTF8.self))
            // And our reader reads Foundation's bytes back to the value (whole-second dates).
            let floored = XMLTestFoundation.transform(value) { leaf in
                if case .date(let date) = leaf {
                    return .date(Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate.rounded(.down)))
                }
                return nil
            }
            XCTAssertEqual(try XMLPropertyListReader.read(Data(foundation)), floored)
        }
    }

    /// CF's `_XMLPlistAppendDataUsingBase64`, transcribed byte by byte (flush once the line
    /// reaches its limit, padding after the loop), as the reference for the writer's
    /// line-at-a-time encoder.
    private func referenceBase64Lines(_ bytes: [UInt8], indent: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        let indent = min(indent, 8)
        let tabs = String(repeating: "\t", count: indent)
        var text = "", line = ""
        var previous: UInt8 = 0
        for (index, byte) in bytes.enumerated() {
            switch index % 3 {
            case 0: line.append(alphabet[Int(byte >> 2)])
            case 1: line.append(alphabet[Int((previous & 0x03) << 4 | byte >> 4)])
            default:
                line.append(alphabet[Int((previous & 0x0F) << 2 | byte >> 6)])
                line.append(alphabet[Int(byte & 0x3F)])
            }
            previous = byte
            if line.count >= 76 - 8 * indent {
                text += tabs + line + "\n"
                line = ""
            }
        }
        switch bytes.count % 3 {
        case 1: line += String(alphabet[Int((previous & 0x03) << 4)]) + "=="
        case 2: line += String(alphabet[Int((previous & 0x0F) << 2)]) + "="
        default: break
        }
        if !line.isEmpty { text += tabs + line + "\n" }
        return text
    }

    func testBase64LinesMatchCFsByteByByteLayout() throws {
        var generator = SeededGenerator(seed: 77)
        for length in Array(0...200) + [1_000, 4_095, 65_537] {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            for depth in [0, 1, 2, 3, 5, 7, 8, 9, 12] {
                var value = PropertyListValue.data(Data(bytes))
                for _ in 0..<depth { value = .array([value]) }
                let xml = String(decoding: try XMLPropertyListWriter.write(value), as: UTF8.self)
                let tabs = String(repeating: "\t", count: depth)
                let expected = tabs + "<data>\n" + referenceBase64Lines(bytes, indent: depth) + tabs + "</data>\n"
                XCTAssertTrue(xml.contains(expected), "length \(length), depth \(depth)")
            }
        }
    }

    /// Keys sharing their first eight bytes, keys around the UTF-16 surrogate rule, and more
    /// than 32 keys (another sort path): the same order as CoreFoundation's writer.
    func testKeyOrderMatchesFoundation() throws {
        let stems = ["abcdefgh", "abcdefg", "abcdefgi", "abcdefgh\u{E000}", "abcdefgh😀", "abcdefgh\u{FFFD}", "\u{E000}x",
                     "😀", "\u{FFFD}", "é", "e", "Z", "a", "", "abcdefghabcdefgh", "abcdefghabcdefgg", "ab\u{EFFF}", "ab\u{F0000}"]
        var large = PropertyListDictionary()
        for (index, stem) in stems.enumerated() { large.entries.append((PropertyListValue(stem), PropertyListValue(index))) }
        for index in 0..<30 { large.entries.append((PropertyListValue("abcdefgh-\((index * 7) % 30)"), PropertyListValue(index))) }
        var small = PropertyListDictionary()
        for (index, stem) in stems.reversed().enumerated() { small.entries.append((PropertyListValue(stem), PropertyListValue(index))) }
        for value in [PropertyListValue.dictionary(large), .dictionary(small)] {
            let object = try XCTUnwrap(XMLTestFoundation.object(value))
            XCTAssertEqual(
                String(decoding: try XMLPropertyListWriter.write(value), as: UTF8.self),
                String(decoding: try XMLTestFoundation.xml(object), as: UTF8.self))
        }
    }

    /// Random distinct keys (with NUL bytes, shared prefixes and every UTF-8 length): written in
    /// UTF-16 code-unit order, as a plain comparison of the `utf16` views orders them.
    func testKeyOrderIsUTF16OrderOnRandomKeys() throws {
        var generator = SeededGenerator(seed: 0x5EED_0123)
        let alphabet: [Unicode.Scalar] = ["\0", "a", "b", "\u{7F}", "\u{80}", "\u{7FF}", "\u{800}", "\u{D7FF}", "\u{E000}", "\u{FFFF}", "\u{10000}", "\u{10FFFF}"]
        for round in 0..<300 {
            let count = round % 3 == 0 ? Int.random(in: 33...80, using: &generator) : Int.random(in: 2...32, using: &generator)
            var dictionary = PropertyListDictionary()
            var seen = Set<String>()
            for index in 0..<count {
                var key = String(repeating: "p", count: Int.random(in: 0...9, using: &generator))
                for _ in 0..<Int.random(in: 0...4, using: &generator) {
                    key.unicodeScalars.append(alphabet[Int.random(in: 0..<alphabet.count, using: &generator)])
                }
                // Readers keep one entry per key, so the keys are distinct (stability is covered
                // by the comparison with Foundation above).
                guard seen.insert(key).inserted else { continue }
                dictionary.entries.append((PropertyListValue(key), PropertyListValue(index)))
            }
            let expected = dictionary.entries.enumerated().sorted { left, right in
                let a = Array((left.element.key.stringValue ?? "").utf16), b = Array((right.element.key.stringValue ?? "").utf16)
                return a == b ? left.offset < right.offset : a.lexicographicallyPrecedes(b)
            }.map { $0.element.value.intValue ?? -1 }
            // NUL is not allowed in XML 1.0, but both our writer and reader keep it; read back in file order.
            guard case .dictionary(let written) = try XMLPropertyListReader.read(Data(try XMLPropertyListWriter.write(.dictionary(dictionary)))) else {
                return XCTFail("not a dictionary")
            }
            XCTAssertEqual(written.entries.map { $0.value.intValue ?? -1 }, expected, "round \(round)")
        }
    }

    /// What XML cannot hold is refused with a key path, and `-0.0` keeps its sign.
    func testUnrepresentableValuesAndNegativeZero() throws {
        let cases: [(PropertyListValue, String)] = [
            (.null, ""),
            (["a": [1, .set([1])]], "a[1]"),
            (.dictionary(PropertyListDictionary([(.integer(1), "x")])), ""),
            (["d": .date(Date(timeIntervalSinceReferenceDate: .nan))], "d"),
            (["d": .date(Date(timeIntervalSinceReferenceDate: 1e18))], "d"),
            (["d": .date(Date(timeIntervalSinceReferenceDate: -63_145_526_401))], "d"),
            (["d": .date(Date(timeIntervalSinceReferenceDate: 252_423_993_600))], "d"),
        ]
        for (value, path) in cases {
            XCTAssertThrowsError(try XMLPropertyListWriter.write(value)) { error in
                let error = error as? PropertyListError
                XCTAssertEqual(error?.code, .unrepresentableValue)
                XCTAssertEqual(error?.keyPath, path)
            }
        }
        let negativeZero = PropertyListValue.real(PropertyListReal(-0.0))
        let bytes = try XMLPropertyListWriter.write(negativeZero)
        XCTAssertTrue(String(decoding: bytes, as: UTF8.self).contains("<real>-0.0</real>"))
        XCTAssertEqual(try XMLPropertyListReader.read(Data(bytes)), negativeZero)
        // Foundation reads it as -0.0 too.
        let foundation = try XCTUnwrap(XMLTestFoundation.read(bytes) as? NSNumber)
        XCTAssertEqual(foundation.doubleValue.sign, .minus)
    }

    /// Deep values: the writer is iterative; past its depth limit it throws instead of writing
    /// quadratic indentation.
    func testDeepNestingWritesOrThrowsCleanly() throws {
        var value: PropertyListValue = "leaf"
        for _ in 0..<600 { value = .array([value]) }
        XCTAssertThrowsError(try XMLPropertyListWriter.write(value)) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .unrepresentableValue)
        }
        let bytes = try XMLPropertyListWriter.write(value, maximumDepth: 2_000)
        XCTAssertEqual(try XMLPropertyListReader.read(Data(bytes), limits: DecodingLimits(maximumDepth: 2_000)), value)
    }

    /// Thousands of seeded random values round-trip through our writer and reader.
    func testSeededRoundTrips() throws {
        var options = XMLTestFoundation.xmlOptions
        options.uid = true
        for seed in 5000..<6200 as Range<UInt64> {
            var random = RandomPropertyList(seed: seed, options: options)
            let value = random.value()
            let bytes = try XMLPropertyListWriter.write(value)
            let back = try XMLPropertyListReader.read(Data(bytes))
            XMLTestFoundation.assertEqual(back, value, "seed \(seed)")
            XCTAssertEqual(try XMLPropertyListWriter.write(back), bytes, "seed \(seed): write is not stable")
        }
    }

    /// Our output for random values read by Python's plistlib (expat) gives the same values, and
    /// plistlib's own XML for them reads back to the same values in our reader.
    func testPlistlibReadsOurOutputAndWeReadPlistlibs() throws {
        guard Python.executable != nil else {
            print("XMLWriterTests: python3 not found; skipping the plistlib cross-check")
            return
        }
        var values: [PropertyListValue] = []
        for seed in 9000..<9300 as Range<UInt64> {
            var random = RandomPropertyList(seed: seed, options: XMLTestFoundation.xmlOptions)
            values.append(random.value())
        }
        let value = PropertyListValue.array(values)
        let script = """
            import sys, plistlib, struct, datetime, math, base64
            v = plistlib.loads(sys.stdin.buffer.read())
            out = []
            def w(x):
                if isinstance(x, bool): out.append('B %d' % x)
                elif isinstance(x, int): out.append('I %d' % x)
                elif isinstance(x, float): out.append('R nan' if math.isnan(x) else 'R %016x' % struct.unpack('>Q', struct.pack('>d', x))[0])
                elif isinstance(x, str): out.append('S ' + x.encode('utf-8').hex())
                elif isinstance(x, bytes): out.append('X ' + x.hex())
                elif isinstance(x, datetime.datetime): out.append('T %d' % round((x - datetime.datetime(2001, 1, 1)).total_seconds()))
                elif isinstance(x, list):
                    out.append('A %d' % len(x))
                    for e in x: w(e)
                elif isinstance(x, dict):
                    out.append('D %d' % len(x))
                    for k in sorted(x):
                        out.append('K ' + k.encode('utf-8').hex())
                        w(x[k])
                else: raise Exception('unexpected %r' % type(x))
            w(v)
            out.append('P ' + base64.b64encode(plistlib.dumps(v, fmt=plistlib.FMT_XML)).decode())
            print('\\n'.join(out))
            """
        let output = String(decoding: try Python.run(script, input: Data(try XMLPropertyListWriter.write(value))), as: UTF8.self)
        var lines = output.split(separator: "\n").map(String.init)
        let plistlibXML = try XCTUnwrap(lines.popLast().flatMap { $0.hasPrefix("P ") ? Data(base64Encoded: String($0.dropFirst(2))) : nil })
        // expat turns CR and CRLF into LF in text.
        let expected = XMLTestFoundation.transform(value) { leaf in
            guard case .string(let string) = leaf else { return nil }
            return .string(PropertyListString(normalizingLineEnds(string.value)))
        }
        var canonical: [String] = []
        describe(expected, into: &canonical)
        XCTAssertEqual(lines.count, canonical.count)
        for (index, (ours, theirs)) in zip(canonical, lines).enumerated() where ours != theirs {
            XCTFail("line \(index): expected \(ours), plistlib gave \(theirs)")
            break
        }
        XMLTestFoundation.assertEqual(try XMLPropertyListReader.read(plistlibXML), expected, "plistlib XML")
    }

    private func normalizingLineEnds(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        var previousCR = false
        for scalar in text.unicodeScalars {
            if scalar == "\r" {
                scalars.append("\n")
                previousCR = true
                continue
            }
            if scalar == "\n", previousCR {
                previousCR = false
                continue
            }
            previousCR = false
            scalars.append(scalar)
        }
        return String(scalars)
    }

    /// The same canonical lines as the Python script, built from our value model independently of
    /// our writer (keys in code-point order, reals by bit pattern, dates in whole seconds).
    private func describe(_ value: PropertyListValue, into lines: inout [String]) {
        func hex<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
            bytes.map { String(format: "%02x", $0) }.joined()
        }
        switch value {
        case .bool(let bool): lines.append("B \(bool ? 1 : 0)")
        case .integer(let integer): lines.append("I \(integer)")
        case .real(let real): lines.append(real.value.isNaN ? "R nan" : String(format: "R %016llx", real.value.bitPattern))
        case .string(let string): lines.append("S " + hex(string.value.utf8))
        case .data(let data): lines.append("X " + hex(data))
        case .date(let date): lines.append("T \(Int64(date.timeIntervalSinceReferenceDate))")
        case .array(let elements):
            lines.append("A \(elements.count)")
            for element in elements { describe(element, into: &lines) }
        case .dictionary(let dictionary):
            lines.append("D \(dictionary.count)")
            let sorted = dictionary.entries.sorted {
                ($0.key.stringValue ?? "").unicodeScalars.map(\.value).lexicographicallyPrecedes(($1.key.stringValue ?? "").unicodeScalars.map(\.value))
            }
            for entry in sorted {
                lines.append("K " + hex((entry.key.stringValue ?? "").utf8))
                describe(entry.value, into: &lines)
            }
        case .null, .set, .uid: lines.append("?")
        }
    }
}
