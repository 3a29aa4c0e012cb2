/// Placeholder: replaced by the real writer.
public enum XMLPropertyListWriter {
    /// Writes a property list to bytes.
    public static func write(_ value: PropertyListValue) throws -> [UInt8] {
        throw PropertyListError(.unrepresentableValue, "XMLPropertyListWriter is not implemented yet")
    }
}
