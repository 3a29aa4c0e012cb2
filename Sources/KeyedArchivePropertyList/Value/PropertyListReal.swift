/// A property-list real: an IEEE 754 value and whether it was stored in 4 or 8 bytes.
///
/// Equality compares the bit patterns of the double values (so `nan` equals itself and `-0.0`
/// differs from `0.0`) and ignores the stored width.
public struct PropertyListReal: Sendable {
    /// The value, widened to `Double` when it was stored as a 4-byte float.
    public var value: Double
    /// True when the value is stored as a 4-byte float (Apple's writer does this for `Float`
    /// numbers, e.g. `encodeFloat(_:forKey:)` in a keyed archive).
    public var isSinglePrecision: Bool

    /// An 8-byte real.
    public init(_ value: Double) {
        self.value = value
        self.isSinglePrecision = false
    }

    /// A 4-byte real.
    public init(_ value: Float) {
        self.value = Self.widened(value)
        self.isSinglePrecision = true
    }

    /// A real with an explicit width.
    public init(_ value: Double, isSinglePrecision: Bool) {
        self.value = value
        self.isSinglePrecision = isSinglePrecision
    }
}

extension PropertyListReal {
    /// `float` as a `Double`, a NaN's sign, payload and signalling bit kept: the conversion
    /// quiets a signalling NaN, so a 4-byte `7f800001` was written back as `7fc00001`.
    static func widened(_ float: Float) -> Double {
        guard float.isNaN else { return Double(float) }
        let bits = float.bitPattern
        return Double(bitPattern: UInt64(bits >> 31) << 63 | 0x7FF0_0000_0000_0000 | UInt64(bits & 0x7F_FFFF) << 29)
    }

    /// The 4-byte pattern of `double` (``widened(_:)``'s inverse for a NaN: its payload's top
    /// 23 bits kept; a NaN whose payload was all in the bits dropped stays a quiet NaN).
    static func narrowedBits(_ double: Double) -> UInt32 {
        guard double.isNaN else { return Float(double).bitPattern }
        let bits = double.bitPattern
        let payload = UInt32(truncatingIfNeeded: bits >> 29) & 0x7F_FFFF
        return UInt32(truncatingIfNeeded: bits >> 63) << 31 | 0x7F80_0000 | (payload == 0 ? 0x40_0000 : payload)
    }
}

extension PropertyListReal: Hashable {
    /// Equal bit patterns: a NaN equals itself (a value read back equals what was written), and `0.0` is not `-0.0`.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.value.bitPattern == rhs.value.bitPattern
    }
    /// Hashes the bit pattern, as `==` compares it.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(value.bitPattern)
    }
}

extension PropertyListReal: ExpressibleByFloatLiteral {
    /// A floating-point literal, stored as an 8-byte real.
    public init(floatLiteral value: Double) { self.init(value) }
}
