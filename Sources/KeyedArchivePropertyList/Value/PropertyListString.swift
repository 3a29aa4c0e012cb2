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
public struct PropertyListString: Sendable {
    /// How a string is stored in a binary property list.
    public enum Storage: UInt8, Sendable, Hashable {
        /// One byte per character (marker `0x5_`); only for strings whose scalars are all below 0x80.
        case ascii
        /// Big-endian UTF-16 code units (marker `0x6_`).
        case utf16
    }

    /// The text.
    public var value: String
    /// The storage the string was read with, or `nil` to let the writer choose as Apple does
    /// (ASCII when every scalar is below 0x80, else UTF-16). An `.ascii` hint on a string that is
    /// not ASCII is ignored.
    public var storage: Storage?

    /// A string whose storage the writer chooses.
    public init(_ value: String) {
        self.value = value
        self.storage = nil
    }

    /// A string with an explicit storage hint.
    public init(_ value: String, storage: Storage?) {
        self.value = value
        self.storage = storage
    }

    /// True when every scalar is below 0x80.
    public var isASCII: Bool {
        value.utf8.allSatisfy { $0 < 0x80 }
    }

    /// The storage the binary writer uses for this string.
    public var storageForWriting: Storage {
        if storage == .utf16 { return .utf16 }
        return isASCII ? .ascii : .utf16
    }
}

extension PropertyListString: Hashable {
    public static func == (lhs: Self, rhs: Self) -> Bool {
        literallyEqual(lhs.value, rhs.value)
    }
    public func hash(into hasher: inout Hasher) {
        // Hash the UTF-8 bytes, not the String: String hashing normalises, equality here does not.
        let done: Void? = value.utf8.withContiguousStorageIfAvailable { bytes in
            hasher.combine(bytes.count)
            hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        }
        if done == nil {
            var value = value
            value.withUTF8 { bytes in
                hasher.combine(bytes.count)
                hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
            }
        }
    }

    /// True when `lhs` and `rhs` are the same string object or the same small (inline) string:
    /// then they are literally equal. False says nothing (two equal strings built separately),
    /// so this is a fast path before ``literallyEqual(_:_:)``. Always false where `String` is
    /// not two 64-bit words (32-bit platforms).
    @inlinable @inline(__always)
    package static func haveSameBits(_ lhs: String, _ rhs: String) -> Bool {
        #if _pointerBitWidth(_64)
        unsafeBitCast(lhs, to: (UInt64, UInt64).self) == unsafeBitCast(rhs, to: (UInt64, UInt64).self)
        #else
        false
        #endif
    }

    /// Byte-wise UTF-8 equality (no Unicode normalisation), comparing contiguous storage with
    /// `memcmp` when both strings have it.
    @usableFromInline
    package static func literallyEqual(_ lhs: String, _ rhs: String) -> Bool {
        let fast = lhs.utf8.withContiguousStorageIfAvailable { left in
            rhs.utf8.withContiguousStorageIfAvailable { right -> Bool in
                guard left.count == right.count else { return false }
                guard let a = left.baseAddress, let b = right.baseAddress else { return true }
                return a == b || memcmp(a, b, left.count) == 0
            }
        }
        if let fast, let result = fast { return result }
        return lhs.utf8.elementsEqual(rhs.utf8)
    }
}

extension PropertyListString: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(value) }
}

extension PropertyListString: CustomStringConvertible {
    public var description: String { value }
}
