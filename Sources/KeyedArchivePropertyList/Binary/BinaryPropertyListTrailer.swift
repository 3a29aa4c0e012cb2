/// The 32-byte trailer of a `bplist00` file, validated the way CoreFoundation validates it.
///
/// Layout: 5 unused bytes, the sort version, `offsetIntSize`, `objectRefSize`, then the big-endian
/// 64-bit `numObjects`, `topObject` and `offsetTableOffset`.
struct BinaryPropertyListTrailer: Sendable, Equatable {
    /// Width in bytes of each offset-table entry (1...8).
    var offsetIntSize: Int
    /// Width in bytes of each object reference inside arrays, sets and dictionaries (1...8).
    var objectRefSize: Int
    /// Number of objects (and offset-table entries).
    var objectCount: Int
    /// Index of the root object.
    var topObject: Int
    /// Byte offset of the offset table; also the end of the object area.
    var offsetTableOffset: Int

    /// The length of the trailer.
    static let length = 32

    /// Reads and validates the header and trailer of `bytes`.
    ///
    /// The rules are those of `__CFBinaryPlistGetTopLevelInfo` in CFBinaryPList.c: the header is
    /// `bplist0` plus any byte; both sizes are at least 1 (we also require at most 8, which is all
    /// a 64-bit reader can use); at least one object; the top object exists; the offset table
    /// starts at byte 9 or later; `8 + objects + table + 32` equals the length exactly; the
    /// reference size can address every object and the offset size can reach the table. One
    /// rule is ours: there are no more objects than bytes in the object area.
    init(validating bytes: UnsafeRawBufferPointer, limits: DecodingLimits) throws {
        let length = bytes.count
        // Header, one object byte, one offset-table byte, trailer.
        guard length >= 8 + 1 + 1 + Self.length else {
            throw PropertyListError(.truncated, "\(length) bytes is too short for a binary property list", byteOffset: 0)
        }
        let magic: [UInt8] = Array("bplist0".utf8)
        for index in 0..<7 where bytes[index] != magic[index] {
            throw PropertyListError(.unrecognizedFormat, "missing the bplist0 header", byteOffset: index)
        }
        let start = length - Self.length
        let offsetIntSize = Int(bytes[start + 6])
        let objectRefSize = Int(bytes[start + 7])
        let objectCount = BinaryBytes.readUInt64(bytes, at: start + 8)
        let topObject = BinaryBytes.readUInt64(bytes, at: start + 16)
        let tableOffset = BinaryBytes.readUInt64(bytes, at: start + 24)

        func fail(_ message: String, at offset: Int = start) -> PropertyListError {
            PropertyListError(.invalidTrailer, message, byteOffset: offset)
        }
        guard (1...8).contains(offsetIntSize) else { throw fail("offset-table entry size \(offsetIntSize) is not 1...8", at: start + 6) }
        guard (1...8).contains(objectRefSize) else { throw fail("object reference size \(objectRefSize) is not 1...8", at: start + 7) }
        guard objectCount >= 1 else { throw fail("the trailer declares no objects", at: start + 8) }
        guard objectCount <= UInt64(Int.max) else { throw fail("object count \(objectCount) is too large", at: start + 8) }
        guard topObject < objectCount else { throw fail("top object \(topObject) is not below the object count \(objectCount)", at: start + 16) }
        guard tableOffset >= 9 else { throw fail("offset table at \(tableOffset) overlaps the header", at: start + 24) }
        guard tableOffset < UInt64(start) else { throw fail("offset table at \(tableOffset) starts at or after the trailer", at: start + 24) }
        let (tableSize, overflow) = objectCount.multipliedReportingOverflow(by: UInt64(offsetIntSize))
        guard !overflow, tableSize <= UInt64(length) else {
            throw fail("an offset table of \(objectCount) entries of \(offsetIntSize) bytes does not fit in \(length) bytes", at: start + 8)
        }
        // tableOffset < start and tableSize <= length, so this cannot overflow.
        guard tableOffset + tableSize + UInt64(Self.length) == UInt64(length) else {
            throw fail("offset table [\(tableOffset), \(tableOffset + tableSize)) does not end where the trailer starts (\(start))", at: start + 24)
        }
        if objectRefSize < 8, (UInt64(1) << (8 * UInt64(objectRefSize))) <= objectCount {
            throw fail("\(objectRefSize)-byte object references cannot address \(objectCount) objects", at: start + 7)
        }
        if offsetIntSize < 8, (UInt64(1) << (8 * UInt64(offsetIntSize))) <= tableOffset {
            throw fail("\(offsetIntSize)-byte offsets cannot reach the offset table at \(tableOffset)", at: start + 6)
        }
        // Every object takes at least one byte, so more objects than object bytes means table
        // entries share offsets. CoreFoundation does not check this, but no writer produces it,
        // and refusing it bounds the per-object tables the reader allocates by the file size
        // (a 8 MB table of 1-byte entries all pointing at one byte would otherwise cost 32x that).
        guard objectCount <= tableOffset - 8 else {
            throw fail("\(objectCount) objects cannot fit in an object area of \(tableOffset - 8) bytes", at: start + 8)
        }
        guard objectCount <= UInt64(max(limits.maximumObjectCount, 0)) else {
            throw PropertyListError(
                .objectLimitExceeded, "\(objectCount) objects exceed the limit of \(limits.maximumObjectCount)", byteOffset: start + 8)
        }
        self.offsetIntSize = offsetIntSize
        self.objectRefSize = objectRefSize
        self.objectCount = Int(objectCount)
        self.topObject = Int(topObject)
        self.offsetTableOffset = Int(tableOffset)
    }
}

/// Big-endian integer reads from a buffer whose bounds the caller has already checked.
enum BinaryBytes {
    /// The big-endian 64-bit integer at `offset` (8 bytes must be in bounds).
    @inline(__always)
    static func readUInt64(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The big-endian unsigned integer of `width` (1...8) bytes at `offset` (in bounds).
    @inline(__always)
    static func readUInt(_ bytes: UnsafeRawBufferPointer, at offset: Int, width: Int) -> UInt64 {
        switch width {
        case 1: return UInt64(bytes[offset])
        case 2: return UInt64(UInt16(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)))
        case 4: return UInt64(UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        case 8: return readUInt64(bytes, at: offset)
        default:
            var value: UInt64 = 0
            for index in 0..<width { value = value << 8 | UInt64(bytes[offset + index]) }
            return value
        }
    }
}
