/// The XML property-list scanner: one pass over UTF-8 bytes, containers on an explicit stack.
struct XMLPropertyListParser {
    /// The plist elements; anything else is an error.
    enum Element {
        case plist, array, dict, key, string, integer, real, date, data, `true`, `false`, unknown

        /// The tag name, for closing-tag checks and messages.
        var name: StaticString {
            switch self {
            case .plist: "plist"
            case .array: "array"
            case .dict: "dict"
            case .key: "key"
            case .string: "string"
            case .integer: "integer"
            case .real: "real"
            case .date: "date"
            case .data: "data"
            case .true: "true"
            case .false: "false"
            case .unknown: "?"
            }
        }
    }

    /// An opening tag that has been read (attributes are checked for form and ignored, as CF does).
    struct Tag {
        var element: Element
        var nameRange: Range<Int>
        var isEmpty: Bool
        var start: Int
    }

    /// An open `<array>` or `<dict>`.
    struct Frame {
        var isDictionary: Bool
        var start: Int
        var elements: [PropertyListValue] = []
        var entries: [PropertyListDictionary.Entry] = []
        var pendingKey: PropertyListString?
    }

    let bytes: UnsafeRawBufferPointer
    /// Added to positions in errors (the length of a skipped UTF-8 byte-order mark).
    let offsetBase: Int
    let limits: DecodingLimits
    var position = 0
    var objectCount = 0
    var frames: [Frame] = []
    /// Reused for text that needs decoding (entities, CDATA, comments inside text).
    var scratch: [UInt8] = []

    init(bytes: UnsafeRawBufferPointer, offsetBase: Int, limits: DecodingLimits) {
        self.bytes = bytes
        self.offsetBase = offsetBase
        self.limits = limits
    }

    // MARK: - Document

    mutating func parseDocument() throws -> PropertyListValue {
        try skipProlog()
        guard position < bytes.count else {
            throw error(bytes.isEmpty ? .truncated : .syntax, "no root element", at: position)
        }
        let tag = try readOpenTag()
        let value: PropertyListValue
        if tag.element == .plist {
            guard !tag.isEmpty else { throw error(.invalidValue, "<plist/> holds no value", at: tag.start) }
            try skipMisc()
            guard position < bytes.count else { throw error(.truncated, "document ends inside <plist>", at: position) }
            if isAtClosingTag { throw error(.invalidValue, "<plist> holds no value", at: position) }
            try expectTagStart("a value inside <plist>")
            value = try parseValue(firstTag: try readOpenTag())
            try skipMisc()
            guard position < bytes.count else { throw error(.truncated, "document ends before </plist>", at: position) }
            guard isAtClosingTag else {
                if bytes[position] == UInt8(ascii: "<") {
                    throw error(.invalidValue, "<plist> can hold only one value", at: position)
                }
                throw error(.syntax, "text inside <plist>", at: position)
            }
            try readClosingTag(.plist)
        } else {
            value = try parseValue(firstTag: tag)
        }
        try skipMisc()
        if position < bytes.count { throw error(.syntax, "content after the root element", at: position) }
        return value
    }

    /// Skips white space, the XML declaration, processing instructions, comments and the
    /// document type declaration before the root element.
    private mutating func skipProlog() throws {
        while true {
            skipSpace()
            guard position < bytes.count else { return }
            guard bytes[position] == UInt8(ascii: "<") else {
                throw error(.syntax, "text before the root element", at: position)
            }
            if hasPrefix("<?") {
                try skipProcessingInstruction()
            } else if hasPrefix("<!--") {
                try skipComment()
            } else if hasPrefix("<!DOCTYPE") {
                try skipDocumentType()
            } else if hasPrefix("<!") {
                throw declarationError()
            } else {
                return
            }
        }
    }

    // MARK: - Values

    /// Reads one value whose opening tag is `firstTag`, with everything nested in it.
    private mutating func parseValue(firstTag: Tag) throws -> PropertyListValue {
        var pending: Tag? = firstTag
        while true {
            let tag: Tag
            if let next = pending {
                tag = next
                pending = nil
            } else {
                try skipMisc()
                guard position < bytes.count else {
                    throw error(.truncated, "document ends inside <\(frames.last?.isDictionary == true ? "dict" : "array")>", at: position)
                }
                if isAtClosingTag {
                    let value = try closeContainer()
                    if try attach(value) { return value }
                    continue
                }
                try expectTagStart("a value")
                tag = try readOpenTag()
            }

            let value: PropertyListValue
            switch tag.element {
            case .array, .dict:
                guard frames.count < limits.maximumDepth else {
                    throw error(.depthLimitExceeded, "nesting deeper than \(limits.maximumDepth)", at: tag.start)
                }
                try countObject(at: tag.start)
                if tag.isEmpty {
                    value = tag.element == .array ? .array([]) : .dictionary(PropertyListDictionary())
                    if try attach(value) { return value }
                } else {
                    frames.append(Frame(isDictionary: tag.element == .dict, start: tag.start))
                }
                continue
            case .key:
                guard let top = frames.last, top.isDictionary else {
                    throw error(.invalidValue, "<key> outside a <dict>", at: tag.start)
                }
                guard top.pendingKey == nil else {
                    throw error(.invalidValue, "key without a value", at: tag.start)
                }
                let key = tag.isEmpty ? "" : try readText(closing: .key)
                try countObject(at: tag.start)
                frames[frames.count - 1].pendingKey = PropertyListString(key)
                continue
            case .string:
                value = .string(PropertyListString(tag.isEmpty ? "" : try readText(closing: .string)))
            case .integer:
                value = .integer(try readInteger(tag))
            case .real:
                value = .real(try readReal(tag))
            case .date:
                value = .date(try readDate(tag))
            case .data:
                value = .data(try readData(tag))
            case .true, .false:
                if !tag.isEmpty {
                    skipSpace()
                    try readClosingTag(tag.element)
                }
                value = .bool(tag.element == .true)
            case .plist:
                throw error(.invalidValue, "<plist> inside a value", at: tag.start)
            case .unknown:
                let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[tag.nameRange]), as: UTF8.self)
                throw error(.invalidValue, "unknown element <\(name)>", at: tag.start)
            }
            try countObject(at: tag.start)
            if try attach(value) { return value }
        }
    }

    /// Adds a finished value to the open container; true when it is the top-level value.
    private mutating func attach(_ value: PropertyListValue) throws -> Bool {
        guard !frames.isEmpty else { return true }
        let top = frames.count - 1
        if frames[top].isDictionary {
            guard let key = frames[top].pendingKey else {
                throw error(.invalidValue, "\(value.typeName) value without a <key>", at: position)
            }
            frames[top].entries.append((PropertyListValue.string(key), value))
            frames[top].pendingKey = nil
        } else {
            frames[top].elements.append(value)
        }
        return false
    }

    /// Reads the closing tag of the innermost container and returns the container's value.
    private mutating func closeContainer() throws -> PropertyListValue {
        guard let top = frames.last else {
            throw error(.syntax, "closing tag without an opening tag", at: position)
        }
        if top.isDictionary, top.pendingKey != nil {
            throw error(.invalidValue, "key without a value", at: position)
        }
        try readClosingTag(top.isDictionary ? .dict : .array)
        frames.removeLast()
        guard top.isDictionary else { return .array(top.elements) }
        // CF reads a one-entry dictionary {CF$UID: integer} as a keyed-archiver UID. It checks
        // after merging repeated keys, so {CF$UID: 3, CF$UID: 11} is UID 11 (and the writer's
        // output for it reads back the same).
        let entries = Self.lastValueWins(top.entries)
        if entries.count == 1, case .string(let key) = entries[0].key, key.value == "CF$UID",
            case .integer(let integer) = entries[0].value,
            let uid = integer.uint64Value.flatMap({ UInt32(exactly: $0) })
        {
            return .uid(uid)
        }
        return .dictionary(PropertyListDictionary(entries))
    }

    /// A key that appears twice keeps its first position and takes its last value, which is what
    /// CF (a dictionary set in document order) and plistlib read.
    private static func lastValueWins(_ entries: [PropertyListDictionary.Entry]) -> [PropertyListDictionary.Entry] {
        guard entries.count > 1 else { return entries }
        func key(_ index: Int) -> PropertyListString {
            if case .string(let key) = entries[index].key { return key }
            return PropertyListString("")
        }
        var duplicated = false
        if entries.count <= 8 {
            outer: for first in entries.indices {
                for second in (first + 1)..<entries.count where key(first) == key(second) {
                    duplicated = true
                    break outer
                }
            }
        } else {
            var seen = Set<PropertyListString>(minimumCapacity: entries.count)
            for index in entries.indices where !seen.insert(key(index)).inserted {
                duplicated = true
                break
            }
        }
        guard duplicated else { return entries }
        var positions: [PropertyListString: Int] = [:]
        var result: [PropertyListDictionary.Entry] = []
        for index in entries.indices {
            if let position = positions[key(index)] {
                result[position].value = entries[index].value
            } else {
                positions[key(index)] = result.count
                result.append(entries[index])
            }
        }
        return result
    }

    private mutating func countObject(at offset: Int) throws {
        objectCount += 1
        if objectCount > limits.maximumObjectCount {
            throw error(.objectLimitExceeded, "more than \(limits.maximumObjectCount) values", at: offset)
        }
    }

    // MARK: - Leaf values

    /// The raw bytes up to the next `<`, for elements that take no entities (integer, date, data).
    private mutating func rawContent(of tag: Tag) throws -> Range<Int> {
        let start = position
        while position < bytes.count, bytes[position] != UInt8(ascii: "<") { position += 1 }
        guard position < bytes.count else {
            throw error(.truncated, "document ends inside <\(tag.element.name)>", at: start)
        }
        return start..<position
    }

    private func quoted(_ range: Range<Int>) -> String {
        let shown = range.count > 40 ? range.lowerBound..<(range.lowerBound + 40) : range
        return "\"" + String(decoding: UnsafeRawBufferPointer(rebasing: bytes[shown]), as: UTF8.self) + (shown == range ? "\"" : "...\"")
    }

    private mutating func readInteger(_ tag: Tag) throws -> PropertyListInteger {
        guard !tag.isEmpty else { throw error(.invalidValue, "empty <integer/>", at: tag.start) }
        let range = try rawContent(of: tag)
        guard let integer = XMLLeafParsing.integer(UnsafeRawBufferPointer(rebasing: bytes[range])) else {
            throw error(.invalidValue, "invalid <integer> \(quoted(range))", at: range.lowerBound)
        }
        try readClosingTag(.integer)
        return integer
    }

    private mutating func readReal(_ tag: Tag) throws -> PropertyListReal {
        guard !tag.isEmpty else { throw error(.invalidValue, "empty <real/>", at: tag.start) }
        let start = position
        let text = try readText(closing: .real)
        guard let value = XMLLeafParsing.real(text) else {
            let shown = text.count > 40 ? String(text.prefix(40)) + "..." : text
            throw error(.invalidValue, "invalid <real> \"\(shown)\"", at: start)
        }
        return PropertyListReal(value)
    }

    private mutating func readDate(_ tag: Tag) throws -> Date {
        guard !tag.isEmpty else { throw error(.invalidValue, "empty <date/>", at: tag.start) }
        let range = try rawContent(of: tag)
        guard let date = XMLLeafParsing.date(UnsafeRawBufferPointer(rebasing: bytes[range])) else {
            throw error(.invalidValue, "invalid <date> \(quoted(range)) (expected YYYY-MM-DDTHH:MM:SSZ)", at: range.lowerBound)
        }
        try readClosingTag(.date)
        return date
    }

    private mutating func readData(_ tag: Tag) throws -> Data {
        if tag.isEmpty { return Data() }
        let range = try rawContent(of: tag)
        let decoded: [UInt8]
        switch XMLLeafParsing.base64(UnsafeRawBufferPointer(rebasing: bytes[range])) {
        case .success(let bytes): decoded = bytes
        case .failure(let failure):
            throw error(.invalidValue, "invalid base64 in <data>: \(failure.message)", at: range.lowerBound + failure.offset)
        }
        guard decoded.count <= limits.maximumDataLength else {
            throw error(.lengthLimitExceeded, "data longer than \(limits.maximumDataLength) bytes", at: range.lowerBound)
        }
        try readClosingTag(.data)
        return Data(decoded)
    }

    // MARK: - Text

    /// Reads character data up to the closing tag of `element` and consumes that tag: entities
    /// and character references are decoded, CDATA sections kept verbatim, comments and
    /// processing instructions dropped. Line ends are kept as they are (CF does not normalise).
    private mutating func readText(closing element: Element) throws -> String {
        let start = position
        var mark = position
        var highBits: UInt8 = 0
        var decoding = false
        scratch.removeAll(keepingCapacity: true)
        while true {
            guard position < bytes.count else {
                throw error(.truncated, "document ends inside <\(element.name)>", at: start)
            }
            let byte = bytes[position]
            if byte == UInt8(ascii: "<") {
                if position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "/") { break }
                appendPending(from: mark, decoding: &decoding)
                if hasPrefix("<![CDATA[") {
                    let contentStart = position + 9
                    guard let end = find("]]>", from: contentStart) else {
                        throw error(.truncated, "unterminated CDATA section", at: position)
                    }
                    for index in contentStart..<end { highBits |= bytes[index] }
                    scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[contentStart..<end]))
                    position = end + 3
                } else if hasPrefix("<!--") {
                    try skipComment()
                } else if hasPrefix("<?") {
                    try skipProcessingInstruction()
                } else if hasPrefix("<!") {
                    throw declarationError()
                } else {
                    throw error(.invalidValue, "element inside <\(element.name)>", at: position)
                }
                mark = position
            } else if byte == UInt8(ascii: "&") {
                appendPending(from: mark, decoding: &decoding)
                try appendReference()
                highBits = 0x80  // references may produce any scalar; validate on the way out
                mark = position
            } else {
                highBits |= byte
                position += 1
            }
            // Once decoding, the string is what the scratch holds plus the plain bytes since
            // the last reference or section, not yet copied (counting the scratch alone let
            // any length through after one `&amp;`).
            if (decoding ? scratch.count + (position - mark) : position - start) > limits.maximumStringLength {
                throw error(.lengthLimitExceeded, "string longer than \(limits.maximumStringLength) bytes", at: start)
            }
        }
        let text: String?
        if decoding {
            appendPending(from: mark, decoding: &decoding)
            guard scratch.count <= limits.maximumStringLength else {
                throw error(.lengthLimitExceeded, "string longer than \(limits.maximumStringLength) bytes", at: start)
            }
            text = highBits < 0x80 ? String(decoding: scratch, as: UTF8.self) : String(validating: scratch, as: UTF8.self)
        } else {
            let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<position])
            text = highBits < 0x80 ? String(decoding: raw, as: UTF8.self) : String(validating: raw, as: UTF8.self)
        }
        guard let text else { throw error(.invalidString, "text is not valid UTF-8", at: start) }
        try readClosingTag(element)
        return text
    }

    /// Moves the plain bytes from `mark` to the current position into `scratch`.
    private mutating func appendPending(from mark: Int, decoding: inout Bool) {
        decoding = true
        if mark < position { scratch.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[mark..<position])) }
    }

    /// Decodes `&lt;`, `&gt;`, `&amp;`, `&quot;`, `&apos;` or a numeric character reference at
    /// the current position into `scratch`. Named entities beyond these five do not exist here:
    /// DTD entity declarations are refused.
    private mutating func appendReference() throws {
        let start = position
        var end = position + 1
        // The longest valid reference is "&#x10FFFF;" (10 bytes) or a long run of leading zeros.
        while end < bytes.count, bytes[end] != UInt8(ascii: ";"), end - start < 32 { end += 1 }
        guard end < bytes.count, bytes[end] == UInt8(ascii: ";") else {
            throw error(.syntax, "unterminated entity reference", at: start)
        }
        let name = UnsafeRawBufferPointer(rebasing: bytes[(start + 1)..<end])
        position = end + 1
        switch name.count {
        case 2 where name[0] == UInt8(ascii: "l") && name[1] == UInt8(ascii: "t"): scratch.append(UInt8(ascii: "<")); return
        case 2 where name[0] == UInt8(ascii: "g") && name[1] == UInt8(ascii: "t"): scratch.append(UInt8(ascii: ">")); return
        case 3 where name.elementsEqual("amp".utf8): scratch.append(UInt8(ascii: "&")); return
        case 4 where name.elementsEqual("quot".utf8): scratch.append(UInt8(ascii: "\"")); return
        case 4 where name.elementsEqual("apos".utf8): scratch.append(UInt8(ascii: "'")); return
        default: break
        }
        guard name.count >= 2, name[0] == UInt8(ascii: "#") else {
            throw error(.syntax, "unknown entity \(quoted((start + 1)..<end)) (entity declarations are not supported)", at: start)
        }
        let hex = name[1] == UInt8(ascii: "x")
        let digits = UnsafeRawBufferPointer(rebasing: name[(hex ? 2 : 1)...])
        var value: UInt32 = 0
        guard !digits.isEmpty else { throw error(.syntax, "empty character reference", at: start) }
        for digit in digits {
            guard let digitValue = XMLLeafParsing.digitValue(digit, hex: hex) else {
                throw error(.syntax, "invalid character reference \(quoted(start..<(end + 1)))", at: start)
            }
            value = value * (hex ? 16 : 10) + digitValue
            guard value <= 0x10FFFF else {
                throw error(.invalidString, "character reference beyond U+10FFFF", at: start)
            }
        }
        // Any Unicode scalar, U+0000 included (Apple's own files use &#0;); surrogates are not
        // characters and cannot be held by a string.
        guard Unicode.Scalar(value) != nil else {
            throw error(.invalidString, "character reference to a UTF-16 surrogate", at: start)
        }
        appendUTF8(value, to: &scratch)
    }

    // MARK: - Markup

    private var isAtClosingTag: Bool {
        position + 1 < bytes.count && bytes[position] == UInt8(ascii: "<") && bytes[position + 1] == UInt8(ascii: "/")
    }

    private func expectTagStart(_ what: String) throws {
        guard position < bytes.count, bytes[position] == UInt8(ascii: "<") else {
            throw error(.syntax, "text where \(what) was expected", at: position)
        }
    }

    /// Reads `<name attr="value" ...>` or `<name .../>` at the current position.
    private mutating func readOpenTag() throws -> Tag {
        let start = position
        position += 1
        let nameStart = position
        while position < bytes.count {
            let byte = bytes[position]
            if isXMLSpace(byte) || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "<") { break }
            position += 1
        }
        let nameRange = nameStart..<position
        guard !nameRange.isEmpty else { throw error(.syntax, "malformed tag", at: start) }
        var isEmpty = false
        while true {
            skipSpace()
            guard position < bytes.count else { throw error(.truncated, "unterminated tag", at: start) }
            let byte = bytes[position]
            if byte == UInt8(ascii: ">") {
                position += 1
                break
            }
            if byte == UInt8(ascii: "/") {
                guard position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: ">") else {
                    throw error(.syntax, "malformed empty-element tag", at: position)
                }
                position += 2
                isEmpty = true
                break
            }
            try skipAttribute()
        }
        return Tag(element: element(named: nameRange), nameRange: nameRange, isEmpty: isEmpty, start: start)
    }

    /// Skips `name = "value"` (or single quotes); the value may contain neither `<` nor `>`:
    /// CoreFoundation's parser ends the tag at the first `>`, even inside quotes, so a value
    /// holding one is a document CF reads differently (`<string x=">EVIL">GOOD</string>` is
    /// `EVIL">GOOD` there) and is refused rather than read one of the two ways.
    private mutating func skipAttribute() throws {
        let start = position
        while position < bytes.count {
            let byte = bytes[position]
            if isXMLSpace(byte) || byte == UInt8(ascii: "=") || byte == UInt8(ascii: ">") || byte == UInt8(ascii: "/")
                || byte == UInt8(ascii: "<") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'")
            {
                break
            }
            position += 1
        }
        guard position > start else { throw error(.syntax, "malformed attribute", at: start) }
        skipSpace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "=") else {
            throw error(.syntax, "attribute without a value", at: start)
        }
        position += 1
        skipSpace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'") else {
            throw error(.syntax, "attribute value without quotes", at: position)
        }
        let quote = bytes[position]
        position += 1
        while position < bytes.count, bytes[position] != quote {
            if bytes[position] == UInt8(ascii: "<") { throw error(.syntax, "'<' in an attribute value", at: position) }
            if bytes[position] == UInt8(ascii: ">") {
                throw error(.syntax, "'>' in an attribute value (CoreFoundation ends the tag there)", at: position)
            }
            position += 1
        }
        guard position < bytes.count else { throw error(.truncated, "unterminated attribute value", at: start) }
        position += 1
    }

    /// Reads `</name>` (white space allowed before `>`) and checks the name.
    private mutating func readClosingTag(_ element: Element) throws {
        let start = position
        guard isAtClosingTag else {
            if position >= bytes.count { throw error(.truncated, "document ends before </\(element.name)>", at: position) }
            throw error(.syntax, "expected </\(element.name)>", at: position)
        }
        position += 2
        let nameStart = position
        while position < bytes.count, !isXMLSpace(bytes[position]), bytes[position] != UInt8(ascii: ">") { position += 1 }
        let name = UnsafeRawBufferPointer(rebasing: bytes[nameStart..<position])
        skipSpace()
        guard position < bytes.count else { throw error(.truncated, "unterminated closing tag", at: start) }
        guard bytes[position] == UInt8(ascii: ">") else { throw error(.syntax, "malformed closing tag", at: start) }
        position += 1
        let expected = element.name
        guard name.count == expected.utf8CodeUnitCount,
            name.elementsEqual(UnsafeBufferPointer(start: expected.utf8Start, count: expected.utf8CodeUnitCount))
        else {
            throw error(.syntax, "</\(String(decoding: name, as: UTF8.self))> does not close <\(expected)>", at: start)
        }
    }

    /// Maps a tag name to its element; names are case-sensitive, as in CF.
    private func element(named range: Range<Int>) -> Element {
        let name = UnsafeRawBufferPointer(rebasing: bytes[range])
        func matches(_ candidate: StaticString) -> Bool {
            name.count == candidate.utf8CodeUnitCount
                && name.elementsEqual(UnsafeBufferPointer(start: candidate.utf8Start, count: candidate.utf8CodeUnitCount))
        }
        guard let first = name.first else { return .unknown }
        switch first {
        case UInt8(ascii: "a"): return matches("array") ? .array : .unknown
        case UInt8(ascii: "d"): return matches("dict") ? .dict : matches("data") ? .data : matches("date") ? .date : .unknown
        case UInt8(ascii: "f"): return matches("false") ? .false : .unknown
        case UInt8(ascii: "i"): return matches("integer") ? .integer : .unknown
        case UInt8(ascii: "k"): return matches("key") ? .key : .unknown
        case UInt8(ascii: "p"): return matches("plist") ? .plist : .unknown
        case UInt8(ascii: "r"): return matches("real") ? .real : .unknown
        case UInt8(ascii: "s"): return matches("string") ? .string : .unknown
        case UInt8(ascii: "t"): return matches("true") ? .true : .unknown
        default: return .unknown
        }
    }

    /// Skips white space, comments and processing instructions, where the format allows them.
    private mutating func skipMisc() throws {
        while true {
            skipSpace()
            guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "<") else { return }
            let next = bytes[position + 1]
            if next == UInt8(ascii: "?") {
                try skipProcessingInstruction()
            } else if next == UInt8(ascii: "!") {
                guard hasPrefix("<!--") else { throw declarationError() }
                try skipComment()
            } else {
                return
            }
        }
    }

    /// Skips white space. Indentation (tabs from Apple's writer, spaces from others) after a
    /// newline is skipped eight bytes at a time: deeply nested files are mostly indentation.
    @inline(__always)
    private mutating func skipSpace() {
        let count = bytes.count
        while position < count {
            let byte = bytes[position]
            guard isXMLSpace(byte) else { return }
            position += 1
            guard byte == 0x0A, position < count else { continue }
            let indent = bytes[position]
            guard indent == 0x09 || indent == 0x20 else { continue }
            let run = UInt64(indent) &* 0x0101_0101_0101_0101
            while count - position >= 8, bytes.loadUnaligned(fromByteOffset: position, as: UInt64.self) == run { position += 8 }
        }
    }

    private mutating func skipComment() throws {
        guard let end = find("-->", from: position + 4) else {
            throw error(.truncated, "unterminated comment", at: position)
        }
        position = end + 3
    }

    /// Skips `<?target ...?>`. `<?>` is refused: CoreFoundation takes it as a whole
    /// instruction (its `?` also begins the `?>`), where the end is looked for after `<?`, so
    /// the two would read different documents from one file.
    private mutating func skipProcessingInstruction() throws {
        if position + 2 < bytes.count, bytes[position + 2] == UInt8(ascii: ">") {
            throw error(.syntax, "processing instruction without a target ('<?>', which CoreFoundation ends at once)", at: position)
        }
        guard let end = find("?>", from: position + 2) else {
            throw error(.truncated, "unterminated processing instruction", at: position)
        }
        position = end + 2
    }

    /// Skips `<!DOCTYPE plist PUBLIC "..." "...">`. An internal subset is refused: it is where
    /// entity declarations live, and expanding them is how entity attacks work. So is a `>`
    /// inside a quoted literal: CoreFoundation ends the declaration at the first `>`, quoted or
    /// not, so such a document has a second reading there (a root hidden in the literal, the
    /// real one after it ignored).
    private mutating func skipDocumentType() throws {
        let start = position
        position += 9
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                position += 1
                while position < bytes.count, bytes[position] != byte {
                    if bytes[position] == UInt8(ascii: ">") {
                        throw error(
                            .syntax, "'>' in a quoted literal of the document type declaration (CoreFoundation ends it there)",
                            at: position)
                    }
                    position += 1
                }
                guard position < bytes.count else { break }
            } else if byte == UInt8(ascii: "[") {
                throw error(
                    .forbiddenDeclaration,
                    "document type declaration with an internal subset (entity declarations are refused)", at: position)
            } else if byte == UInt8(ascii: ">") {
                position += 1
                return
            }
            position += 1
        }
        throw error(.truncated, "unterminated document type declaration", at: start)
    }

    /// The error for `<!` markup other than a comment or CDATA section at the current position.
    private func declarationError() -> PropertyListError {
        if hasPrefix("<!ENTITY") || hasPrefix("<!DOCTYPE") || hasPrefix("<!ELEMENT") || hasPrefix("<!ATTLIST") {
            return error(.forbiddenDeclaration, "markup declaration outside the prolog (refused)", at: position)
        }
        return error(.syntax, "malformed '<!' markup", at: position)
    }

    @inline(__always)
    private func hasPrefix(_ prefix: StaticString) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard position + count <= bytes.count else { return false }
        let start = prefix.utf8Start
        for index in 0..<count where bytes[position + index] != start[index] { return false }
        return true
    }

    /// The index of the first occurrence of `needle` at or after `from`.
    private func find(_ needle: StaticString, from: Int) -> Int? {
        let count = needle.utf8CodeUnitCount
        let start = needle.utf8Start
        let first = start[0]
        var index = from
        while index + count <= bytes.count {
            if bytes[index] == first {
                var matched = true
                for offset in 1..<count where bytes[index + offset] != start[offset] {
                    matched = false
                    break
                }
                if matched { return index }
            }
            index += 1
        }
        return nil
    }

    // MARK: - Errors

    /// An error at `offset`, with the line and the key path of the value being read.
    func error(_ code: PropertyListError.Code, _ message: String, at offset: Int) -> PropertyListError {
        let clamped = min(max(offset, 0), bytes.count)
        return PropertyListError(code, message, byteOffset: offsetBase + clamped, line: line(at: clamped), keyPath: keyPath())
    }

    private func line(at offset: Int) -> Int { bytes.lineNumber(at: offset) }

    /// The path from the root to the value being read, e.g. `items[3].name`.
    private func keyPath() -> String {
        var path = ""
        for frame in frames {
            if frame.isDictionary {
                if let key = frame.pendingKey {
                    if !path.isEmpty { path += "." }
                    path += key.value
                }
            } else {
                path += "[\(frame.elements.count)]"
            }
        }
        return path
    }
}
