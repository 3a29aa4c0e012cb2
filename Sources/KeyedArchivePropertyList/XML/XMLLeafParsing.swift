/// Parsers for the text of `<integer>`, `<real>`, `<date>` and `<data>`, following the grammar
/// CoreFoundation's XML reader accepts (checked against Foundation on Linux), minus its leniencies
/// that lose information silently (out-of-range dates that CF normalises, base64 groups it drops).
enum XMLLeafParsing {
    /// `S* [+-]? S* (0[xX] hex+ | digit+)` with S an XML space and nothing after the digits, in
    /// `Int64.min ... UInt64.max`. Hex values are magnitudes: `0xFFFFFFFFFFFFFFFF` is `UInt64.max`
    /// and `-0x8000000000000000` is `Int64.min`.
    static func integer(_ text: UnsafeRawBufferPointer) -> PropertyListInteger? {
        var index = 0
        let count = text.count
        while index < count, isXMLSpace(text[index]) { index += 1 }
        var negative = false
        if index < count, text[index] == UInt8(ascii: "-") || text[index] == UInt8(ascii: "+") {
            negative = text[index] == UInt8(ascii: "-")
            index += 1
            while index < count, isXMLSpace(text[index]) { index += 1 }
        }
        var hex = false
        if index + 1 < count, text[index] == UInt8(ascii: "0"), text[index + 1] | 0x20 == UInt8(ascii: "x") {
            hex = true
            index += 2
        }
        guard index < count else { return nil }
        var magnitude: UInt64 = 0
        while index < count {
            guard let digit = digitValue(text[index], hex: hex) else { return nil }
            let (shifted, overflow1) = magnitude.multipliedReportingOverflow(by: hex ? 16 : 10)
            let (sum, overflow2) = shifted.addingReportingOverflow(UInt64(digit))
            guard !overflow1, !overflow2 else { return nil }
            magnitude = sum
            index += 1
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return PropertyListInteger(Int64(bitPattern: 0 &- magnitude))  // wraps only for Int64.min, as intended
        }
        return PropertyListInteger(magnitude)
    }

    /// The value of one decimal or hexadecimal digit.
    @inline(__always)
    static func digitValue(_ byte: UInt8, hex: Bool) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(byte &- UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f") where hex: return UInt32(byte &- UInt8(ascii: "a") &+ 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F") where hex: return UInt32(byte &- UInt8(ascii: "A") &+ 10)
        default: return nil
        }
    }

    /// CF's spellings `nan`, `inf`, `+inf`, `-inf`, `infinity`, `+infinity`, `-infinity` (any
    /// case), or `S* [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?` with nothing after
    /// it. Out-of-range values become infinities or zeros, as `strtod` makes them.
    static func real(_ text: String) -> Double? {
        switch text.lowercased() {
        case "nan": return .nan
        case "inf", "+inf", "infinity", "+infinity": return .infinity
        case "-inf", "-infinity": return -.infinity
        default: break
        }
        let utf8 = Array(text.utf8)
        var index = 0
        while index < utf8.count, isXMLSpace(utf8[index]) { index += 1 }
        let numberStart = index
        if index < utf8.count, utf8[index] == UInt8(ascii: "+") || utf8[index] == UInt8(ascii: "-") { index += 1 }
        func digits() -> Int {
            let start = index
            while index < utf8.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(utf8[index]) { index += 1 }
            return index - start
        }
        var mantissaDigits = digits()
        if index < utf8.count, utf8[index] == UInt8(ascii: ".") {
            index += 1
            mantissaDigits += digits()
        }
        guard mantissaDigits > 0 else { return nil }
        if index < utf8.count, utf8[index] | 0x20 == UInt8(ascii: "e") {
            index += 1
            if index < utf8.count, utf8[index] == UInt8(ascii: "+") || utf8[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return nil }
        }
        guard index == utf8.count else { return nil }
        return Double(String(decoding: utf8[numberStart...], as: UTF8.self))
    }

    /// `[-]Y+-MM-DDTHH:MM:SSZ` exactly (no fractions, no shorter forms, no spaces), as CF reads it;
    /// the fields must be in range (CF would roll 2011-02-30 over into March; we refuse it).
    static func date(_ text: UnsafeRawBufferPointer) -> Date? {
        var index = 0
        let count = text.count
        var negative = false
        if index < count, text[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        var year: Int64 = 0
        let yearStart = index
        while index < count, let digit = digitValue(text[index], hex: false), index - yearStart < 10 {
            year = year * 10 + Int64(digit)
            index += 1
        }
        guard index > yearStart else { return nil }
        if negative { year = -year }
        func expect(_ byte: Character) -> Bool {
            guard index < count, let ascii = byte.asciiValue, text[index] == ascii else { return false }
            index += 1
            return true
        }
        func twoDigits() -> Int? {
            guard index + 1 < count, let high = digitValue(text[index], hex: false), let low = digitValue(text[index + 1], hex: false)
            else { return nil }
            index += 2
            return Int(high * 10 + low)
        }
        guard expect("-"), let month = twoDigits(), expect("-"), let day = twoDigits(), expect("T"),
            let hour = twoDigits(), expect(":"), let minute = twoDigits(), expect(":"), let second = twoDigits(),
            expect("Z"), index == count
        else { return nil }
        guard GregorianCalendar.yearRange.contains(year), (1...12).contains(month),
            (1...GregorianCalendar.daysInMonth(year: year, month: month)).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }
        return GregorianCalendar.date(.init(year: year, month: month, day: day, hour: hour, minute: minute, second: second))
    }

    /// Why base64 text did not decode, and where in it.
    struct Base64Failure: Error {
        var message: String
        var offset: Int
    }

    /// Decodes base64 with white space anywhere. Padding may be left off (the partial group is
    /// decoded, where CF would drop it); characters outside the alphabet are errors.
    static func base64(_ text: UnsafeRawBufferPointer) -> Result<[UInt8], Base64Failure> {
        var output: [UInt8] = []
        output.reserveCapacity(text.count / 4 * 3 + 3)
        var accumulator: UInt32 = 0
        var sextets = 0
        var padding = 0
        for index in 0..<text.count {
            let byte = text[index]
            if isXMLSpace(byte) { continue }
            if byte == UInt8(ascii: "=") {
                padding += 1
                continue
            }
            let value = decodeTable[Int(byte)]
            guard value != 0xFF else {
                return .failure(Base64Failure(message: "character 0x\(String(byte, radix: 16)) is not base64", offset: index))
            }
            guard padding == 0 else { return .failure(Base64Failure(message: "data after '=' padding", offset: index)) }
            accumulator = accumulator << 6 | UInt32(value)
            sextets += 1
            if sextets == 4 {
                output.append(UInt8(truncatingIfNeeded: accumulator >> 16))
                output.append(UInt8(truncatingIfNeeded: accumulator >> 8))
                output.append(UInt8(truncatingIfNeeded: accumulator))
                sextets = 0
                accumulator = 0
            }
        }
        switch (sextets, padding) {
        case (0, 0): break
        case (2, 0), (2, 2): output.append(UInt8(truncatingIfNeeded: accumulator >> 4))
        case (3, 0), (3, 1):
            output.append(UInt8(truncatingIfNeeded: accumulator >> 10))
            output.append(UInt8(truncatingIfNeeded: accumulator >> 2))
        default:
            return .failure(Base64Failure(message: "incomplete base64 group or misplaced '='", offset: text.count))
        }
        return .success(output)
    }

    /// Base64 alphabet values; 0xFF for bytes outside it.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(byte)] = UInt8(value)
        }
        return table
    }()
}
