/// The `<date>` text form, `YYYY-MM-DDTHH:MM:SSZ` in UTC, converted the way CoreFoundation does:
/// the proleptic Gregorian calendar with astronomical year numbering (year 0 exists, year -2 is
/// written `-002` as `%04d` prints it), whole seconds rounded down (CF drops fractions).
///
/// Integer arithmetic only (no calendar objects), so it is exact and fast.
enum XMLDateFormat {
    private static let secondsPerDay: Int64 = 86_400
    /// Days from 1970-01-01 to 2001-01-01.
    private static let referenceDaysSince1970: Int64 = 11_323

    /// The years the writer and reader accept: CoreFoundation keeps the year in 32 bits.
    static let yearRange: ClosedRange<Int64> = Int64(Int32.min)...Int64(Int32.max)

    /// The broken-down UTC time of a date, or `nil` when it is not finite or its year is out of range.
    static func components(_ date: Date) -> (year: Int64, month: Int, day: Int, hour: Int, minute: Int, second: Int)? {
        let interval = date.timeIntervalSinceReferenceDate
        // 6.7e16 s is about 2.1 billion years, past the 32-bit year range checked below.
        guard interval.isFinite, abs(interval) < 6.7e16 else { return nil }
        let seconds = Int64(interval.rounded(.down))
        var days = seconds / secondsPerDay
        var secondOfDay = seconds % secondsPerDay
        if secondOfDay < 0 {
            secondOfDay += secondsPerDay
            days -= 1
        }
        let (year, month, day) = civil(fromDaysSince1970: days + referenceDaysSince1970)
        guard yearRange.contains(year) else { return nil }
        return (year, month, day, Int(secondOfDay / 3600), Int(secondOfDay % 3600 / 60), Int(secondOfDay % 60))
    }

    /// The date at the given UTC time; the fields must already be in range.
    static func date(year: Int64, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date {
        let days = daysSince1970(year: year, month: month, day: day) - referenceDaysSince1970
        let seconds = days * secondsPerDay + Int64(hour * 3600 + minute * 60 + second)
        return Date(timeIntervalSinceReferenceDate: Double(seconds))
    }

    /// Appends `YYYY-MM-DDTHH:MM:SSZ` exactly as CF's `%04d-%02d-%02dT%02d:%02d:%02dZ` prints it.
    static func append(_ parts: (year: Int64, month: Int, day: Int, hour: Int, minute: Int, second: Int), to output: inout [UInt8]) {
        // %04d pads to four characters including the sign: -2 -> "-002", 12345 -> "12345".
        let digits = Array(String(parts.year.magnitude).utf8)
        let width = parts.year < 0 ? 3 : 4
        if parts.year < 0 { output.append(UInt8(ascii: "-")) }
        if digits.count < width { output.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digits.count)) }
        output.append(contentsOf: digits)
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
    private static func appendTwoDigits(_ value: Int, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value / 10))
        output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value % 10))
    }

    /// The number of days in a month of the proleptic Gregorian calendar.
    static func daysInMonth(year: Int64, month: Int) -> Int {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Howard Hinnant's `days_from_civil`: days since 1970-01-01 of a proleptic Gregorian date.
    private static func daysSince1970(year: Int64, month: Int, day: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// Howard Hinnant's `civil_from_days`: the proleptic Gregorian date of a day count.
    private static func civil(fromDaysSince1970 days: Int64) -> (Int64, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }
}
