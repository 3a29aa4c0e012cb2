/// The date spelling of OpenStep text and of `defaults`: `2001-01-01 00:00:00 +0000`.
///
/// Converted by hand with the proleptic Gregorian calendar (no formatter, no locale), so it
/// behaves the same everywhere and costs nothing to set up.
public enum OpenStepDate {
    /// Formats a date in UTC as `yyyy-MM-dd HH:mm:ss +0000`; fractional seconds are dropped,
    /// as `defaults` does.
    public static func format(_ date: Date) -> String {
        guard let parts = GregorianCalendar.components(of: date) else {
            return String(describing: date.timeIntervalSinceReferenceDate) + " seconds since 2001-01-01"
        }
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value.magnitude)
            return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(parts.year, 4))-\(pad(Int64(parts.month), 2))-\(pad(Int64(parts.day), 2)) "
            + "\(pad(Int64(parts.hour), 2)):\(pad(Int64(parts.minute), 2)):\(pad(Int64(parts.second), 2)) +0000"
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
        // A day past the month's end is refused, as an hour past 23 is (2020-02-30 used to
        // roll over to March 1).
        guard GregorianCalendar.yearRange.contains(year), day <= GregorianCalendar.daysInMonth(year: year, month: Int(month)) else { return nil }
        var seconds: Int64 = 0
        var offset: Int64 = 0
        skipSpaces()
        if !scanner.isEmpty {
            _ = expect("T")
            skipSpaces()
            guard let hour = number(1...2), expect(":"), let minute = number(1...2), hour < 24, minute < 60 else { return nil }
            var second: Int64 = 0
            if expect(":") {
                // No leap second: 23:59:60 rolled over into the next day, which the XML
                // reader refuses.
                guard let value = number(1...2), value < 60 else { return nil }
                second = value
            }
            seconds = hour * 3600 + minute * 60 + second
            skipSpaces()
            if expect("Z") {
            } else if let sign = scanner.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                scanner.removeFirst()
                guard let hours = number(2...2), hours < 24 else { return nil }
                _ = expect(":")
                let minutes = number(2...2) ?? 0
                // `+0099` was 99 minutes.
                guard minutes < 60 else { return nil }
                offset = (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "-") ? -1 : 1)
            }
            skipSpaces()
            guard scanner.isEmpty else { return nil }
        }
        let midnight = GregorianCalendar.Components(year: year, month: Int(month), day: Int(day))
        let date = GregorianCalendar.date(midnight, offsetSeconds: offset - seconds)
        // In UTC too the year must be within 0...9999 (`0000-01-01 00:00:00 +0100` is in year
        // -1 there), the range every format's writer can spell.
        guard GregorianCalendar.components(of: date) != nil else { return nil }
        return date
    }
}
