/// Writes the old NeXTSTEP/OpenStep text format in the layout Apple's `description` and macOS
/// `defaults read` print:
///
/// ```
/// {
///     Name = Ada;
///     "night-mode" = 1;
///     Tags =     (
///         a,
///         "b c"
///     );
/// }
/// ```
///
/// OpenStep text has only strings, data, arrays and dictionaries, so other scalars are written
/// as strings the way `defaults` prints them (or, with ``Options/ScalarStyle/gnustep``, as
/// GNUstep's typed values, which ``OpenStepPropertyListReader`` reads back with their types):
///
/// | value | `.strings` (default) | `.gnustep` |
/// |---|---|---|
/// | boolean | `1` / `0` | `<*BY>` / `<*BN>` |
/// | integer | `42` | `<*I42>` |
/// | real | `0.5` (shortest form; whole values without `.0`, like `defaults`) | `<*R0.5>` |
/// | date | `"2001-01-01 00:00:00 +0000"` (UTC, whole seconds) | `<*D2001-01-01 00:00:00 +0000>` |
/// | UID | `{ "CF$UID" = 5; }` (the XML spelling) | `{ "CF$UID" = <*I5>; }` (reads back as that dictionary) |
/// | set | an array | an array |
/// | null | error ``PropertyListError/Code/unrepresentableValue`` | same |
///
/// Strings are left unquoted only when they are non-empty ASCII letters and digits (as Apple
/// does; `"tile-data"` is quoted). Quoted strings escape `"` and `\`, write `\n`, `\t`, `\r`,
/// and `\Uxxxx` (UTF-16 units, lower-case hex) for other control characters and everything
/// outside ASCII, so the output is plain ASCII. Data is `<0fbd1234 5678>` in groups of 4 bytes.
public enum OpenStepPropertyListWriter {
    /// How the writer spells values the OpenStep format has no type for.
    public struct Options: Sendable, Hashable {
        /// Spelling of booleans, numbers and dates.
        public enum ScalarStyle: Sendable, Hashable {
            /// As strings, the way `defaults read` prints them.
            case strings
            /// As GNUstep typed values (`<*I42>`), which keep their types when read back.
            case gnustep
        }

        /// Spelling of booleans, numbers and dates.
        public var scalarStyle: ScalarStyle
        /// End the output with a newline (as `defaults read` does).
        public var trailingNewline: Bool
        /// Write dictionary entries sorted by key text (as Apple's `description` and `defaults`
        /// do) rather than in their stored order.
        public var sortsKeys: Bool
        /// Stop with `.lengthLimitExceeded` once the text would be longer than this many bytes.
        public var maximumOutputLength: Int

        /// Creates options.
        public init(scalarStyle: ScalarStyle = .strings, trailingNewline: Bool = true, sortsKeys: Bool = false, maximumOutputLength: Int = .max) {
            self.scalarStyle = scalarStyle
            self.trailingNewline = trailingNewline
            self.sortsKeys = sortsKeys
            self.maximumOutputLength = maximumOutputLength
        }
    }

    /// Writes a property list to bytes.
    public static func write(_ value: PropertyListValue) throws -> [UInt8] {
        try write(value, options: Options())
    }

    /// Writes a property list to bytes with the given options.
    public static func write(_ value: PropertyListValue, options: Options) throws -> [UInt8] {
        var output: [UInt8] = []
        try OpenStepEmitter(options: options).emit(value, into: &output)
        if options.trailingNewline { output.append(0x0A) }
        // The whole text, the last value's included (the emitter checks between values only:
        // a root scalar's text is all of it).
        try OutputBudget(options.maximumOutputLength).check(output.count)
        return output
    }

    /// The OpenStep text of a value, as a string.
    public static func string(_ value: PropertyListValue, options: Options = Options(trailingNewline: false)) throws -> String {
        String(decoding: try write(value, options: options), as: UTF8.self)
    }
}

/// The iterative emitter: an explicit stack of open containers, so deep values cannot overflow
/// the call stack.
struct OpenStepEmitter {
    let options: OpenStepPropertyListWriter.Options

    private enum Work {
        /// Emit a value at a nesting level.
        case value(PropertyListValue, level: Int, path: String)
        /// Emit literal text.
        case text(String)
    }

    func emit(_ root: PropertyListValue, into output: inout [UInt8]) throws {
        var work: [Work] = [.value(root, level: 0, path: "")]
        let budget = OutputBudget(options.maximumOutputLength)
        while let item = work.popLast() {
            try budget.check(output.count)
            switch item {
            case .text(let text):
                output.append(contentsOf: text.utf8)
            case .value(let value, let level, let path):
                switch value {
                case .array(let elements), .set(let elements):
                    try checkDepth(level, path: path)
                    indent(level, &output)
                    output.append(UInt8(ascii: "("))
                    output.append(0x0A)
                    // Pushed in reverse, so they pop in order.
                    work.append(.text(String(repeating: "    ", count: level) + ")"))
                    for index in elements.indices.reversed() {
                        work.append(.text(index == elements.count - 1 ? "\n" : ",\n"))
                        work.append(.value(elements[index], level: level + 1, path: "\(path)[\(index)]"))
                        work.append(.text(String(repeating: "    ", count: level + 1)))
                    }
                case .dictionary(let dictionary):
                    try checkDepth(level, path: path)
                    indent(level, &output)
                    output.append(UInt8(ascii: "{"))
                    output.append(0x0A)
                    work.append(.text(String(repeating: "    ", count: level) + "}"))
                    var entries = try dictionary.entries.map {
                        (text: try keyText($0.key, path: path), raw: Array(($0.key.stringValue ?? Self.plainText($0.key) ?? "").utf8), value: $0.value)
                    }
                    if options.sortsKeys {
                        // By the key's UTF-8 bytes (Unicode scalar order); ties keep their order.
                        entries = entries.enumerated().sorted { a, b in
                            a.element.raw == b.element.raw ? a.offset < b.offset : a.element.raw.lexicographicallyPrecedes(b.element.raw)
                        }.map(\.element)
                    }
                    for entry in entries.reversed() {
                        let key = entry.text
                        let childPath = path.isEmpty ? key : path + "." + key
                        work.append(.text(";\n"))
                        work.append(.value(entry.value, level: level + 1, path: childPath))
                        work.append(.text(String(repeating: "    ", count: level + 1) + key + " = "))
                    }
                case .uid(let uid):
                    // Written as a dictionary: a level of nesting to every reader.
                    try checkDepth(level, path: path)
                    let number = options.scalarStyle == .gnustep ? "<*I\(uid)>" : String(uid)
                    output.append(contentsOf: "{ \"CF$UID\" = \(number); }".utf8)
                case .null:
                    throw PropertyListError(.unrepresentableValue, "null cannot be written as OpenStep text", keyPath: path)
                default:
                    output.append(contentsOf: try scalarText(value, path: path).utf8)
                }
            }
        }
    }

    /// Refuses a container at `level` (that many open around it) past the readers' depth
    /// limit: the text was written, then refused by ours and Foundation's reader.
    private func checkDepth(_ level: Int, path: String) throws {
        guard level < DecodingLimits.default.maximumDepth else {
            // The XML writer's code for the same refusal.
            throw PropertyListError(.unrepresentableValue, "nesting deeper than \(DecodingLimits.default.maximumDepth)", keyPath: path)
        }
    }

    private func indent(_ level: Int, _ output: inout [UInt8]) {
        for _ in 0..<level { output.append(contentsOf: [0x20, 0x20, 0x20, 0x20]) }
    }

    /// A dictionary key: strings as strings, other scalars by their text (always quoted).
    private func keyText(_ key: PropertyListValue, path: String) throws -> String {
        switch key {
        case .string(let string): return Self.quotedIfNeeded(string.value)
        case .bool, .integer, .real, .date:
            try checkDate(key, path: path)
            return Self.quoted(Self.plainText(key) ?? "")
        default:
            throw PropertyListError(.unrepresentableValue, "a \(key.typeName) dictionary key cannot be written as OpenStep text", keyPath: path)
        }
    }

    /// Refuses a date the readers cannot read back (not finite, or outside years 0...9999),
    /// as the XML writer refuses it: it was written as "1e+18 seconds since 2001-01-01", a
    /// string, or a typed value no reader takes.
    private func checkDate(_ value: PropertyListValue, path: String) throws {
        if case .date(let date) = value, GregorianCalendar.components(of: date) == nil {
            throw PropertyListError(
                .unrepresentableValue, "date \(date.timeIntervalSinceReferenceDate) has no OpenStep form (not finite or outside years 0...9999)",
                keyPath: path)
        }
    }

    private func scalarText(_ value: PropertyListValue, path: String) throws -> String {
        if case .string(let string) = value { return Self.quotedIfNeeded(string.value) }
        if case .data(let data) = value { return Self.dataText(data) }
        try checkDate(value, path: path)
        if options.scalarStyle == .gnustep {
            switch value {
            case .bool(let bool): return bool ? "<*BY>" : "<*BN>"
            case .integer(let integer): return "<*I\(integer)>"
            case .real(let real): return "<*R\(Self.realText(real.value))>"
            case .date(let date): return "<*D\(OpenStepDate.format(date))>"
            default: break
            }
        }
        guard let text = Self.plainText(value) else {
            throw PropertyListError(.unrepresentableValue, "a \(value.typeName) cannot be written as OpenStep text", keyPath: path)
        }
        return Self.quotedIfNeeded(text, unquotedSet: OpenStepParser.isUnquotedCharacter)
    }

    /// The text `defaults` shows for a boolean, number or date.
    static func plainText(_ value: PropertyListValue) -> String? {
        switch value {
        case .bool(let bool): bool ? "1" : "0"
        case .integer(let integer): integer.description
        case .real(let real): realText(real.value)
        case .date(let date): OpenStepDate.format(date)
        default: nil
        }
    }

    /// The shortest text that reads back as the same double, without a `.0` on whole values.
    static func realText(_ value: Double) -> String {
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        return text
    }

    static func dataText(_ data: Data) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = [UInt8(ascii: "<")]
        bytes.reserveCapacity(data.count * 2 + data.count / 4 + 2)
        for (index, byte) in data.enumerated() {
            if index > 0 && index % 4 == 0 { bytes.append(0x20) }
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        }
        bytes.append(UInt8(ascii: ">"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Apple's rule for its own output: plain only when non-empty ASCII letters and digits.
    static func isAppleUnquoted(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }

    static func quotedIfNeeded(_ text: String, unquotedSet: (UInt8) -> Bool = isAppleUnquoted) -> String {
        if !text.isEmpty && text.utf8.allSatisfy(unquotedSet) { return text }
        return quoted(text)
    }

    static func quoted(_ text: String) -> String {
        let hex = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = [UInt8(ascii: "\"")]
        bytes.reserveCapacity(text.utf8.count + 2)
        for unit in text.utf16 {
            switch unit {
            case 0x22: bytes.append(contentsOf: [0x5C, 0x22])
            case 0x5C: bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x20..<0x7F: bytes.append(UInt8(unit))
            default:
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "U")])
                for shift in stride(from: 12, through: 0, by: -4) { bytes.append(hex[Int((unit >> UInt16(shift)) & 0xF)]) }
            }
        }
        bytes.append(UInt8(ascii: "\""))
        return String(decoding: bytes, as: UTF8.self)
    }
}
