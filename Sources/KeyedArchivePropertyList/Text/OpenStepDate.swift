/// The date spelling of OpenStep text and of `defaults`: `2001-01-01 00:00:00 +0000`.
///
/// Converted by hand with the proleptic Gregorian calendar (no formatter, no locale), so it
/// behaves the same everywhere and costs nothing to set up.
public enum OpenStepDate {
    /// Formats a date in UTC as `yyyy-MM-dd HH:mm:ss +0000`; fractional seconds are dropped,
    /// as `defaults` does.
    public static func format(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, abs(seconds) < 1e14 else { return String(describing: seconds) }
        let whole = Int64(seconds.rounded(.down))
        let days = whole >= 0 ? whole / 86_400 : (whole - 86_399) / 86_400
        let secondOfDay = whole - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(abs(value))
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2)) \(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay / 60 % 60, 2)):\(pad(secondOfDay % 60, 2)) +0000"
    }

    /// Parses `yyyy-MM-dd HH:mm:ss ±zzzz` (the offset optional, UTC when absent), or a date
    /// alone (`yyyy-MM-dd`, midnight UTC), or ISO 8601 `yyyy-MM-ddTHH:mm:ssZ`; `nil` otherwise.
    public static func parse(_ text: String) -> Date? {
        var scanner = Array(text.utf8)[...]
        func number(_ digits: ClosedRange<Int>) -> Int64? {
            var value: Int64 = 0
            var count = 0
            while let byte = scanner.first, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9"), count < digits.upperBound {
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
                count += 1
                scanner.removeFirst()
            }
            return digits.contains(count) ? value : nil
        }
        func expect(_ characters: String) -> Bool {
            guard let byte = scanner.first, characters.utf8.contains(byte) else { return false }
            scanner.removeFirst()
            return true
        }
        func skipSpaces() { while scanner.first == UInt8(ascii: " ") { scanner.removeFirst() } }

        skipSpaces()
        let negativeYear = expect("-")
        guard let rawYear = number(1...6), expect("-"), let month = number(1...2), expect("-"), let day = number(1...2),
            (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        let year = negativeYear ? -rawYear : rawYear
        var seconds: Int64 = 0
        var offset: Int64 = 0
        skipSpaces()
        if !scanner.isEmpty {
            _ = expect("T")
            skipSpaces()
            guard let hour = number(1...2), expect(":"), let minute = number(1...2), hour < 24, minute < 60 else { return nil }
            var second: Int64 = 0
            if expect(":") {
                guard let value = number(1...2), value < 61 else { return nil }
                second = value
            }
            seconds = hour * 3600 + minute * 60 + second
            skipSpaces()
            if expect("Z") {
            } else if let sign = scanner.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                scanner.removeFirst()
                guard let hours = number(2...2) else { return nil }
                _ = expect(":")
                let minutes = number(2...2) ?? 0
                offset = (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
            }
            skipSpaces()
            guard scanner.isEmpty else { return nil }
        }
        let days = days(fromCivil: year, month, day)
        return Date(timeIntervalSince1970: Double(days * 86_400 + seconds - offset))
    }

    /// Howard Hinnant's days-from-civil: days since 1970-01-01 of a proleptic Gregorian date.
    static func days(fromCivil year: Int64, _ month: Int64, _ day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of ``days(fromCivil:_:_:)``.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
