/// Writes binary property lists (`bplist00`) laid out the way CoreFoundation's CFBinaryPList
/// writer lays them out, so that Apple-made files read and written back come out byte-identical.
///
/// - Objects are flattened in pre-order; a dictionary is followed by all its keys, then all its
///   values (each recursively). The top object is object 0.
/// - Equal strings, integers, reals, dates and data are stored once. Equality here includes the
///   storage hints: the same integer stored in 2 and in 8 bytes, a 4- and an 8-byte real, or an
///   ASCII and a UTF-16 string are different objects. Strings compare literally.
/// - Containers, booleans, nulls and UIDs are not uniqued: each occurrence is its own object.
///   Like CoreFoundation (whose object table is keyed by the one `kCFBooleanTrue`), every
///   reference to `true` (or `false`, or null) points at the first such object written.
/// - Object references use the fewest of 1, 2, 4 or 8 bytes that can count the objects; offsets
///   the fewest that can reach the offset table.
/// - Integers keep their stored width when it can hold them (``PropertyListInteger/widthForWriting``),
///   reals their precision, strings their ASCII/UTF-16 storage (``PropertyListString/storageForWriting``).
///
/// The writer is iterative, so deeply nested values cannot overflow the stack. It refuses what
/// ``BinaryPropertyListReader`` would refuse: dictionary keys that are not strings, numbers,
/// dates or data, and dates outside ``BinaryPropertyListReader/validDateRange``.
public enum BinaryPropertyListWriter {
    /// Writes a property list to bytes.
    public static func write(_ value: PropertyListValue) throws -> [UInt8] {
        var flattener = BinaryPropertyListFlattener()
        try flattener.flatten(value)
        return flattener.serialize()
    }

    /// Writes a property list to `Data`.
    public static func writeData(_ value: PropertyListValue) throws -> Data {
        Data(try write(value))
    }
}

/// One object of the flattened list.
private enum FlatObject {
    /// A scalar, written from its value.
    case scalar(PropertyListValue)
    /// A string and whether it is stored as ASCII (else UTF-16).
    case string(String, ascii: Bool)
    /// A container: its marker's high nibble, member count, and where its references start in
    /// the shared reference list (dictionaries have `2 * count` references).
    case container(kind: UInt8, count: Int, refsStart: Int)
}

/// A uniqued number or date: its bit pattern and a tag for its kind and stored width, so that
/// the same value stored differently stays a different object.
private struct NumberKey: Hashable {
    var bits: UInt64
    var tag: UInt8
}

/// A uniqued string: compared literally (by UTF-8 bytes, not by canonical equivalence) and
/// kept apart by storage.
private struct StringKey: Hashable {
    var string: String
    var ascii: Bool

    static func == (lhs: StringKey, rhs: StringKey) -> Bool {
        guard lhs.ascii == rhs.ascii, lhs.string.utf8.count == rhs.string.utf8.count else { return false }
        let fast = lhs.string.utf8.withContiguousStorageIfAvailable { left in
            rhs.string.utf8.withContiguousStorageIfAvailable { right in
                left.elementsEqual(right)
            }
        }
        if let fast, let result = fast { return result }
        return lhs.string.utf8.elementsEqual(rhs.string.utf8)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(ascii)
        let done = string.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if done == nil { for byte in string.utf8 { hasher.combine(byte) } }
    }
}

/// Stores `index` in an empty dictionary slot (one hash lookup for find-or-insert) and returns
/// the index already there, or `nil` when the slot was empty.
@inline(__always)
private func findOrInsert(_ slot: inout Int, _ index: Int) -> Int? {
    if slot >= 0 { return slot }
    slot = index
    return nil
}

/// True when every byte of the string's UTF-8 is below 0x80, checked eight bytes at a time.
private func isASCII(_ string: String) -> Bool {
    let fast = string.utf8.withContiguousStorageIfAvailable { buffer -> Bool in
        let raw = UnsafeRawBufferPointer(buffer)
        var index = 0
        while index + 8 <= raw.count {
            if raw.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 != 0 { return false }
            index += 8
        }
        while index < raw.count {
            if raw[index] >= 0x80 { return false }
            index += 1
        }
        return true
    }
    return fast ?? string.utf8.allSatisfy { $0 < 0x80 }
}

/// A container whose members are being flattened.
private struct FlattenFrame {
    enum Members {
        case list([PropertyListValue])
        case dictionary([PropertyListDictionary.Entry])
    }
    var members: Members
    var count: Int
    var total: Int
    var next = 0
    var refsStart: Int

    func member(_ index: Int) -> PropertyListValue {
        switch members {
        case .list(let list): return list[index]
        case .dictionary(let entries): return index < count ? entries[index].key : entries[index - count].value
        }
    }
}

private struct BinaryPropertyListFlattener {
    var objects: [FlatObject] = []
    var refs: [Int] = []
    var numbers: [NumberKey: Int] = [:]
    var strings: [StringKey: Int] = [:]
    var datas: [Data: Int] = [:]
    var firstTrue: Int?
    var firstFalse: Int?
    var firstNull: Int?
    var firstUID: [UInt32: Int] = [:]
    /// A rough size of the output, to reserve the buffer once.
    var estimatedSize = 40

    mutating func flatten(_ root: PropertyListValue) throws {
        var frames: [FlattenFrame] = []
        if let frame = try visit(root) { frames.append(frame) }
        while !frames.isEmpty {
            let last = frames.count - 1
            let index = frames[last].next
            guard index < frames[last].total else {
                frames.removeLast()
                continue
            }
            frames[last].next = index + 1
            let member = frames[last].member(index)
            if case .dictionary = frames[last].members, index < frames[last].count {
                try checkKey(member)
            }
            let slot = frames[last].refsStart + index
            if let frame = try visit(member, slot: slot) { frames.append(frame) }
        }
    }

    private func checkKey(_ key: PropertyListValue) throws {
        switch key {
        case .string, .integer, .real, .date, .data: return
        default:
            throw PropertyListError(
                .unrepresentableValue, "a binary property list dictionary key must be a string, number, date or data, not a \(key.typeName)")
        }
    }

    /// Adds `value` (or finds its uniqued twin) and stores its reference in `refs[slot]`;
    /// returns a frame when `value` is a container whose members must be visited next.
    private mutating func visit(_ value: PropertyListValue, slot: Int? = nil) throws -> FlattenFrame? {
        let index = objects.count
        var reference = index
        var frame: FlattenFrame?
        switch value {
        case .array(let list), .set(let list):
            let kind: UInt8
            if case .array = value { kind = 0xA0 } else { kind = 0xC0 }
            frame = FlattenFrame(members: .list(list), count: list.count, total: list.count, refsStart: refs.count)
            objects.append(.container(kind: kind, count: list.count, refsStart: refs.count))
            refs.append(contentsOf: repeatElement(0, count: list.count))
            estimatedSize += 10 + list.count * 4
        case .dictionary(let dictionary):
            let count = dictionary.count
            frame = FlattenFrame(members: .dictionary(dictionary.entries), count: count, total: 2 * count, refsStart: refs.count)
            objects.append(.container(kind: 0xD0, count: count, refsStart: refs.count))
            refs.append(contentsOf: repeatElement(0, count: 2 * count))
            estimatedSize += 10 + count * 8
        case .bool(let bool):
            objects.append(.scalar(value))
            if bool {
                if let first = firstTrue { reference = first } else { firstTrue = index }
            } else {
                if let first = firstFalse { reference = first } else { firstFalse = index }
            }
            estimatedSize += 5
        case .null:
            objects.append(.scalar(value))
            if let first = firstNull { reference = first } else { firstNull = index }
            estimatedSize += 5
        case .uid(let uid):
            objects.append(.scalar(value))
            if let first = firstUID[uid] { reference = first } else { firstUID[uid] = index }
            estimatedSize += 9
        case .integer(let integer):
            let tag = integer.widthForWriting | (integer.isAboveInt64Max ? 0x80 : 0)
            reference = addNumber(NumberKey(bits: integer.bitPattern, tag: tag), value, size: 17)
        case .real(let real):
            reference = addNumber(NumberKey(bits: real.value.bitPattern, tag: real.isSinglePrecision ? 0x40 : 0x41), value, size: 9)
        case .date(let date):
            let seconds = date.timeIntervalSinceReferenceDate
            guard BinaryPropertyListReader.validDateRange.contains(seconds) else {
                throw PropertyListError(.unrepresentableValue, "date \(seconds) is not finite or outside years 0...9999")
            }
            reference = addNumber(NumberKey(bits: seconds.bitPattern, tag: 0x50), value, size: 9)
        case .data(let data):
            if let existing = findOrInsert(&datas[data, default: -1], index) {
                reference = existing
            } else {
                objects.append(.scalar(value))
                estimatedSize += 10 + data.count
            }
        case .string(let string):
            // The storage rule of PropertyListString.storageForWriting, with a faster ASCII check.
            let ascii = string.storage != .utf16 && isASCII(string.value)
            if let existing = findOrInsert(&strings[StringKey(string: string.value, ascii: ascii), default: -1], index) {
                reference = existing
            } else {
                objects.append(.string(string.value, ascii: ascii))
                estimatedSize += 10 + (ascii ? 1 : 2) * string.value.utf8.count
            }
        }
        if let slot { refs[slot] = reference }
        return frame
    }

    private mutating func addNumber(_ key: NumberKey, _ value: PropertyListValue, size: Int) -> Int {
        let index = objects.count
        if let existing = findOrInsert(&numbers[key, default: -1], index) { return existing }
        objects.append(.scalar(value))
        estimatedSize += size
        return index
    }

    // MARK: - Serialization

    func serialize() -> [UInt8] {
        let refSize = byteCount(UInt64(objects.count))
        var out: [UInt8] = []
        out.reserveCapacity(estimatedSize + objects.count * (refSize + 8))
        out.append(contentsOf: [0x62, 0x70, 0x6C, 0x69, 0x73, 0x74, 0x30, 0x30])  // bplist00
        var offsets: [Int] = []
        offsets.reserveCapacity(objects.count)
        for object in objects {
            offsets.append(out.count)
            switch object {
            case .container(let kind, let count, let refsStart):
                appendMarker(kind, count: count, to: &out)
                let total = kind == 0xD0 ? 2 * count : count
                for slot in refsStart..<(refsStart + total) {
                    appendBigEndian(UInt64(refs[slot]), width: refSize, to: &out)
                }
            case .scalar(let value):
                appendScalar(value, to: &out)
            case .string(let string, let ascii):
                appendString(string, ascii: ascii, to: &out)
            }
        }
        let tableOffset = out.count
        let offsetSize = byteCount(UInt64(tableOffset))
        for offset in offsets { appendBigEndian(UInt64(offset), width: offsetSize, to: &out) }
        out.append(contentsOf: repeatElement(0, count: 6))
        out.append(UInt8(offsetSize))
        out.append(UInt8(refSize))
        appendBigEndian(UInt64(objects.count), width: 8, to: &out)
        appendBigEndian(0, width: 8, to: &out)  // top object
        appendBigEndian(UInt64(tableOffset), width: 8, to: &out)
        return out
    }

    /// CoreFoundation's `_byteCount`: the fewest of 1, 2, 4 or 8 bytes whose range holds `value`.
    private func byteCount(_ value: UInt64) -> Int {
        if value <= 0xFF { return 1 }
        if value <= 0xFFFF { return 2 }
        if value <= 0xFFFF_FFFF { return 4 }
        return 8
    }

    private func appendScalar(_ value: PropertyListValue, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(0x00)
        case .bool(let bool): out.append(bool ? 0x09 : 0x08)
        case .integer(let integer):
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
        case .real(let real):
            if real.isSinglePrecision {
                out.append(0x22)
                appendBigEndian(UInt64(Float(real.value).bitPattern), width: 4, to: &out)
            } else {
                out.append(0x23)
                appendBigEndian(real.value.bitPattern, width: 8, to: &out)
            }
        case .date(let date):
            out.append(0x33)
            appendBigEndian(date.timeIntervalSinceReferenceDate.bitPattern, width: 8, to: &out)
        case .data(let data):
            appendMarker(0x40, count: data.count, to: &out)
            out.append(contentsOf: data)
        case .string(let string):
            appendString(string.value, ascii: string.storageForWriting == .ascii, to: &out)
        case .uid(let uid):
            let width = uid <= 0xFF ? 1 : uid <= 0xFFFF ? 2 : 4
            out.append(0x80 | UInt8(width - 1))
            appendBigEndian(UInt64(uid), width: width, to: &out)
        case .array, .set, .dictionary:
            break  // containers are FlatObject.container
        }
    }

    private func appendString(_ string: String, ascii: Bool, to out: inout [UInt8]) {
        if ascii {
            appendMarker(0x50, count: string.utf8.count, to: &out)
            out.append(contentsOf: string.utf8)
        } else {
            appendMarker(0x60, count: string.utf16.count, to: &out)
            for unit in string.utf16 {
                out.append(UInt8(truncatingIfNeeded: unit >> 8))
                out.append(UInt8(truncatingIfNeeded: unit))
            }
        }
    }

    /// A marker with the count in its low nibble, or 0xF and an integer object for counts >= 15.
    private func appendMarker(_ kind: UInt8, count: Int, to out: inout [UInt8]) {
        if count < 15 {
            out.append(kind | UInt8(count))
        } else {
            out.append(kind | 0x0F)
            let width = byteCount(UInt64(count))
            out.append(0x10 | (width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3))
            appendBigEndian(UInt64(count), width: width, to: &out)
        }
    }

    @inline(__always)
    private func appendBigEndian(_ value: UInt64, width: Int, to out: inout [UInt8]) {
        var shift = (width - 1) * 8
        while shift >= 0 {
            out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
            shift -= 8
        }
    }
}
