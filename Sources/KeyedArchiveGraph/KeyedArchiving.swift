/// A class whose instances can be stored in a keyed archive: the role of `NSCoding`.
///
/// Encoding writes the instance's fields with a ``KeyedArchiver``; decoding runs in two phases
/// so that object graphs with cycles come back with their identity and topology intact:
///
/// 1. ``init(coder:)`` creates the instance. Decode primitives and the objects the instance
///    cannot exist without. Objects decoded here have finished their own `init(coder:)`; a
///    reference that leads back to an object whose `init(coder:)` is still running (a cycle
///    through initialisers) is an error (``KeyedArchiveError/Code/unsupportedCycle``), never a
///    half-built object.
/// 2. ``decodeReferences(with:)`` runs after the instance is registered, so references decoded
///    here may point back at it or at any other object in a cycle (parents, siblings, the
///    object itself). Objects returned here have finished `init(coder:)`; their own
///    `decodeReferences(with:)` may still be pending. Every pending call runs before the
///    top-level `decode...` call returns.
///
/// ```swift
/// final class Node: KeyedArchiving {
///     var name: String
///     var next: Node?                      // may form a cycle: decoded in phase 2
///     func encode(with coder: KeyedArchiver) throws {
///         try coder.encode(name, forKey: "name")
///         try coder.encode(next, forKey: "next")
///     }
///     init(coder: KeyedUnarchiver) throws {
///         name = try coder.decodeObject(of: String.self, forKey: "name") ?? ""
///     }
///     func decodeReferences(with coder: KeyedUnarchiver) throws {
///         next = try coder.decodeObject(of: Node.self, forKey: "next")
///     }
/// }
/// ```
///
/// Decoding phase 2 iteratively also means long chains (a linked list of 100,000 nodes) decode
/// without deep recursion when the chain's links are decoded in ``decodeReferences(with:)``.
public protocol KeyedArchiving: AnyObject {
    /// The `$classname` written for this class unless a mapping set with
    /// ``KeyedArchiver/setClassName(_:for:)`` says otherwise. Default: the module-qualified
    /// Swift name (`MyApp.Person`), as swift-corelibs-foundation writes.
    static var archivedClassName: String { get }
    /// Names written after ``archivedClassName`` in `$classes` (superclasses, most derived
    /// first), before `NSObject`. Readers that do not know the class fall back along them.
    /// Default: none.
    static var archivedClassFallbacks: [String] { get }
    /// Writes the instance's fields.
    func encode(with coder: KeyedArchiver) throws
    /// Phase 1 of decoding: creates the instance from its fields.
    init(coder: KeyedUnarchiver) throws
    /// Phase 2 of decoding: decodes references that may form cycles. Default: nothing.
    func decodeReferences(with coder: KeyedUnarchiver) throws
}

extension KeyedArchiving {
    /// The module-qualified Swift type name (``stableTypeName(_:)``).
    public static var archivedClassName: String { stableTypeName(self) }
    /// No fallbacks.
    public static var archivedClassFallbacks: [String] { [] }
    /// Nothing to do.
    public func decodeReferences(with coder: KeyedUnarchiver) throws {}
}

/// `String(reflecting: type)` without the `(unknown context at $…).` segments Swift prints for
/// private, fileprivate and function-local types: `MyApp.Node`, not
/// `MyApp.(unknown context at $55bb98cdb868).Node`.
///
/// The address in such a segment moves from run to run (address-space randomization), so an
/// archive named with it would not match the same type in the next process. Two such types
/// of one name in one module get the same name, as two Objective-C classes of one name would.
package func stableTypeName(_ type: Any.Type) -> String {
    let full = String(reflecting: type)
    let marker = "(unknown context at ".utf8
    let utf8 = Array(full.utf8)
    guard let first = marker.first, utf8.contains(first) else { return full }
    var kept: [UInt8] = []
    kept.reserveCapacity(utf8.count)
    var index = 0
    while index < utf8.count {
        if utf8[index] == first, utf8[index...].starts(with: marker),
           let close = utf8[index...].firstIndex(of: UInt8(ascii: ")")) {
            index = close + 1
            if index < utf8.count, utf8[index] == UInt8(ascii: ".") { index += 1 }
        } else {
            kept.append(utf8[index])
            index += 1
        }
    }
    return String(decoding: kept, as: UTF8.self)
}
