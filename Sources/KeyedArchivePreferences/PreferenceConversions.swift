/// Apple's conversions for the typed getters (`-[NSUserDefaults boolForKey:]` and friends,
/// `CFPreferencesGetAppBooleanValue`, `-[NSString integerValue]`), applied to stored values.
///
/// | getter | stored value | result |
/// |---|---|---|
/// | bool | boolean / number | the value / non-zero |
/// |  | string | `YES` or `true` (any case) → true; otherwise its leading integer ≠ 0 (`"1"` → true) |
/// | integer | number | truncated toward zero, clamped (`3.7` → 3, `true` → 1) |
/// |  | string | leading integer after white space, Unicode's (`"42abc"` → 42, `"3.7"` → 3, `"\u{A0}7"` → 7, `"abc"` → 0) |
/// | double, float | number / boolean | the value / 1 or 0 |
/// |  | string | leading decimal number (`"2.5 kg"` → 2.5), else 0 |
/// | string | string / number / boolean | the string / the number's text (`1`, `0.5`; booleans `1`, `0`) |
/// | url | string | a file URL of the path, `~` expanded |
/// |  | data | an `NSURL` keyed archive (what `set(_: URL)` writes for non-file URLs) |
/// | data, date, array, dictionary | that type | the value; anything else gives `nil` |
///
/// Missing keys give `false`, `0`, `0.0` or `nil`, as on Apple platforms.
public enum PreferenceConversions {
    /// `bool(forKey:)`'s conversion.
    public static func bool(_ value: PropertyListValue?) -> Bool {
        switch value {
        case .bool(let bool)?: return bool
        case .integer(let integer)?: return integer.bitPattern != 0
        case .real(let real)?: return real.value != 0
        case .string(let string)?:
            let text = string.value
            if text.caseInsensitiveEqualsASCII("yes") || text.caseInsensitiveEqualsASCII("true") { return true }
            return leadingInteger(text) != 0
        default: return false
        }
    }

    /// `integer(forKey:)`'s conversion.
    public static func integer(_ value: PropertyListValue?) -> Int {
        switch value {
        case .bool(let bool)?: return bool ? 1 : 0
        case .integer(let integer)?:
            if let signed = integer.int64Value { return Int(truncatingIfNeeded: signed) }
            return Int.max
        case .real(let real)?: return clampedInteger(real.value)
        case .string(let string)?: return leadingInteger(string.value)
        default: return 0
        }
    }

    /// `double(forKey:)`'s conversion.
    public static func double(_ value: PropertyListValue?) -> Double {
        switch value {
        case .bool(let bool)?: return bool ? 1 : 0
        case .integer(let integer)?: return integer.int64Value.map(Double.init) ?? Double(integer.bitPattern)
        case .real(let real)?: return real.value
        case .string(let string)?: return leadingDouble(string.value)
        default: return 0
        }
    }

    /// `string(forKey:)`'s conversion: strings, and numbers as their text.
    public static func string(_ value: PropertyListValue?) -> String? {
        switch value {
        case .string(let string)?: return string.value
        case .bool(let bool)?: return bool ? "1" : "0"
        case .integer(let integer)?: return integer.description
        case .real(let real)?:
            // A 4-byte real at its own precision, as NSNumber's stringValue prints a float
            // (`0.1`, not the `0.10000000149011612` its widening to Double spells).
            var text = real.isSinglePrecision ? Float(real.value).description : real.value.description
            if text.hasSuffix(".0") { text.removeLast(2) }
            return text
        default: return nil
        }
    }

    /// `url(forKey:)`'s conversion.
    public static func url(_ value: PropertyListValue?) -> URL? {
        switch value {
        case .string(let string)?: return URL(fileURLWithPath: expandingTilde(string.value))
        case .data(let data)?: return URLArchive.decode(data)
        default: return nil
        }
    }

    /// `dictionary(forKey:)`'s conversion: dictionaries whose keys are all strings.
    public static func dictionary(_ value: PropertyListValue?) -> [String: PropertyListValue]? {
        guard case .dictionary(let dictionary)? = value else { return nil }
        var result: [String: PropertyListValue] = [:]
        for entry in dictionary.entries {
            guard case .string(let key) = entry.key else { return nil }
            assign(entry.value, to: key.value, in: &result)
        }
        return result
    }

    /// Sets `result[key]` to `value`, key and all. Two spellings of a key (`café` composed and
    /// decomposed) are one `String` key, and an update keeps the spelling already there: the
    /// later entry's value under the earlier entry's key was a pair no file held.
    static func assign(_ value: PropertyListValue, to key: String, in result: inout [String: PropertyListValue]) {
        if result.updateValue(value, forKey: key) != nil {
            result.removeValue(forKey: key)
            result[key] = value
        }
    }

    /// Whether `text` starts, after white space and an optional sign, with a digit or a point
    /// and a digit: a number the leading-number conversions read, not the 0 they give for
    /// anything else.
    static func startsWithNumber(_ text: String) -> Bool {
        var bytes = afterLeadingWhiteSpace(text)
        if let sign = bytes.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") { bytes.removeFirst() }
        if let point = bytes.first, point == UInt8(ascii: ".") { bytes.removeFirst() }
        guard let digit = bytes.first else { return false }
        return digit >= UInt8(ascii: "0") && digit <= UInt8(ascii: "9")
    }

    /// Whether `text` is a boolean's spelling (`YES`, `NO`, `true`, `false`, any case) or starts
    /// with a number.
    static func saysBool(_ text: String) -> Bool {
        for word in ["yes", "no", "true", "false"] where text.caseInsensitiveEqualsASCII(word) { return true }
        return startsWithNumber(text)
    }

    /// The value `-[NSString integerValue]` gives: optional white space, an optional sign and
    /// digits; anything after is ignored; overflow clamps.
    static func leadingInteger(_ text: String) -> Int {
        var bytes = afterLeadingWhiteSpace(text)
        var negative = false
        if let sign = bytes.first, sign == UInt8(ascii: "-") || sign == UInt8(ascii: "+") {
            negative = sign == UInt8(ascii: "-")
            bytes.removeFirst()
        }
        var magnitude: UInt64 = 0
        var overflow = false
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { break }
            let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            if o1 || o2 { overflow = true; break }
            magnitude = sum
        }
        if negative {
            if overflow || magnitude > UInt64(Int.max) + 1 { return Int.min }
            return magnitude == UInt64(Int.max) + 1 ? Int.min : -Int(magnitude)
        }
        return overflow || magnitude > UInt64(Int.max) ? Int.max : Int(magnitude)
    }

    /// The value `-[NSString doubleValue]` gives: the longest leading decimal number, after
    /// white space as ``afterLeadingWhiteSpace(_:)`` skips it (Foundation on Linux skips no
    /// line breaks there, and skips U+200B, which Unicode does not call white space).
    static func leadingDouble(_ text: String) -> Double {
        let bytes = Array(afterLeadingWhiteSpace(text))
        var index = 0
        let start = index
        func digits() -> Int {
            let from = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
            return index - from
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
        var count = digits()
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            count += digits()
        }
        guard count > 0 else { return 0 }
        var end = index
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") { index += 1 }
            if digits() > 0 { end = index }
        }
        return Double(String(decoding: bytes[start..<end], as: UTF8.self)) ?? 0
    }

    /// The UTF-8 of `text` past its leading white space: Unicode's (no-break and em spaces,
    /// line and paragraph separators, NEL), which Foundation's `integerValue` skips too, not
    /// only ASCII's (`"\u{A0}7"` was 0 where `UserDefaults.integer(forKey:)` says 7).
    private static func afterLeadingWhiteSpace(_ text: String) -> Substring.UTF8View {
        let scalars = text.unicodeScalars
        let start = scalars.firstIndex { !$0.properties.isWhitespace } ?? scalars.endIndex
        return text[start...].utf8
    }

    static func clampedInteger(_ value: Double) -> Int {
        if value.isNaN { return 0 }
        if value >= 9.223372036854775807e18 { return Int.max }
        if value <= -9.223372036854775808e18 { return Int.min }
        return Int(value)
    }

    /// `~` and `~/...` become the home directory (`~user` forms are left alone).
    static func expandingTilde(_ path: String) -> String {
        if path == "~" { return SystemFiles.homeDirectory() }
        if path.hasPrefix("~/") { return SystemFiles.homeDirectory() + path.dropFirst() }
        return path
    }

    /// The home directory as `~`, as Apple stores file URLs' paths.
    static func abbreviatingTilde(_ path: String) -> String {
        let home = SystemFiles.homeDirectory()
        if path == home { return "~" }
        if path.hasPrefix(home + "/") { return "~" + path.dropFirst(home.count) }
        return path
    }
}

extension String {
    fileprivate func caseInsensitiveEqualsASCII(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        return zip(utf8, other.utf8).allSatisfy { a, b in
            let lower = a >= UInt8(ascii: "A") && a <= UInt8(ascii: "Z") ? a + 32 : a
            return lower == b
        }
    }
}
