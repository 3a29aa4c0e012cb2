/// The character encodings the XML reader accepts, and their conversion to UTF-8.
///
/// The scanner works on UTF-8 bytes only. Everything else is transcoded to UTF-8 once, up front:
/// UTF-16 and UTF-32 (either byte order, with or without a byte-order mark, as CoreFoundation
/// accepts them) and ISO-8859-1 when the XML declaration names it. An 8-bit document that
/// declares any other encoding is refused rather than misread.
///
/// Its byte-order marks and wide conversions are also the OpenStep reader's
/// (``utf8OfMarkedWideText(_:)``) and format detection's (``byteOrderMark(_:)``): one decoder
/// of UTF-16 and UTF-32 for the package.
enum XMLTextEncoding: Equatable {
    case utf8
    case utf16BigEndian
    case utf16LittleEndian
    case utf32BigEndian
    case utf32LittleEndian
    case latin1

    /// The input as UTF-8: either a range of the input itself (no copy) or a transcoded copy.
    enum Source {
        /// The input is UTF-8 from `start` (past any byte-order mark).
        case original(start: Int)
        /// The input was converted to UTF-8; byte offsets in errors refer to this copy.
        case transcoded([UInt8])
    }

    /// Detects the encoding of `bytes` and returns them as UTF-8.
    static func utf8Source(_ bytes: UnsafeRawBufferPointer) throws -> Source {
        let (encoding, bomLength) = try detect(bytes)
        switch encoding {
        case .utf8: return .original(start: bomLength)
        case .latin1: return .transcoded(transcodeLatin1(bytes))
        case .utf16BigEndian, .utf16LittleEndian:
            return .transcoded(try transcodeUTF16(bytes, from: bomLength, bigEndian: encoding == .utf16BigEndian))
        case .utf32BigEndian, .utf32LittleEndian:
            return .transcoded(try transcodeUTF32(bytes, from: bomLength, bigEndian: encoding == .utf32BigEndian))
        }
    }

    /// Text that starts with a UTF-16 or UTF-32 byte-order mark, converted to UTF-8 (without
    /// the mark); `nil` for text without one. The OpenStep reader's wide text (strings files
    /// are classically UTF-16): only a mark says the text is wide there, as in CoreFoundation.
    static func utf8OfMarkedWideText(_ bytes: UnsafeRawBufferPointer) throws -> [UInt8]? {
        guard let (encoding, markLength) = byteOrderMark(bytes) else { return nil }
        switch encoding {
        case .utf16BigEndian, .utf16LittleEndian:
            return try transcodeUTF16(bytes, from: markLength, bigEndian: encoding == .utf16BigEndian)
        case .utf32BigEndian, .utf32LittleEndian:
            return try transcodeUTF32(bytes, from: markLength, bigEndian: encoding == .utf32BigEndian)
        case .utf8, .latin1:
            return nil
        }
    }

    /// The encoding a byte-order mark at the start of `bytes` names, and the mark's length;
    /// `nil` when there is no mark.
    static func byteOrderMark(_ bytes: UnsafeRawBufferPointer) -> (XMLTextEncoding, Int)? {
        let count = bytes.count
        func at(_ index: Int) -> UInt8? { index < count ? bytes[index] : nil }
        let (b0, b1, b2, b3) = (at(0), at(1), at(2), at(3))
        // UTF-32LE's mark starts with UTF-16LE's, so test it first.
        if b0 == 0x00, b1 == 0x00, b2 == 0xFE, b3 == 0xFF { return (.utf32BigEndian, 4) }
        if b0 == 0xFF, b1 == 0xFE, b2 == 0x00, b3 == 0x00 { return (.utf32LittleEndian, 4) }
        if b0 == 0xEF, b1 == 0xBB, b2 == 0xBF { return (.utf8, 3) }
        if b0 == 0xFE, b1 == 0xFF { return (.utf16BigEndian, 2) }
        if b0 == 0xFF, b1 == 0xFE { return (.utf16LittleEndian, 2) }
        return nil
    }

    /// The encoding and the length of the byte-order mark to skip.
    static func detect(_ bytes: UnsafeRawBufferPointer) throws -> (XMLTextEncoding, Int) {
        if let marked = byteOrderMark(bytes) { return marked }
        let count = bytes.count
        func at(_ index: Int) -> UInt8? { index < count ? bytes[index] : nil }
        let (b0, b1, b2, b3) = (at(0), at(1), at(2), at(3))
        // No mark: zero bytes around the first character give the width (XML 1.0 appendix F).
        if let b0, let b1 {
            if let b2, let b3 {
                if b0 == 0, b1 == 0, b2 == 0, b3 != 0 { return (.utf32BigEndian, 0) }
                if b0 != 0, b1 == 0, b2 == 0, b3 == 0 { return (.utf32LittleEndian, 0) }
            }
            if b0 == 0, b1 != 0 { return (.utf16BigEndian, 0) }
            if b0 != 0, b1 == 0 { return (.utf16LittleEndian, 0) }
        }
        return (try declaredEncoding(bytes), 0)
    }

    /// The encoding named by the XML declaration of an 8-bit document (UTF-8 when none is named).
    private static func declaredEncoding(_ bytes: UnsafeRawBufferPointer) throws -> XMLTextEncoding {
        let prefix = Array(bytes.prefix(512))
        guard prefix.starts(with: Array("<?xml".utf8)),
            let close = firstIndex(of: Array("?>".utf8), in: prefix)
        else { return .utf8 }
        let declaration = Array(prefix[5..<close])
        guard let nameStart = firstIndex(of: Array("encoding".utf8), in: declaration) else { return .utf8 }
        var index = nameStart + 8
        func skipSpace() { while index < declaration.count, isXMLSpace(declaration[index]) { index += 1 } }
        skipSpace()
        guard index < declaration.count, declaration[index] == UInt8(ascii: "=") else {
            throw PropertyListError(.syntax, "malformed encoding declaration", byteOffset: 5 + index, line: 1)
        }
        index += 1
        skipSpace()
        guard index < declaration.count, declaration[index] == UInt8(ascii: "\"") || declaration[index] == UInt8(ascii: "'") else {
            throw PropertyListError(.syntax, "malformed encoding declaration", byteOffset: 5 + index, line: 1)
        }
        let quote = declaration[index]
        let valueStart = index + 1
        guard let valueEnd = declaration[valueStart...].firstIndex(of: quote) else {
            throw PropertyListError(.syntax, "unterminated encoding declaration", byteOffset: 5 + index, line: 1)
        }
        let name = String(decoding: declaration[valueStart..<valueEnd], as: UTF8.self).lowercased()
        switch name {
        case "utf-8", "utf8", "us-ascii", "ascii":
            return .utf8
        case "iso-8859-1", "iso_8859-1", "latin1", "latin-1", "l1", "iso-latin-1":
            return .latin1
        case _ where name.hasPrefix("utf-16") || name.hasPrefix("utf-32") || name.hasPrefix("utf16") || name.hasPrefix("utf32"):
            // The declaration was read as 8-bit text: wide text would have shown its width by
            // a byte-order mark or zero bytes around the first `<`.
            throw PropertyListError(
                .syntax, "the document declares \"\(name)\" but is 8-bit text (UTF-16 and UTF-32 documents start with a byte-order mark or zero bytes)",
                byteOffset: 5 + valueStart, line: 1)
        default:
            throw PropertyListError(
                .syntax, "unsupported XML encoding \"\(name)\" (UTF-8, UTF-16, UTF-32 and ISO-8859-1 are read)",
                byteOffset: 5 + valueStart, line: 1)
        }
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard needle.count <= haystack.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return start }
        }
        return nil
    }

    private static func transcodeLatin1(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + bytes.count / 4)
        for byte in bytes {
            if byte < 0x80 {
                output.append(byte)
            } else {
                output.append(0xC0 | (byte >> 6))
                output.append(0x80 | (byte & 0x3F))
            }
        }
        return output
    }

    private static func transcodeUTF16(_ bytes: UnsafeRawBufferPointer, from start: Int, bigEndian: Bool) throws -> [UInt8] {
        let length = bytes.count - start
        guard length % 2 == 0 else {
            throw PropertyListError(.truncated, "UTF-16 text has an odd number of bytes", byteOffset: bytes.count - 1)
        }
        var output: [UInt8] = []
        output.reserveCapacity(length / 2 * 3)
        var index = start
        func unit(_ at: Int) -> UInt16 {
            let first = UInt16(bytes[at]), second = UInt16(bytes[at + 1])
            return bigEndian ? first << 8 | second : second << 8 | first
        }
        while index < bytes.count {
            let first = unit(index)
            var scalarValue = UInt32(first)
            if (0xD800...0xDBFF).contains(first) {
                guard index + 3 < bytes.count, case let second = unit(index + 2), (0xDC00...0xDFFF).contains(second) else {
                    throw PropertyListError(.invalidString, "unpaired UTF-16 surrogate", byteOffset: index)
                }
                scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
                index += 2
            } else if (0xDC00...0xDFFF).contains(first) {
                throw PropertyListError(.invalidString, "unpaired UTF-16 surrogate", byteOffset: index)
            }
            index += 2
            appendUTF8(scalarValue, to: &output)
        }
        return output
    }

    private static func transcodeUTF32(_ bytes: UnsafeRawBufferPointer, from start: Int, bigEndian: Bool) throws -> [UInt8] {
        let length = bytes.count - start
        guard length % 4 == 0 else {
            throw PropertyListError(.truncated, "UTF-32 text length is not a multiple of 4", byteOffset: bytes.count - 1)
        }
        var output: [UInt8] = []
        output.reserveCapacity(length)
        var index = start
        while index < bytes.count {
            var value: UInt32 = 0
            for offset in 0..<4 {
                let byte = UInt32(bytes[index + (bigEndian ? offset : 3 - offset)])
                value = value << 8 | byte
            }
            guard Unicode.Scalar(value) != nil else {
                throw PropertyListError(.invalidString, "invalid UTF-32 code point", byteOffset: index)
            }
            appendUTF8(value, to: &output)
            index += 4
        }
        return output
    }
}

/// XML white space: space, tab, line feed and carriage return.
@inline(__always)
func isXMLSpace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x0A || byte == 0x09 || byte == 0x0D
}

/// Appends the UTF-8 form of a valid Unicode scalar value.
@inline(__always)
func appendUTF8(_ value: UInt32, to output: inout [UInt8]) {
    switch value {
    case 0..<0x80:
        output.append(UInt8(truncatingIfNeeded: value))
    case 0x80..<0x800:
        output.append(UInt8(truncatingIfNeeded: 0xC0 | (value >> 6)))
        output.append(UInt8(truncatingIfNeeded: 0x80 | (value & 0x3F)))
    case 0x800..<0x10000:
        output.append(UInt8(truncatingIfNeeded: 0xE0 | (value >> 12)))
        output.append(UInt8(truncatingIfNeeded: 0x80 | ((value >> 6) & 0x3F)))
        output.append(UInt8(truncatingIfNeeded: 0x80 | (value & 0x3F)))
    default:
        output.append(UInt8(truncatingIfNeeded: 0xF0 | (value >> 18)))
        output.append(UInt8(truncatingIfNeeded: 0x80 | ((value >> 12) & 0x3F)))
        output.append(UInt8(truncatingIfNeeded: 0x80 | ((value >> 6) & 0x3F)))
        output.append(UInt8(truncatingIfNeeded: 0x80 | (value & 0x3F)))
    }
}
