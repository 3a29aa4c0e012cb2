#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads the objects of a binary property list one at a time, by index, instead of building the
/// whole tree first.
///
/// For readers that visit each object once and drop it, as the Codable decoder visits a keyed
/// archive's `$objects`: the tree of a large archive, its building and its teardown were about
/// half of such a decode. The trailer and the offset table are validated up front, as for a
/// whole read; each object is then checked when it is read, with the same limits (depth,
/// lengths, cycles). Objects nobody asks for are never checked, as in CoreFoundation, which
/// reads from the top object down.
///
/// A reader made from a `Data` keeps its own copy of the bytes, valid for as long as it lives.
/// One made with ``init(borrowing:limits:)`` reads the caller's bytes in place until ``close()``
/// (the scoped entry points of the decoders, where a copy of a 400 MB archive cost a second and
/// a copy of W1's 256 KiB image a fifth of the decode); after that every read throws.
package final class BinaryPropertyListObjectReader {
    /// The copy this reader owns, or nil when it borrows the caller's bytes.
    private let ownedStorage: UnsafeMutableRawBufferPointer?
    /// False once borrowed bytes are given back (``close()``).
    @exclusivity(unchecked) private var isOpen = true
    /// Reads containers, strings and data (and reports every error). Only its mutating
    /// methods are called, which work in place: reading its fields from here copied the whole
    /// decoder, arrays retained and all, on every call.
    @exclusivity(unchecked) private var decoder: BinaryPropertyListDecoder
    // What the lookups below need, copied out of the validated trailer.
    private let bytes: UnsafeRawBufferPointer
    private let objectsEnd: Int
    private let referenceWidth: Int
    private let offsetTableOffset: Int
    private let offsetWidth: Int
    private let maximumStringLength: Int
    /// Whether the limits let a whole read of any dictionary ``flatDictionary(ofObject:)``
    /// takes succeed (depth 1, 33 values, 4,096 bytes of strings).
    private let flatDictionariesFitLimits: Bool
    /// The number of objects in the offset table.
    package let objectCount: Int
    /// The index of the top object.
    package let topObject: Int
    /// The objects from here to the end are UID objects whose values go up by one from object
    /// to object (UID `index - uidRunOrigin`), as KeyedArchive's archiver writes one UID object
    /// per `$objects` entry after all the others. Checked, object by object, when the reader is
    /// made (`trailingUIDRun`), so a reference into the run is read by arithmetic: not its
    /// offset-table entry and then its bytes, two dependent reads in different parts of the
    /// file for every reference an unarchiver follows. `objectCount` when the file does not
    /// end so.
    private let uidRunStart: Int
    /// The index of the object whose UID would be 0 in the run (negative when the run's UIDs
    /// are above their indices).
    private let uidRunOrigin: Int

    /// Validates the trailer and the offset table of the binary property list in `data`, and
    /// keeps a copy of its bytes.
    package convenience init(_ data: Data, limits: DecodingLimits) throws {
        // Plain `malloc`, not ``HugePages``: large pages for the writer's buffers won in loops
        // and lost in session 34's full run. Out of memory throws instead of stopping.
        guard let base = malloc(Swift.max(data.count, 1)) else {
            throw PropertyListError(.lengthLimitExceeded, "out of memory for a copy of \(data.count) bytes")
        }
        let storage = UnsafeMutableRawBufferPointer(start: base, count: data.count)
        storage.copyBytes(from: data)
        do {
            try self.init(bytes: UnsafeRawBufferPointer(storage), owned: storage, limits: limits)
        } catch {
            free(base)
            throw error
        }
    }

    /// Validates the binary property list in `bytes` and reads it in place: the caller keeps
    /// the bytes alive and unchanged until it calls ``close()``.
    package convenience init(borrowing bytes: UnsafeRawBufferPointer, limits: DecodingLimits) throws {
        try self.init(bytes: bytes, owned: nil, limits: limits)
    }

    private init(bytes: UnsafeRawBufferPointer, owned: UnsafeMutableRawBufferPointer?, limits: DecodingLimits) throws {
        // Objects read one at a time are not cached (each archive entry is read about once),
        // so references need not be counted: the pass over the offset table only checks.
        decoder = try BinaryPropertyListDecoder(bytes: bytes, limits: limits, countsReferences: false)
        self.ownedStorage = owned
        self.bytes = bytes
        let trailer = decoder.trailer
        objectsEnd = trailer.offsetTableOffset
        referenceWidth = trailer.objectRefSize
        offsetTableOffset = trailer.offsetTableOffset
        offsetWidth = trailer.offsetIntSize
        objectCount = trailer.objectCount
        topObject = trailer.topObject
        maximumStringLength = limits.maximumStringLength
        flatDictionariesFitLimits = limits.maximumDepth >= 1 && limits.maximumExpandedNodeCount >= 64
            && limits.maximumExpandedByteCount >= 2 &* Self.flatEntries &* Self.flatStringLength
        (uidRunStart, uidRunOrigin) = Self.trailingUIDRun(
            bytes: bytes, objectCount: trailer.objectCount, offsetTableOffset: trailer.offsetTableOffset,
            offsetWidth: trailer.offsetIntSize)
    }

    /// The objects at the end of the file that are UID objects whose values go up by one with
    /// the index, as the range they start at and the index of UID 0, `(objectCount, 0)` when
    /// the last object is not a UID. One pass backwards from the last object, stopping at the
    /// first that breaks the pattern, so it reads no more than a whole read would (the offsets
    /// were checked to lie in the object area).
    private static func trailingUIDRun(
        bytes: UnsafeRawBufferPointer, objectCount: Int, offsetTableOffset: Int, offsetWidth: Int
    ) -> (start: Int, origin: Int) {
        var start = objectCount
        var origin: Int? = nil
        while start > 0 {
            let index = start &- 1
            let offset = offset(of: index, in: bytes, tableOffset: offsetTableOffset, width: offsetWidth)
            guard let uid = uid(in: bytes, at: offset, objectsEnd: offsetTableOffset) else { break }
            // index - uid cannot overflow: both are below 2^63 and not negative.
            guard origin == nil || origin == index &- Int(uid) else { break }
            origin = index &- Int(uid)
            start = index
        }
        guard let origin else { return (objectCount, 0) }
        return (start, origin)
    }

    /// The value of the object at byte `offset` when it is a UID of 1 to 4 bytes that lies in
    /// the object area; nil for any other object (a longer or truncated UID is left to the
    /// decoder, which reports it). The one rule for ``value(ofObject:)``, the reference lists
    /// and the trailing run.
    @inline(__always)
    private static func uid(in bytes: UnsafeRawBufferPointer, at offset: Int, objectsEnd: Int) -> UInt32? {
        let marker = bytes[offset]
        let nibble = Int(marker & 0x0F)
        guard marker & 0xF0 == 0x80, nibble < 4, nibble < objectsEnd &- offset &- 1 else { return nil }
        return UInt32(truncatingIfNeeded: BinaryBytes.readUInt(bytes, at: offset &+ 1, width: nibble &+ 1))
    }

    /// The objects read as UIDs by arithmetic (see `uidRunStart`); empty when there are none.
    package var arithmeticUIDObjects: Range<Int> { uidRunStart..<objectCount }

    deinit { free(ownedStorage?.baseAddress) }

    /// Ends reading: borrowed bytes may go away after this, and every later read throws.
    package func close() { isOpen = false }

    /// Throws the error for a read after ``close()``, out of line (see
    /// ``throwReferenceError(_:at:in:)``).
    @inline(never)
    private func throwClosedError() throws -> Never {
        throw PropertyListError(.invalidObject, "the archive's bytes were given back: a decoder or unarchiver was used after its decode returned")
    }

    /// Throws the error for an object index out of range, out of line (see
    /// ``throwReferenceError(_:at:in:)``).
    @inline(never)
    private func throwObjectIndexError(_ index: Int) throws -> Never {
        throw PropertyListError(.invalidReference, "object \(index) is not below the object count \(objectCount)")
    }

    /// The value of object `index`, containers with all their members.
    package func value(ofObject index: Int) throws -> PropertyListValue {
        guard isOpen else { try throwClosedError() }
        guard index >= 0, index < objectCount else { try throwObjectIndexError(index) }
        // A UID of the file's trailing run: its value without reading it (`uidRunStart`).
        if index >= uidRunStart { return .uid(UInt32(truncatingIfNeeded: index &- uidRunOrigin)) }
        // The scalars an archive's objects hold most (UIDs, integers, reals, booleans) are
        // read here; anything else, and anything out of the ordinary, by the decoder.
        let offset = self.offset(of: index)
        if let scalar = scalar(at: offset) { return scalar }
        return try otherValue(ofObject: index, marker: bytes[offset], at: offset)
    }

    /// The value of the object at `offset` (in the object area) when it is a regular UID,
    /// integer, real or boolean, as a whole read gives it; `nil` for anything else.
    @inline(__always)
    private func scalar(at offset: Int) -> PropertyListValue? {
        if let uid = Self.uid(in: bytes, at: offset, objectsEnd: objectsEnd) { return .uid(uid) }
        let marker = bytes[offset]
        let nibble = Int(marker & 0x0F)
        switch marker & 0xF0 {
        case 0x10 where nibble <= 2 && 1 &<< nibble < objectsEnd &- offset:
            let width = 1 &<< nibble
            return .integer(PropertyListInteger(BinaryBytes.readUInt(bytes, at: offset &+ 1, width: width), storedWidth: UInt8(width)))
        case 0x10 where nibble == 3 && 8 < objectsEnd &- offset:
            return .integer(PropertyListInteger(Int64(bitPattern: BinaryBytes.readUInt64(bytes, at: offset &+ 1)), storedWidth: 8))
        case 0x20 where nibble == 3 && 8 < objectsEnd &- offset:
            return .real(PropertyListReal(Double(bitPattern: BinaryBytes.readUInt64(bytes, at: offset &+ 1))))
        case 0x00 where marker == 0x08 || marker == 0x09:
            return .bool(marker == 0x09)
        default:
            return nil
        }
    }

    /// The most entries, and the longest ASCII string, ``flatDictionary(ofObject:)`` reads.
    private static let flatEntries = 16
    private static let flatStringLength = 128

    /// The dictionary at object `index` as ``value(ofObject:)`` gives it, when it is small and
    /// flat: at most 16 entries whose keys and values are each a UID, an integer, a real, a
    /// boolean or a string stored as ASCII of at most 128 bytes. `nil` for anything else,
    /// regular or not, and under limits so tight that a whole read could exceed them
    /// (``value(ofObject:)`` then reads it, or reports what is wrong). Entry by entry, without
    /// the decoder's frames: a keyed archive's `$top` read whole was about 2,500 instructions of
    /// a one-object unarchive.
    package func flatDictionary(ofObject index: Int) -> PropertyListDictionary? {
        // A whole read of the largest dictionary taken here: depth 1, 33 values, 32 strings
        // of at most 128 bytes.
        guard flatDictionariesFitLimits, let span = try? dictionarySpan(ofObject: index), span.count <= Self.flatEntries else {
            return nil
        }
        var entries: [PropertyListDictionary.Entry] = []
        entries.reserveCapacity(span.count)
        for entry in 0..<span.count {
            guard let key = try? keyObject(entry, of: span), let key = flatValue(ofObject: key),
                let value = try? valueObject(entry, of: span), let value = flatValue(ofObject: value)
            else { return nil }
            entries.append((key, value))
        }
        return PropertyListDictionary(entries)
    }

    /// ``value(ofObject:)`` for the members ``flatDictionary(ofObject:)`` takes; `nil` for others.
    private func flatValue(ofObject index: Int) -> PropertyListValue? {
        if index >= uidRunStart { return .uid(UInt32(truncatingIfNeeded: index &- uidRunOrigin)) }
        let offset = self.offset(of: index)
        if let scalar = scalar(at: offset) { return scalar }
        let marker = bytes[offset]
        guard marker & 0xF0 == 0x50, let text = asciiBytes(marker: marker, at: offset),
            text.count <= Swift.min(Self.flatStringLength, maximumStringLength), BinaryPropertyListDecoder.firstNonASCII(text) == nil
        else { return nil }
        return .string(PropertyListString(validatedUTF8: text, storage: .ascii))
    }

    /// ``value(ofObject:)`` for anything but the scalars it reads itself, out of line: inlined,
    /// the string's read gave every scalar read a larger frame and a stack guard to set up.
    @inline(never)
    private func otherValue(ofObject index: Int, marker: UInt8, at offset: Int) throws -> PropertyListValue {
        // Strings stored as ASCII: every key and most text. Read again at each use (an
        // archive's strings are each one entry, used about once).
        if marker & 0xF0 == 0x50, let text = asciiBytes(marker: marker, at: offset), text.count <= maximumStringLength,
            BinaryPropertyListDecoder.firstNonASCII(text) == nil
        {
            return .string(PropertyListString(validatedUTF8: text, storage: .ascii))
        }
        return try decoder.decodeObject(index)
    }

    /// The text of object `index` when it is a string stored as ASCII of at most
    /// `maximumLength` bytes (and within the limits), as ``value(ofObject:)`` reads it; `nil`
    /// for any other object, a longer string, or anything irregular (``value(ofObject:)`` then
    /// reads it, or reports what is wrong). For readers that want text and nothing else: no
    /// `PropertyListValue` is made.
    @inline(__always)
    package func asciiString(ofObject index: Int, maximumLength: Int) -> String? {
        asciiText(asciiBytes(ofObject: index), maximumLength: Swift.min(maximumLength, maximumStringLength))
    }

    /// The bytes of an ASCII string object as text, when they are ASCII and at most
    /// `maximumLength`; `nil` otherwise.
    @inline(__always)
    private func asciiText(_ text: UnsafeRawBufferPointer?, maximumLength: Int) -> String? {
        guard let text, text.count <= maximumLength, BinaryPropertyListDecoder.firstNonASCII(text) == nil else { return nil }
        // Up to 15 bytes (a small string on 64-bit platforms) the bytes are copied into the
        // new string, which is then checked: about 195 instructions against 262 through
        // `String(decoding:as:)`, which costs less past that (547 against 633 at 39 bytes).
        if text.count <= 15 {
            return String(unsafeUninitializedCapacity: text.count) { target in
                UnsafeMutableRawBufferPointer(target).copyMemory(from: text)
                return text.count
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The payload of the ASCII string object at `offset` (marker `0x5_`, the count in the
    /// marker or in a 1-, 2-, 4- or 8-byte integer after it) when it lies in the object area;
    /// `nil` otherwise (the decoder then reports what is wrong).
    @inline(__always)
    private func asciiBytes(marker: UInt8, at offset: Int) -> UnsafeRawBufferPointer? {
        guard let (count, start) = count(marker: marker, at: offset), start <= objectsEnd, count <= objectsEnd &- start else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[start..<(start &+ count)])
    }

    /// The count of the object at `offset` (the marker's low nibble, or when that is 0xF the
    /// 1-, 2-, 4- or 8-byte integer object after it) and where its payload starts; nil when the
    /// count cannot be read inside the object area or exceeds its size (the decoder then
    /// reports what is wrong). The count and the start are at most `objectsEnd`.
    @inline(__always)
    private func count(marker: UInt8, at offset: Int) -> (count: Int, start: Int)? {
        let nibble = Int(marker & 0x0F)
        let start = offset &+ 1
        guard nibble == 0x0F else { return (nibble, start) }
        guard start < objectsEnd else { return nil }
        let intMarker = bytes[start]
        let width = 1 &<< Int(intMarker & 0x0F)
        guard intMarker & 0xF0 == 0x10, intMarker & 0x0F <= 3, width < objectsEnd &- start else { return nil }
        let raw = BinaryBytes.readUInt(bytes, at: start &+ 1, width: width)
        guard raw <= UInt64(objectsEnd) else { return nil }
        return (Int(raw), start &+ 1 &+ width)
    }

    /// The byte offset of object `index` (below the count; validated when the reader was made).
    @inline(__always)
    private func offset(of index: Int) -> Int {
        Self.offset(of: index, in: bytes, tableOffset: offsetTableOffset, width: offsetWidth)
    }

    /// The byte offset of object `index` in the offset table at `tableOffset` of `width`-byte
    /// entries (for the reader's own properties before they are set).
    @inline(__always)
    private static func offset(of index: Int, in bytes: UnsafeRawBufferPointer, tableOffset: Int, width: Int) -> Int {
        Int(truncatingIfNeeded: BinaryBytes.readUInt(bytes, at: tableOffset &+ index &* width, width: width))
    }

    /// The object index stored at byte `position`, checked to be below the object count.
    @inline(__always)
    private func reference(at position: Int, in container: Int) throws -> Int {
        guard isOpen else { try throwClosedError() }
        let reference = BinaryBytes.readUInt(bytes, at: position, width: referenceWidth)
        guard reference < UInt64(objectCount) else { try throwReferenceError(reference, at: position, in: container) }
        return Int(truncatingIfNeeded: reference)
    }

    /// Throws the error for a reference out of range, out of line: made inline, the error
    /// gave every reference read (one per key looked up in place) a stack frame to hold it.
    @inline(never)
    private func throwReferenceError(_ reference: UInt64, at position: Int, in container: Int) throws -> Never {
        throw PropertyListError(
            .invalidReference, "reference \(reference) is not below the object count \(objectCount)",
            byteOffset: position, objectIndex: container)
    }

    /// Where the references of a container are: its object index, its member count (entries for
    /// a dictionary) and where its references start (a dictionary's keys, then its values).
    package struct ContainerSpan: Sendable {
        /// The container's object index.
        package var object: Int
        /// Members, or entries for a dictionary.
        package var count: Int
        /// Byte offset of the first reference.
        package var start: Int

        /// A span; only the reader makes spans that lie in its file.
        package init(object: Int, count: Int, start: Int) {
            self.object = object
            self.count = count
            self.start = start
        }
    }

    /// The span of object `index` when it is a dictionary, `nil` when it is another kind of
    /// object; throws when its references run past the object area.
    package func dictionarySpan(ofObject index: Int) throws -> ContainerSpan? {
        try span(ofObject: index, kind: 0xD0)
    }

    /// The span of object `index` when it is an array, `nil` when it is another kind of object.
    package func arraySpan(ofObject index: Int) throws -> ContainerSpan? {
        try span(ofObject: index, kind: 0xA0)
    }

    private func span(ofObject index: Int, kind: UInt8) throws -> ContainerSpan? {
        guard isOpen else { try throwClosedError() }
        guard index >= 0, index < objectCount else { try throwObjectIndexError(index) }
        let offset = offset(of: index)
        let marker = bytes[offset]
        guard marker & 0xF0 == kind else { return nil }
        // count is at most objectsEnd, so the products cannot overflow.
        if let (count, start) = count(marker: marker, at: offset), start <= objectsEnd,
            (kind == 0xD0 ? count &* 2 : count) &* referenceWidth <= objectsEnd &- start
        {
            return ContainerSpan(object: index, count: count, start: start)
        }
        // Damaged: the decoder reports it as a whole read would.
        _ = try decoder.decodeObject(index)
        throw PropertyListError(.invalidObject, "container counts past the object area", objectIndex: index)
    }

    /// The object index of member `member` of an array span (below its count).
    @inline(__always)
    package func element(_ member: Int, of span: ContainerSpan) throws -> Int {
        try reference(at: span.start &+ member &* referenceWidth, in: span.object)
    }

    /// The object index of entry `entry`'s key in a dictionary span (below its count).
    @inline(__always)
    package func keyObject(_ entry: Int, of span: ContainerSpan) throws -> Int {
        try reference(at: span.start &+ entry &* referenceWidth, in: span.object)
    }

    /// The object index of entry `entry`'s value in a dictionary span (below its count).
    @inline(__always)
    package func valueObject(_ entry: Int, of span: ContainerSpan) throws -> Int {
        try reference(at: span.start &+ (span.count &+ entry) &* referenceWidth, in: span.object)
    }

    /// Calls `body` with each UID among the values of the first `maximumEntries` entries of
    /// the dictionary at `span`, in entry order, reading only what ``value(ofObject:)`` reads
    /// for a UID. Anything else, and anything irregular, is skipped without an error: this is
    /// for looking ahead (the unarchiver's phase 2 prefetches what an object's references will
    /// need), and the reads that follow report what is wrong.
    @inline(__always)
    package func forEachUIDValue(of span: ContainerSpan, maximumEntries: Int, _ body: (UInt32) -> Void) {
        // A span made by ``dictionarySpan(ofObject:)`` passes; checked again since a span is a
        // plain value (count <= objectsEnd, so the product cannot overflow).
        guard isOpen, span.start >= 0, span.start <= objectsEnd, span.count >= 0, span.count <= objectsEnd,
            span.count &* 2 &* referenceWidth <= objectsEnd &- span.start
        else { return }
        let entries = Swift.min(span.count, maximumEntries)
        var entry = 0
        while entry < entries {
            let reference = BinaryBytes.readUInt(bytes, at: span.start &+ (span.count &+ entry) &* referenceWidth, width: referenceWidth)
            entry &+= 1
            guard reference < UInt64(objectCount) else { continue }
            if reference >= UInt64(uidRunStart) {
                // Checked when the reader was made (`uidRunStart`).
                body(UInt32(truncatingIfNeeded: Int(truncatingIfNeeded: reference) &- uidRunOrigin))
                continue
            }
            if let uid = Self.uid(in: bytes, at: offset(of: Int(truncatingIfNeeded: reference)), objectsEnd: objectsEnd) { body(uid) }
        }
    }

    /// True when object `index` is a string stored as UTF-16 (marker `0x6_`) whose UTF-8 form
    /// could be `utf8Length` bytes long (between one and three bytes a unit), or of any length
    /// when `utf8Length` is nil. Reads only the marker and the count.
    package func isUTF16String(object index: Int, unitsCompatibleWithUTF8Length utf8Length: Int?) -> Bool {
        guard isOpen, index >= 0, index < objectCount else { return false }
        let offset = offset(of: index)
        let marker = bytes[offset]
        guard marker & 0xF0 == 0x60 else { return false }
        guard let utf8Length else { return true }
        // An unreadable count: let the full read report it.
        guard let (units, _) = count(marker: marker, at: offset) else { return true }
        // units <= objectsEnd, so the product cannot overflow.
        return utf8Length >= units && utf8Length <= units &* 3
    }

    /// The bytes of object `index` when it is a string stored as ASCII (marker `0x5_`) that lies
    /// inside the object area; `nil` for any other object. Not checked to be ASCII: a caller that
    /// matches them against text checks that the text it accepts is ASCII.
    @inline(__always)
    package func asciiBytes(ofObject index: Int) -> UnsafeRawBufferPointer? {
        guard isOpen, index >= 0, index < objectCount else { return nil }
        let offset = offset(of: index)
        let marker = bytes[offset]
        guard marker & 0xF0 == 0x50 else { return nil }
        return asciiBytes(marker: marker, at: offset)
    }
}
