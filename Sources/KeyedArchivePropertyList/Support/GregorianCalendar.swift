/// UTC calendar arithmetic in the proleptic Gregorian calendar with astronomical year numbering
/// (year 0 exists), as CoreFoundation uses for property-list dates.
///
/// Integer arithmetic only (Howard Hinnant's civil-date algorithms): exact, fast, locale-free.
/// Shared by the XML `<date>` form, OpenStep/`defaults` date text and `karchive print`.
package enum GregorianCalendar {
    /// A broken-down UTC time.
    package struct Components: Sendable, Hashable {
        package var year: Int64
        package var month: Int
        package var day: Int
        package var hour: Int
        package var minute: Int
        package var second: Int

        package init(year: Int64, month: Int, day: Int, hour: Int = 0, minute: Int = 0, second: Int = 0) {
            self.year = year
            self.month = month
            self.day = day
            self.hour = hour
            self.minute = minute
            self.second = second
        }
    }

    private static let secondsPerDay: Int64 = 86_400
    /// Days from 1970-01-01 to 2001-01-01.
    private static let referenceDaysSince1970: Int64 = 11_323

    /// The years a property-list date may have in every format here: 0 to 9999, what the
    /// four-digit ISO 8601 year of an XML `<date>` spells. CoreFoundation's XML code goes further
    /// (any 32-bit year), but binary readers refuse such dates (the corpus requires it), and one
    /// range for all formats keeps every value readable in each format it can be written in.
    package static let yearRange: ClosedRange<Int64> = 0...9999

    /// ``yearRange`` in seconds since 2001-01-01 00:00:00 UTC: from 0000-01-01T00:00:00Z up to,
    /// not including, 10000-01-01T00:00:00Z. NaN and infinities are outside it.
    package static let validSeconds: Range<Double> = -63_145_526_400 ..< 252_423_993_600

    /// The UTC time of a date with fractions of a second dropped (rounded down), or `nil` when
    /// the date is outside ``validSeconds``.
    package static func components(of date: Date) -> Components? {
        let interval = date.timeIntervalSinceReferenceDate
        guard validSeconds.contains(interval) else { return nil }
        let seconds = Int64(interval.rounded(.down))
        var days = seconds / secondsPerDay
        var secondOfDay = seconds % secondsPerDay
        if secondOfDay < 0 {
            secondOfDay += secondsPerDay
            days -= 1
        }
        let (year, month, day) = civil(fromDaysSince1970: days + referenceDaysSince1970)
        return Components(
            year: year, month: month, day: day,
            hour: Int(secondOfDay / 3600), minute: Int(secondOfDay % 3600 / 60), second: Int(secondOfDay % 60))
    }

    /// The date at a UTC time, minus `offsetSeconds` (a time-zone offset east of UTC). The fields
    /// must already be in range (years within ``yearRange``; wider years work arithmetically).
    package static func date(_ parts: Components, offsetSeconds: Int64 = 0) -> Date {
        let days = daysSince1970(year: parts.year, month: parts.month, day: parts.day) - referenceDaysSince1970
        let seconds = days * secondsPerDay + Int64(parts.hour * 3600 + parts.minute * 60 + parts.second) - offsetSeconds
        return Date(timeIntervalSinceReferenceDate: Double(seconds))
    }

    /// The number of days in a month.
    package static func daysInMonth(year: Int64, month: Int) -> Int {
        switch month {
        case 2:
            let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
            return leap ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// `days_from_civil`: days since 1970-01-01 of a date.
    package static func daysSince1970(year: Int64, month: Int, day: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// `civil_from_days`: the date of a day count since 1970-01-01.
    package static func civil(fromDaysSince1970 days: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
