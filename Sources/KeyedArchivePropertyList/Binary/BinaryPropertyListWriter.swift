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
///
/// The writer is two parts: this flattening front end (``BinaryPropertyListObjects/add(_:)``:
/// value tree to flat object list, with CoreFoundation's uniquing and order) and the one
/// `bplist00` serializer of a flat object list (``BinaryPropertyListObjects/serializedData(secondThreadObjectCount:)``).
/// Layers that already hold a flat, uniqued object table (the keyed archiver) fill the list
/// directly and share the serializer.
public enum BinaryPropertyListWriter {
    /// Writes a property list to bytes.
    ///
    /// Containers are written again at every use, so a value whose containers are shared by
    /// reference (one read from a small binary file) can be far larger written than in memory:
    /// the writer throws `.lengthLimitExceeded` rather than produce more than
    /// `maximumOutputLength` bytes, as the text writers do, and stops flattening the value as
    /// soon as the list it builds could no longer be written within that.
    public static func write(_ value: PropertyListValue, maximumOutputLength: Int = .max) throws -> [UInt8] {
        [UInt8](try writeData(value, maximumOutputLength: maximumOutputLength))
    }

    /// ``write(_:maximumOutputLength:)`` as `Data` (no intermediate copy).
    public static func writeData(_ value: PropertyListValue, maximumOutputLength: Int = .max) throws -> Data {
        var objects = BinaryPropertyListObjects()
        objects.outputBudget = OutputBudget(maximumOutputLength)
        _ = try objects.add(value)
        return try objects.takeSerializedData()
    }
}

