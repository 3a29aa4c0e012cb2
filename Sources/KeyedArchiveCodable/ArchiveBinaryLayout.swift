/// Serialises a finished archive (the graph layer's ``ArchiveObjectTable`` envelope) to
/// `bplist00` in one pass, exploiting what the generic writer cannot know:
///
/// - `$objects` entries are already uniqued by the table, so each is written once at a fixed
///   object index (`9 + uid`) with no hashing;
/// - every UID value gets a fixed object index too (`9 + count + uid`), so references cost no
///   lookups;
/// - only keys and inline scalars inside object dictionaries are uniqued (hashing small keys);
/// - object references use a width fixed up front from an upper bound of the object count
///   (CoreFoundation requires only that it be wide enough).
///
/// The result is a valid binary property list read by CoreFoundation, our reader and plistlib.
/// This belongs next to ``ArchiveObjectTable`` in the graph layer (so the NSCoding-style
/// archiver gets it too); it lives here until the integrator moves it.
struct ArchiveBinaryLayout {
    private struct Fallback: Error {}

    private enum ScalarKey: Hashable {
        case integer(UInt64, Bool)
        case real(UInt64, Bool)
        case date(UInt64)
        case bool(Bool)
        case null
    }

    private let objectCount: Int
    private let uidBase: Int
    private let extrasBase: Int
    private let refSize: Int
    private var extras: [UInt8] = []
    private var extraOffsets: [Int] = []
    private var strings: [PropertyListString: Int] = [:]
    private var scalars: [ScalarKey: Int] = [:]
    private var depth = 0

    /// Writes `{$archiver, $objects, $top, $version}`; `nil` when the table holds shapes this
    /// layout does not cover (the caller then uses the generic writer).
    static func write(objects: [PropertyListValue], top: PropertyListDictionary, archiverName: String) throws -> Data? {
        var bound = 9 + 2 * objects.count + 2 * top.count + 4
        for object in objects {
            switch object {
            case .dictionary(let fields):
                bound += 2 * fields.count
                for entry in fields.entries { if case .array(let items) = entry.value { bound += 1 + items.count } }
            case .array(let items), .set(let items): bound += 1 + items.count
            default: break
            }
        }
        var layout = ArchiveBinaryLayout(objectCount: objects.count, bound: bound)
        do {
            return try layout.serialize(objects: objects, top: top, archiverName: archiverName)
        } catch is Fallback {
            return nil
        }
    }

    private init(objectCount: Int, bound: Int) {
        self.objectCount = objectCount
        self.uidBase = 9 + objectCount
        self.extrasBase = 9 + 2 * objectCount
        self.refSize = bound <= 0xFF ? 1 : bound <= 0xFFFF ? 2 : 4
    }

    private mutating func serialize(objects: [PropertyListValue], top: PropertyListDictionary, archiverName: String) throws -> Data {
        guard objectCount <= Int(UInt32.max), extrasBase < Int(UInt32.max) / 2 else { throw Fallback() }
        var out: [UInt8] = []
        out.reserveCapacity(64 + objects.count * 24)
        out.append(contentsOf: [0x62, 0x70, 0x6C, 0x69, 0x73, 0x74, 0x30, 0x30])
        var offsets: [Int] = []
        offsets.reserveCapacity(extrasBase)
        // 0: the envelope; 1-4 its keys; 5 archiver name; 6 $objects; 7 $top; 8 version.
        offsets.append(out.count)
        out.append(0xD4)
        for ref in [1, 2, 3, 4, 5, 6, 7, 8] { Self.appendBigEndian(UInt64(ref), width: refSize, to: &out) }
        for key in ["$archiver", "$objects", "$top", "$version"] {
            offsets.append(out.count)
            Self.appendString(PropertyListString(key), to: &out)
        }
        offsets.append(out.count)
        Self.appendString(PropertyListString(archiverName), to: &out)
        offsets.append(out.count)
        Self.appendMarker(0xA0, count: objects.count, to: &out)
        for index in 0..<objects.count { Self.appendBigEndian(UInt64(9 + index), width: refSize, to: &out) }
        offsets.append(out.count)
        Self.appendMarker(0xD0, count: top.count, to: &out)
        var topRefs: [Int] = []
        for entry in top.entries { topRefs.append(try reference(entry.key)) }
        for entry in top.entries { topRefs.append(try reference(entry.value)) }
        for ref in topRefs { Self.appendBigEndian(UInt64(ref), width: refSize, to: &out) }
        offsets.append(out.count)
        Self.appendInteger(PropertyListInteger(Int64(100_000)), to: &out)
        // $objects entries.
        var refs: [Int] = []
        for object in objects {
            offsets.append(out.count)
            switch object {
            case .dictionary(let fields):
                refs.removeAll(keepingCapacity: true)
                for entry in fields.entries { refs.append(try reference(entry.key)) }
                for entry in fields.entries { refs.append(try reference(entry.value)) }
                Self.appendMarker(0xD0, count: fields.count, to: &out)
                for ref in refs { Self.appendBigEndian(UInt64(ref), width: refSize, to: &out) }
            case .array(let items), .set(let items):
                refs.removeAll(keepingCapacity: true)
                for item in items { refs.append(try reference(item)) }
                if case .set = object { Self.appendMarker(0xC0, count: items.count, to: &out) } else { Self.appendMarker(0xA0, count: items.count, to: &out) }
                for ref in refs { Self.appendBigEndian(UInt64(ref), width: refSize, to: &out) }
            default:
                try Self.appendScalar(object, to: &out)
            }
        }
        // One UID object per possible UID.
        for uid in 0..<objectCount {
            offsets.append(out.count)
            Self.appendUID(UInt32(truncatingIfNeeded: uid), to: &out)
        }
        let extrasStart = out.count
        out.append(contentsOf: extras)
        for offset in extraOffsets { offsets.append(extrasStart + offset) }
        let tableOffset = out.count
        let offsetSize = tableOffset <= 0xFF ? 1 : tableOffset <= 0xFFFF ? 2 : tableOffset <= 0xFFFF_FFFF ? 4 : 8
        out.reserveCapacity(out.count + offsets.count * offsetSize + 32)
        for offset in offsets { Self.appendBigEndian(UInt64(offset), width: offsetSize, to: &out) }
        out.append(contentsOf: repeatElement(0, count: 6))
        out.append(UInt8(offsetSize))
        out.append(UInt8(refSize))
        Self.appendBigEndian(UInt64(offsets.count), width: 8, to: &out)
        Self.appendBigEndian(0, width: 8, to: &out)
        Self.appendBigEndian(UInt64(tableOffset), width: 8, to: &out)
        return Data(out)
    }

    /// The object index of a value met inside an entry: UIDs by arithmetic, keys and scalars
    /// uniqued among the extras, containers written to the extras.
    private mutating func reference(_ value: PropertyListValue) throws -> Int {
        switch value {
        case .uid(let uid):
            guard Int(uid) < objectCount else { throw Fallback() }
            return uidBase + Int(uid)
        case .string(let string):
            if let known = strings[string] { return known }
            let index = newExtra()
            Self.appendString(string, to: &extras)
            strings[string] = index
            return index
        case .integer(let integer):
            return try scalar(.integer(integer.bitPattern, integer.isAboveInt64Max), value)
        case .real(let real):
            return try scalar(.real(real.value.bitPattern, real.isSinglePrecision), value)
        case .bool(let bool):
            return try scalar(.bool(bool), value)
        case .date(let date):
            return try scalar(.date(date.timeIntervalSinceReferenceDate.bitPattern), value)
        case .null:
            return try scalar(.null, value)
        case .data:
            let index = newExtra()
            try Self.appendScalar(value, to: &extras)
            return index
        case .array(let items), .set(let items):
            depth += 1
            defer { depth -= 1 }
            guard depth < 64 else { throw Fallback() }
            var refs: [Int] = []
            refs.reserveCapacity(items.count)
            for item in items { refs.append(try reference(item)) }
            let index = newExtra()
            if case .set = value { Self.appendMarker(0xC0, count: items.count, to: &extras) } else { Self.appendMarker(0xA0, count: items.count, to: &extras) }
            for ref in refs { Self.appendBigEndian(UInt64(ref), width: refSize, to: &extras) }
            return index
        case .dictionary(let fields):
            depth += 1
            defer { depth -= 1 }
            guard depth < 64 else { throw Fallback() }
            var refs: [Int] = []
            refs.reserveCapacity(2 * fields.count)
            for entry in fields.entries { refs.append(try reference(entry.key)) }
            for entry in fields.entries { refs.append(try reference(entry.value)) }
            let index = newExtra()
            Self.appendMarker(0xD0, count: fields.count, to: &extras)
            for ref in refs { Self.appendBigEndian(UInt64(ref), width: refSize, to: &extras) }
            return index
        }
    }

    private mutating func scalar(_ key: ScalarKey, _ value: PropertyListValue) throws -> Int {
        if let known = scalars[key] { return known }
        let index = newExtra()
        try Self.appendScalar(value, to: &extras)
        scalars[key] = index
        return index
    }

    private mutating func newExtra() -> Int {
        extraOffsets.append(extras.count)
        return extrasBase + extraOffsets.count - 1
    }

    // MARK: Encoding of single objects (CFBinaryPList's markers)

    private static func appendScalar(_ value: PropertyListValue, to out: inout [UInt8]) throws {
        switch value {
        case .null: out.append(0x00)
        case .bool(let bool): out.append(bool ? 0x09 : 0x08)
        case .integer(let integer): appendInteger(integer, to: &out)
        case .real(let real):
            if real.isSinglePrecision {
                out.append(0x22)
                appendBigEndian(UInt64(Float(real.value).bitPattern), width: 4, to: &out)
            } else {
                out.append(0x23)
                appendBigEndian(real.value.bitPattern, width: 8, to: &out)
            }
        case .date(let date):
            let seconds = date.timeIntervalSinceReferenceDate
            guard BinaryPropertyListReader.validDateRange.contains(seconds) else {
                throw PropertyListError(.unrepresentableValue, "date \(seconds) is not finite or outside years 0...9999")
            }
            out.append(0x33)
            appendBigEndian(seconds.bitPattern, width: 8, to: &out)
        case .data(let data):
            appendMarker(0x40, count: data.count, to: &out)
            data.withUnsafeBytes { out.append(contentsOf: $0) }
        case .string(let string): appendString(string, to: &out)
        case .uid(let uid): appendUID(uid, to: &out)
        case .array, .set, .dictionary: throw Fallback()
        }
    }

    private static func appendInteger(_ integer: PropertyListInteger, to out: inout [UInt8]) {
        let width = integer.widthForWriting
        switch width {
        case 1: out.append(0x10)
        case 2: out.append(0x11)
        case 4: out.append(0x12)
        case 8: out.append(0x13)
        default:
            out.append(0x14)
            appendBigEndian(integer.isNegative ? UInt64.max : 0, width: 8, to: &out)
        }
        appendBigEndian(integer.bitPattern, width: min(Int(width), 8), to: &out)
    }

    private static func appendUID(_ uid: UInt32, to out: inout [UInt8]) {
        let width = uid <= 0xFF ? 1 : uid <= 0xFFFF ? 2 : 4
        out.append(0x80 | UInt8(width - 1))
        appendBigEndian(UInt64(uid), width: width, to: &out)
    }

    private static func appendString(_ string: PropertyListString, to out: inout [UInt8]) {
        var text = string.value
        let ascii = string.storage != .utf16 && text.withUTF8 { bytes in bytes.allSatisfy { $0 < 0x80 } }
        if ascii {
            text.withUTF8 { bytes in
                appendMarker(0x50, count: bytes.count, to: &out)
                out.append(contentsOf: UnsafeRawBufferPointer(bytes))
            }
        } else {
            let units = text.utf16
            appendMarker(0x60, count: units.count, to: &out)
            for unit in units {
                out.append(UInt8(truncatingIfNeeded: unit >> 8))
                out.append(UInt8(truncatingIfNeeded: unit))
            }
        }
    }

    private static func appendMarker(_ kind: UInt8, count: Int, to out: inout [UInt8]) {
        if count < 15 {
            out.append(kind | UInt8(count))
        } else {
            out.append(kind | 0x0F)
            let width = count <= 0xFF ? 1 : count <= 0xFFFF ? 2 : count <= 0xFFFF_FFFF ? 4 : 8
            out.append(0x10 | (width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3))
            appendBigEndian(UInt64(count), width: width, to: &out)
        }
    }

    @inline(__always)
    private static func appendBigEndian(_ value: UInt64, width: Int, to out: inout [UInt8]) {
        switch width {
        case 1: out.append(UInt8(truncatingIfNeeded: value))
        case 2:
            out.append(UInt8(truncatingIfNeeded: value >> 8))
            out.append(UInt8(truncatingIfNeeded: value))
        default:
            var shift = (width - 1) * 8
            while shift >= 0 {
                out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
                shift -= 8
            }
        }
    }
}
