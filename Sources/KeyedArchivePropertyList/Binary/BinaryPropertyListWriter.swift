/// Placeholder: replaced by the real writer.
public enum BinaryPropertyListWriter {
    /// Writes a property list to bytes.
    public static func write(_ value: PropertyListValue) throws -> [UInt8] {
        throw PropertyListError(.unrepresentableValue, "BinaryPropertyListWriter is not implemented yet")
    }
}
