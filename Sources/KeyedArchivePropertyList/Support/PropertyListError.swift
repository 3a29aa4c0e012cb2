/// An error reading or writing a property list, with where it happened.
///
/// Every reader in this module throws only this type, never traps on bad input, and fills in
/// as much context as it has: the byte offset in the input, the binary object index, the XML or
/// OpenStep line, and the key path from the root.
public struct PropertyListError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, coarsely, for programs that branch on it.
    public enum Code: String, Sendable, Hashable {
        /// The bytes are not any property-list format this library reads.
        case unrecognizedFormat
        /// The input ends before a structure it announces.
        case truncated
        /// The binary header or trailer is malformed or its sizes do not add up.
        case invalidTrailer
        /// An offset-table entry points outside the object area.
        case invalidOffset
        /// An object reference names an object that does not exist.
        case invalidReference
        /// An object is malformed (bad marker, length, count or content).
        case invalidObject
        /// A valid marker this library does not read (e.g. the `bplist1x` UTF-8 or URL objects).
        case unsupportedObject
        /// A string's bytes are not valid in its encoding.
        case invalidString
        /// A container contains itself, directly or through others.
        case referenceCycle
        /// Nesting is deeper than ``DecodingLimits/maximumDepth``.
        case depthLimitExceeded
        /// More objects than ``DecodingLimits/maximumObjectCount``, or shared references that
        /// would expand past ``DecodingLimits/maximumExpandedNodeCount`` values or
        /// ``DecodingLimits/maximumExpandedByteCount`` bytes.
        case objectLimitExceeded
        /// A string or data value longer than the limits allow.
        case lengthLimitExceeded
        /// XML or OpenStep text that does not parse.
        case syntax
        /// XML that is well formed but is not a property list (unknown element, bad value).
        case invalidValue
        /// An XML document type declaration with an internal subset or entity declarations,
        /// refused to rule out entity-expansion and external-entity attacks.
        case forbiddenDeclaration
        /// A value the chosen output format cannot represent (e.g. `null` in XML).
        case unrepresentableValue
    }

    /// What went wrong.
    public var code: Code
    /// A human-readable description of the problem, without the location.
    public var message: String
    /// The byte offset in the input where the problem was found.
    public var byteOffset: Int?
    /// The binary object index involved.
    public var objectIndex: Int?
    /// The 1-based line in a text format.
    public var line: Int?
    /// The key path from the root to the value involved (e.g. `root.items[3].name`).
    public var keyPath: String?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, byteOffset: Int? = nil, objectIndex: Int? = nil,
        line: Int? = nil, keyPath: String? = nil
    ) {
        self.code = code
        self.message = message
        self.byteOffset = byteOffset
        self.objectIndex = objectIndex
        self.line = line
        self.keyPath = keyPath
    }

    /// The message with its location, e.g. `object 12 at byte 345: array count runs past the end`.
    public var description: String {
        var location: [String] = []
        if let objectIndex { location.append("object \(objectIndex)") }
        if let byteOffset { location.append("at byte \(byteOffset)") }
        if let line { location.append("line \(line)") }
        if let keyPath, !keyPath.isEmpty { location.append("at \(abbreviatedPath(keyPath))") }
        return location.isEmpty ? message : location.joined(separator: " ") + ": " + message
    }
}

/// `path` for a one-line description: whole up to 160 characters, else its first and last 60
/// with the count of those left out between them. A path 512 levels deep (`[0][0]...`, the
/// depth limit) is 1,536 characters, which buried the message after it; the error's own
/// `keyPath` / `path` keeps the whole path.
package func abbreviatedPath(_ path: String) -> String {
    guard path.utf8.count > 160 else { return path }
    let count = path.count
    guard count > 160 else { return path }
    return "\(path.prefix(60))…(\(count - 120) characters)…\(path.suffix(60))"
}
