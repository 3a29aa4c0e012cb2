/// The `<date>` text form, `YYYY-MM-DDTHH:MM:SSZ` in UTC, written the way CoreFoundation writes
/// it: year 0 exists, year -2 is written `-002` as `%04d` prints it, and whole seconds are
/// rounded down (CF drops fractions). The calendar arithmetic is ``GregorianCalendar``'s.
enum XMLDateFormat {
    /// Appends `YYYY-MM-DDTHH:MM:SSZ` exactly as CF's `%04d-%02d-%02dT%02d:%02d:%02dZ` prints it.
    static func append<Output: ByteOutput>(_ parts: GregorianCalendar.Components, to output: inout Output) {
        // %04d pads to four characters including the sign: -2 -> "-002", 12345 -> "12345".
        var magnitude = parts.year.magnitude
        var digits = 0
        var reversed: UInt64 = 0  // the decimal digits, last first, four bits each (a year has at most 20)
        var reversedHigh: UInt64 = 0
        repeat {
            let digit = UInt64(magnitude % 10)
            if digits < 16 { reversed |= digit << UInt64(4 * digits) } else { reversedHigh |= digit << UInt64(4 * (digits - 16)) }
            magnitude /= 10
            digits += 1
        } while magnitude > 0
        let width = parts.year < 0 ? 3 : 4
        if parts.year < 0 { output.append(UInt8(ascii: "-")) }
        for _ in digits..<Swift.max(width, digits) { output.append(UInt8(ascii: "0")) }
        for position in stride(from: digits - 1, through: 0, by: -1) {
            let digit = position < 16 ? reversed >> UInt64(4 * position) : reversedHigh >> UInt64(4 * (position - 16))
            output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: digit & 0xF))
        }
        output.append(UInt8(ascii: "-"))
        appendTwoDigits(parts.month, to: &output)
        output.append(UInt8(ascii: "-"))
        appendTwoDigits(parts.day, to: &output)
        output.append(UInt8(ascii: "T"))
        appendTwoDigits(parts.hour, to: &output)
        output.append(UInt8(ascii: ":"))
        appendTwoDigits(parts.minute, to: &output)
        output.append(UInt8(ascii: ":"))
        appendTwoDigits(parts.second, to: &output)
        output.append(UInt8(ascii: "Z"))
    }

    @inline(__always)
    private static func appendTwoDigits<Output: ByteOutput>(_ value: Int, to output: inout Output) {
        output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10))
        output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10))
    }
}
