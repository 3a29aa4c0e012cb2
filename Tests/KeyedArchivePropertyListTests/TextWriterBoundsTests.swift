import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The text writers write only what the readers take back (found by session 65's review of the
/// text codecs): a UID is a dictionary in XML and OpenStep, so it counts as a level of nesting;
/// OpenStep text has the readers' depth limit; the output limit holds for the last value too;
/// dates that no reader takes are refused, and the one date the JSON writer's rounding carried
/// out of range is written.
final class TextWriterBoundsTests: XCTestCase {
    private let limit = DecodingLimits.default.maximumDepth

    /// `levels` arrays, one inside the other, around `innermost`.
    private func nested(_ levels: Int, around innermost: PropertyListValue) -> PropertyListValue {
        var value = innermost
        for _ in 0..<levels { value = .array([value]) }
        return value
    }

    private func assertRefused(_ body: @autoclosure () throws -> Any, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), message, file: file, line: line) { error in
            XCTAssertNotNil(error as? PropertyListError, "\(message): \(error)", file: file, line: line)
        }
    }

    func testAUIDCountsAsALevelOfNesting() throws {
        let fits = nested(limit - 1, around: .uid(5))
        let tooDeep = nested(limit, around: .uid(5))
        let binaryFits = Data(try BinaryPropertyListWriter.write(fits)), binaryTooDeep = Data(try BinaryPropertyListWriter.write(tooDeep))
        // The binary reader takes both (a UID is a scalar there).
        XCTAssertEqual(try PropertyList.decode(binaryTooDeep), tooDeep)

        let xml = try XMLPropertyListWriter.write(fits)
        XCTAssertEqual(try xml.withUnsafeBytes { try XMLPropertyListReader.read($0) }, fits)
        XCTAssertNoThrow(try PropertyListSerialization.propertyList(from: Data(xml), options: [], format: nil), "Foundation reads it")
        XCTAssertEqual(try PropertyList.decode(try PropertyList.convert(binaryFits, to: .xml)), fits)
        let openStep = try OpenStepPropertyListWriter.write(fits)
        XCTAssertNoThrow(try openStep.withUnsafeBytes { try OpenStepPropertyListReader.read($0) })

        // One level more: the readers refuse the text (ours and Foundation's), so it is not written.
        var tooDeepXML = Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<plist version=\"1.0\">".utf8)
        tooDeepXML += Array(String(repeating: "<array>", count: limit).utf8) + Array("<dict><key>CF$UID</key><integer>5</integer></dict>".utf8)
        tooDeepXML += Array(String(repeating: "</array>", count: limit).utf8) + Array("</plist>".utf8)
        assertRefused(try tooDeepXML.withUnsafeBytes { try XMLPropertyListReader.read($0) }, "our reader")
        XCTAssertThrowsError(try PropertyListSerialization.propertyList(from: Data(tooDeepXML), options: [], format: nil), "Foundation's reader")
        assertRefused(try XMLPropertyListWriter.write(tooDeep), "XML writer")
        assertRefused(try PropertyList.convert(binaryTooDeep, to: .xml), "binary -> XML converter")
        assertRefused(try PropertyList.convert(binaryTooDeep, to: .openStep), "binary -> OpenStep")
        assertRefused(try OpenStepPropertyListWriter.write(tooDeep), "OpenStep writer")
    }

    /// The OpenStep writer had no depth limit: a value built through the API was written at any
    /// depth, then refused by every reader.
    func testOpenStepTextStaysWithinTheReadersDepth() throws {
        for container: PropertyListValue in [[], [:]] {
            let fits = nested(limit - 1, around: container)
            let text = try OpenStepPropertyListWriter.write(fits)
            XCTAssertEqual(try text.withUnsafeBytes { try OpenStepPropertyListReader.read($0) }, fits)
            XCTAssertNoThrow(try PropertyListSerialization.propertyList(from: Data(text), options: [], format: nil), "Foundation reads it")
            XCTAssertThrowsError(try OpenStepPropertyListWriter.write(nested(limit, around: container))) { error in
                // As the XML writer refuses it.
                XCTAssertEqual((error as? PropertyListError)?.code, .unrepresentableValue)
            }
        }
    }

    /// A root scalar is the whole output, and the last value's text was never measured: 100 KB
    /// of data came out as 135 KB of XML, 225 KB of OpenStep and 133 KB of JSON under a limit
    /// of 1,000 bytes (the binary writer refused it).
    func testTheOutputLimitHoldsForTheLastValue() throws {
        let value = PropertyListValue.data(Data(repeating: 7, count: 100_000))
        let container: PropertyListValue = ["a": 1, "b": value]
        for root in [value, container, .array([value])] {
            assertRefused(try XMLPropertyListWriter.write(root, maximumDepth: limit, maximumOutputLength: 1_000), "XML")
            assertRefused(try OpenStepPropertyListWriter.write(root, options: .init(maximumOutputLength: 1_000)), "OpenStep")
            assertRefused(try JSONPropertyListWriter.write(root, pretty: false, maximumOutputLength: 1_000), "JSON")
            assertRefused(try PropertyList.convert(Data(try BinaryPropertyListWriter.write(root)), to: .xml, maximumOutputLength: 1_000), "binary -> XML")
        }
        // At the exact length, accepted.
        let small: PropertyListValue = "abc"
        for pretty in [false, true] {
            let json = try JSONPropertyListWriter.write(small, pretty: pretty)
            XCTAssertEqual(try JSONPropertyListWriter.write(small, pretty: pretty, maximumOutputLength: json.count), json)
            assertRefused(try JSONPropertyListWriter.write(small, pretty: pretty, maximumOutputLength: json.count - 1), "JSON at one byte less")
        }
        let xml = try XMLPropertyListWriter.write(small)
        XCTAssertEqual(try XMLPropertyListWriter.write(small, maximumDepth: limit, maximumOutputLength: xml.count), xml)
        assertRefused(try XMLPropertyListWriter.write(small, maximumDepth: limit, maximumOutputLength: xml.count - 1), "XML at one byte less")
        let openStep = try OpenStepPropertyListWriter.write(small)
        XCTAssertEqual(try OpenStepPropertyListWriter.write(small, options: .init(maximumOutputLength: openStep.count)), openStep)
        assertRefused(try OpenStepPropertyListWriter.write(small, options: .init(maximumOutputLength: openStep.count - 1)), "OpenStep at one byte less")
    }

    /// The last 0.5 ms of year 9999 rounded up into year 10000, which has no ISO 8601 form here,
    /// and a date the XML writer writes was refused.
    func testTheJSONDateRoundingStaysInRange() throws {
        let lastMoment = try XCTUnwrap(ISO8601DateFormatter().date(from: "9999-12-31T23:59:59Z")).timeIntervalSinceReferenceDate
        let cases: [(Double, String)] = [
            (lastMoment + 0.9996, "9999-12-31T23:59:59.999Z"),
            (lastMoment + 0.9994, "9999-12-31T23:59:59.999Z"),
            (lastMoment + 0.5, "9999-12-31T23:59:59.500Z"),
            (0.9996, "2001-01-01T00:00:01Z"),
            (-0.0004, "2001-01-01T00:00:00Z"),
        ]
        for (interval, expected) in cases {
            let json = try JSONPropertyListWriter.write(.date(Date(timeIntervalSinceReferenceDate: interval)), pretty: false)
            XCTAssertEqual(try JSONSerialization.jsonObject(with: Data(json), options: [.fragmentsAllowed]) as? String, expected, "\(interval)")
        }
        XCTAssertNoThrow(try XMLPropertyListWriter.write(.date(Date(timeIntervalSinceReferenceDate: lastMoment + 0.9996))))
    }

    /// GNUstep `<*D...>` dates and `defaults write -date` share one parser: it took a leap second
    /// (rolling into the next day), an offset of `+0099` as 99 minutes, and dates that are in
    /// range locally but not in UTC; the writer spelled dates no reader takes as
    /// `<*D1e+18 seconds since 2001-01-01>` (and, as plain strings, silently as that text).
    func testOpenStepDatesKeepToTheSharedRange() throws {
        let utc = ISO8601DateFormatter()
        let accepted: [(String, String)] = [
            ("2020-06-01 10:00:00 +0130", "2020-06-01T08:30:00Z"),
            ("2020-06-01 10:00:00 -2359", "2020-06-02T09:59:00Z"),
            ("9999-12-31 23:59:59 +0000", "9999-12-31T23:59:59Z"),
        ]
        for (text, iso) in accepted {
            XCTAssertEqual(OpenStepDate.parse(text), utc.date(from: iso), text)
            XCTAssertEqual(try OpenStepPropertyListReader.read("<*D\(text)>"), .date(try XCTUnwrap(utc.date(from: iso))), text)
        }
        // Year 0, proleptic Gregorian (ISO8601DateFormatter switches to the Julian calendar):
        // Python's `(date(2001,1,1) - date(1,1,1)).days` is 730,485, and year 0 is a leap year.
        let yearZeroOneAM = -Double(730_485 + 366) * 86_400 + 3_600
        XCTAssertEqual(OpenStepDate.parse("0000-01-01 00:00:00 -0100")?.timeIntervalSinceReferenceDate, yearZeroOneAM)
        for text in [
            "2020-06-01 23:59:60 +0000", "2020-06-01 10:00:00 +0099", "2020-06-01 10:00:00 +2400", "0000-01-01 00:00:00 +0100",
            "9999-12-31 23:59:59 -0001",
        ] {
            XCTAssertNil(OpenStepDate.parse(text), text)
            XCTAssertThrowsError(try OpenStepPropertyListReader.read("<*D\(text)>"), text)
        }
        for interval in [Double.nan, .infinity, 1e18, -1e18] {
            for style: OpenStepPropertyListWriter.Options.ScalarStyle in [.strings, .gnustep] {
                XCTAssertThrowsError(try OpenStepPropertyListWriter.write(["d": .date(Date(timeIntervalSinceReferenceDate: interval))], options: .init(scalarStyle: style))) { error in
                    XCTAssertEqual((error as? PropertyListError)?.code, .unrepresentableValue, "\(interval) \(style)")
                }
            }
            XCTAssertThrowsError(try XMLPropertyListWriter.write(.date(Date(timeIntervalSinceReferenceDate: interval))), "the XML writer refuses it too")
            // As a dictionary key too (the second read found keys still written).
            let key = PropertyListValue.dictionary(PropertyListDictionary([(.date(Date(timeIntervalSinceReferenceDate: interval)), "v")]))
            XCTAssertThrowsError(try OpenStepPropertyListWriter.write(key), "\(interval) as a key")
        }
    }
}
