/// Whether the standard library's `KeyedEncodingContainer` and `KeyedDecodingContainer` are laid
/// out as the encoder and decoder keep them for reuse: one strong reference to a class instance
/// (the box that holds our container), as they have been since Swift 4.
///
/// Making a keyed container for a coding-key type the run-time knows only as a generic
/// parameter looks up three generic metadata records (the box, our container type, its
/// conformance) at every keyed value; the encoder and decoder keep each container they make and
/// hand it out again while no copy of it is left, which they can tell only from that one
/// reference's uniqueness. The layout is the standard library's own, so it is checked once per
/// process, by reflection, on the first container of each kind: where it differs, containers are
/// made anew every time (the same archives, only slower).
package enum KeptContainers {
    /// The most containers an encode or a decode keeps (coding-key types times nesting levels
    /// in use at once); past it, containers are made anew.
    static let limit = 32

    /// The answers, 1 or 0 once known: read at every encode and decode, without a lock (the
    /// check gives the same answer on any thread, so two threads that both make it agree).
    private static let encodingLayout = AtomicOptionalInt()
    private static let decodingLayout = AtomicOptionalInt()

    /// Whether `container` (and so every `KeyedEncodingContainer`) is one reference to its box.
    @inline(__always)
    package static func canKeep<Key>(_ container: KeyedEncodingContainer<Key>) -> Bool {
        if let known = encodingLayout.value { return known == 1 }
        return check(container, rememberedIn: encodingLayout)
    }

    /// Whether `container` (and so every `KeyedDecodingContainer`) is one reference to its box.
    @inline(__always)
    package static func canKeep<Key>(_ container: KeyedDecodingContainer<Key>) -> Bool {
        if let known = decodingLayout.value { return known == 1 }
        return check(container, rememberedIn: decodingLayout)
    }

    /// ``isOneReference(_:)`` for the first value asked about, the answer kept in `known`.
    @inline(never)
    private static func check<Value>(_ value: Value, rememberedIn known: AtomicOptionalInt) -> Bool {
        let checked = isOneReference(value)
        known.value = checked ? 1 : 0
        return checked
    }

    /// `value`'s only stored property is a class instance and its bits are that reference:
    /// reflection is asked first, so the bits are read as a reference only when they are one.
    private static func isOneReference<Value>(_ value: Value) -> Bool {
        guard MemoryLayout<Value>.size == MemoryLayout<AnyObject>.size else { return false }
        let children = Mirror(reflecting: value).children
        guard children.count == 1, let child = children.first, type(of: child.value) is AnyClass else { return false }
        return (child.value as AnyObject) === unsafeBitCast(value, to: AnyObject.self)
    }
}
