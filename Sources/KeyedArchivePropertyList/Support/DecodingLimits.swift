/// Limits that bound the work and memory any reader in KeyedArchive spends on its input.
///
/// The defaults are safe for untrusted input while leaving room for every real file we know of;
/// callers reading trusted, unusually large files can raise them. The same limits are shared by
/// the property-list readers, the keyed unarchiver and the Codable decoder.
public struct DecodingLimits: Sendable, Hashable {
    /// The deepest nesting of containers accepted. CoreFoundation uses 512.
    public var maximumDepth: Int
    /// The most objects one input may declare (binary) or contain (text formats).
    public var maximumObjectCount: Int
    /// The most values a decoded tree may hold once shared references are counted at each place
    /// they are used. A 350-byte binary plist of arrays that share sub-arrays can describe 2^60
    /// leaves; decoding it is cheap (shared objects are decoded once) but anything that walks the
    /// tree would not be, so readers stop at this count.
    public var maximumExpandedNodeCount: Int
    /// The longest string accepted, in bytes of its stored encoding.
    public var maximumStringLength: Int
    /// The longest data value accepted, in bytes.
    public var maximumDataLength: Int
    /// The most bytes of strings and data a decoded tree may hold once shared references are
    /// counted at each place they are used: what a writer, a converter or a resolver would
    /// produce. A 1.5 KB binary plist whose arrays share one 1,000-byte data value 262,144
    /// times stays under ``maximumExpandedNodeCount`` yet describes 262 MB; a 1 MB one, 262 GB.
    /// Counted in UTF-8 bytes for strings. At least ``maximumDataLength`` so that one value of
    /// the largest accepted size still reads.
    public var maximumExpandedByteCount: Int

    /// Creates limits; every argument defaults to the value in ``default``.
    public init(
        maximumDepth: Int = 512,
        maximumObjectCount: Int = 1 << 24,
        maximumExpandedNodeCount: Int = 1 << 25,
        maximumStringLength: Int = 1 << 28,
        maximumDataLength: Int = 1 << 30,
        maximumExpandedByteCount: Int = 1 << 30
    ) {
        self.maximumDepth = maximumDepth
        self.maximumObjectCount = maximumObjectCount
        self.maximumExpandedNodeCount = maximumExpandedNodeCount
        self.maximumStringLength = maximumStringLength
        self.maximumDataLength = maximumDataLength
        self.maximumExpandedByteCount = maximumExpandedByteCount
    }

    /// Depth 512, 16,777,216 objects, 33,554,432 expanded values, 256 MiB strings, 1 GiB data,
    /// 1 GiB of expanded string and data bytes.
    public static let `default` = DecodingLimits()

    /// For reading back bytes this package has just written (an archive as a property list):
    /// nothing is bounded (the readers keep open containers on the heap, not the call stack).
    package static let ownOutput = DecodingLimits(
        maximumDepth: .max, maximumObjectCount: .max, maximumExpandedNodeCount: .max, maximumStringLength: .max,
        maximumDataLength: .max, maximumExpandedByteCount: .max)
}
