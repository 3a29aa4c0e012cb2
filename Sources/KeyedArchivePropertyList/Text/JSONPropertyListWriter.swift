/// Writes a property list as JSON, for tooling (`karchive convert --format json`).
///
/// JSON cannot hold everything a property list can, so this output is **lossy** and there is no
/// JSON reader to come back with:
///
/// | property list | JSON |
/// |---|---|
/// | dictionary | object, entries in stored order; non-string keys stringified (integer `12` -> `"12"`, real, boolean `"true"`, date, base64 data, UID `"CF$UID:7"`, null `"null"`) |
/// | array, set | array |
/// | string | string (`"`, `\`, control characters (C0, DEL, C1) and U+2028/2029 escaped; everything else raw UTF-8) |
/// | integer | number (full `Int64.min ... UInt64.max` range, in decimal) |
/// | real | number, shortest round-trip form; NaN and infinities throw |
/// | boolean | `true` / `false` |
/// | data | base64 string |
/// | date | ISO 8601 UTC string, `2001-01-01T00:00:00Z`, with `.fff` milliseconds (the nearest) when not zero |
/// | UID | `{"CF$UID": n}` |
/// | null | `null` |
///
/// NaN and infinite reals throw ``PropertyListError/Code/unrepresentableValue`` rather than
/// becoming `null`, which would silently turn a number into "no value". Container keys, which
/// have no string form, throw too.
public enum JSONPropertyListWriter {
    /// Writes `value` as JSON: compact on one line, or `pretty` with two-space indentation,
    /// `": "` after keys and a final newline. Stops with `.lengthLimitExceeded` once the text
    /// would be longer than `maximumOutputLength` bytes.
    public static func write(_ value: PropertyListValue, pretty: Bool, maximumOutputLength: Int = .max) throws -> [UInt8] {
        var writer = JSONWriter(pretty: pretty, budget: OutputBudget(maximumOutputLength))
        try writer.write(value)
        if pretty { writer.output.append(UInt8(ascii: "\n")) }
        // The last value's text, never checked between values (a root scalar's is all of it).
        try writer.budget.check(writer.output.count)
        return writer.output
    }
}

/// The JSON writer's state; containers on an explicit stack, so depth costs no call stack.
private struct JSONWriter {
    enum Frame {
        case array([PropertyListValue], next: Int)
        case object([PropertyListDictionary.Entry], next: Int)
    }

    let pretty: Bool
    let budget: OutputBudget
    var output: [UInt8] = []
    var frames: [Frame] = []

    init(pretty: Bool, budget: OutputBudget) {
        self.pretty = pretty
        self.budget = budget
    }

    mutating func write(_ root: PropertyListValue) throws {
        try open(root)
        while let frame = frames.popLast() {
            try budget.check(output.count)
            let depth = frames.count + 1
            switch frame {
            case .array(let elements, let next):
                if next < elements.count {
                    frames.append(.array(elements, next: next + 1))
                    if next > 0 { output.append(UInt8(ascii: ",")) }
                    newline(depth)
                    try open(elements[next])
                } else {
                    newline(depth - 1)
                    output.append(UInt8(ascii: "]"))
                }
            case .object(let entries, let next):
                if next < entries.count {
                    frames.append(.object(entries, next: next + 1))
                    if next > 0 { output.append(UInt8(ascii: ",")) }
                    newline(depth)
                    appendString(try keyString(entries[next].key))
                    output.append(contentsOf: pretty ? Array(": ".utf8) : [UInt8(ascii: ":")])
                    try open(entries[next].value)
                } else {
                    newline(depth - 1)
                    output.append(UInt8(ascii: "}"))
                }
            }
        }
    }

    private mutating func newline(_ depth: Int) {
        guard pretty else { return }
        output.append(UInt8(ascii: "\n"))
        output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
    }

    private mutating func open(_ value: PropertyListValue) throws {
        switch value {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let bool): output.append(contentsOf: (bool ? "true" : "false").utf8)
        case .integer(let integer): output.append(contentsOf: integer.description.utf8)
        case .real(let real):
            guard real.value.isFinite else {
                throw failure("JSON has no \(real.value) (NaN and infinities are not numbers in JSON)")
            }
            output.append(contentsOf: real.value.description.utf8)
        case .string(let string): appendString(string.value)
        case .data(let data):
            output.append(UInt8(ascii: "\""))
            output.append(contentsOf: XMLBase64.encode(data))
            output.append(UInt8(ascii: "\""))
        case .date(let date):
            output.append(UInt8(ascii: "\""))
            try appendDate(date)
            output.append(UInt8(ascii: "\""))
        case .uid(let uid):
            output.append(contentsOf: (pretty ? "{\"CF$UID\": " : "{\"CF$UID\":").utf8)
            output.append(contentsOf: String(uid).utf8)
            output.append(UInt8(ascii: "}"))
        case .array(let elements), .set(let elements):
            if elements.isEmpty {
                output.append(contentsOf: "[]".utf8)
            } else {
                output.append(UInt8(ascii: "["))
                frames.append(.array(elements, next: 0))
            }
        case .dictionary(let dictionary):
            if dictionary.isEmpty {
                output.append(contentsOf: "{}".utf8)
            } else {
                output.append(UInt8(ascii: "{"))
                frames.append(.object(dictionary.entries, next: 0))
            }
        }
    }

    /// The string form of a dictionary key.
    private func keyString(_ key: PropertyListValue) throws -> String {
        switch key {
        case .string(let string): return string.value
        case .integer(let integer): return integer.description
        case .real(let real): return real.value.description
        case .bool(let bool): return bool ? "true" : "false"
        case .null: return "null"
        case .uid(let uid): return "CF$UID:\(uid)"
        case .data(let data): return String(decoding: XMLBase64.encode(data), as: UTF8.self)
        case .date(let date):
            guard let parts = GregorianCalendar.components(of: date) else { throw failure("date key has no ISO 8601 form") }
            var text: [UInt8] = []
            XMLDateFormat.append(parts, to: &text)
            return String(decoding: text, as: UTF8.self)
        case .array, .set, .dictionary:
            throw failure("a \(key.typeName) used as a dictionary key has no JSON form")
        }
    }

    private mutating func appendDate(_ date: Date) throws {
        // To the nearest millisecond, carried into the seconds: the double nearest a time
        // 2 ms past a second is often just below it, and truncating printed 1 ms.
        let interval = date.timeIntervalSinceReferenceDate
        var seconds = interval.rounded(.down)
        var milliseconds = ((interval - seconds) * 1000).rounded()
        if milliseconds >= 1000 {
            // Except past 9999-12-31T23:59:59.999, where the carry made a valid date one
            // that year 10000 has no form for.
            if GregorianCalendar.components(of: Date(timeIntervalSinceReferenceDate: seconds + 1)) != nil {
                (seconds, milliseconds) = (seconds + 1, 0)
            } else {
                milliseconds = 999
            }
        }
        guard let parts = GregorianCalendar.components(of: Date(timeIntervalSinceReferenceDate: seconds)) else {
            throw failure("date \(interval) has no ISO 8601 form")
        }
        XMLDateFormat.append(parts, to: &output)
        if let milliseconds = Int(exactly: milliseconds), milliseconds > 0 {
            output.removeLast()  // the "Z"
            output.append(UInt8(ascii: "."))
            output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: milliseconds / 100))
            output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: milliseconds / 10 % 10))
            output.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: milliseconds % 10))
            output.append(UInt8(ascii: "Z"))
        }
    }

    /// Appends a JSON string literal: `"` and `\` escaped, control characters as `\n`, `\t`, ...
    /// or `\uXXXX`; everything else as raw UTF-8. The controls escaped are C0 (which JSON
    /// requires), DEL and C1 (U+0080-009F: CSI, U+009B, is a terminal escape on its own), and
    /// U+2028 and U+2029 (line breaks to JavaScript): `karchive convert -f json` output may go
    /// to a terminal or into a script, and each is still the same JSON string.
    private mutating func appendString(_ string: String) {
        output.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var index = 0
            while index < utf8.count {
                let byte = utf8[index]
                switch byte {
                case UInt8(ascii: "\""): output.append(contentsOf: "\\\"".utf8)
                case UInt8(ascii: "\\"): output.append(contentsOf: "\\\\".utf8)
                case 0x0A: output.append(contentsOf: "\\n".utf8)
                case 0x0D: output.append(contentsOf: "\\r".utf8)
                case 0x09: output.append(contentsOf: "\\t".utf8)
                case 0x08: output.append(contentsOf: "\\b".utf8)
                case 0x0C: output.append(contentsOf: "\\f".utf8)
                case 0..<0x20, 0x7F: appendEscape(UInt16(byte))
                // U+0080-009F are C2 80 ... C2 9F (the input is valid UTF-8: a continuation follows).
                case 0xC2 where index + 1 < utf8.count && utf8[index + 1] < 0xA0:
                    index += 1
                    appendEscape(UInt16(utf8[index]))
                // U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
                case 0xE2 where index + 2 < utf8.count && utf8[index + 1] == 0x80 && (utf8[index + 2] == 0xA8 || utf8[index + 2] == 0xA9):
                    index += 2
                    appendEscape(0x2000 | UInt16(utf8[index] - 0x80))
                default: output.append(byte)
                }
                index += 1
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// Appends `\uXXXX` for a code unit.
    private mutating func appendEscape(_ unit: UInt16) {
        let hex = Array("0123456789abcdef".utf8)
        output.append(contentsOf: "\\u".utf8)
        for shift in stride(from: 12, through: 0, by: -4) {
            output.append(hex[Int((unit >> UInt16(shift)) & 0xF)])
        }
    }

    private func failure(_ message: String) -> PropertyListError {
        var path = ""
        for frame in frames {
            switch frame {
            case .array(_, let next): path += "[\(next - 1)]"
            case .object(let entries, let next):
                if !path.isEmpty { path += "." }
                if case .string(let key) = entries[next - 1].key { path += key.value } else { path += "<\(entries[next - 1].key.typeName) key>" }
            }
        }
        return PropertyListError(.unrepresentableValue, message, keyPath: path)
    }
}
