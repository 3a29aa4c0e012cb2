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
        self.value = Double(value)
        self.isSinglePrecision = true
    }

    /// A real with an explicit width.
    public init(_ value: Double, isSinglePrecision: Bool) {
        self.value = value
        self.isSinglePrecision = isSinglePrecision
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
