/// An error reading or writing a keyed archive, with the path to the problem.
///
/// Every reader and writer of the object-graph layer throws only this type; property-list
/// errors from the codec underneath are wrapped (code ``Code/propertyList``, original in
/// ``underlying``). The ``path`` names the object and key, e.g.
/// `$objects[12] (NSDictionary) NS.keys[3]`.
public struct KeyedArchiveError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, coarsely, for programs that branch on it.
    public enum Code: String, Sendable, Hashable {
        /// The bytes are not a readable property list (see ``KeyedArchiveError/underlying``).
        case propertyList
        /// The top-level envelope is wrong: `$archiver`, `$version`, `$top` or `$objects`
        /// missing or of the wrong type, or an archiver name that is not a keyed archiver.
        case invalidEnvelope
        /// `$version` is not 100000.
        case unsupportedVersion
        /// The requested `$top` key (usually `root`) is absent.
        case missingTopLevelKey
        /// A value that must be a `CF$UID` is not one, or a UID is out of range.
        case invalidReference
        /// An entry in `$objects` has the wrong shape for its class (e.g. `NS.keys` not an array).
        case invalidObject
        /// `$class` missing, not pointing at a class description, or the description malformed.
        case invalidClass
        /// Secure decoding: the object's class is not among the classes the caller allowed.
        case classNotAllowed
        /// A key holds a value of another type than the one asked for.
        case typeMismatch
        /// An integer does not fit the type asked for.
        case valueOutOfRange
        /// A cycle that cannot be built: through value types (arrays, dictionaries), or back
        /// into an object whose initializer is still running.
        case unsupportedCycle
        /// Nesting deeper than ``DecodingLimits/maximumDepth``.
        case depthLimitExceeded
        /// More objects than ``DecodingLimits/maximumObjectCount``, or an expansion past
        /// ``DecodingLimits/maximumExpandedNodeCount`` or ``DecodingLimits/maximumExpandedByteCount``.
        case objectLimitExceeded
        /// Encoding: a value of a type this archiver cannot represent.
        case unsupportedValue
    }

    /// What went wrong.
    public var code: Code
    /// A human-readable description, without the location.
    public var message: String
    /// Where: `$objects[12] (NSDictionary) NS.keys[3]`, `$top.root`, or empty.
    public var path: String
    /// The property-list error underneath, for ``Code/propertyList``.
    public var underlying: PropertyListError?

    /// Creates an error.
    public init(_ code: Code, _ message: String, path: String = "", underlying: PropertyListError? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.underlying = underlying
    }

    /// `path: message` (a path past 160 characters shortened in the middle, see
    /// `abbreviatedPath(_:)`), or the message alone when there is no path.
    public var description: String {
        path.isEmpty ? message : abbreviatedPath(path) + ": " + message
    }
}
