/// Reads the old NeXTSTEP/OpenStep text format: `{ key = value; }`, `( a, b )`, `<0fbd 12>`,
/// quoted and unquoted strings, `//` and `/* */` comments.
///
/// The grammar and escapes follow CoreFoundation's `CFOldStylePList.c`:
/// - every scalar is a string (the format has no numbers, booleans or dates); GNUstep's typed
///   values `<*I12>`, `<*R1.5>`, `<*BY>`, `<*D2001-01-01 00:00:00 +0000>` are read as integers,
///   reals, booleans and dates;
/// - strings are quoted with `"` or `'` and take the escapes `\a \b \f \n \r \t \v`, `\"`,
///   `\\`, `\U` with up to four hex digits (a UTF-16 unit; pairs of surrogates combine, a lone
///   surrogate becomes U+FFFD), and octal `\0`–`\377` with up to three digits, mapped through
///   the NeXTSTEP Latin encoding as CF does; any other escaped character stands for itself;
/// - unquoted strings use `A-Z a-z 0-9 _ $ / : . -`;
/// - a dictionary entry `key;` means `key = key;` and a document that is a string followed by
///   more text is read as a strings file (dictionary entries without the braces);
/// - an empty document (only white space and comments) is an empty dictionary; text with no
///   characters at all (nothing, or only a byte-order mark) is refused, as CoreFoundation
///   refuses it.
///
/// Input is UTF-8 (with or without a byte-order mark), or UTF-16 or UTF-32 in either byte
/// order with a byte-order mark (as CoreFoundation reads them; strings files are classically
/// UTF-16), converted to UTF-8 first, so byte offsets in errors then refer to the converted
/// text. Parsing is iterative (an explicit stack), bounded by ``DecodingLimits``, and every
/// error carries the byte offset and line.
public enum OpenStepPropertyListReader {
    /// Reads a property list from bytes.
    public static func read(_ bytes: UnsafeRawBufferPointer, limits: DecodingLimits = .default) throws -> PropertyListValue {
        try read(bytes, limits: limits, acceptsTypedValues: true)
    }

    /// Reads as ``read(_:limits:)`` does, or, with `acceptsTypedValues` false, as
    /// CoreFoundation reads OpenStep text: GNUstep's `<*I5>` is then malformed data, not an
    /// integer (for text that must mean what it means to Foundation, such as `-Key value`
    /// arguments and `defaults write` values).
    package static func read(_ bytes: UnsafeRawBufferPointer, limits: DecodingLimits, acceptsTypedValues: Bool) throws -> PropertyListValue {
        if let utf8 = try XMLTextEncoding.utf8OfMarkedWideText(bytes) {
            return try utf8.withUnsafeBytes { buffer in
                var parser = OpenStepParser(buffer, limits: limits, acceptsTypedValues: acceptsTypedValues)
                return try parser.parseDocument()
            }
        }
        var parser = OpenStepParser(bytes, limits: limits, acceptsTypedValues: acceptsTypedValues)
        return try parser.parseDocument()
    }

    /// Reads a property list from a string.
    public static func read(_ text: String, limits: DecodingLimits = .default) throws -> PropertyListValue {
        var text = text
        return try text.withUTF8 { try read(UnsafeRawBufferPointer($0), limits: limits) }
    }
}

/// The parser state over UTF-8 bytes.
struct OpenStepParser {
    private let bytes: UnsafeRawBufferPointer
    private let limits: DecodingLimits
    private var position = 0
    private var objectCount = 0
    /// Whether GNUstep's typed values (`<*I5>`) are read; CoreFoundation does not read them.
    private let acceptsTypedValues: Bool

    init(_ bytes: UnsafeRawBufferPointer, limits: DecodingLimits, acceptsTypedValues: Bool = true) {
        self.bytes = bytes
        self.limits = limits
        self.acceptsTypedValues = acceptsTypedValues
        // A UTF-8 byte-order mark is not part of the text.
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { position = 3 }
    }

    /// An open container on the explicit parse stack.
    private enum Frame {
        case array([PropertyListValue])
        /// `implicit` is the brace-less dictionary of a strings file; `index` finds keys fast
        /// (a repeated key replaces the earlier value, as CFDictionarySetValue does).
        case dictionary(PropertyListDictionary, index: [PropertyListString: Int], key: PropertyListString?, implicit: Bool)
    }

    /// What the parser expects next.
    private enum State {
        case value
        case arrayElementOrEnd
        case afterArrayElement
        case dictionaryKeyOrEnd
        case afterDictionaryValue
    }

    // MARK: Document

    mutating func parseDocument() throws -> PropertyListValue {
        // No characters at all (nothing, or only a byte-order mark) is no document, as
        // CoreFoundation says ("the string is empty"); white space alone is an empty one.
        guard position < bytes.count else {
            throw PropertyListError(.unrecognizedFormat, "empty text is not a property list", byteOffset: position)
        }
        guard try skipWhitespaceAndComments() else {
            return .dictionary(PropertyListDictionary())
        }
        let start = position
        let root = try parse(stack: [], state: .value)
        if try skipWhitespaceAndComments() {
            // A single string followed by more text is the start of a strings file.
            guard case .string = root else {
                throw error(.syntax, "junk after the property list")
            }
            position = start
            objectCount = 0
            let frame = Frame.dictionary(PropertyListDictionary(), index: [:], key: nil, implicit: true)
            return try parse(stack: [frame], state: .dictionaryKeyOrEnd)
        }
        return root
    }

    /// The state machine: runs until the bottom frame closes (or, with an empty stack, until
    /// one value is read).
    private mutating func parse(stack initialStack: [Frame], state initialState: State) throws -> PropertyListValue {
        var stack = initialStack
        var state = initialState
        while true {
            var produced: PropertyListValue?
            switch state {
            case .value:
                guard try skipWhitespaceAndComments() else { throw error(.truncated, "unexpected end of text where a value was expected") }
                let byte = bytes[position]
                switch byte {
                case UInt8(ascii: "{"):
                    position += 1
                    try push(&stack, .dictionary(PropertyListDictionary(), index: [:], key: nil, implicit: false))
                    state = .dictionaryKeyOrEnd
                case UInt8(ascii: "("):
                    position += 1
                    try push(&stack, .array([]))
                    state = .arrayElementOrEnd
                case UInt8(ascii: "<"):
                    produced = try parseDataOrTyped()
                default:
                    guard let string = try parseString() else {
                        throw error(.syntax, "unexpected character \(describe(byte)) where a value was expected")
                    }
                    produced = .string(string)
                }
            case .arrayElementOrEnd:
                guard try skipWhitespaceAndComments() else { throw error(.truncated, "expected ')' to end the array") }
                if bytes[position] == UInt8(ascii: ")") {
                    position += 1
                    produced = try pop(&stack)
                } else {
                    state = .value
                }
            case .afterArrayElement:
                guard try skipWhitespaceAndComments() else { throw error(.truncated, "expected ',' or ')' in the array") }
                switch bytes[position] {
                case UInt8(ascii: ","):
                    position += 1
                    state = .arrayElementOrEnd
                case UInt8(ascii: ")"):
                    position += 1
                    produced = try pop(&stack)
                default:
                    throw error(.syntax, "expected ',' or ')' in the array, found \(describe(bytes[position]))")
                }
            case .dictionaryKeyOrEnd:
                let implicit: Bool
                if case .dictionary(_, _, _, let isImplicit)? = stack.last { implicit = isImplicit } else { implicit = false }
                guard try skipWhitespaceAndComments() else {
                    if implicit { return try pop(&stack) }
                    throw error(.truncated, "expected '}' to end the dictionary")
                }
                if bytes[position] == UInt8(ascii: "}") && !implicit {
                    position += 1
                    produced = try pop(&stack)
                    break
                }
                guard let key = try parseString() else {
                    throw error(.syntax, "expected a dictionary key (a string), found \(describe(bytes[position]))")
                }
                // Keys count toward maximumObjectCount as in the binary and XML readers.
                try countObject()
                guard try skipWhitespaceAndComments() else { throw error(.truncated, "expected '=' or ';' after the key") }
                switch bytes[position] {
                case UInt8(ascii: ";"):
                    // `key;` is the strings-file shorthand for `key = key;`.
                    position += 1
                    try countObject()
                    try setEntry(&stack, key: key, value: .string(key))
                    state = .dictionaryKeyOrEnd
                case UInt8(ascii: "="):
                    position += 1
                    setPendingKey(&stack, key)
                    state = .value
                default:
                    throw error(.syntax, "expected '=' or ';' after the key, found \(describe(bytes[position]))")
                }
            case .afterDictionaryValue:
                guard try skipWhitespaceAndComments(), bytes[position] == UInt8(ascii: ";") else {
                    throw error(.syntax, "missing ';' after the dictionary value")
                }
                position += 1
                state = .dictionaryKeyOrEnd
            }

            guard let value = produced else { continue }
            try countObject()
            guard let top = stack.indices.last else { return value }
            switch stack[top] {
            case .array(var elements):
                stack[top] = .array([])  // keep the array uniquely referenced while appending
                elements.append(value)
                stack[top] = .array(elements)
                state = .afterArrayElement
            case .dictionary(_, _, let key, _):
                guard let key else { throw error(.syntax, "a value without a key") }
                try setEntry(&stack, key: key, value: value)
                state = .afterDictionaryValue
            }
        }
    }

    private mutating func push(_ stack: inout [Frame], _ frame: Frame) throws {
        guard stack.count < limits.maximumDepth else {
            throw error(.depthLimitExceeded, "containers nested deeper than \(limits.maximumDepth)")
        }
        stack.append(frame)
    }

    private func pop(_ stack: inout [Frame]) throws -> PropertyListValue {
        switch stack.popLast() {
        case .array(let elements)?: return .array(elements)
        case .dictionary(let dictionary, _, _, _)?: return .dictionary(dictionary)
        case nil: throw error(.syntax, "unbalanced container")
        }
    }

    private func setPendingKey(_ stack: inout [Frame], _ key: PropertyListString) {
        guard let top = stack.indices.last, case .dictionary(let dictionary, let index, _, let implicit) = stack[top] else { return }
        stack[top] = .dictionary(dictionary, index: index, key: key, implicit: implicit)
    }

    private func setEntry(_ stack: inout [Frame], key: PropertyListString, value: PropertyListValue) throws {
        guard let top = stack.indices.last, case .dictionary(var dictionary, var index, _, let implicit) = stack[top] else {
            throw error(.syntax, "a key outside a dictionary")
        }
        stack[top] = .array([])  // release the frame's copies so the appends below do not copy
        if let existing = index[key] {
            dictionary.entries[existing].value = value
        } else {
            index[key] = dictionary.entries.count
            dictionary.entries.append((.string(key), value))
        }
        stack[top] = .dictionary(dictionary, index: index, key: nil, implicit: implicit)
    }

    private mutating func countObject() throws {
        objectCount += 1
        if objectCount > limits.maximumObjectCount {
            throw error(.objectLimitExceeded, "more than \(limits.maximumObjectCount) objects")
        }
    }

    // MARK: White space and comments

    /// Skips white space (including U+2028 and U+2029) and comments; returns false at the end.
    private mutating func skipWhitespaceAndComments() throws -> Bool {
        while position < bytes.count {
            let byte = bytes[position]
            if byte == 0x20 || (byte >= 0x09 && byte <= 0x0D) {
                position += 1
            } else if byte == 0xE2, position + 2 < bytes.count, bytes[position + 1] == 0x80,
                bytes[position + 2] == 0xA8 || bytes[position + 2] == 0xA9
            {
                position += 3
            } else if byte == UInt8(ascii: "/"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "/") {
                position += 2
                while position < bytes.count, !isLineEnd(at: position) { position += 1 }
            } else if byte == UInt8(ascii: "/"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "*") {
                position += 2
                // An unterminated block comment runs to the end, as in CoreFoundation.
                while position < bytes.count {
                    if bytes[position] == UInt8(ascii: "*"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "/") {
                        position += 2
                        break
                    }
                    position += 1
                }
            } else {
                return true
            }
        }
        return false
    }

    private func isLineEnd(at index: Int) -> Bool {
        let byte = bytes[index]
        if byte == 0x0A || byte == 0x0D { return true }
        return byte == 0xE2 && index + 2 < bytes.count && bytes[index + 1] == 0x80
            && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9)
    }

    // MARK: Strings

    /// The characters CoreFoundation allows in an unquoted string.
    static func isUnquotedCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "_"), UInt8(ascii: "$"), UInt8(ascii: "/"), UInt8(ascii: ":"), UInt8(ascii: "."), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// A quoted or unquoted string at the current position, or `nil` when none starts here.
    private mutating func parseString() throws -> PropertyListString? {
        let byte = bytes[position]
        if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
            return try parseQuotedString(quote: byte)
        }
        guard Self.isUnquotedCharacter(byte) else { return nil }
        let start = position
        while position < bytes.count, Self.isUnquotedCharacter(bytes[position]) { position += 1 }
        try checkStringLength(position - start, at: start)
        return PropertyListString(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self))
    }

    private mutating func parseQuotedString(quote: UInt8) throws -> PropertyListString {
        let start = position
        position += 1
        var contentStart = position
        var output: [UInt8]?  // only built when escapes occur
        var pendingHighSurrogate: UInt16?

        func flushSurrogate(_ output: inout [UInt8]) {
            if pendingHighSurrogate != nil {
                output.append(contentsOf: [0xEF, 0xBF, 0xBD])  // U+FFFD for a lone surrogate
                pendingHighSurrogate = nil
            }
        }

        while position < bytes.count {
            let byte = bytes[position]
            if byte == quote {
                var text: String
                if var built = output {
                    if contentStart < position {
                        flushSurrogate(&built)
                        built.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[contentStart..<position]))
                    }
                    flushSurrogate(&built)
                    try checkStringLength(built.count, at: start)
                    text = try makeString(built, at: start)
                } else {
                    try checkStringLength(position - contentStart, at: start)
                    text = try makeString(Array(UnsafeRawBufferPointer(rebasing: bytes[contentStart..<position])), at: start)
                }
                position += 1
                text.makeContiguousUTF8()
                return PropertyListString(text)
            }
            guard byte == UInt8(ascii: "\\") else {
                position += 1
                continue
            }
            var built = output ?? []
            output = nil
            if contentStart < position {
                flushSurrogate(&built)
                built.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[contentStart..<position]))
            }
            position += 1
            guard position < bytes.count else { break }
            let escaped = bytes[position]
            position += 1
            var keepEscaped = false
            switch escaped {
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                flushSurrogate(&built)
                var number = UInt32(escaped - UInt8(ascii: "0"))
                for _ in 0..<2 {
                    guard position < bytes.count, bytes[position] >= UInt8(ascii: "0"), bytes[position] <= UInt8(ascii: "7") else { break }
                    number = number << 3 + UInt32(bytes[position] - UInt8(ascii: "0"))
                    position += 1
                }
                // CoreFoundation keeps the value in a byte, so \400 wraps to \000.
                appendScalar(NeXTSTEPLatin.scalar(for: UInt8(truncatingIfNeeded: number)), to: &built)
            case UInt8(ascii: "U"):
                var unit: UInt16 = 0
                for _ in 0..<4 {
                    guard position < bytes.count, let digit = hexValue(bytes[position]) else { break }
                    unit = unit << 4 | UInt16(digit)
                    position += 1
                }
                if UTF16.isLeadSurrogate(unit) {
                    flushSurrogate(&built)
                    pendingHighSurrogate = unit
                } else if UTF16.isTrailSurrogate(unit) {
                    if let high = pendingHighSurrogate {
                        pendingHighSurrogate = nil
                        let value = 0x10000 + (UInt32(high - 0xD800) << 10) + UInt32(unit - 0xDC00)
                        appendScalar(Unicode.Scalar(value) ?? "\u{FFFD}", to: &built)
                    } else {
                        appendScalar("\u{FFFD}", to: &built)
                    }
                } else {
                    flushSurrogate(&built)
                    appendScalar(Unicode.Scalar(UInt32(unit)) ?? "\u{FFFD}", to: &built)
                }
            default:
                flushSurrogate(&built)
                switch escaped {
                case UInt8(ascii: "a"): built.append(0x07)
                case UInt8(ascii: "b"): built.append(0x08)
                case UInt8(ascii: "f"): built.append(0x0C)
                case UInt8(ascii: "n"): built.append(0x0A)
                case UInt8(ascii: "r"): built.append(0x0D)
                case UInt8(ascii: "t"): built.append(0x09)
                case UInt8(ascii: "v"): built.append(0x0B)
                default:
                    // Any other escaped character stands for itself (`\\`, `\"`, `\'`, a
                    // newline...): it starts the next literal run, so multi-byte characters stay whole.
                    keepEscaped = true
                }
            }
            contentStart = keepEscaped ? position - 1 : position
            output = built
        }
        position = start
        throw error(.truncated, "unterminated quoted string")
    }

    private func appendScalar(_ scalar: Unicode.Scalar, to output: inout [UInt8]) {
        if scalar.value < 0x80 {
            output.append(UInt8(scalar.value))
        } else {
            output.append(contentsOf: UTF8.encode(scalar).map(Array.init) ?? [])
        }
    }

    private func makeString(_ utf8: [UInt8], at offset: Int) throws -> String {
        guard let string = String(validating: utf8, as: UTF8.self) else {
            throw error(.invalidString, "string is not valid UTF-8", at: offset)
        }
        return string
    }

    private func checkStringLength(_ length: Int, at offset: Int) throws {
        if length > limits.maximumStringLength {
            throw error(.lengthLimitExceeded, "string longer than \(limits.maximumStringLength) bytes", at: offset)
        }
    }

    // MARK: Data and GNUstep typed values

    private mutating func parseDataOrTyped() throws -> PropertyListValue {
        let start = position
        position += 1
        if acceptsTypedValues, position < bytes.count, bytes[position] == UInt8(ascii: "*") {
            return try parseTyped(start: start)
        }
        var data: [UInt8] = []
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: ">") {
                position += 1
                return .data(Data(data))
            }
            if let high = hexValue(byte) {
                guard position + 1 < bytes.count, let low = hexValue(bytes[position + 1]) else {
                    position += 1
                    throw error(.syntax, "data has an odd number of hex digits")
                }
                guard data.count < limits.maximumDataLength else {
                    throw error(.lengthLimitExceeded, "data longer than \(limits.maximumDataLength) bytes", at: start)
                }
                data.append(high << 4 | low)
                position += 2
            } else if byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D {
                position += 1
            } else if byte == 0xE2, position + 2 < bytes.count, bytes[position + 1] == 0x80,
                bytes[position + 2] == 0xA8 || bytes[position + 2] == 0xA9
            {
                position += 3
            } else {
                throw error(.syntax, "invalid character \(describe(byte)) in data")
            }
        }
        throw error(.truncated, "expected '>' to end the data", at: start)
    }

    /// GNUstep's `<*Ivalue>` (integer), `<*Rvalue>` (real), `<*BY>`/`<*BN>` (boolean) and
    /// `<*Dyyyy-mm-dd hh:mm:ss +zzzz>` (date).
    private mutating func parseTyped(start: Int) throws -> PropertyListValue {
        position += 1
        guard position < bytes.count else { throw error(.truncated, "unterminated typed value", at: start) }
        let kind = bytes[position]
        position += 1
        let bodyStart = position
        while position < bytes.count, bytes[position] != UInt8(ascii: ">") { position += 1 }
        guard position < bytes.count else { throw error(.truncated, "expected '>' to end the typed value", at: start) }
        let body = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[bodyStart..<position]), as: UTF8.self)
        position += 1
        let trimmed = body.trimmingASCIIWhitespace()
        switch kind {
        case UInt8(ascii: "I"):
            if let signed = Int64(trimmed) { return .integer(PropertyListInteger(signed)) }
            if let unsigned = UInt64(trimmed) { return .integer(PropertyListInteger(unsigned)) }
        case UInt8(ascii: "R"):
            if let real = Double(trimmed) { return .real(PropertyListReal(real)) }
        case UInt8(ascii: "B"):
            if trimmed == "Y" { return .bool(true) }
            if trimmed == "N" { return .bool(false) }
        case UInt8(ascii: "D"):
            if let date = OpenStepDate.parse(trimmed) { return .date(date) }
        default:
            break
        }
        throw error(.invalidValue, "invalid typed value <*\(Character(Unicode.Scalar(kind)))\(body)>", at: start)
    }

    // MARK: Errors

    private func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private func describe(_ byte: UInt8) -> String {
        byte >= 0x21 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x" + String(byte, radix: 16)
    }

    private func error(_ code: PropertyListError.Code, _ message: String, at offset: Int? = nil) -> PropertyListError {
        let offset = min(offset ?? position, bytes.count)
        return PropertyListError(code, message, byteOffset: offset, line: line(at: offset))
    }

    private func line(at offset: Int) -> Int { bytes.lineNumber(at: offset) }
}

extension String {
    /// The string without leading and trailing ASCII spaces, tabs and line breaks.
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
