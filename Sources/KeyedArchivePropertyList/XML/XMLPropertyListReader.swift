/// Reads Apple's XML property-list format (`<!DOCTYPE plist ...>`, `<plist version="1.0">`).
///
/// A hand-written scanner over the raw bytes: no XML library, no entity expansion, no recursion
/// (containers are tracked on an explicit stack, so nesting depth costs heap, never stack).
/// It accepts what CoreFoundation's XML parser accepts for well-formed documents, and refuses:
///
/// - a document type declaration with an internal subset (`[...]`) or any `<!ENTITY`,
///   with ``PropertyListError/Code/forbiddenDeclaration`` (no entity-expansion or external-entity
///   attacks);
/// - unknown elements, a key without a value, a value without a key, mismatched tags, text
///   outside elements and content after the root element, with `.syntax` or `.invalidValue`;
/// - nesting deeper than ``DecodingLimits/maximumDepth`` and more values than
///   ``DecodingLimits/maximumObjectCount``.
///
/// Errors carry the byte offset (into the UTF-8 form of the document when it was UTF-16, UTF-32
/// or ISO-8859-1), the 1-based line and the key path of the value being read.
/// See `Docs/PropertyListFormat.md` ("XML") for the accepted forms in detail.
public enum XMLPropertyListReader {
    /// Reads a property list from the bytes of an XML document.
    public static func read(_ bytes: UnsafeRawBufferPointer, limits: DecodingLimits = .default) throws -> PropertyListValue {
        switch try XMLTextEncoding.utf8Source(bytes) {
        case .original(let start):
            var parser = XMLPropertyListParser(bytes: UnsafeRawBufferPointer(rebasing: bytes[start...]), offsetBase: start, limits: limits)
            return try parser.parseDocument()
        case .transcoded(let utf8):
            return try utf8.withUnsafeBytes { buffer in
                var parser = XMLPropertyListParser(bytes: buffer, offsetBase: 0, limits: limits)
                return try parser.parseDocument()
            }
        }
    }

    /// Reads a property list from XML data.
    public static func read(_ data: Data, limits: DecodingLimits = .default) throws -> PropertyListValue {
        try data.withUnsafeBytes { try read($0, limits: limits) }
    }
}
