/// Placeholder: replaced by the real writer.
public enum OpenStepPropertyListWriter {
    /// Writes a property list to bytes.
    public static func write(_ value: PropertyListValue) throws -> [UInt8] {
        throw PropertyListError(.unrepresentableValue, "OpenStepPropertyListWriter is not implemented yet")
    }
}
