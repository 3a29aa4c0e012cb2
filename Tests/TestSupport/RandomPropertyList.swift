@_exported import KeyedArchive

/// Generates random property-list values for round-trip property tests.
///
/// It covers what the issues ask round trips to survive: deep nesting, empty containers,
/// non-BMP Unicode, integer extremes, `-0.0`, infinities, NaN, large data, dates before 2001,
/// and containers of more than 15 and more than 65,535 elements (when `allowHuge` is set).
public struct RandomPropertyList {
    /// Which optional kinds to produce.
    public struct Options: Sendable {
        /// Produce `null` (binary only).
        public var null = false
        /// Produce UIDs.
        public var uid = true
        /// Produce sets (binary only).
        public var set = false
        /// Produce dates with fractional seconds (XML keeps whole seconds only).
        public var fractionalDates = true
        /// Produce NaN reals (equal to themselves under PropertyListValue equality).
        public var nan = true
        /// Produce 4-byte reals.
        public var singlePrecision = true
        /// Produce unsigned integers above Int64.max.
        public var unsignedAbove64 = true
        /// Produce an occasional container with more than 65,535 elements.
        public var allowHuge = false
        /// Maximum nesting depth.
        public var maximumDepth = 6
        public init() {}
    }

    public var options: Options
    public var generator: SeededGenerator

    public init(seed: UInt64, options: Options = Options()) {
        self.options = options
        self.generator = SeededGenerator(seed: seed)
    }

    /// A random value; containers become rarer as depth grows.
    public mutating func value(depth: Int = 0) -> PropertyListValue {
        let containerChance = depth >= options.maximumDepth ? 0.0 : 0.35 / Double(depth + 1)
        if generator.chance(containerChance) { return container(depth: depth) }
        return scalar()
    }

    /// A random dictionary at the root, as most real files have.
    public mutating func rootDictionary() -> PropertyListValue {
        .dictionary(dictionary(count: Int.random(in: 0...20, using: &generator), depth: 0))
    }

    public mutating func scalar() -> PropertyListValue {
        switch Int.random(in: 0..<12, using: &generator) {
        case 0: return .bool(generator.chance(0.5))
        case 1, 2: return .integer(integer())
        case 3: return .real(real())
        case 4: return .date(date())
        case 5: return .data(data())
        case 6, 7, 8: return .string(PropertyListString(string()))
        case 9 where options.uid: return .uid(UInt32.random(in: 0...UInt32.max, using: &generator) >> (UInt32.random(in: 0..<32, using: &generator)))
        case 10 where options.null: return .null
        default: return .string(PropertyListString(asciiString()))
        }
    }

    public mutating func integer() -> PropertyListInteger {
        let extremes: [PropertyListInteger] = [
            0, 1, -1, 127, 128, 255, 256, 65_535, 65_536, 4_294_967_295, 4_294_967_296,
            PropertyListInteger(Int64.max), PropertyListInteger(Int64.min),
        ]
        if generator.chance(0.3) { return extremes.randomElement(using: &generator) ?? 0 }
        if options.unsignedAbove64 && generator.chance(0.05) {
            return PropertyListInteger(UInt64.random(in: UInt64(Int64.max) + 1...UInt64.max, using: &generator))
        }
        let bits = Int.random(in: 1...64, using: &generator)
        let raw = Int64(bitPattern: generator.next() >> UInt64(64 - bits))
        return PropertyListInteger(generator.chance(0.3) ? -raw : raw)
    }

    public mutating func real() -> PropertyListReal {
        var specials: [Double] = [0, -0.0, .infinity, -.infinity, 1.5, -2.25, .leastNonzeroMagnitude, .greatestFiniteMagnitude, 0.1]
        if options.nan { specials.append(.nan) }
        if options.singlePrecision && generator.chance(0.2) {
            let float = generator.chance(0.3) ? Float(specials.randomElement(using: &generator) ?? 0) : Float.random(in: -1e6...1e6, using: &generator)
            if float.isNaN && !options.nan { return PropertyListReal(Float(1)) }
            return PropertyListReal(float)
        }
        if generator.chance(0.3) { return PropertyListReal(specials.randomElement(using: &generator) ?? 0) }
        return PropertyListReal(Double(bitPattern: generator.next() & 0x7FEF_FFFF_FFFF_FFFF) * (generator.chance(0.5) ? 1 : -1))
    }

    public mutating func date() -> Date {
        // From about 1600 to 2400, before and after 2001.
        var seconds = Double(Int64.random(in: -12_600_000_000...12_600_000_000, using: &generator))
        if options.fractionalDates && generator.chance(0.5) { seconds += Double.random(in: 0..<1, using: &generator) }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    public mutating func data() -> Data {
        let count = generator.chance(0.05) ? Int.random(in: 1_000...70_000, using: &generator) : Int.random(in: 0...40, using: &generator)
        var bytes = [UInt8](repeating: 0, count: count)
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes)
    }

    public mutating func asciiString() -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-.<>&\"'\t\n")
        let count = generator.chance(0.1) ? Int.random(in: 15...300, using: &generator) : Int.random(in: 0...14, using: &generator)
        return String((0..<count).map { _ in alphabet.randomElement(using: &generator) ?? "a" })
    }

    /// A string mixing ASCII, BMP and non-BMP scalars (surrogate pairs in UTF-16).
    public mutating func string() -> String {
        let pieces: [String] = ["a", "Z", " ", "é", "e\u{301}", "日本", "ß", "😀", "𝄞", "\u{FEFF}", "Ω", "\r", "<&>", "$null", "ü"]
        let count = Int.random(in: 0...20, using: &generator)
        return (0..<count).map { _ in pieces.randomElement(using: &generator) ?? "a" }.joined()
    }

    public mutating func container(depth: Int) -> PropertyListValue {
        var count = Int.random(in: 0...18, using: &generator)
        if options.allowHuge && generator.chance(0.02) { count = 65_536 + Int.random(in: 0...100, using: &generator) }
        let kind = Int.random(in: 0..<(options.set ? 3 : 2), using: &generator)
        switch kind {
        case 0: return .array((0..<count).map { _ in value(depth: depth + 1) })
        case 1: return .dictionary(dictionary(count: count, depth: depth))
        default:
            var seen = Set<PropertyListValue>()
            var members: [PropertyListValue] = []
            for _ in 0..<count {
                let member = scalar()
                if seen.insert(member).inserted { members.append(member) }
            }
            return .set(members)
        }
    }

    public mutating func dictionary(count: Int, depth: Int) -> PropertyListDictionary {
        var keys = Set<String>()
        var dictionary = PropertyListDictionary()
        for _ in 0..<count {
            let key = generator.chance(0.7) ? asciiString() : string()
            guard keys.insert(key).inserted else { continue }
            // Keep literal uniqueness: Swift's Set merges NFC/NFD spellings, which is fine here.
            dictionary.entries.append((PropertyListValue(key), value(depth: depth + 1)))
        }
        return dictionary
    }
}
