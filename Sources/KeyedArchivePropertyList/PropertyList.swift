/// The formats a property list can be stored in.
public enum PropertyListFormat: String, Sendable, Hashable, CaseIterable {
    /// Apple's binary format, `bplist00`.
    case binary
    /// Apple's XML format (`<!DOCTYPE plist ...>`).
    case xml
    /// The old NeXTSTEP/OpenStep text format (`{ key = value; }`).
    case openStep
}

/// Entry points for reading and writing property lists in any format.
public enum PropertyList {}

extension PropertyList {
    /// The format of `bytes`, judged from their first bytes, or `nil` when they are none.
    ///
    /// `bplist…` is binary; a document starting (after an optional byte-order mark and any
    /// amount of white space) with `<` and a letter, `?` or `!` is XML, unless only hex digits
    /// and white space follow up to `>` (OpenStep data, `<deadbeef>`); anything else that is
    /// text is tried as OpenStep. UTF-16 and UTF-32 text is judged by its characters: with a
    /// byte-order mark it may be either (strings files are classically UTF-16 OpenStep text);
    /// without one (zero bytes around its first character), only XML is recognised, as
    /// CoreFoundation reads wide text.
    public static func detectFormat(_ bytes: some Collection<UInt8>) -> PropertyListFormat? {
        // A binary plist in contiguous memory (`Data`, arrays), the common case, is told from
        // its first bytes without copying them: the general path below copied and compared
        // through generic collections, about 3,000 instructions a call (a small unarchive is
        // 60,000).
        if bytes.withContiguousStorageIfAvailable(startsWithBinaryMagic) == true { return .binary }
        var text = bytes[...]
        let prefix = Array(text.prefix(6))
        // Anything that starts like a binary plist is judged as one (and rejected if its header is
        // not `bplist0?`), rather than read as the OpenStep string "bplistl" as Foundation does.
        if prefix.withUnsafeBufferPointer(startsWithBinaryMagic) { return .binary }
        switch prefix.withUnsafeBytes(XMLTextEncoding.byteOrderMark) {
        case (.utf8, let markLength)?:
            text = text.dropFirst(markLength)
        case (let encoding, let markLength)?:
            // A UTF-16 or UTF-32 mark says how wide the characters are, not which format
            // follows: the first characters after it decide, as for 8-bit text.
            return formatOfWideText(text.dropFirst(markLength), encoding)
        case nil:
            // Without a mark, zero bytes around the first character say the text is wide (as
            // the XML reader takes them, XML 1.0 appendix F), white space before `<` included;
            // only XML is recognised so, as CoreFoundation reads wide text.
            if let encoding = unmarkedWideEncoding(prefix), formatOfWideText(text, encoding) == .xml { return .xml }
        }
        // However much white space comes first (XML allows any amount before `<?xml`).
        let document = text.drop(while: isWhitespace)
        guard let first = document.first else { return bytes.isEmpty ? nil : .openStep }
        return first == UInt8(ascii: "<") && isMarkup(afterAngleBracket: document.dropFirst()) ? .xml : .openStep
    }

    /// Whether `bytes` starts with `bplist`.
    private static func startsWithBinaryMagic(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        bytes.count >= 6 && bytes[0] == 0x62 && bytes[1] == 0x70 && bytes[2] == 0x6C && bytes[3] == 0x69
            && bytes[4] == 0x73 && bytes[5] == 0x74
    }

    /// Reads a property list in any supported format, detecting the format from its bytes.
    public static func decode(_ data: Data, limits: DecodingLimits = .default) throws -> PropertyListValue {
        try decodeWithFormat(data, limits: limits).value
    }

    /// Reads a property list as Foundation's `PropertyListSerialization` would: any format,
    /// but OpenStep text without GNUstep's typed values (`<*I5>` is refused, where
    /// ``decode(_:limits:)`` reads an integer). For text whose meaning must be Foundation's:
    /// `-Key value` arguments and `karchive defaults write` values.
    package static func decodeAsFoundation(_ data: Data, limits: DecodingLimits = .default) throws -> PropertyListValue {
        guard detectFormat(data) == .openStep else { return try decode(data, limits: limits) }
        return try data.withUnsafeBytes { try OpenStepPropertyListReader.read($0, limits: limits, acceptsTypedValues: false) }
    }

    /// Reads a property list in any supported format and says which format it was.
    public static func decodeWithFormat(
        _ data: Data, limits: DecodingLimits = .default
    ) throws -> (value: PropertyListValue, format: PropertyListFormat) {
        guard let format = detectFormat(data) else {
            throw PropertyListError(.unrecognizedFormat, "empty input is not a property list", byteOffset: 0)
        }
        let value: PropertyListValue = try data.withUnsafeBytes { bytes in
            switch format {
            case .binary: try BinaryPropertyListReader.read(bytes, limits: limits)
            case .xml: try XMLPropertyListReader.read(bytes, limits: limits)
            case .openStep: try OpenStepPropertyListReader.read(bytes, limits: limits)
            }
        }
        return (value, format)
    }

    /// Writes a property list in the given format.
    ///
    /// `maximumOutputLength` bounds the output in every format: shared references in a value
    /// read from a small file expand when written (text writes every copy; binary stores
    /// strings, numbers, dates and data once but every use of a container again); a writer
    /// that would go past it throws `.lengthLimitExceeded`.
    public static func encode(
        _ value: PropertyListValue, format: PropertyListFormat = .binary, maximumOutputLength: Int = .max
    ) throws -> Data {
        switch format {
        case .binary:
            try BinaryPropertyListWriter.writeData(value, maximumOutputLength: maximumOutputLength)
        case .xml:
            try XMLPropertyListWriter.writeData(value, maximumDepth: DecodingLimits.default.maximumDepth, maximumOutputLength: maximumOutputLength)
        case .openStep:
            Data(try OpenStepPropertyListWriter.write(value, options: .init(maximumOutputLength: maximumOutputLength)))
        }
    }

    /// Converts a property list from the format it is in (detected as ``decode(_:limits:)``
    /// does) to `format`.
    ///
    /// The result is byte for byte `encode(decode(data, limits: limits), format: format,
    /// maximumOutputLength: maximumOutputLength)`. Binary to XML, the common conversion of large
    /// files, is streamed: the XML is written straight from the binary objects, with the binary
    /// reader's checks and limits, and no value tree is built, so memory is the input, one byte
    /// per object and the output. Every input the two-step path rejects is rejected here too, with
    /// the same kind of error, though a file with several problems may have a different one
    /// reported first. Files in which containers are shared (hand-made ones: Apple's writer and
    /// ours share only strings, numbers, dates and data) take the two-step path, whose reader
    /// sizes each shared container once and so rejects expansion bombs at once. On a machine with
    /// more than one core, binary inputs of 1 MiB or more are converted by two threads (the
    /// largest collection is cut into pieces; the second thread writes every other piece into
    /// memory, which the first passes on in order); the output and the errors are the same as
    /// with one.
    public static func convert(
        _ data: Data, to format: PropertyListFormat, limits: DecodingLimits = .default, maximumOutputLength: Int = .max
    ) throws -> Data {
        try convert(data, to: format, limits: limits, maximumOutputLength: maximumOutputLength, sink: nil)
    }

    /// ``convert(_:to:limits:maximumOutputLength:)``, passing the output to `write` piece by
    /// piece instead of returning it: streamed binary-to-XML output goes in chunks of about
    /// 2 MiB as it is made, so not even the output is held in memory (other conversions make
    /// their output first and pass it in one piece). If conversion fails part way, `write` has
    /// seen part of the output: write to a temporary file, or somewhere that can be discarded.
    public static func convert(
        _ data: Data, to format: PropertyListFormat, limits: DecodingLimits = .default, maximumOutputLength: Int = .max,
        into write: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try convert(data, to: format, limits: limits, maximumOutputLength: maximumOutputLength, splitting: .automatic, into: write)
    }

    /// ``convert(_:to:limits:maximumOutputLength:)`` with the binary-to-XML converter's use of a
    /// second thread fixed by `policy` (tests and fuzzing force it on small files).
    package static func convert(
        _ data: Data, to format: PropertyListFormat, limits: DecodingLimits = .default, maximumOutputLength: Int = .max,
        splitting policy: SplitPolicy
    ) throws -> Data {
        try convert(data, to: format, limits: limits, maximumOutputLength: maximumOutputLength, sink: nil, splitting: policy)
    }

    /// ``convert(_:to:limits:maximumOutputLength:into:)`` with the binary-to-XML converter's use
    /// of a second thread fixed by `policy` (tests and fuzzing).
    package static func convert(
        _ data: Data, to format: PropertyListFormat, limits: DecodingLimits = .default, maximumOutputLength: Int = .max,
        splitting policy: SplitPolicy, into write: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        try withoutActuallyEscaping(write) { write in
            let whole = try convert(data, to: format, limits: limits, maximumOutputLength: maximumOutputLength, sink: write, splitting: policy)
            if !whole.isEmpty { try whole.withUnsafeBytes(write) }
        }
    }

    /// The conversion: streamed for binary to XML (into `sink` when there is one), through a
    /// tree otherwise (the result is then returned whole, even with a sink).
    private static func convert(
        _ data: Data, to format: PropertyListFormat, limits: DecodingLimits, maximumOutputLength: Int,
        sink: ((UnsafeRawBufferPointer) throws -> Void)?, splitting policy: SplitPolicy = .automatic
    ) throws -> Data {
        if format == .xml, detectFormat(data) == .binary {
            return try data.withUnsafeBytes { bytes in
                var decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: limits)
                guard decoder.canWriteXMLWithinLimits() else {
                    return try encode(decoder.decodeRoot(), format: format, maximumOutputLength: maximumOutputLength)
                }
                return try decoder.writeXML(
                    maximumDepth: DecodingLimits.default.maximumDepth, budget: OutputBudget(maximumOutputLength), sink: sink,
                    split: policy)
            }
        }
        return try encode(decode(data, limits: limits), format: format, maximumOutputLength: maximumOutputLength)
    }

    /// The width and byte order that zero bytes around the first character of unmarked text
    /// give, or nil for 8-bit text.
    private static func unmarkedWideEncoding(_ prefix: [UInt8]) -> XMLTextEncoding? {
        guard prefix.count >= 2 else { return nil }
        if prefix.count >= 4 {
            if prefix[0] == 0, prefix[1] == 0, prefix[2] == 0, prefix[3] != 0 { return .utf32BigEndian }
            if prefix[0] != 0, prefix[1] == 0, prefix[2] == 0, prefix[3] == 0 { return .utf32LittleEndian }
        }
        if prefix[0] == 0, prefix[1] != 0 { return .utf16BigEndian }
        if prefix[0] != 0, prefix[1] == 0 { return .utf16LittleEndian }
        return nil
    }

    /// The format of UTF-16 or UTF-32 text (`bytes` past any byte-order mark), judged from its
    /// first characters past white space as 8-bit text is judged from its first bytes.
    /// White space alone is an empty OpenStep document, as it is after a UTF-8 mark.
    private static func formatOfWideText(_ bytes: some Collection<UInt8>, _ encoding: XMLTextEncoding) -> PropertyListFormat {
        // Over contiguous bytes (`Data`, arrays) the walk is specialised for a buffer.
        if let format = bytes.withContiguousStorageIfAvailable({ formatOfWideCharacters($0, encoding) }) { return format }
        return formatOfWideCharacters(bytes, encoding)
    }

    private static func formatOfWideCharacters(_ bytes: some Collection<UInt8>, _ encoding: XMLTextEncoding) -> PropertyListFormat {
        var characters = WideCharacters(
            bytes: bytes.makeIterator(), width: encoding == .utf32BigEndian || encoding == .utf32LittleEndian ? 4 : 2,
            bigEndian: encoding == .utf32BigEndian || encoding == .utf16BigEndian)
        // A loop over a concrete iterator: through `AnyIterator` and `drop(while:)`, 64 MiB of
        // wide white space took 1.5 s to judge.
        var first: UInt8?
        while let character = characters.next() {
            if !isWhitespace(character) {
                first = character
                break
            }
        }
        guard let first else { return .openStep }
        return first == UInt8(ascii: "<") && isMarkup(afterAngleBracket: IteratorSequence(characters)) ? .xml : .openStep
    }

    /// The characters of wide text as bytes: ASCII as itself, anything else as 0x80, which
    /// nothing in format detection takes for XML, white space or a hex digit.
    private struct WideCharacters<Bytes: IteratorProtocol<UInt8>>: IteratorProtocol {
        var bytes: Bytes
        let width: Int
        let bigEndian: Bool

        mutating func next() -> UInt8? {
            var unit: UInt32 = 0
            for filled in 0..<width {
                guard let byte = bytes.next() else { return nil }
                // Shifts by at most 24 bits within a UInt32 (a unit is at most 4 bytes).
                unit = bigEndian ? unit << 8 | UInt32(byte) : unit | UInt32(byte) << (8 * filled)
            }
            return unit < 0x80 ? UInt8(truncatingIfNeeded: unit) : 0x80
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// Whether the characters after a document's first `<` make it XML rather than OpenStep
    /// data (`<0fbd>`, `<deadbeef>`). XML follows `<` with `?`, `!` or an element name; data
    /// is hex digits and white space up to `>`. No plist element's name is all hex letters
    /// (`dict`, `data`, `date`, `array` each have another letter), so one that is, up to `>`
    /// or the end, is data (CoreFoundation tries XML, then OpenStep, and gets the same).
    private static func isMarkup(afterAngleBracket characters: some Sequence<UInt8>) -> Bool {
        var iterator = characters.makeIterator()
        guard let next = iterator.next() else { return false }
        if next == UInt8(ascii: "?") || next == UInt8(ascii: "!") { return true }
        let letter = next | 0x20  // lowercase for ASCII letters
        guard letter >= UInt8(ascii: "a"), letter <= UInt8(ascii: "z") else { return false }
        guard letter <= UInt8(ascii: "f") else { return true }
        while let character = iterator.next() {
            if character == UInt8(ascii: ">") { return false }
            let isHexLetter = character | 0x20 >= UInt8(ascii: "a") && character | 0x20 <= UInt8(ascii: "f")
            let isDigit = character >= UInt8(ascii: "0") && character <= UInt8(ascii: "9")
            let isSpace = character == 0x20 || (0x09...0x0D).contains(character)
            if !(isHexLetter || isDigit || isSpace) { return true }
        }
        return false
    }
}
