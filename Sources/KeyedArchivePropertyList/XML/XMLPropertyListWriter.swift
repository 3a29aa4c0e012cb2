#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(ucrt)
import ucrt
#endif

/// Writes Apple's XML property-list format, byte for byte as CoreFoundation's writer does.
///
/// The layout is CF's (`_CFAppendXML0`): the XML declaration and `<!DOCTYPE plist PUBLIC ...>`
/// header, one element per line indented with tabs, dictionary keys sorted by UTF-16 code units,
/// `<dict/>` and `<array/>` for empty containers, `<true/>`/`<false/>`, only `<`, `>` and `&`
/// escaped, integers in decimal, reals as `%.17g` with CF's spellings `nan`, `+infinity`,
/// `-infinity` and `0.0`, dates in whole seconds, data as base64 lines whose length depends on the
/// indentation, and a UID as a `CF$UID` dictionary. So an Apple-made XML file read and written
/// back unchanged comes out byte-identical.
///
/// One deliberate difference: `-0.0` is written `-0.0` (CF writes `0.0`, losing the sign).
/// Values XML cannot hold throw ``PropertyListError/Code/unrepresentableValue``: `null`, sets
/// (CF refuses them for XML too), dictionary keys that are not strings, dates that are not
/// finite or whose year is outside 0...9999, and nesting deeper than the depth limit.
public enum XMLPropertyListWriter {
    /// The header CF writes before the value.
    static let header = Array(
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
        <plist version="1.0">

        """.utf8)

    /// Writes a property list as an XML document, refusing nesting deeper than
    /// ``DecodingLimits/default``'s ``DecodingLimits/maximumDepth`` (what the readers accept).
    public static func write(_ value: PropertyListValue) throws -> [UInt8] {
        try write(value, maximumDepth: DecodingLimits.default.maximumDepth)
    }

    /// Writes a property list as an XML document, refusing containers nested deeper than
    /// `maximumDepth` (each level costs a tab on every line below it, so output grows with the
    /// square of the depth), and stopping with `.lengthLimitExceeded` once the document would be
    /// longer than `maximumOutputLength` bytes.
    public static func write(_ value: PropertyListValue, maximumDepth: Int, maximumOutputLength: Int = .max) throws -> [UInt8] {
        [UInt8](try writeData(value, maximumDepth: maximumDepth, maximumOutputLength: maximumOutputLength))
    }

    /// ``write(_:maximumDepth:maximumOutputLength:)`` as `Data`, without an intermediate copy.
    public static func writeData(_ value: PropertyListValue, maximumDepth: Int, maximumOutputLength: Int = .max) throws -> Data {
        let writer = Writer(maximumDepth: maximumDepth, budget: OutputBudget(maximumOutputLength))
        try writer.write(value)
        return try writer.text.finish()
    }
}

/// The writer's state for a value tree: the output and the stack of open containers (no
/// recursion).
private final class Writer {
    /// An open container and the position of the next member to write. Frames are updated in
    /// place; a dictionary keeps its stored entries plus the order to write them in.
    struct Frame {
        var elements: [PropertyListValue] = []
        /// Dictionary entries as stored; every key is a string (checked when the frame opens).
        var entries: [PropertyListDictionary.Entry] = []
        /// The positions of `entries` in key order, or empty when the stored order is sorted.
        var order: [Int] = []
        var isDictionary = false
        var next = 0

        /// The position in `entries` of the dictionary's `member`-th key in writing order.
        func position(_ member: Int) -> Int { order.isEmpty ? member : order[member] }
    }

    let maximumDepth: Int
    let text: XMLText
    var frames: [Frame] = []

    init(maximumDepth: Int, budget: OutputBudget) {
        self.maximumDepth = maximumDepth
        self.text = XMLText(budget: budget)
    }

    func write(_ root: PropertyListValue) throws {
        do {
            try writeTree(root)
        } catch var error as PropertyListError where error.keyPath == nil && error.code == .unrepresentableValue {
            error.keyPath = keyPath()
            throw error
        }
    }

    private func writeTree(_ root: PropertyListValue) throws {
        try open(root)
        while let last = frames.indices.last {
            try text.checkBudget()
            let indent = frames.count
            let next = frames[last].next
            if frames[last].isDictionary {
                guard next < frames[last].entries.count else {
                    frames.removeLast()
                    text.close("</dict>\n", indent: indent - 1)
                    continue
                }
                frames[last].next = next + 1
                let entry = frames[last].entries[frames[last].position(next)]
                if case .string(let key) = entry.key { key.withUTF8 { text.writeKey(utf8: UnsafeRawBufferPointer($0), indent: indent) } }
                try open(entry.value)
            } else {
                guard next < frames[last].elements.count else {
                    frames.removeLast()
                    text.close("</array>\n", indent: indent - 1)
                    continue
                }
                frames[last].next = next + 1
                try open(frames[last].elements[next])
            }
        }
    }

    /// Writes a scalar completely, or the opening tag of a container and pushes it.
    private func open(_ value: PropertyListValue) throws {
        let indent = frames.count
        switch value {
        case .array(let elements):
            try checkDepth()
            if text.openArray(isEmpty: elements.isEmpty, indent: indent) {
                frames.append(Frame(elements: elements))
            }
        case .dictionary(let dictionary):
            try checkDepth()
            for entry in dictionary.entries {
                guard case .string = entry.key else {
                    throw XMLText.failure("XML dictionary keys must be strings, not \(entry.key.typeName)")
                }
            }
            if text.openDictionary(isEmpty: dictionary.isEmpty, indent: indent) {
                frames.append(Frame(entries: dictionary.entries, order: keyOrder(dictionary.entries), isDictionary: true))
            }
        case .uid:
            // Written as a `CF$UID` dictionary: a level of nesting to every reader.
            try checkDepth()
            fallthrough
        default:
            try text.writeScalar(value, indent: indent)
        }
    }

    private func checkDepth() throws {
        // frames.count containers are open around this one.
        guard frames.count < maximumDepth else {
            throw XMLText.failure("nesting deeper than \(maximumDepth)")
        }
    }

    /// The key path of the value being written, e.g. `items[3].name`.
    private func keyPath() -> String {
        var path = ""
        for frame in frames where frame.next > 0 {
            if frame.isDictionary {
                if !path.isEmpty { path += "." }
                if case .string(let key) = frame.entries[frame.position(frame.next - 1)].key { path += key.value }
            } else {
                path += "[\(frame.next - 1)]"
            }
        }
        return path
    }
}

/// The pieces of CF's XML layout, shared by the tree writer above and the streaming binary-to-XML
/// converter: indentation, tags, escaped text, numbers, dates and base64 lines. Values XML cannot
/// hold throw ``PropertyListError/Code/unrepresentableValue`` without a key path; the caller
/// knows where it is and adds one.
final class XMLText {
    let output: GrowableBytes
    let budget: OutputBudget
    /// Where full chunks go, for output that is not kept in memory; nil to keep it all.
    private let sink: ((UnsafeRawBufferPointer) throws -> Void)?
    /// Takes each full chunk's buffer, with the walk's totals at its end, for output handed to
    /// another thread as it is written (the converter's second thread); the next chunk is
    /// written in a buffer from ``spares`` when there is one, else in a new one.
    private let handOff: ((GrowableBytes, _ values: Int, _ stringBytes: Int) -> Void)?
    private let spares: SpareBuffers?
    /// Whether full chunks leave ``output`` (through `sink` or `handOff`).
    private let passesChunksOn: Bool
    /// Bytes of the document before those in ``output``.
    private var flushed = 0
    /// Bytes about to be written that the sink already has: after ``rewind(to:)``, the text
    /// written again up to where the sink got to is dropped, not passed on twice.
    private var alreadyPassedOn = 0
    /// The chunk size.
    private let chunk: Int
    /// A chunk buffer's capacity: a chunk and the value that passes its end.
    private static func bufferCapacity(chunk: Int) -> Int { min(chunk, sinkChunkLength) + 4096 }
    /// The usual chunk size: with the room for the value that passes a chunk's end, a chunk
    /// buffer is one large page (2 MiB, see ``HugePages``).
    static let sinkChunkLength = HugePages.pageLength - 4096

    /// `expectedLength` sizes the buffer up front when the caller can guess the document's
    /// length: growing a large buffer by doubling can leave the smaller copies resident (glibc
    /// keeps freed heap blocks below its mapping threshold), while untouched capacity costs no
    /// memory.
    init(
        budget: OutputBudget, sink: ((UnsafeRawBufferPointer) throws -> Void)? = nil, expectedLength: Int = 4096,
        chunkLength: Int = XMLText.sinkChunkLength
    ) {
        self.budget = budget
        self.sink = sink
        handOff = nil
        spares = nil
        passesChunksOn = sink != nil
        chunk = max(1, chunkLength)
        // A streamed short document gets a short buffer: a chunk buffer is one large page,
        // which the kernel clears in full at the first byte written.
        let expected = max(4096, min(expectedLength, budget.limit))
        output = GrowableBytes(capacity: sink == nil ? expected : min(expected, Self.bufferCapacity(chunk: chunk)))
        output.append(contentsOf: XMLPropertyListWriter.header)
    }

    /// Text whose chunks of about `chunkLength` bytes go to `handOff` as they fill, buffer and
    /// all, with the totals ``checkBudget(values:stringBytes:)`` was given (the rest stays in
    /// ``output`` until ``passOnRest(values:stringBytes:)``), each written in a buffer from
    /// `spares` when it has one; it starts empty, with no XML header.
    init(
        budget: OutputBudget, chunkLength: Int, spares: SpareBuffers? = nil,
        handOff: @escaping (GrowableBytes, _ values: Int, _ stringBytes: Int) -> Void
    ) {
        self.budget = budget
        sink = nil
        self.handOff = handOff
        self.spares = spares
        passesChunksOn = true
        chunk = max(1, chunkLength)
        output = GrowableBytes(capacity: Self.bufferCapacity(chunk: chunk))
    }

    /// Where the next byte goes in the whole document.
    var position: Int { flushed &+ output.count }

    /// Throws once the output has gone past the budget (called once per value, between
    /// values); with a sink or a hand-off, passes on each full chunk. `values` and `stringBytes`
    /// are the walk's totals so far, for a hand-off.
    @inline(__always)
    func checkBudget(values: Int = 0, stringBytes: Int = 0) throws {
        try budget.check(flushed &+ output.count)
        if passesChunksOn && output.count >= chunk { try flush(values: values, stringBytes: stringBytes) }
    }

    private func flush(values: Int = 0, stringBytes: Int = 0) throws {
        guard !output.failed else {
            throw PropertyListError(.lengthLimitExceeded, "out of memory after \(flushed + output.count) bytes of XML")
        }
        if let handOff {
            flushed += output.count
            handOff(output.handOver(reserving: Self.bufferCapacity(chunk: chunk), reusing: spares?.take()), values, stringBytes)
            return
        }
        guard let sink else { return }
        let count = output.count
        let skipped = min(alreadyPassedOn, count)
        alreadyPassedOn -= skipped
        if skipped < count {
            try output.withBytes { try sink(UnsafeRawBufferPointer(rebasing: $0[skipped...])) }
        }
        flushed += count
        output.removeAll()
    }

    /// Hands the text not handed off yet to `handOff` as a chunk, however short (the end of a
    /// piece of the converter's second thread), with the walk's totals at its end.
    func passOnRest(values: Int, stringBytes: Int) throws {
        try flush(values: values, stringBytes: stringBytes)
    }

    /// True when `length` more bytes keep the output within the budget.
    func canAppend(_ length: Int) -> Bool {
        let (total, overflow) = (flushed &+ output.count).addingReportingOverflow(length)
        return !overflow && budget.allows(total)
    }

    /// Appends text written elsewhere (the second thread's part of a conversion). With a sink,
    /// it goes there straight from `text`, in chunks, after what is buffered.
    func appendWritten(_ text: UnsafeRawBufferPointer) throws {
        guard let sink else {
            output.append(text)
            return
        }
        try flush()
        var start = min(alreadyPassedOn, text.count)
        alreadyPassedOn -= start
        flushed += start
        while start < text.count {
            let end = text.count - start > chunk ? start + chunk : text.count
            try sink(UnsafeRawBufferPointer(rebasing: text[start..<end]))
            flushed += end - start
            start = end
        }
    }

    /// Goes back to document position `position` (at or after the start of the text appended
    /// last): what follows is forgotten, and written again. Bytes the sink already has are not
    /// passed on again, so the sink sees each byte of the document once.
    func rewind(to position: Int) {
        if position >= flushed {
            output.truncate(to: position &- flushed)
        } else {
            alreadyPassedOn = flushed &- position &+ alreadyPassedOn
            flushed = position
            output.removeAll()
        }
    }

    /// Closes the document and hands over its bytes (with a sink: passes on the rest and
    /// returns empty data).
    func finish() throws -> Data {
        output.append(contentsOf: "</plist>\n".utf8)
        // The last value's text, never checked between values (a root scalar's is all of it).
        try budget.check(flushed &+ output.count)
        try flush()
        return sink == nil ? output.takeData() : Data()
    }

    static func failure(_ message: String) -> PropertyListError {
        PropertyListError(.unrepresentableValue, message)
    }

    /// Writes `<array>` and returns true, or `<array/>` for an empty one and returns false.
    @inline(__always)
    func openArray(isEmpty: Bool, indent: Int) -> Bool {
        appendIndent(indent)
        append(isEmpty ? "<array/>\n" : "<array>\n")
        return !isEmpty
    }

    /// Writes `<dict>` and returns true, or `<dict/>` for an empty one and returns false.
    @inline(__always)
    func openDictionary(isEmpty: Bool, indent: Int) -> Bool {
        appendIndent(indent)
        append(isEmpty ? "<dict/>\n" : "<dict>\n")
        return !isEmpty
    }

    @inline(__always)
    func close(_ tag: StaticString, indent: Int) {
        appendIndent(indent)
        append(tag)
    }

    /// `<key>...</key>` on its own line.
    @inline(__always)
    func writeKey(_ key: String, indent: Int) {
        var key = key
        key.withUTF8 { writeKey(utf8: UnsafeRawBufferPointer($0), indent: indent) }
    }

    /// `<key>...</key>` from bytes already known to be UTF-8.
    @inline(__always)
    func writeKey(utf8 key: UnsafeRawBufferPointer, indent: Int) {
        appendIndent(indent)
        append("<key>")
        appendEscaped(key)
        append("</key>\n")
    }

    /// `<string>...</string>` from bytes already known to be UTF-8.
    func writeString(utf8 bytes: UnsafeRawBufferPointer, indent: Int) {
        appendIndent(indent)
        append("<string>")
        appendEscaped(bytes)
        append("</string>\n")
    }

    /// `<data>` with its base64 lines.
    func writeData(_ bytes: UnsafeRawBufferPointer, indent: Int) {
        appendIndent(indent)
        append("<data>\n")
        appendBase64(bytes, indent: indent)
        appendIndent(indent)
        append("</data>\n")
    }

    /// Writes a value that is not an array or dictionary.
    func writeScalar(_ value: PropertyListValue, indent: Int) throws {
        switch value {
        case .string(let string):
            string.withUTF8 { writeString(utf8: UnsafeRawBufferPointer($0), indent: indent) }
        case .integer(let integer):
            appendIndent(indent)
            append("<integer>")
            appendDecimal(integer)
            append("</integer>\n")
        case .real(let real):
            appendIndent(indent)
            append("<real>")
            appendReal(real.value)
            append("</real>\n")
        case .bool(let bool):
            appendIndent(indent)
            append(bool ? "<true/>\n" : "<false/>\n")
        case .date(let date):
            guard let parts = GregorianCalendar.components(of: date) else {
                throw Self.failure("date \(date.timeIntervalSinceReferenceDate) has no XML form (not finite or outside years 0...9999)")
            }
            appendIndent(indent)
            append("<date>")
            var sink: GrowableBytes = output
            XMLDateFormat.append(parts, to: &sink)
            append("</date>\n")
        case .data(let data):
            data.withUnsafeBytes { writeData($0, indent: indent) }
        case .uid(let uid):
            appendIndent(indent)
            append("<dict>\n")
            appendIndent(indent + 1)
            append("<key>CF$UID</key>\n")
            appendIndent(indent + 1)
            append("<integer>")
            appendDecimal(PropertyListInteger(UInt64(uid)))
            append("</integer>\n")
            appendIndent(indent)
            append("</dict>\n")
        case .set:
            throw Self.failure("sets have no XML form (CoreFoundation refuses them too)")
        case .null:
            throw Self.failure("null has no XML form")
        case .array, .dictionary:
            // Containers are the walkers' business; reaching here is a caller's mistake.
            throw Self.failure("internal error: a container was passed as a scalar")
        }
    }

    // MARK: - Pieces

    /// Decimal digits without going through `String`.
    private func appendDecimal(_ integer: PropertyListInteger) {
        var magnitude = integer.bitPattern
        if integer.isNegative {
            output.append(UInt8(ascii: "-"))
            magnitude = 0 &- magnitude  // two's-complement magnitude; Int64.min wraps to 2^63, as intended
        }
        // Up to 20 digits, written backwards into a stack buffer.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = digits.count
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0 && start > 0
            output.append(UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: digits[start...])))
        }
    }

    @inline(__always)
    private func append(_ text: StaticString) {
        output.append(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    @inline(__always)
    private func appendIndent(_ count: Int) {
        output.append(repeating: UInt8(ascii: "\t"), count: count)
    }

    /// Appends the UTF-8 text with `<`, `>` and `&` escaped, as CF does (nothing else is).
    private func appendEscaped(_ utf8: UnsafeRawBufferPointer) {
        var mark = 0
        for index in 0..<utf8.count {
            let escape: StaticString
            switch utf8[index] {
            case UInt8(ascii: "<"): escape = "&lt;"
            case UInt8(ascii: ">"): escape = "&gt;"
            case UInt8(ascii: "&"): escape = "&amp;"
            default: continue
            }
            output.append(UnsafeRawBufferPointer(rebasing: utf8[mark..<index]))
            append(escape)
            mark = index + 1
        }
        output.append(UnsafeRawBufferPointer(rebasing: utf8[mark...]))
    }

    /// CF's `__CFNumberCopyFormattingDescriptionAsFloat64`: `%.17g`, with `nan`, `+infinity`,
    /// `-infinity` and `0.0` spelled out. `-0.0` keeps its sign here.
    private func appendReal(_ value: Double) {
        if value.isNaN { return append("nan") }
        if value.isInfinite { return append(value < 0 ? "-infinity" : "+infinity") }
        if value == 0 { return append(value.sign == .minus ? "-0.0" : "0.0") }
        withG17(value) { output.append(UnsafeRawBufferPointer($0)) }
    }

    /// Base64 lines exactly as CF's `_XMLPlistAppendDataUsingBase64`: a line is flushed once it
    /// reaches `76 - 8 * indent` characters (indent capped at 8), each line indented; empty data
    /// writes no line at all.
    ///
    /// CF checks the line length after each input byte. The limit is a multiple of four, so a
    /// line fills up exactly after the last byte of a three-byte group, and a final partial
    /// group with its padding never reaches it: the lines are the padded base64 text cut every
    /// `76 - 8 * indent` characters (`testBase64LinesMatchCFsByteByByteLayout` checks this
    /// against CF's byte-by-byte loop). Each line is encoded straight into the output.
    private func appendBase64(_ bytes: UnsafeRawBufferPointer, indent: Int) {
        let count = bytes.count
        guard count > 0 else { return }
        let indent = min(indent, 8)
        let lineLimit = 76 - 8 * indent
        let total = (count + 2) / 3 * 4
        var lineStart = 0
        while lineStart < total {
            let lineEnd = min(lineStart + lineLimit, total)
            appendIndent(indent)
            output.append(uninitialized: lineEnd - lineStart + 1) { line in
                Self.encodeBase64(bytes, characters: lineStart..<lineEnd, into: line)
                line[lineEnd - lineStart] = UInt8(ascii: "\n")
            }
            lineStart = lineEnd
        }
    }

    /// Writes characters `characters` of the padded base64 text of `bytes` into `target`.
    private static func encodeBase64(_ bytes: UnsafeRawBufferPointer, characters: Range<Int>, into target: UnsafeMutableRawBufferPointer) {
        let alphabet = XMLBase64.alphabetBytes
        let count = bytes.count
        @inline(__always) func character(_ position: Int) -> UInt8 {
            let group = position >> 2, slot = position & 3
            let first = 3 * group
            let b0 = UInt32(bytes[first])
            let b1 = first + 1 < count ? UInt32(bytes[first + 1]) : 0
            let b2 = first + 2 < count ? UInt32(bytes[first + 2]) : 0
            if slot >= 2 && first + slot - 1 >= count { return UInt8(ascii: "=") }
            let bits = b0 << 16 | b1 << 8 | b2
            return alphabet[Int((bits >> UInt32(18 - 6 * slot)) & 0x3F)]
        }
        var position = characters.lowerBound
        var written = 0
        // Up to a group boundary one character at a time, then whole groups of three bytes.
        while position < characters.upperBound && position & 3 != 0 {
            target[written] = character(position)
            position += 1
            written += 1
        }
        let fullGroupsEnd = min(characters.upperBound, count / 3 * 4)
        while position + 4 <= fullGroupsEnd {
            let first = 3 * (position >> 2)
            let bits = UInt32(bytes[first]) << 16 | UInt32(bytes[first + 1]) << 8 | UInt32(bytes[first + 2])
            target[written] = alphabet[Int(bits >> 18)]
            target[written + 1] = alphabet[Int(bits >> 12 & 0x3F)]
            target[written + 2] = alphabet[Int(bits >> 6 & 0x3F)]
            target[written + 3] = alphabet[Int(bits & 0x3F)]
            position += 4
            written += 4
        }
        while position < characters.upperBound {
            target[written] = character(position)
            position += 1
            written += 1
        }
    }
}

/// The base64 alphabet, shared by the XML and JSON writers.
enum XMLBase64 {
    static let alphabet: [UInt8] = Array(alphabetBytes)
    /// The alphabet as a static string's bytes: no array, no bounds check once masked to six bits.
    static var alphabetBytes: UnsafeBufferPointer<UInt8> {
        let text: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        return UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
    }

    /// Standard padded base64 on one line.
    static func encode(_ data: Data) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity((data.count + 2) / 3 * 4)
        data.withUnsafeBytes { bytes in
            var index = 0
            while index + 3 <= bytes.count {
                let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                output.append(alphabet[Int(group >> 18)])
                output.append(alphabet[Int(group >> 12 & 0x3F)])
                output.append(alphabet[Int(group >> 6 & 0x3F)])
                output.append(alphabet[Int(group & 0x3F)])
                index += 3
            }
            let rest = bytes.count - index
            if rest > 0 {
                let first = UInt32(bytes[index])
                let second = rest == 2 ? UInt32(bytes[index + 1]) : 0
                let group = first << 16 | second << 8
                output.append(alphabet[Int(group >> 18)])
                output.append(alphabet[Int(group >> 12 & 0x3F)])
                output.append(rest == 2 ? alphabet[Int(group >> 6 & 0x3F)] : UInt8(ascii: "="))
                output.append(UInt8(ascii: "="))
            }
        }
        return output
    }
}

/// The order in which to write dictionary entries whose keys are all strings: by the keys'
/// UTF-16 code units, as `CFStringCompare` with no options orders them, and stable, so duplicate
/// keys keep their order. Empty when the stored order is already that order.
///
/// Each key's first eight bytes, transformed so that byte order is UTF-16 order, are compared
/// as one integer; only keys whose first eight bytes tie are compared in full.
func keyOrder(_ entries: [PropertyListDictionary.Entry]) -> [Int] {
    @inline(__always) func key(_ index: Int) -> String {
        if case .string(let key) = entries[index].key { return key.value }
        return ""
    }
    return keyOrder(count: entries.count, prefix: { utf16SortPrefix(key($0)) }, tieBreak: { utf16Precedes(key($0), key($1)) })
}

/// ``keyOrder(_:)`` for `count` keys given by their ``utf16SortPrefix(_:)`` values and a full
/// comparison (true when the first key sorts before the second), used only when prefixes tie.
@inline(__always)
func keyOrder(count: Int, prefix: (Int) -> UInt64, tieBreak: (Int, Int) -> Bool) -> [Int] {
    var order: [Int] = []
    var prefixes: [UInt64] = []
    _ = appendKeyOrder(count: count, prefix: prefix, tieBreak: tieBreak, to: &order, scratch: &prefixes)
    return order
}

/// ``keyOrder(count:prefix:tieBreak:)`` appending the order to `order` instead of returning a
/// new array, with `prefixes` as scratch, so a caller that sorts many dictionaries allocates
/// nothing per dictionary. Returns false (and appends nothing) when the keys are in order.
@inline(__always)
func appendKeyOrder(
    count: Int, prefix: (Int) -> UInt64, tieBreak: (Int, Int) -> Bool, to order: inout [Int], scratch prefixes: inout [UInt64]
) -> Bool {
    if count < 2 { return false }
    prefixes.removeAll(keepingCapacity: true)
    for index in 0..<count { prefixes.append(prefix(index)) }
    @inline(__always) func precedes(_ a: Int, _ b: Int) -> Bool {
        if prefixes[a] != prefixes[b] { return prefixes[a] < prefixes[b] }
        return tieBreak(a, b)
    }
    var sorted = true
    for index in 1..<count where precedes(index, index - 1) {
        sorted = false
        break
    }
    if sorted { return false }
    let start = order.count
    if count <= 32 {
        // Insertion sort: stable, and quickest for the small dictionaries of real files.
        order.append(contentsOf: 0..<count)
        for index in 1..<count {
            let moving = order[start + index]
            var position = index
            while position > 0 && precedes(moving, order[start + position - 1]) {
                order[start + position] = order[start + position - 1]
                position -= 1
            }
            order[start + position] = moving
        }
        return true
    }
    order.append(contentsOf: (0..<count).sorted { left, right in
        if precedes(left, right) { return true }
        if precedes(right, left) { return false }
        return left < right
    })
    return true
}

/// The first eight UTF-8 bytes of `key` as a big-endian integer, missing bytes as zero, with the
/// lead bytes 0xEE and 0xEF (U+E000...U+FFFF) moved above 0xF0...0xF4 (supplementary scalars,
/// which UTF-16 spells with surrogates that sort lower). A smaller prefix means an earlier key;
/// equal prefixes say nothing (a shorter key and one continuing with NUL bytes tie).
func utf16SortPrefix(_ key: String) -> UInt64 {
    if let fast = key.utf8.withContiguousStorageIfAvailable(utf16SortPrefix(utf8:)) { return fast }
    return Array(key.utf8.prefix(8)).withUnsafeBufferPointer(utf16SortPrefix(utf8:))
}

/// ``utf16SortPrefix(_:)`` of a key given as UTF-8 bytes.
@inline(__always)
func utf16SortPrefix(utf8 bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
    var prefix: UInt64 = 0
    var shift: UInt64 = 56
    for index in 0..<min(bytes.count, 8) {
        let byte = bytes[index]
        let mapped: UInt8 = byte == 0xEE ? 0xF5 : byte == 0xEF ? 0xF6 : byte
        prefix |= UInt64(mapped) << shift
        shift &-= 8
    }
    return prefix
}

/// True when `a` sorts before `b` by UTF-16 code units. UTF-8 byte order is code-point order,
/// which equals UTF-16 order except between U+E000...U+FFFF (lead bytes EE, EF) and
/// supplementary scalars (lead bytes F0...F4, surrogates in UTF-16, which sort lower).
func utf16Precedes(_ a: String, _ b: String) -> Bool {
    let fast = a.utf8.withContiguousStorageIfAvailable { left in
        b.utf8.withContiguousStorageIfAvailable { right in utf16Precedes(left, right) }
    }
    if let fast, let result = fast { return result }
    let left = Array(a.utf8), right = Array(b.utf8)
    return left.withUnsafeBufferPointer { l in right.withUnsafeBufferPointer { r in utf16Precedes(l, r) } }
}

/// ``utf16Precedes(_:_:)`` on UTF-8 bytes.
func utf16Precedes(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Bool {
    let common = min(left.count, right.count)
    var index = 0
    while index < common && left[index] == right[index] { index += 1 }
    if index == common { return left.count < right.count }
    let x = left[index], y = right[index]
    // Inside a multi-byte sequence the lead bytes were equal, so plain byte order is right there;
    // the surrogate rule only matters at lead bytes, which are >= 0xC0 or ASCII.
    let xHighBMP = x == 0xEE || x == 0xEF, yHighBMP = y == 0xEE || y == 0xEF
    if (xHighBMP && y >= 0xF0) || (yHighBMP && x >= 0xF0) { return y < 0xF0 }
    return x < y
}
