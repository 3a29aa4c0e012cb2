#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A property-list string and the encoding it is stored in.
///
/// Equality and hashing are literal (by Unicode scalars), as CoreFoundation compares strings:
/// the NFC and NFD spellings of "é" are different strings here, while Swift's `String ==`
/// would call them equal. Keeping them apart is what lets a dictionary hold both keys.
///
/// The text is kept as UTF-8 bytes in place when it has up to 14 of them, and as a `String` in a
/// box of its own when longer, never as a bare `String`: a `String` lends an enum no spare bits,
/// so a ``PropertyListValue`` with one inside needed a 17th byte (a stride of 24, and 48 bytes a
/// dictionary entry); with this layout a value is 16 bytes and an entry 32. ``value`` makes a
/// small `String` of inline bytes (no allocation) or hands out the boxed one.
public struct PropertyListString: Sendable {
    /// How a string is stored in a binary property list.
    public enum Storage: UInt8, Sendable, Hashable {
        /// One byte per character (marker `0x5_`); only for strings whose scalars are all below 0x80.
        case ascii
        /// Big-endian UTF-16 code units (marker `0x6_`).
        case utf16
    }

    /// The UTF-8 text and the storage hint. Texts of up to ``Text/inlineCapacity`` bytes are
    /// always inline and longer ones always boxed, so equal texts have the same case.
    @usableFromInline
    package var text: Text

    /// The text.
    public var value: String {
        get { text.string }
        set { text = Text(newValue, storage: storage) }
    }

    /// The storage the string was read with, or `nil` to let the writer choose as Apple does
    /// (ASCII when every scalar is below 0x80, else UTF-16). An `.ascii` hint on a string that is
    /// not ASCII is ignored.
    public var storage: Storage? {
        get { text.storage }
        set { text.setStorage(newValue) }
    }

    /// A string whose storage the writer chooses.
    public init(_ value: String) {
        text = Text(value, storage: nil)
    }

    /// A string with an explicit storage hint.
    public init(_ value: String, storage: Storage?) {
        text = Text(value, storage: storage)
    }

    /// A string of UTF-8 bytes the caller has validated (ASCII bytes are valid UTF-8). Invalid
    /// bytes would be repaired (replacement characters) wherever a `String` is made of them, but
    /// compared and written as they are: callers pass only valid text.
    @inlinable
    package init(validatedUTF8 bytes: UnsafeRawBufferPointer, storage: Storage?) {
        text = Text(bytes, storage: storage)
    }

    /// The number of UTF-8 bytes of the text.
    @inlinable
    package var utf8Count: Int { text.count }

    /// Calls `body` with the UTF-8 bytes of the text (valid only inside `body`).
    @inlinable
    package func withUTF8<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        try text.withUTF8(body)
    }

    /// True when every scalar is below 0x80.
    public var isASCII: Bool {
        withUTF8 { Self.isASCII(UnsafeRawBufferPointer($0)) }
    }

    /// The storage the binary writer uses for this string: the hint when it is `.utf16` or the
    /// text is ASCII, else ASCII for ASCII text and UTF-16 for the rest. The empty string is
    /// always ASCII: Foundation on Linux refuses an empty UTF-16 string (marker `0x60`), and
    /// Apple's writer never makes one.
    public var storageForWriting: Storage {
        if storage == .utf16, utf8Count > 0 { return .utf16 }
        return isASCII ? .ascii : .utf16
    }

    /// True when `string`'s UTF-8 bytes are this text's, byte for byte (no normalisation),
    /// without making a `String` of this one. (No closure captures the text: a capture copies
    /// it, and a copy of a ``Text`` is an outlined switch and maybe a retain.)
    @inlinable
    package func hasText(_ string: String) -> Bool {
        switch text {
        case .inline(var inline):
            let count = inline.count
            return withUnsafeMutableBytes(of: &inline) { raw in
                let mine = UnsafeBufferPointer(rebasing: raw.bindMemory(to: UInt8.self)[..<count])
                if let fast = string.utf8.withContiguousStorageIfAvailable({ Self.sameBytes(mine, $0) }) { return fast }
                return string.utf8.count == count && mine.elementsEqual(string.utf8)
            }
        case .boxed(let box):
            return Self.sameUTF8(box.string, string)
        }
    }

    /// True when every byte is below 0x80, eight at a time.
    @inlinable
    package static func isASCII(_ raw: UnsafeRawBufferPointer) -> Bool {
        var index = 0
        while index &+ 8 <= raw.count {
            if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            index &+= 8
        }
        while index < raw.count {
            if raw[index] >= 0x80 { return false }
            index &+= 1
        }
        return true
    }

    /// True when two strings have the same UTF-8 bytes (no normalisation).
    @inlinable
    static func sameUTF8(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let fast = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right in sameBytes(left, right) }
        }
        if let fast, let fast { return fast }
        return a.utf8.elementsEqual(b.utf8)
    }

    @inlinable @inline(__always)
    static func sameBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        guard let left = a.baseAddress, let right = b.baseAddress, a.count > 0 else { return true }
        return left == right || memcmp(left, right, a.count) == 0
    }
}

extension PropertyListString {
    /// The text of a string and its storage hint: UTF-8 bytes inline up to 14 bytes, else a
    /// `String` in a box of its own (a reference: 8 bytes, with spare bits for the enums around).
    @usableFromInline
    package enum Text: Sendable {
        /// Up to ``inlineCapacity`` UTF-8 bytes in place.
        case inline(InlineText)
        /// More than ``inlineCapacity`` bytes, in a box shared by copies (never mutated).
        case boxed(TextBox)

        /// The longest text held inline.
        @usableFromInline static let inlineCapacity = 14

        /// The text of `string` and a storage hint. Long strings are kept, not copied.
        @inlinable
        init(_ string: String, storage: Storage?) {
            if string.utf8.count > Self.inlineCapacity {
                self = .boxed(TextBox(string, storageCode: InlineText.code(storage)))
            } else if let text = string.utf8.withContiguousStorageIfAvailable({ Text(UnsafeRawBufferPointer($0), storage: storage) }) {
                self = text
            } else {
                var native = string
                self = native.withUTF8 { Text(UnsafeRawBufferPointer($0), storage: storage) }
            }
        }

        /// A copy of valid UTF-8 `bytes` and a storage hint.
        @inlinable
        init(_ bytes: UnsafeRawBufferPointer, storage: Storage?) {
            let count = bytes.count
            if count <= Self.inlineCapacity {
                var inline = InlineText(count: count, storage: storage)
                if count > 0, let source = bytes.baseAddress {
                    withUnsafeMutableBytes(of: &inline) { $0.baseAddress?.copyMemory(from: source, byteCount: count) }
                }
                self = .inline(inline)
            } else {
                self = .boxed(TextBox(String(decoding: bytes, as: UTF8.self), storageCode: InlineText.code(storage)))
            }
        }

        /// The text as a `String`: made from the inline bytes (a small string, no allocation),
        /// or the boxed one.
        @inlinable
        var string: String {
            switch self {
            case .inline: return withUTF8 { String(decoding: $0, as: UTF8.self) }
            case .boxed(let box): return box.string
            }
        }

        /// The number of UTF-8 bytes.
        @inlinable
        var count: Int {
            switch self {
            case .inline(let inline): return inline.count
            case .boxed(let box): return box.string.utf8.count
            }
        }

        /// The storage hint.
        @inlinable
        var storage: Storage? {
            switch self {
            case .inline(let inline): return InlineText.storage(code: inline.info >> 4)
            case .boxed(let box): return InlineText.storage(code: box.storageCode)
            }
        }

        /// Replaces the storage hint (in a new box for long text: boxes are shared).
        @inlinable
        mutating func setStorage(_ storage: Storage?) {
            switch self {
            case .inline(var inline):
                inline.info = (inline.info & 0x0F) | InlineText.code(storage) << 4
                self = .inline(inline)
            case .boxed(let box):
                self = .boxed(TextBox(box.string, storageCode: InlineText.code(storage)))
            }
        }

        /// Calls `body` with the UTF-8 bytes.
        @inlinable
        func withUTF8<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
            switch self {
            case .inline(var inline):
                let count = inline.count
                return try withUnsafeMutableBytes(of: &inline) { raw in
                    try body(UnsafeBufferPointer(rebasing: raw.bindMemory(to: UInt8.self)[..<count]))
                }
            case .boxed(let box):
                if let result = try box.string.utf8.withContiguousStorageIfAvailable(body) { return result }
                var native = box.string  // not reached: boxes hold native strings
                return try native.withUTF8(body)
            }
        }

        /// True when both hold the same bytes (storage hints aside). (One switch after the
        /// other, not a switch over a tuple: a tuple of two texts is two copies.)
        @inlinable
        static func sameText(_ a: Text, _ b: Text) -> Bool {
            switch a {
            case .inline(let x):
                guard case .inline(let y) = b else { return false }  // the case follows from the length
                return x.low == y.low && x.middle == y.middle && x.high == y.high && x.info & 0x0F == y.info & 0x0F
            case .boxed(let x):
                guard case .boxed(let y) = b else { return false }
                return x === y || PropertyListString.sameUTF8(x.string, y.string)
            }
        }
    }

    /// Up to 14 UTF-8 bytes in place (the first 14 of the 15 bytes; unused ones are zero) and an
    /// info byte: the byte count in its low nibble, the storage hint's code (0 none, 1 ASCII,
    /// 2 UTF-16) above it. Fifteen bytes of integers, so that the enums around it find spare
    /// bits and a ``PropertyListValue`` stays 16 bytes (a test checks).
    @usableFromInline
    package struct InlineText: Sendable {
        @usableFromInline var low: UInt64
        @usableFromInline var middle: UInt32
        @usableFromInline var high: UInt16
        @usableFromInline var info: UInt8

        @inlinable
        init(count: Int, storage: Storage?) {
            low = 0
            middle = 0
            high = 0
            info = UInt8(truncatingIfNeeded: count) | Self.code(storage) << 4
        }

        @inlinable
        var count: Int { Int(info & 0x0F) }

        @inlinable
        static func code(_ storage: Storage?) -> UInt8 {
            switch storage {
            case nil: 0
            case .ascii?: 1
            case .utf16?: 2
            }
        }

        @inlinable
        static func storage(code: UInt8) -> Storage? {
            code == 1 ? .ascii : code == 2 ? .utf16 : nil
        }
    }

    /// A long string's text (native, contiguous UTF-8) and storage hint. Copies of a
    /// ``PropertyListString`` share the box, and ``value`` hands out the `String` itself, so
    /// every use of a long string read once shares its storage.
    @usableFromInline
    package final class TextBox: Sendable {
        @usableFromInline let string: String
        @usableFromInline let storageCode: UInt8

        @inlinable
        init(_ string: String, storageCode: UInt8) {
            var native = string
            native.makeContiguousUTF8()
            self.string = native
            self.storageCode = storageCode
        }
    }
}

extension PropertyListString: Hashable {
    /// The same text, whatever the stored form (ASCII or UTF-16).
    public static func == (lhs: Self, rhs: Self) -> Bool {
        Text.sameText(lhs.text, rhs.text)
    }
    /// Hashes the text's UTF-8 bytes, as `==` compares the text.
    public func hash(into hasher: inout Hasher) {
        withUTF8 { bytes in
            hasher.combine(bytes.count)
            hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        }
    }
}

extension PropertyListString: ExpressibleByStringLiteral {
    /// A string literal, stored as Apple's writer would store it.
    public init(stringLiteral value: String) { self.init(value) }
}

extension PropertyListString: CustomStringConvertible {
    /// The text.
    public var description: String { value }
}
