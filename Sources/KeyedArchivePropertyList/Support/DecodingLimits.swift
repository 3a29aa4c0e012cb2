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
    /// The most values a decode that builds one value per use of a shared object (the Codable
    /// decoder) may build per byte of its input (or per object, if more), once past
    /// ``expansionFactorFloor`` values. ``maximumExpandedNodeCount`` alone let an 884-byte
    /// archive of 26 arrays, each holding the next twice, build 33 million values (18 s and
    /// 860 MB for a generic `enum` tree): this bounds the work to a multiple of the input's
    /// size, as Expat's maximum amplification bounds entity expansion. (Not per object alone:
    /// one array object can hold a million references to a few shared values, one or more
    /// bytes each.) Readers and the archive resolver measure expansions before doing any work
    /// and need no such bound.
    public var maximumExpansionFactor: Int
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
        maximumExpandedByteCount: Int = 1 << 30,
        maximumExpansionFactor: Int = 64
    ) {
        self.maximumDepth = maximumDepth
        self.maximumObjectCount = maximumObjectCount
        self.maximumExpandedNodeCount = maximumExpandedNodeCount
        self.maximumStringLength = maximumStringLength
        self.maximumDataLength = maximumDataLength
        self.maximumExpandedByteCount = maximumExpandedByteCount
        self.maximumExpansionFactor = maximumExpansionFactor
    }

    /// Any input may expand to this many values, whatever ``maximumExpansionFactor`` allows
    /// for its size (so that small archives with ordinary sharing always read).
    public static let expansionFactorFloor = 1 << 20

    /// The values a decode of an input of `inputSize` (bytes, or objects if more) may build:
    /// the lower of ``maximumExpandedNodeCount`` and ``maximumExpansionFactor`` times the size
    /// (at least ``expansionFactorFloor``).
    package func expandedNodeLimit(inputSize: Int) -> Int {
        let (scaled, overflow) = max(inputSize, 0).multipliedReportingOverflow(by: max(maximumExpansionFactor, 0))
        return min(maximumExpandedNodeCount, overflow ? .max : max(Self.expansionFactorFloor, scaled))
    }

    /// Depth 512, 16,777,216 objects, 33,554,432 expanded values, 256 MiB strings, 1 GiB data,
    /// 1 GiB of expanded string and data bytes, 64 values built per byte of input past 1,048,576.
    public static let `default` = DecodingLimits()

    /// For reading back bytes this package has just written (an archive as a property list):
    /// nothing is bounded (the readers keep open containers on the heap, not the call stack).
    package static let ownOutput = DecodingLimits(
        maximumDepth: .max, maximumObjectCount: .max, maximumExpandedNodeCount: .max, maximumStringLength: .max,
        maximumDataLength: .max, maximumExpandedByteCount: .max, maximumExpansionFactor: .max)
}
