/// Placeholder: replaced by the real reader.
public enum XMLPropertyListReader {
    /// Reads a property list from bytes.
    public static func read(_ bytes: UnsafeRawBufferPointer, limits: DecodingLimits = .default) throws -> PropertyListValue {
        throw PropertyListError(.unsupportedObject, "XMLPropertyListReader is not implemented yet")
    }
}
