#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A binary property list as a flat object list: the one `bplist00` serializer of this package.
///
/// Objects are numbered in the order they are added; containers refer to their members by
/// object index. ``add(_:)`` is the flattening front end of ``BinaryPropertyListWriter``: it
/// appends a value tree in CoreFoundation's order (pre-order; a dictionary's keys, then its
/// values) with CoreFoundation's uniquing (equal strings, numbers, dates and data once;
/// containers never; booleans and null: every reference to the first one). Layers that already
/// have a flat, uniqued table (the keyed archiver's `$objects`) reserve fixed indices with
/// ``reserve(_:)``, fill them with ``setLeaf(_:at:)`` / ``setContainer(kind:references:at:)``,
/// and use ``add(_:)`` only for the small values inside their entries.
///
/// ``serializedData(secondThreadObjectCount:)`` writes the list: object 0 is the top object, references and offsets use the
/// fewest of 1, 2, 4 or 8 bytes, markers as CoreFoundation writes them.
package struct BinaryPropertyListObjects {
    /// One object of the list.
    package enum Object {
        /// A scalar (null, boolean, integer, real, date, data, UID), written from its value.
        case scalar(PropertyListValue)
        /// A string and whether it is stored as ASCII (else UTF-16).
        case string(PropertyListString, ascii: Bool)
        /// A string the caller had as a `String` (the archivers' string leaves), kept as it is:
        /// making a ``PropertyListString`` of a long one costs a box (an allocation) per string.
        case swiftString(String, ascii: Bool)
        /// A container: its member count, where its references start in ``references``
        /// (dictionaries have `2 * count`: keys, then values), and its marker's high nibble
        /// (0xA0 array, 0xC0 set, 0xD0 dictionary). The kind comes last so that the payload
        /// is 17 bytes, not 24 (padding after a leading byte): objects are 24 bytes apart, not
        /// 32, which is 10 MB less for W5's 1.3 million objects.
        case container(count: Int, refsStart: Int, kind: UInt8)
    }

    /// The objects, by index. (Both lists grow in place: see ``LargeList``.)
    package private(set) var objects = LargeList<Object>()
    /// The member references of all containers, back to back, each as 4 bytes (an object
    /// index, or an ``implicitUIDReference(_:)``): half the memory of an `Int` for W5's
    /// 4.6 million references. So a list holds at most ``maximumObjectCount`` objects, checked
    /// when it is written (a reference is stored before the count it belongs to is known).
    package private(set) var references = LargeList<Int32>()
    /// UID objects `0 ..< implicitUIDCount` that are not stored but written after the stored
    /// objects, UID `n` as object `count + n`: the keyed archiver refers to one per `$objects`
    /// entry, and storing them took a list slot each (24 bytes; half a gigabyte for a
    /// 21-million-object archive). A reference to one is ``implicitUIDReference(_:)``, which
    /// ``add(_:)`` also returns for `.uid(n)` when `n` is in the range.
    package var implicitUIDCount = 0

    /// How numbers (integers, reals, dates) added through ``add(_:)`` are shared.
    package enum NumberSharing: Sendable {
        /// Equal numbers are one object, wherever they are, as CoreFoundation's writer does
        /// (property lists: the same bytes as Foundation's).
        case everywhere
        /// A number is one object with an equal one added lately (``RecentNumberCache``) and
        /// is stored again otherwise.
        ///
        /// For keyed archives, where numbers are objects' fields: one equal to a field far
        /// away (a count equal to another record's identifier) is a coincidence, and sharing
        /// it cost the writer a miss in a table of every number (megabytes for W2 and W5) and
        /// the reader two misses (its offset-table entry and its bytes, far from the object
        /// being read). Stored again, it is next to its object in both, for 2 to 9 bytes
        /// and an offset-table entry. Numbers that recur (ages, flags, counts) are still
        /// shared. (Session 36, against global sharing with integers written last: W5
        /// encode and decode 1.11x, W2 archives 1.05x / 1.09x; W5's archive 3.8% larger,
        /// its `visits` and `postcode` being other records' `id`s.)
        case nearby
    }

    /// How numbers added from here on are shared (``NumberSharing/everywhere`` unless set).
    package var numberSharing = NumberSharing.everywhere

    /// The most bytes the written list may take (no limit unless set). ``add(_:)`` stores a
    /// container again at every use, so a value whose containers are shared by reference (as
    /// read from a small file) can flatten to a list far larger than the value: it checks the
    /// fewest bytes the list could take as it goes, and writing checks the exact size before
    /// it allocates the output. Both throw ``OutputBudget/check(_:keyPath:)``'s error.
    package var outputBudget = OutputBudget(.max)

    /// The stored objects' sizes without their member references, and their numbers of member
    /// references, by block of ``sizeBlockLength`` objects: kept as objects are stored, so that
    /// writing knows where each part of the file starts after reading at most a block of
    /// objects per part, not all of them (a pass over every object took a W5 archive 8 ms of
    /// its 190, on two threads). Each object is counted as ``size(of:refSize:)`` counts it.
    private var blockSizes: [BlockSize] {
        objects.isEmpty && closedBlockSizes.isEmpty ? [] : closedBlockSizes + [lastBlockSize]
    }
    /// ``blockSizes`` but the last, and the last (the block objects are appended to) apart:
    /// an append changed the array, a uniqueness check and a bounds check each (about 15
    /// instructions an object).
    private var closedBlockSizes: [BlockSize] = []
    private var lastBlockSize = BlockSize()
    /// Objects per block of ``blockSizes``.
    static let sizeBlockLength = 1 << sizeBlockShift
    private static let sizeBlockShift = 12

    private var numbers = NumberTable()
    private var recentNumbers = RecentNumberCache()
    /// Strings by exact text, apart by storage (ASCII, UTF-16).
    private var asciiStrings = LiteralStringTable()
    private var utf16Strings = LiteralStringTable()
    private var datas = LiteralDataTable()
    private var firstTrue: Int?
    private var firstFalse: Int?
    private var firstNull: Int?
    private var firstUID: [UInt32: Int] = [:]

    /// An empty list.
    package init() {}

    /// The most objects (stored and implicit UID objects together) a list can write: its
    /// references are 4 bytes (see ``references``). A list of this many objects takes tens of
    /// gigabytes of memory before it is written, and Foundation's writer stops far earlier.
    package static let maximumObjectCount = Int(Int32.max)

    /// The number of stored objects (the implicit UID objects come after them).
    package var count: Int { objects.count }

    /// The reference to implicit UID object `uid` (see ``implicitUIDCount``), resolved to its
    /// object index when the list is written: negative, so it cannot be taken for a stored one.
    @inline(__always)
    package static func implicitUIDReference(_ uid: Int) -> Int { binaryListImplicitUIDReference(uid) }

    // MARK: - Fixed layouts

    /// Appends `count` placeholder objects (to be set before serializing) and returns their indices.
    /// `moreObjects` and `references` reserve room for what is added after them (objects from
    /// ``add(_:)``, members of containers), so that large lists are not copied as they grow.
    package mutating func reserve(_ count: Int, moreObjects: Int = 0, references: Int = 0) -> Range<Int> {
        let start = objects.count
        objects.reserveCapacity(start + count + max(0, moreObjects))
        self.references.reserveCapacity(self.references.count + max(0, references))
        for _ in 0..<max(0, count) { appendObject(.scalar(.null)) }
        return start..<objects.count
    }

    /// Appends one placeholder object (to be set before serializing) and returns its index.
    @inline(__always)
    package mutating func appendPlaceholder() -> Int {
        appendObject(.scalar(.null))
        return objects.count - 1
    }

    /// Appends `object`, counting its size.
    @inline(__always)
    private mutating func appendObject(_ object: Object) {
        appendObject(object, size: Self.blockSize(of: object))
    }

    /// Appends `object`, whose ``blockSize(of:)`` the caller worked out (knowing what it is,
    /// it skips the general switch: about 45 instructions an object).
    @inline(__always)
    private mutating func appendObject(_ object: Object, size: BlockSize) {
        addToBlock(of: objects.count, bytes: size.bytes, references: size.references)
        objects.append(object)
    }

    /// Replaces the object at `index` (a valid index), counting the change in size.
    @inline(__always)
    private mutating func replaceObject(at index: Int, with object: consuming Object) {
        let new = Self.blockSize(of: object)
        replaceObject(at: index, with: object, size: new)
    }

    /// ``replaceObject(at:with:)`` with `object`'s ``blockSize(of:)`` worked out by the caller.
    @inline(__always)
    private mutating func replaceObject(at index: Int, with object: consuming Object, size new: BlockSize) {
        let old = Self.blockSize(of: objects[index])
        // One change to the block, not one for each object: each is an array's uniqueness
        // check, and the layout sets most objects after reserving them.
        addToBlock(of: index, bytes: new.bytes &- old.bytes, references: new.references &- old.references)
        objects[index] = object
    }

    /// The stored objects' sizes without member references, and their member references, in
    /// one block of ``sizeBlockLength`` objects.
    struct BlockSize {
        var bytes = 0
        var references = 0

        /// Both sums changed in one access (one uniqueness check of the array holding it).
        @inline(__always)
        mutating func add(bytes: Int, references: Int) {
            self.bytes &+= bytes
            self.references &+= references
        }
    }

    /// What `object` adds to its block's ``BlockSize``.
    @inline(__always)
    private static func blockSize(of object: Object) -> BlockSize {
        var references = 0
        if case .container(let count, _, let kind) = object { references = kind == 0xD0 ? 2 &* count : count }
        return BlockSize(bytes: size(of: object, refSize: 0), references: references)
    }

    /// Adds to the block of the object at `index`. Objects are appended in order, so a new
    /// block is always the next one. Wrapping arithmetic: the sums are of objects in memory,
    /// far from `Int.max`, and the writer checks the bytes it wrote against them.
    @inline(__always)
    private mutating func addToBlock(of index: Int, bytes: Int, references: Int) {
        let block = index >> Self.sizeBlockShift
        if block == closedBlockSizes.count {
            lastBlockSize.add(bytes: bytes, references: references)
        } else {
            addToEarlierOrNextBlock(block, bytes: bytes, references: references)
        }
    }

    /// ``addToBlock(of:bytes:references:)`` for an object not in the last block: one before it
    /// (replaced), or the first of the next block (which closes the last one).
    private mutating func addToEarlierOrNextBlock(_ block: Int, bytes: Int, references: Int) {
        guard block < closedBlockSizes.count else {
            while closedBlockSizes.count < block {
                closedBlockSizes.append(lastBlockSize)
                lastBlockSize = BlockSize()
            }
            lastBlockSize.add(bytes: bytes, references: references)
            return
        }
        closedBlockSizes[block].add(bytes: bytes, references: references)
    }

    /// Makes the object at `target` the same as the one at `source` (a container shares its
    /// member references).
    package mutating func copyObject(from source: Int, to target: Int) {
        guard objects.indices.contains(source), objects.indices.contains(target) else { return }
        replaceObject(at: target, with: objects[source])
    }

    /// The UIDs that the container at `index` and the containers stored inside it refer to:
    /// implicit UID objects and stored UID objects.
    package func uids(reachableFrom index: Int) -> [Int] {
        var found: [Int] = []
        var stack = [index]
        var seen: Set<Int> = []
        while let current = stack.popLast() {
            guard objects.indices.contains(current), seen.insert(current).inserted else { continue }
            switch objects[current] {
            case .scalar(.uid(let uid)):
                // `Int(exactly:)`: a UID above Int32.max does not fit an Int on 32-bit platforms.
                if current != index, let uid = Int(exactly: uid) { found.append(uid) }
            case .container(let count, let refsStart, let kind):
                let total = kind == 0xD0 ? 2 * count : count
                guard refsStart >= 0, total >= 0, refsStart <= references.count - total else { continue }
                for slot in refsStart..<(refsStart + total) {
                    let reference = Int(references[slot])
                    if reference < 0 { found.append(~reference) } else { stack.append(reference) }
                }
            default:
                continue
            }
        }
        return found
    }

    /// Sets a reserved object to a scalar or string, without uniquing (the caller has uniqued).
    package mutating func setLeaf(_ value: PropertyListValue, at index: Int) throws {
        switch value {
        case .string(let string):
            replaceObject(at: index, with: .string(string, ascii: string.storageForWriting == .ascii))
        case .date(let date):
            try Self.checkDate(date)
            replaceObject(at: index, with: .scalar(value))
        case .array, .set, .dictionary:
            throw PropertyListError(.unrepresentableValue, "a container is not a leaf")
        default:
            replaceObject(at: index, with: .scalar(value))
        }
    }

    /// Appends a string, without uniquing (the caller has uniqued), stored as
    /// ``PropertyListString/storageForWriting`` would store it with no hint, and returns its
    /// index. (The archivers' string entries: appended holding their string, not reserved and
    /// set, which measured and replaced a placeholder.)
    package mutating func appendString(_ string: consuming String) -> Int {
        // Its size from the same pass over its bytes (``size(of:refSize:)`` counts the same).
        let (ascii, bytes) = Self.withUTF8(of: string) { utf8 -> (Bool, Int) in
            if PropertyListString.isASCII(UnsafeRawBufferPointer(utf8)) { return (true, Self.markerSize(utf8.count) &+ utf8.count) }
            let units = Self.utf16Count(ofUTF8: utf8)
            return (false, Self.markerSize(units) &+ 2 &* units)
        }
        appendObject(.swiftString(string, ascii: ascii), size: BlockSize(bytes: bytes))
        return objects.count &- 1
    }

    /// Sets a reserved object to a container whose members are the given object indices
    /// (dictionaries: all keys, then all values).
    package mutating func setContainer(kind: UInt8, references members: [Int], at index: Int) {
        members.withUnsafeBufferPointer { setContainer(kind: kind, references: $0, at: index) }
    }

    /// ``setContainer(kind:references:at:)`` with the members in a buffer.
    package mutating func setContainer(kind: UInt8, references members: UnsafeBufferPointer<Int>, at index: Int) {
        let (container, size) = storeMembers(kind: kind, members)
        replaceObject(at: index, with: container, size: size)
    }

    /// Adds a container whose members are the given object indices and returns its index.
    /// (Appended as it is: a placeholder set afterwards was measured and replaced.)
    package mutating func addContainer(kind: UInt8, references members: [Int]) -> Int {
        let (container, size) = members.withUnsafeBufferPointer { storeMembers(kind: kind, $0) }
        appendObject(container, size: size)
        return objects.count &- 1
    }

    /// Appends a container's member references (dictionaries: all keys, then all values) to
    /// ``references``, and returns the container object that refers to them and its
    /// ``blockSize(of:)``.
    @inline(__always)
    private mutating func storeMembers(kind: UInt8, _ members: UnsafeBufferPointer<Int>) -> (Object, BlockSize) {
        let count = kind == 0xD0 ? members.count / 2 : members.count
        let container = Object.container(count: count, refsStart: references.count, kind: kind)
        // Truncated: a list past ``maximumObjectCount`` objects throws when it is written.
        references.append(members) { Int32(truncatingIfNeeded: $0) }
        return (container, BlockSize(bytes: Self.markerSize(count), references: kind == 0xD0 ? 2 &* count : count))
    }

    // MARK: - Flattening (the generic writer's front end)

    /// Adds a value tree (or finds its uniqued twin) and returns the index of its top object.
    /// Iterative, so deep values cannot overflow the stack. Throws for dictionary keys that are
    /// not strings, numbers, dates or data, and for dates the reader would refuse.
    package mutating func add(_ root: PropertyListValue) throws -> Int {
        let (rootIndex, rootFrame) = try visit(root)
        // Most calls add a scalar (a key, an inline number): no frame stack for those.
        guard let rootFrame else { return rootIndex }
        let unchecked = uncheckedSize
        var frames = [rootFrame]
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
                try Self.checkKey(member)
            }
            let slot = frames[last].refsStart + index
            let (reference, frame) = try visit(member)
            references[slot] = Int32(truncatingIfNeeded: reference)
            if let frame {
                // Only containers expand (everything else is stored once), so a check at each
                // container keeps the list within one container's members of the budget.
                if objects.count &+ references.count > unchecked { try checkOutputBudget() }
                frames.append(frame)
            }
        }
        return rootIndex
    }

    /// Throws when the list, written now, would already be longer than ``outputBudget``.
    /// (Out of line: it runs only near the budget.)
    @inline(never)
    private func checkOutputBudget() throws {
        try outputBudget.check(minimumSerializedLength)
    }

    /// Up to this many objects and references (``objects`` and ``references`` counted
    /// together), ``minimumSerializedLength`` cannot pass ``outputBudget``, so ``add(_:)``
    /// works it out only past that (at every container it cost W3's write binary 0.6%).
    /// References and offsets being at most 8 bytes wide, it is at most 40 + 9 x objects +
    /// 8 x references + 8 x implicit UIDs, so at most 9 x (objects + references + UIDs + 5).
    private var uncheckedSize: Int {
        outputBudget.limit / 9 &- implicitUIDCount &- 5
    }

    /// The fewest bytes the list could take when written, whatever is added after: each stored
    /// object at least a marker byte, references and offset-table entries at least as wide as
    /// the objects so far need (widths only grow with the count and the table's offset), the
    /// header and the trailer. Wrapping arithmetic: counts of objects in memory, far from
    /// `Int.max`.
    private var minimumSerializedLength: Int {
        let objectCount = objects.count &+ implicitUIDCount
        let tableOffset = 8 &+ objects.count &+ references.count &* Self.byteCount(UInt64(objectCount))
        return tableOffset &+ objectCount &* Self.byteCount(UInt64(tableOffset)) &+ 32
    }

    /// Throws unless `key` can be a binary property list dictionary key (string, number, date, data).
    package static func checkKey(_ key: PropertyListValue) throws {
        switch key {
        case .string, .integer, .real, .date, .data: return
        default:
            throw PropertyListError(
                .unrepresentableValue, "a binary property list dictionary key must be a string, number, date or data, not a \(key.typeName)")
        }
    }

    private static func checkDate(_ date: Date) throws {
        let seconds = date.timeIntervalSinceReferenceDate
        guard BinaryPropertyListReader.validDateRange.contains(seconds) else {
            throw PropertyListError(.unrepresentableValue, "date \(seconds) is not finite or outside years 0...9999")
        }
    }

    /// Adds `value` (or finds its uniqued twin) and returns its reference, and a frame when
    /// `value` is a container whose members must be visited next.
    private mutating func visit(_ value: PropertyListValue) throws -> (Int, FlattenFrame?) {
        let index = objects.count
        var reference = index
        var frame: FlattenFrame?
        switch value {
        case .array(let list), .set(let list):
            let kind: UInt8
            if case .array = value { kind = 0xA0 } else { kind = 0xC0 }
            frame = FlattenFrame(members: .list(list), count: list.count, total: list.count, refsStart: references.count)
            appendObject(.container(count: list.count, refsStart: references.count, kind: kind))
            references.append(contentsOf: repeatElement(0, count: list.count))
        case .dictionary(let dictionary):
            let count = dictionary.count
            frame = FlattenFrame(members: .dictionary(dictionary.entries), count: count, total: 2 * count, refsStart: references.count)
            appendObject(.container(count: count, refsStart: references.count, kind: 0xD0))
            references.append(contentsOf: repeatElement(0, count: 2 * count))
        case .bool(let bool):
            reference = addBool(bool)
        case .null:
            appendObject(.scalar(value))
            if let first = firstNull { reference = first } else { firstNull = index }
        case .uid(let uid):
            // Compared as UInt64: `Int(uid)` traps for UIDs above Int32.max on 32-bit platforms.
            if UInt64(uid) < UInt64(implicitUIDCount) { return (Self.implicitUIDReference(Int(uid)), nil) }
            appendObject(.scalar(value))
            if let first = firstUID[uid] { reference = first } else { firstUID[uid] = index }
        case .integer(let integer):
            reference = addInteger(integer, value)
        case .real(let real):
            reference = addReal(real, value)
        case .date(let date):
            try Self.checkDate(date)
            reference = addNumber(NumberKey(bits: date.timeIntervalSinceReferenceDate.bitPattern, tag: 0x50), value, bytes: 9)
        case .data(let data):
            if let existing = datas.findOrInsert(data, index) {
                reference = existing
            } else {
                appendObject(.scalar(value))
            }
        case .string(let string):
            let ascii = string.storageForWriting == .ascii
            let existing = ascii
                ? asciiStrings.findOrInsert(string, index) : utf16Strings.findOrInsert(string, index)
            if let existing {
                reference = existing
            } else {
                appendObject(.string(string, ascii: ascii))
            }
        }
        return (reference, frame)
    }

    /// ``add(_:)`` for a value that is not a container, with the same sharing: the keyed
    /// archiver adds an inline number or boolean for most fields, and the flattening's
    /// general path (its frame, returned and destroyed at every value) cost that as much as
    /// the number itself.
    @inline(__always)
    package mutating func addScalar(_ value: PropertyListValue) throws -> Int {
        switch value {
        case .integer(let integer): return addInteger(integer, value)
        case .real(let real): return addReal(real, value)
        case .bool(let bool): return addBool(bool)
        default: return try add(value)
        }
    }

    /// The index of a boolean: every reference goes to the first `true` or `false` added, and
    /// each one is still stored, as CoreFoundation's writer does (its object table is keyed by
    /// the boolean singletons, its object list is not).
    @inline(__always)
    private mutating func addBool(_ bool: Bool) -> Int {
        let index = objects.count
        appendObject(.scalar(.bool(bool)))
        if bool {
            if let first = firstTrue { return first }
            firstTrue = index
        } else {
            if let first = firstFalse { return first }
            firstFalse = index
        }
        return index
    }

    /// The index of an integer (`value` is `.integer(integer)`), shared as ``numberSharing`` says.
    @inline(__always)
    private mutating func addInteger(_ integer: PropertyListInteger, _ value: PropertyListValue) -> Int {
        let width = integer.widthForWriting
        // As ``size(of:refSize:)`` counts it: a marker and the bytes (16 above Int64.max).
        let bytes = width > 8 ? 17 : 1 &+ Int(width)
        if numberSharing == .everywhere, !integer.isAboveInt64Max, !integer.isNegative, width == integer.canonicalWidth {
            return addNumber(numbers.findOrInsert(integer: integer.bitPattern, tag: UInt64(width), objects.count), value, bytes: bytes)
        }
        return addNumber(NumberKey(bits: integer.bitPattern, tag: width | (integer.isAboveInt64Max ? 0x80 : 0)), value, bytes: bytes)
    }

    /// The index of a real (`value` is `.real(real)`), shared as ``numberSharing`` says.
    @inline(__always)
    private mutating func addReal(_ real: PropertyListReal, _ value: PropertyListValue) -> Int {
        addNumber(NumberKey(bits: real.value.bitPattern, tag: real.isSinglePrecision ? 0x40 : 0x41), value, bytes: real.isSinglePrecision ? 5 : 9)
    }

    /// The index of a number `value` of `bytes` bytes (see ``size(of:refSize:)``), shared by `key`.
    private mutating func addNumber(_ key: NumberKey, _ value: PropertyListValue, bytes: Int) -> Int {
        switch numberSharing {
        case .everywhere: addNumber(numbers.findOrInsert(key.bits, UInt64(key.tag), objects.count), value, bytes: bytes)
        case .nearby: addNumber(recentNumbers.findOrInsert(bits: key.bits, tag: key.tag, objects.count), value, bytes: bytes)
        }
    }

    /// The number `value`'s index: `existing` (what the table found), or the next one, where it
    /// is appended (the index the table stored for it).
    @inline(__always)
    private mutating func addNumber(_ existing: Int?, _ value: PropertyListValue, bytes: Int) -> Int {
        if let existing { return existing }
        appendObject(.scalar(value), size: BlockSize(bytes: bytes))
        return objects.count &- 1
    }

    // MARK: - Serialization

    /// The `bplist00` bytes of the list, object 0 at the top.
    ///
    /// The objects' sizes, counted as they were stored (by block: ``sizeBlockLength``), give
    /// the offset table's place and the exact output size; one pass writes each object into one
    /// buffer of that size and its offset straight into the table's slot, so no list of offsets
    /// is kept (8 bytes per object: 170 MB for a 21-million-object archive). The buffer becomes the `Data` without a
    /// copy (large outputs, such as an archive holding an image, are touched once, not three times).
    ///
    /// Lists of `secondThreadObjectCount` objects or more (implicit UID objects included) are
    /// written by two threads on a machine with a spare core: the objects are cut into
    /// ``serializationBlockCount`` runs, the second thread takes the later ones, and each thread
    /// writes its objects and their table slots into its own part of the buffer (the second part
    /// starts where the first one's sizes add up to). The bytes are the same either way; most of
    /// a large write is the kernel clearing the buffer's new pages as they are first written,
    /// which two threads then do side by side. (Tests lower the threshold to cut small lists.)
    package func serializedData(secondThreadObjectCount: Int = Self.secondThreadObjectCount) throws -> Data {
        // The objects are read in place (a copy of each retained its string or value).
        try objects.withUnsafeBufferPointer { objects in
            try Self.serializedData(
                objects, takingObjects: false, references: references, implicitUIDCount: implicitUIDCount, blockSizes: blockSizes,
                budget: outputBudget, secondThreadObjectCount: secondThreadObjectCount)
        }
    }

    /// ``serializedData(secondThreadObjectCount:)`` for a list written once and then dropped,
    /// which it leaves with no objects: each object is moved out as it is written, so its
    /// string or value is released there, by whichever thread writes it, and not in a pass of
    /// its own over the whole list when it is freed. (That pass was 1.5 ms of a 100,000-person
    /// Codable archive's 65, on the encoder's thread after the write, and 5% of W5 encode's
    /// instructions.) After an error the list keeps its objects, some of them emptied.
    package mutating func takeSerializedData(secondThreadObjectCount: Int = Self.secondThreadObjectCount) throws -> Data {
        // The other parts, read while the objects are taken (copies share their storage).
        let references = references, implicitUIDCount = implicitUIDCount, blockSizes = blockSizes, budget = outputBudget
        return try objects.takeElements { objects in
            try Self.serializedData(
                UnsafeBufferPointer(objects), takingObjects: true, references: references, implicitUIDCount: implicitUIDCount,
                blockSizes: blockSizes, budget: budget, secondThreadObjectCount: secondThreadObjectCount)
        }
    }

    /// The work of both, on a list's parts: when `takingObjects`, each object is moved out as
    /// it is written and an object with nothing to release is left in its place.
    private static func serializedData(
        _ objects: UnsafeBufferPointer<Object>, takingObjects: Bool, references: LargeList<Int32>,
        implicitUIDCount: Int, blockSizes: [BlockSize], budget: OutputBudget, secondThreadObjectCount: Int
    ) throws -> Data {
        let storedCount = objects.count
        guard implicitUIDCount >= 0 else {
            throw PropertyListError(.unrepresentableValue, "internal error: \(implicitUIDCount) implicit UID objects")
        }
        // Within the limit, every reference stored as 4 bytes was stored whole (see `references`).
        let (objectCount, overflow0) = storedCount.addingReportingOverflow(implicitUIDCount)
        guard !overflow0, objectCount <= Self.maximumObjectCount else {
            throw PropertyListError(.lengthLimitExceeded, "the binary property list would exceed \(Self.maximumObjectCount) objects")
        }
        let twoThreads = SecondThread<Void>.splits(objectCount, from: secondThreadObjectCount, usually: Self.secondThreadObjectCount)
        return try references.withUnsafeBufferPointer { references in
            let items = SerializedItems(
                objects: objects, takesObjects: takingObjects, references: references, storedCount: storedCount, implicitUIDCount: implicitUIDCount,
                refSize: Self.byteCount(UInt64(objectCount)), blockSizes: blockSizes, budget: budget)
            return try items.serialize(blocks: twoThreads ? Self.serializationBlockCount : 1)
        }
    }

    /// Lists of this many objects or more are written by two threads (``serializedData(secondThreadObjectCount:)``).
    package static let secondThreadObjectCount = 1 << 16

    /// The runs the objects are cut into when two threads write them: the second thread's
    /// part is a whole number of runs, chosen so that the two parts' bytes come closest.
    static let serializationBlockCount = 16

    /// The items (stored objects, then implicit UID objects) of each of `blocks` runs.
    func serializationRuns(blocks: Int) -> [Range<Int>] {
        let count = objects.count &+ implicitUIDCount
        return (0..<blocks).map { SerializedItems.items(ofBlock: $0, of: blocks, count: count) }
    }

    /// CoreFoundation's `_byteCount`: the fewest of 1, 2, 4 or 8 bytes whose range holds `value`.
    package static func byteCount(_ value: UInt64) -> Int {
        if value <= 0xFF { return 1 }
        if value <= 0xFFFF { return 2 }
        if value <= 0xFFFF_FFFF { return 4 }
        return 8
    }

    /// The bytes a marker with `count` takes (the count as an integer object when >= 15).
    private static func markerSize(_ count: Int) -> Int {
        count < 15 ? 1 : 2 + byteCount(UInt64(count))
    }

    /// The bytes ``appendScalar(_:to:)``, ``appendString(_:ascii:to:)`` or a container write
    /// for `object`: the first pass of ``serializedData(secondThreadObjectCount:)``.
    fileprivate static func size(of object: Object, refSize: Int) -> Int {
        switch object {
        case .container(let count, _, let kind):
            return markerSize(count) + (kind == 0xD0 ? 2 * count : count) * refSize
        case .string(let string, let ascii):
            let count = string.utf8Count
            if ascii { return markerSize(count) + count }
            let units = string.withUTF8 { utf16Count(ofUTF8: $0) }
            return markerSize(units) + 2 * units
        case .swiftString(let string, let ascii):
            let count = string.utf8.count
            if ascii { return markerSize(count) + count }
            let units = withUTF8(of: string) { utf16Count(ofUTF8: $0) }
            return markerSize(units) + 2 * units
        case .scalar(let value):
            switch value {
            case .null, .bool: return 1
            case .integer(let integer):
                let width = Int(integer.widthForWriting)
                return width > 8 ? 17 : 1 + width
            case .real(let real): return real.isSinglePrecision ? 5 : 9
            case .date: return 9
            case .data(let data): return markerSize(data.count) + data.count
            case .string(let string):
                return size(of: .string(string, ascii: string.storageForWriting == .ascii), refSize: refSize)
            case .uid(let uid): return uidSize(UInt64(uid))
            case .array, .set, .dictionary: return 0
            }
        }
    }

    /// The bytes of a UID object: its marker and 1, 2 or 4 bytes.
    @inline(__always)
    fileprivate static func uidSize(_ uid: UInt64) -> Int { uid <= 0xFF ? 2 : uid <= 0xFFFF ? 3 : 5 }

    fileprivate static func appendScalar(_ value: PropertyListValue, to out: inout RawByteWriter) {
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
                out.appendBigEndian(integer.isNegative ? UInt64.max : 0, width: 8)
            }
            out.appendBigEndian(integer.bitPattern, width: min(Int(width), 8))
        case .real(let real):
            if real.isSinglePrecision {
                out.append(0x22)
                out.appendBigEndian(UInt64(PropertyListReal.narrowedBits(real.value)), width: 4)
            } else {
                out.append(0x23)
                out.appendBigEndian(real.value.bitPattern, width: 8)
            }
        case .date(let date):
            out.append(0x33)
            out.appendBigEndian(date.timeIntervalSinceReferenceDate.bitPattern, width: 8)
        case .data(let data):
            appendMarker(0x40, count: data.count, to: &out)
            data.withUnsafeBytes { out.append(contentsOf: $0) }
        case .string(let string):
            let ascii = string.storageForWriting == .ascii
            string.withUTF8 { appendString(utf8: $0, ascii: ascii, to: &out) }
        case .uid(let uid):
            appendUID(uid, to: &out)
        case .array, .set, .dictionary:
            break  // containers are Object.container
        }
    }

    /// A UID object: its marker and 1, 2 or 4 bytes. (Inline: the keyed archiver's implicit UID
    /// objects, one per `$objects` entry, went through ``appendScalar(_:to:)``'s value.)
    @inline(__always)
    fileprivate static func appendUID(_ uid: UInt32, to out: inout RawByteWriter) {
        if uid <= 0xFF {
            out.append(0x80)
            out.append(UInt8(truncatingIfNeeded: uid))
        } else if uid <= 0xFFFF {
            out.append(0x81)
            out.appendBigEndian(UInt64(uid), width: 2)
        } else {
            out.append(0x83)
            out.appendBigEndian(UInt64(uid), width: 4)
        }
    }

    /// Writes a string of valid UTF-8 `bytes`: one byte a character when `ascii`, else
    /// big-endian UTF-16.
    fileprivate static func appendString(utf8 bytes: UnsafeBufferPointer<UInt8>, ascii: Bool, to out: inout RawByteWriter) {
        if ascii {
            appendMarker(0x50, count: bytes.count, to: &out)
            out.append(contentsOf: UnsafeRawBufferPointer(bytes))
        } else {
            appendMarker(0x60, count: utf16Count(ofUTF8: bytes), to: &out)
            _ = transcode(bytes.makeIterator(), from: UTF8.self, to: UTF16.self, stoppingOnError: false) { unit in
                out.appendBigEndian(UInt64(unit), width: 2)
            }
        }
    }

    /// Calls `body` with the UTF-8 bytes of `string` (a copy only for a string that is not
    /// contiguous UTF-8, such as a bridged one).
    fileprivate static func withUTF8<Result>(of string: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = string.utf8.withContiguousStorageIfAvailable(body) { return result }
        var native = string
        return native.withUTF8(body)
    }

    /// The UTF-16 code units of valid UTF-8 text: one per byte that starts a scalar, two for
    /// scalars of four bytes (those above U+FFFF, written as surrogate pairs).
    private static func utf16Count(ofUTF8 bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var units = 0
        for byte in bytes where byte & 0xC0 != 0x80 { units &+= byte >= 0xF0 ? 2 : 1 }
        return units
    }

    /// A marker with the count in its low nibble, or 0xF and an integer object for counts >= 15.
    fileprivate static func appendMarker(_ kind: UInt8, count: Int, to out: inout RawByteWriter) {
        if count < 15 {
            out.append(kind | UInt8(count))
        } else {
            out.append(kind | 0x0F)
            let width = byteCount(UInt64(count))
            out.append(0x10 | (width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3))
            out.appendBigEndian(UInt64(count), width: width)
        }
    }
}

/// The objects of a ``BinaryPropertyListObjects`` as ``BinaryPropertyListObjects/serializedData(secondThreadObjectCount:)``
/// writes them: items `0 ..< storedCount` are the stored objects, the rest the implicit UID
/// objects, in file order.
private struct SerializedItems {
    typealias Object = BinaryPropertyListObjects.Object

    let objects: UnsafeBufferPointer<Object>
    /// Whether each object is moved out as it is written (see
    /// ``BinaryPropertyListObjects/takeSerializedData(secondThreadObjectCount:)``), or read.
    let takesObjects: Bool
    let references: UnsafeBufferPointer<Int32>
    let storedCount: Int
    let implicitUIDCount: Int
    let refSize: Int
    /// The stored objects' sizes by block (see ``BinaryPropertyListObjects/sizeBlockLength``).
    let blockSizes: [BinaryPropertyListObjects.BlockSize]
    /// The most bytes the file may take (``BinaryPropertyListObjects/outputBudget``).
    let budget: OutputBudget

    var count: Int { storedCount &+ implicitUIDCount }

    /// The items of run `block` of `blocks` (equal counts, the last ones one larger).
    func items(ofBlock block: Int, of blocks: Int) -> Range<Int> {
        Self.items(ofBlock: block, of: blocks, count: count)
    }

    /// Run `block` of `blocks` over `count` items.
    static func items(ofBlock block: Int, of blocks: Int, count: Int) -> Range<Int> {
        startOfEvenRun(block, of: blocks, count: count)..<startOfEvenRun(block &+ 1, of: blocks, count: count)
    }

    /// The file: the items cut into `blocks` runs (each run's start from the counted sizes),
    /// the runs from the middle (by bytes) on written by a second thread when there are two
    /// runs or more.
    func serialize(blocks: Int) throws -> Data {
        let blocks = Swift.max(1, Swift.min(blocks, count))
        // Where each run starts in the file, and where the offset table does; for one run
        // (every small list) only the latter, without the two arrays (two of a small
        // archive's allocations, several hundred instructions each).
        var runStarts: [Int] = []
        let tableOffset: Int
        if blocks == 1 {
            let (end, overflow) = try offset(ofItem: count).addingReportingOverflow(8)  // "bplist00"
            guard !overflow else { throw PropertyListError(.lengthLimitExceeded, "the binary property list would exceed \(Int.max) bytes") }
            tableOffset = end
        } else {
            // The bytes of each run, from the sizes counted as the objects were stored.
            var runBytes: [Int] = []
            runBytes.reserveCapacity(blocks)
            var runStart = 0
            for block in 0..<blocks {
                let runEnd = try offset(ofItem: items(ofBlock: block, of: blocks).upperBound)
                runBytes.append(runEnd &- runStart)
                runStart = runEnd
            }
            runStarts.reserveCapacity(blocks &+ 1)
            var position = 8  // "bplist00"
            for bytes in runBytes {
                runStarts.append(position)
                let (next, overflow) = position.addingReportingOverflow(bytes)
                guard !overflow else { throw PropertyListError(.lengthLimitExceeded, "the binary property list would exceed \(Int.max) bytes") }
                position = next
            }
            tableOffset = position
            runStarts.append(tableOffset)
        }
        let offsetSize = BinaryPropertyListObjects.byteCount(UInt64(tableOffset))
        let (tableBytes, overflow1) = count.multipliedReportingOverflow(by: offsetSize)
        let (total, overflow2) = tableOffset.addingReportingOverflow(tableBytes &+ 32)
        guard !overflow1, !overflow2, tableBytes <= Int.max - 32 else {
            throw PropertyListError(.lengthLimitExceeded, "the binary property list would exceed \(Int.max) bytes")
        }
        // The exact size, known before anything is allocated or written.
        try budget.check(total)
        guard let base = HugePages.allocate(total) else {
            throw PropertyListError(.lengthLimitExceeded, "cannot allocate \(total) bytes for the binary property list")
        }
        var ownsBuffer = true
        defer { if ownsBuffer { free(base) } }
        var header = RawByteWriter(base: base, capacity: 8)
        header.append(contentsOf: [0x62, 0x70, 0x6C, 0x69, 0x73, 0x74, 0x30, 0x30] as [UInt8])  // bplist00
        // The second thread writes the runs from the one whose start is nearest the
        // middle of the objects' bytes.
        var split = blocks
        if blocks > 1 {
            let middle = 8 &+ (tableOffset &- 8) / 2
            split = (1..<blocks).min { abs(runStarts[$0] &- middle) < abs(runStarts[$1] &- middle) } ?? blocks / 2
        }
        let firstItems = 0..<items(ofBlock: split &- 1, of: blocks).upperBound
        let layout = (tableOffset: tableOffset, offsetSize: offsetSize, total: total)
        if split < blocks {
            let secondItems = firstItems.upperBound..<count
            let secondStart = runStarts[split]
            let second = SecondThread { () -> Result<Void, any Error> in
                Result { try write(secondItems, into: base, from: secondStart, to: tableOffset, layout: layout) }
            }
            // The second thread writes into `base`: joined on every path before it is freed.
            defer { _ = second.join() }
            try write(firstItems, into: base, from: 8, to: secondStart, layout: layout)
            guard let secondResult = second.join() else { throw PropertyListError(.unrepresentableValue, "internal error: write pass lost") }
            try secondResult.get()
        } else {
            try write(firstItems, into: base, from: 8, to: tableOffset, layout: layout)
        }
        var out = RawByteWriter(base: base, capacity: total, count: tableOffset &+ tableBytes)
        out.appendBigEndian(0, width: 6)
        out.append(UInt8(offsetSize))
        out.append(UInt8(refSize))
        out.appendBigEndian(UInt64(count), width: 8)
        out.appendBigEndian(0, width: 8)  // top object
        out.appendBigEndian(UInt64(tableOffset), width: 8)
        guard out.count == total else {
            // The two passes disagree: a bug here, reported rather than trusted.
            throw PropertyListError(.unrepresentableValue, "internal error: wrote \(out.count) of \(total) bytes")
        }
        ownsBuffer = false
        return Data(bytesNoCopy: base, count: total, deallocator: .free)
    }

    /// The bytes the items before `item` take: the counted sizes of whole blocks, and the
    /// sizes of the rest of the stored objects and of the UID objects worked out.
    func offset(ofItem item: Int) throws -> Int {
        func tooLarge() -> PropertyListError {
            PropertyListError(.lengthLimitExceeded, "the binary property list would exceed \(Int.max) bytes")
        }
        let stored = Swift.min(item, storedCount)
        var wholeBlocks = stored / BinaryPropertyListObjects.sizeBlockLength
        guard wholeBlocks <= blockSizes.count else {
            throw PropertyListError(.unrepresentableValue, "internal error: \(stored) objects counted in \(blockSizes.count) blocks")
        }
        // At the end of the stored objects the last block, partly filled, is counted too: its
        // sums are of exactly the objects up to there. (Its objects were measured one by one,
        // 0.8 M instructions of a W5 encode of 1,000 records.)
        if stored == storedCount, wholeBlocks < blockSizes.count { wholeBlocks += 1 }
        var bytes = 0
        for block in 0..<wholeBlocks {
            let (references, overflow1) = blockSizes[block].references.multipliedReportingOverflow(by: refSize)
            let (blockTotal, overflow2) = blockSizes[block].bytes.addingReportingOverflow(references)
            let (sum, overflow3) = bytes.addingReportingOverflow(blockTotal)
            guard !overflow1, !overflow2, !overflow3 else { throw tooLarge() }
            bytes = sum
        }
        let restStart = Swift.min(wholeBlocks &* BinaryPropertyListObjects.sizeBlockLength, stored)
        let (withRest, overflow4) = bytes.addingReportingOverflow(try byteCount(of: restStart..<stored))
        guard !overflow4 else { throw tooLarge() }
        bytes = withRest
        if item > storedCount {
            // UID objects 0 ..< n: 2 bytes up to UID 255, 3 up to 65,535, 5 above (n is at
            // most Int32.max, so no product overflows).
            let n = item &- storedCount
            let uidBytes = 2 &* Swift.min(n, 256) &+ 3 &* Swift.max(0, Swift.min(n, 65_536) &- 256) &+ 5 &* Swift.max(0, n &- 65_536)
            let (sum, overflow5) = bytes.addingReportingOverflow(uidBytes)
            guard !overflow5 else { throw tooLarge() }
            bytes = sum
        }
        return bytes
    }

    /// The bytes `items` take, object by object.
    func byteCount(of items: Range<Int>) throws -> Int {
        var bytes = 0
        for item in items {
            let size = item < storedCount
                ? BinaryPropertyListObjects.size(of: objects[item], refSize: refSize)
                : BinaryPropertyListObjects.uidSize(UInt64(item &- storedCount))
            let (sum, overflow) = bytes.addingReportingOverflow(size)
            guard !overflow else { throw PropertyListError(.lengthLimitExceeded, "the binary property list would exceed \(Int.max) bytes") }
            bytes = sum
        }
        return bytes
    }

    /// Stored object `item`, for writing: moved out when the objects are taken (an empty
    /// container, which holds nothing to release, left in its place), else copied.
    @inline(__always)
    private func object(at item: Int) -> Object {
        guard takesObjects, let base = objects.baseAddress else { return objects[item] }
        // The list's own memory, which the taking write owns (see `takeElements`).
        let slot = UnsafeMutablePointer(mutating: base + item)
        let object = slot.move()
        slot.initialize(to: .container(count: 0, refsStart: 0, kind: 0xA0))
        return object
    }

    /// Writes `items` into `base` from byte `start` (nothing at or past `end`), and each
    /// one's offset into its slot of the offset table.
    func write(_ items: Range<Int>, into base: UnsafeMutableRawPointer, from start: Int, to end: Int, layout: (tableOffset: Int, offsetSize: Int, total: Int)) throws {
        // The offset table's slots of `items`, checked once here and stored unchecked below.
        let (slotsLength, overflow1) = items.count.multipliedReportingOverflow(by: layout.offsetSize)
        let (firstSlot, overflow2) = items.lowerBound.multipliedReportingOverflow(by: layout.offsetSize)
        guard !overflow1, !overflow2, items.lowerBound >= 0, layout.tableOffset >= 0, layout.tableOffset <= layout.total,
              firstSlot <= layout.total &- layout.tableOffset, slotsLength <= layout.total &- layout.tableOffset &- firstSlot
        else {
            throw PropertyListError(.unrepresentableValue, "internal error: the offsets of objects \(items) lie outside the table")
        }
        let table = base + (layout.tableOffset &+ firstSlot)
        // One loop per offset width: a switch on the width for every object's offset was
        // about 10 instructions an object (W5 encode of 1,000 records).
        switch layout.offsetSize {
        case 1: try write(items, into: base, from: start, to: end, tableOffset: layout.tableOffset, table: table, as: UInt8.self)
        case 2: try write(items, into: base, from: start, to: end, tableOffset: layout.tableOffset, table: table, as: UInt16.self)
        case 4: try write(items, into: base, from: start, to: end, tableOffset: layout.tableOffset, table: table, as: UInt32.self)
        case 8: try write(items, into: base, from: start, to: end, tableOffset: layout.tableOffset, table: table, as: UInt64.self)
        default: throw PropertyListError(.unrepresentableValue, "internal error: offsets of \(layout.offsetSize) bytes")
        }
    }

    /// ``write(_:into:from:to:layout:)`` with offsets of `Offset`'s width, the offset of
    /// `items.lowerBound` at `table`.
    @inline(__always)
    private func write<Offset: FixedWidthInteger & UnsignedInteger>(
        _ items: Range<Int>, into base: UnsafeMutableRawPointer, from start: Int, to end: Int, tableOffset: Int,
        table: UnsafeMutableRawPointer, as _: Offset.Type
    ) throws {
        var out = RawByteWriter(base: base, capacity: end, count: start)
        var tableSlot = 0
        // The stored objects, then the implicit UID objects (after all the stored ones).
        for item in items.clamped(to: 0..<storedCount) {
            // Only where the table lies: an object that ran past it shows up below.
            if out.count <= tableOffset {
                table.storeBytes(of: Offset(truncatingIfNeeded: out.count).bigEndian, toByteOffset: tableSlot, as: Offset.self)
            }
            tableSlot &+= MemoryLayout<Offset>.size
            switch object(at: item) {
            case .container(let count, let refsStart, let kind):
                let total = kind == 0xD0 ? 2 * count : count
                // Unchecked reads below: the span was laid out by this list, checked anyway.
                guard refsStart >= 0, total >= 0, refsStart <= references.count &- total else {
                    throw PropertyListError(.unrepresentableValue, "internal error: object \(item) has references outside the list")
                }
                BinaryPropertyListObjects.appendMarker(kind, count: count, to: &out)
                let span = UnsafeBufferPointer(rebasing: references[refsStart..<(refsStart &+ total)])
                if let uid = out.appendReferences(span, width: refSize, implicitBase: storedCount, implicitCount: implicitUIDCount) {
                    throw PropertyListError(.unrepresentableValue, "internal error: object \(item) refers to UID object \(uid) of \(implicitUIDCount)")
                }
            case .scalar(let value):
                BinaryPropertyListObjects.appendScalar(value, to: &out)
            case .string(let string, let ascii):
                string.withUTF8 { BinaryPropertyListObjects.appendString(utf8: $0, ascii: ascii, to: &out) }
            case .swiftString(let string, let ascii):
                BinaryPropertyListObjects.withUTF8(of: string) { BinaryPropertyListObjects.appendString(utf8: $0, ascii: ascii, to: &out) }
            }
        }
        for item in items.clamped(to: storedCount..<Int.max) {
            if out.count <= tableOffset {
                table.storeBytes(of: Offset(truncatingIfNeeded: out.count).bigEndian, toByteOffset: tableSlot, as: Offset.self)
            }
            tableSlot &+= MemoryLayout<Offset>.size
            BinaryPropertyListObjects.appendUID(UInt32(truncatingIfNeeded: item &- storedCount), to: &out)
        }
        guard out.count == end else {
            // The two passes disagree: a bug here, reported rather than trusted.
            throw PropertyListError(.unrepresentableValue, "internal error: wrote objects up to byte \(out.count), sized to \(end)")
        }
    }
}

/// Writes bytes into a buffer of a size computed in advance. Every write is bounds-checked: a
/// write that would not fit is dropped and counted, so a size computation that disagreed with
/// the writing shows up as `count != capacity` instead of as memory corruption.
private struct RawByteWriter {
    private let base: UnsafeMutableRawPointer
    private let capacity: Int
    /// Bytes written, plus bytes dropped for not fitting.
    private(set) var count = 0

    /// A writer of bytes `count ..< capacity` of `base` (what would go past `capacity` is dropped).
    init(base: UnsafeMutableRawPointer, capacity: Int, count: Int = 0) {
        self.base = base
        self.capacity = capacity
        self.count = count
    }

    @inline(__always)
    mutating func append(_ byte: UInt8) {
        if count < capacity { base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self) }
        count += 1
    }

    /// The low `width` bytes of `value`, most significant first.
    @inline(__always)
    mutating func appendBigEndian(_ value: UInt64, width: Int) {
        if width <= capacity - count {
            switch width {
            case 1: base.storeBytes(of: UInt8(truncatingIfNeeded: value), toByteOffset: count, as: UInt8.self)
            case 2: base.storeBytes(of: UInt16(truncatingIfNeeded: value).bigEndian, toByteOffset: count, as: UInt16.self)
            case 4: base.storeBytes(of: UInt32(truncatingIfNeeded: value).bigEndian, toByteOffset: count, as: UInt32.self)
            case 8: base.storeBytes(of: value.bigEndian, toByteOffset: count, as: UInt64.self)
            default:
                var shift = (width - 1) * 8
                var offset = count
                while shift >= 0 {
                    base.storeBytes(of: UInt8(truncatingIfNeeded: value >> UInt64(shift)), toByteOffset: offset, as: UInt8.self)
                    shift -= 8
                    offset += 1
                }
            }
        }
        count += width
    }

    /// Object references as `width`-byte big-endian object numbers: a non-negative reference
    /// is the object's number, a negative one (`~uid`) implicit UID object `uid`, numbered
    /// `implicitBase + uid`. Returns the first such `uid` at or past `implicitCount` (nothing
    /// is written for it or after it), else nil.
    ///
    /// One bounds check and one switch on the width for the whole span: a container's
    /// references were a switch and a check each through ``appendBigEndian(_:width:)``, about
    /// a sixth of the writer's instructions (callgrind, W5 encode).
    @inline(__always)
    mutating func appendReferences(_ span: UnsafeBufferPointer<Int32>, width: Int, implicitBase: Int, implicitCount: Int) -> Int? {
        guard span.count <= (capacity &- count) / Swift.max(width, 1) else {
            // Does not fit: counted, not written (the caller's size check reports it), after
            // the same check of the implicit references.
            for reference in span where Self.objectNumber(reference, implicitBase: implicitBase, implicitCount: implicitCount) == nil {
                return Int(~reference)
            }
            count += span.count &* width
            return nil
        }
        let start = base + count
        let failed: Int?
        switch width {
        case 1: failed = Self.store(span, as: UInt8.self, at: start, implicitBase: implicitBase, implicitCount: implicitCount)
        case 2: failed = Self.store(span, as: UInt16.self, at: start, implicitBase: implicitBase, implicitCount: implicitCount)
        case 4: failed = Self.store(span, as: UInt32.self, at: start, implicitBase: implicitBase, implicitCount: implicitCount)
        default:
            for reference in span {
                guard let number = Self.objectNumber(reference, implicitBase: implicitBase, implicitCount: implicitCount) else {
                    return Int(~reference)
                }
                appendBigEndian(UInt64(number), width: width)
            }
            return nil
        }
        if failed == nil { count += span.count &* width }
        return failed
    }

    /// Stores the object numbers of `span` as big-endian `Word`s from `start`; returns the
    /// first implicit UID at or past `implicitCount` (stopping there), else nil.
    @inline(__always)
    private static func store<Word: FixedWidthInteger & UnsignedInteger>(
        _ span: UnsafeBufferPointer<Int32>, as _: Word.Type, at start: UnsafeMutableRawPointer, implicitBase: Int, implicitCount: Int
    ) -> Int? {
        var offset = 0
        for reference in span {
            guard let number = objectNumber(reference, implicitBase: implicitBase, implicitCount: implicitCount) else {
                return Int(~reference)
            }
            start.storeBytes(of: Word(truncatingIfNeeded: number).bigEndian, toByteOffset: offset, as: Word.self)
            offset &+= MemoryLayout<Word>.size
        }
        return nil
    }

    /// The object number `reference` stands for (see ``appendReferences(_:width:implicitBase:implicitCount:)``),
    /// or nil for an implicit UID object at or past `implicitCount`.
    @inline(__always)
    private static func objectNumber(_ reference: Int32, implicitBase: Int, implicitCount: Int) -> Int? {
        if reference >= 0 { return Int(reference) }
        let uid = Int(~reference)
        return uid < implicitCount ? implicitBase &+ uid : nil
    }

    mutating func append(contentsOf bytes: UnsafeRawBufferPointer) {
        if let source = bytes.baseAddress, bytes.count <= capacity - count {
            (base + count).copyMemory(from: source, byteCount: bytes.count)
        }
        count += bytes.count
    }

    mutating func append(contentsOf bytes: [UInt8]) {
        bytes.withUnsafeBytes { append(contentsOf: $0) }
    }
}

/// A uniqued number or date: its bit pattern and a tag for its kind and stored width, so that
/// the same value stored differently stays a different object.
private struct NumberKey: Hashable {
    var bits: UInt64
    var tag: UInt8
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

/// ``BinaryPropertyListObjects/implicitUIDReference(_:)``, public to the package's own modules
/// only and inlinable, for the keyed archive's layout, which makes one for most fields: a
/// `package` function is called across modules, not inlined (a call for a bitwise not, and the
/// layout's loop reloading its state around it).
@_spi(KeyedArchiveInternals) @inlinable @inline(__always)
public func binaryListImplicitUIDReference(_ uid: Int) -> Int { ~uid }
