/// A property-list integer: any value in `Int64.min ... UInt64.max`, plus the width it was stored in.
///
/// Binary property lists store 1-, 2- and 4-byte integers as unsigned, 8-byte integers as signed,
/// and 16-byte integers as signed 128-bit values of which only the low 64 bits are significant
/// (Apple writes unsigned values above `Int64.max` that way). Equality ignores the stored width.
public struct PropertyListInteger: Sendable {
    /// The two's-complement bit pattern of the value (for negative values) or its magnitude.
    public let bitPattern: UInt64
    /// True when the value is above `Int64.max` (and `bitPattern` is its magnitude).
    public let isAboveInt64Max: Bool
    /// The byte width the value was read with (1, 2, 4, 8 or 16), or `nil` to let the writer
    /// choose the width Apple's writer chooses. Ignored when it cannot hold the value.
    public var storedWidth: UInt8?

    /// An integer from a signed value.
    public init(_ value: Int64, storedWidth: UInt8? = nil) {
        self.bitPattern = UInt64(bitPattern: value)
        self.isAboveInt64Max = false
        self.storedWidth = storedWidth
    }

    /// An integer from a signed value.
    public init(_ value: Int, storedWidth: UInt8? = nil) {
        self.init(Int64(value), storedWidth: storedWidth)
    }

    /// An integer from an unsigned value.
    public init(_ value: UInt64, storedWidth: UInt8? = nil) {
        self.bitPattern = value
        self.isAboveInt64Max = value > UInt64(Int64.max)
        self.storedWidth = storedWidth
    }

    /// An integer from any binary integer, or `nil` when it is outside `Int64.min ... UInt64.max`.
    public init?<T: BinaryInteger>(exactly value: T) {
        if let signed = Int64(exactly: value) {
            self.init(signed)
        } else if let unsigned = UInt64(exactly: value) {
            self.init(unsigned)
        } else {
            return nil
        }
    }

    /// The value as `Int64`, or `nil` when it is above `Int64.max`.
    public var int64Value: Int64? {
        isAboveInt64Max ? nil : Int64(bitPattern: bitPattern)
    }

    /// The value as `UInt64`, or `nil` when it is negative.
    public var uint64Value: UInt64? {
        if isAboveInt64Max { return bitPattern }
        let signed = Int64(bitPattern: bitPattern)
        return signed < 0 ? nil : UInt64(signed)
    }

    /// True when the value is negative.
    public var isNegative: Bool { !isAboveInt64Max && Int64(bitPattern: bitPattern) < 0 }

    /// The width Apple's writer (CFBinaryPList) gives this value: negative values take 8 bytes,
    /// values above `Int64.max` take 16, others the smallest of 1, 2, 4 and 8 that holds them.
    public var canonicalWidth: UInt8 {
        if isAboveInt64Max { return 16 }
        if isNegative { return 8 }
        switch bitPattern {
        case 0...0xFF: return 1
        case 0x100...0xFFFF: return 2
        case 0x1_0000...0xFFFF_FFFF: return 4
        default: return 8
        }
    }

    /// The stored width when it can hold the value, otherwise the canonical width.
    public var widthForWriting: UInt8 {
        guard let width = storedWidth else { return canonicalWidth }
        switch width {
        case 16: return 16
        case 8: return isAboveInt64Max ? 16 : 8
        case 1, 2, 4:
            // 1-, 2- and 4-byte integers are unsigned: they hold only small non-negative values.
            if isAboveInt64Max || isNegative { return canonicalWidth }
            let limit: UInt64 = width == 1 ? 0xFF : width == 2 ? 0xFFFF : 0xFFFF_FFFF
            return bitPattern <= limit ? width : canonicalWidth
        default: return canonicalWidth
        }
    }
}

extension PropertyListInteger: Hashable {
    /// Equal values; the stored width is a writing hint and is not compared.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.bitPattern == rhs.bitPattern && lhs.isAboveInt64Max == rhs.isAboveInt64Max
    }
    /// Hashes the value, as `==` compares it.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(bitPattern)
        hasher.combine(isAboveInt64Max)
    }
}

extension PropertyListInteger: ExpressibleByIntegerLiteral {
    /// An integer literal, at Apple's width.
    public init(integerLiteral value: Int64) { self.init(value) }
}

extension PropertyListInteger: CustomStringConvertible {
    /// The value in decimal (unsigned above `Int64.max`).
    public var description: String {
        isAboveInt64Max ? String(bitPattern) : String(Int64(bitPattern: bitPattern))
    }
}
