/// Placeholder: replaced by the real reader.
public enum OpenStepPropertyListReader {
    /// Reads a property list from bytes.
    public static func read(_ bytes: UnsafeRawBufferPointer, limits: DecodingLimits = .default) throws -> PropertyListValue {
        throw PropertyListError(.unsupportedObject, "OpenStepPropertyListReader is not implemented yet")
    }
}
