@_spi(KeyedArchiveInternals) import KeyedArchiveGraph

/// What the bridge does with a Swift type, decided once per type and run (see
/// ``TypeKindCache``) instead of by a chain of type comparisons and conformance casts per value.
///
/// The answer depends only on the static type, which is what the per-value checks looked at
/// too (`T.self == String.self`, `T.self is AnyObject.Type`, a conditional conformance of
/// `Array`, `Dictionary` or `Set`), so caching it changes no result.
enum CodableTypeKind {
    case string, int, double, bool, float, int64, int32, int16, int8, uint, uint64, uint32, uint16, uint8
    case data, date, url, uuid
    /// `Decimal`: NSDecimalNumber's fields (``DecimalNumberFields``), not its own coding.
    case decimal
    /// `Dictionary` (encoded as NSDictionary by the bridge itself).
    case dictionary
    /// `Set` (encoded as NSSet by the bridge itself).
    case set
    /// `Array` when decoding: its elements are decoded by the bridge directly, as `Array`'s own
    /// `init(from:)` would through an unkeyed container, without the generic standard-library
    /// path (an existential container and unspecialized appends per element).
    case decodableArray(any ArchiveArrayDecodable.Type)
    /// `Array` when encoding (as `Array.encode(to:)` would through an unkeyed container).
    case encodableArray(any ArchiveArrayEncodable.Type)
    /// `Optional`: the encoder's dictionary and set checks are casts of the value, which look
    /// through a non-nil optional, so they stay per value for it.
    case optional
    /// A class: instances have identity (one UID per instance).
    case object
    /// Any other type: coded by its own `init(from:)` / `encode(to:)`.
    case plain

    /// Primitives and the Foundation value types the bridge stores itself.
    var isLeaf: Bool {
        switch self {
        case .string, .int, .double, .bool, .float, .int64, .int32, .int16, .int8, .uint, .uint64, .uint32, .uint16, .uint8,
            .data, .date, .url, .uuid:
            return true
        case .dictionary, .set, .decodableArray, .encodableArray, .optional, .object, .plain, .decimal:
            return false
        }
    }

    /// Values the encoder stores in Foundation form without their own `encode(to:)`
    /// (dictionaries, sets; optionals are checked per value, see ``optional``).
    var isSpecial: Bool {
        switch self {
        case .dictionary, .set, .optional, .decimal: return true
        default: return false
        }
    }

    /// The kind of a primitive or Foundation value type (comparisons of the type only; for
    /// any other type, ``structuralKind(of:decoding:)``).
    static func leafKind(of type: Any.Type) -> CodableTypeKind? {
        if type == String.self { return .string }
        if type == Int.self { return .int }
        if type == Double.self { return .double }
        if type == Bool.self { return .bool }
        if type == Float.self { return .float }
        if type == Int64.self { return .int64 }
        if type == Int32.self { return .int32 }
        if type == Int16.self { return .int16 }
        if type == Int8.self { return .int8 }
        if type == UInt.self { return .uint }
        if type == UInt64.self { return .uint64 }
        if type == UInt32.self { return .uint32 }
        if type == UInt16.self { return .uint16 }
        if type == UInt8.self { return .uint8 }
        if type == Data.self { return .data }
        if type == Date.self { return .date }
        if type == URL.self { return .url }
        if type == UUID.self { return .uuid }
        if type == Decimal.self { return .decimal }
        return nil
    }

    /// The kind of any other type for a decoder (`decoding`) or an encoder (conformance
    /// lookups).
    static func structuralKind(of type: Any.Type, decoding: Bool) -> CodableTypeKind {
        if type is any OptionalMarker.Type { return .optional }
        if type is any ArchiveDictionaryEncodable.Type { return .dictionary }
        if type is any ArchiveSetEncodable.Type { return .set }
        if decoding, let array = type as? any ArchiveArrayDecodable.Type { return .decodableArray(array) }
        if !decoding, let array = type as? any ArchiveArrayEncodable.Type { return .encodableArray(array) }
        if type is AnyObject.Type { return .object }
        return .plain
    }
}

/// Marks `Optional` for ``CodableTypeKind/structuralKind(of:decoding:)``.
protocol OptionalMarker {}
extension Optional: OptionalMarker {}

/// Kinds by type for one coding run: a short list scanned linearly (a run meets few types),
/// then a dictionary, so a run over many types stays linear. Behind both, the kinds already
/// classified in this process: a type's kind never changes, and classifying one (conformance
/// lookups) cost a small archive such as W1's about 2,000 instructions a type at every run.
struct TypeKindCache {
    /// Whether the kinds are for a decoder (else an encoder).
    let decoding: Bool
    private var known: [(id: ObjectIdentifier, kind: CodableTypeKind)] = []
    private var overflow: [ObjectIdentifier: CodableTypeKind] = [:]
    private static let linearLimit = 16
    /// Every kind classified in this process, for encoders and for decoders (they differ for
    /// arrays). The metatypes in them are immutable, so sharing them across threads is safe.
    private static let classified = (
        encoding: Protected<[ObjectIdentifier: CodableTypeKind]>([:]),
        decoding: Protected<[ObjectIdentifier: CodableTypeKind]>([:]))

    init(decoding: Bool) { self.decoding = decoding }

    /// The kind of `type`, classified on first use.
    @inline(__always)
    mutating func kind(of type: Any.Type) -> CodableTypeKind {
        let id = ObjectIdentifier(type)
        for entry in known where entry.id == id { return entry.kind }
        return slowKind(of: type, id: id)
    }

    private mutating func slowKind(of type: Any.Type, id: ObjectIdentifier) -> CodableTypeKind {
        if let known = overflow[id] { return known }
        let kind: CodableTypeKind
        if let leaf = CodableTypeKind.leafKind(of: type) {
            kind = leaf
        } else {
            let classified = decoding ? Self.classified.decoding : Self.classified.encoding
            if let shared = classified.withLock({ $0[id] }) {
                kind = shared
            } else {
                kind = CodableTypeKind.structuralKind(of: type, decoding: decoding)
                classified.withLock { $0[id] = kind }
            }
        }
        if known.count < Self.linearLimit {
            // Room for a few types at once: grown from one, two allocations in a small run.
            if known.capacity == 0 { known.reserveCapacity(8) }
            known.append((id, kind))
        } else {
            overflow[id] = kind
        }
        return kind
    }
}

/// `Array`, decoded element by element by the bridge (the same containers, keys and checks as
/// `Array.init(from:)` going through ``ArchiveDecodingState``).
protocol ArchiveArrayDecodable {
    /// Decodes the array a stored value refers to: what `Array.init(from:)` does with an unkeyed
    /// container of ``ArchiveDecodingState``.
    static func decodeArchiveArray(from value: PropertyListValue, state: ArchiveDecodingState) throws -> Self
}

/// `Array`, encoded element by element by the bridge (as `Array.encode(to:)` does through an
/// unkeyed container of ``ArchiveEncodingState``).
protocol ArchiveArrayEncodable {
    /// Encodes `value`, whose type `V` is this array type, as an NSArray entry of its own and
    /// returns its UID. The caller checks that `V` is this type (see
    /// ``ArchiveEncodingState``'s `box`): it holds this metatype, so comparing there is free,
    /// while naming `[Element].self` in here made the runtime look up `Array<Element>`'s
    /// metadata at every array (330 instructions, at each W5 record's tags and each W2 person's
    /// friends).
    static func encodeArchiveArray<V>(_ value: V, state: ArchiveEncodingState) throws -> UInt32
}

extension Array: ArchiveArrayDecodable where Element: Decodable {
    static func decodeArchiveArray(from value: PropertyListValue, state: ArchiveDecodingState) throws -> [Element] {
        // Arrays of the common leaves are decoded straight into an array of the concrete type:
        // a leaf needs none of decodeValue's depth, cycle or coding-path work (it returns at
        // its first test for one), and an `[Element]` built in this unspecialized code looks up
        // its generic metadata at every array. The element's index is passed with each decode,
        // so an error's coding path ends with it as on the general path. (W5's tags took 19%
        // of a decode on the general path.)
        // The quick reads first, as the keyed container's are: the index becomes a key (an
        // existential made and destroyed per element) only on the full path.
        if Element.self == String.self {
            return try leaves(value, state) { try state.quickString($0) ?? state.decodeString($0, key: IndexKey($1)) }
        }
        if Element.self == Int.self {
            return try leaves(value, state) { try state.quickInteger(Int.self, $0) ?? state.decodeInteger(Int.self, $0, key: IndexKey($1)) }
        }
        if Element.self == Double.self {
            return try leaves(value, state) { try state.quickDouble($0) ?? state.decodeDouble($0, key: IndexKey($1)) }
        }
        if Element.self == Bool.self {
            return try leaves(value, state) { try state.quickBool($0) ?? state.decodeBool($0, key: IndexKey($1)) }
        }
        let elements = try state.unkeyedElements(for: value)
        state.prefetchInstances(of: elements, as: Element.self)
        var result: [Element] = []
        result.reserveCapacity(elements.count)
        for index in elements.indices {
            state.keys.append(IndexKey(index))
            defer { state.keys.removeLast() }
            result.append(try state.decodeValue(Element.self, from: elements[index], checkCycle: true))
        }
        return result
    }

    /// The elements of the array at `value` decoded by `decode` (given each element and its
    /// index) as an array of `Leaf`, which is `Element` (the caller checked): read in place
    /// when the archive is read by index, from the list of elements otherwise.
    @inline(__always)
    private static func leaves<Leaf>(
        _ value: PropertyListValue, _ state: ArchiveDecodingState, _ decode: (PropertyListValue, Int) throws -> Leaf
    ) throws -> [Element] {
        if let result = try state.leavesInPlace(of: value, decode) { return unsafeBitCast(result, to: [Element].self) }
        let elements = try state.unkeyedElements(for: value)
        var result: [Leaf] = []
        result.reserveCapacity(elements.count)
        for index in elements.indices { result.append(try decode(elements[index], index)) }
        return unsafeBitCast(result, to: [Element].self)
    }
}

extension Array: ArchiveArrayEncodable where Element: Encodable {
    /// Arrays of this many elements or more make room for their elements after the first
    /// ``sampledElements`` (see ``encodeArchiveArray(_:state:)``).
    private static var longArrayCount: Int { 256 }
    /// The elements whose growth is taken as each later element's.
    private static var sampledElements: Int { 16 }

    static func encodeArchiveArray<V>(_ value: V, state: ArchiveEncodingState) throws -> UInt32 {
        // `V` is `[Element]` (the caller compared the metatypes): the reinterpretation is safe
        // and skips a dynamic cast per array.
        let array = unsafeBitCast(value, to: [Element].self)
        let builder = state.arrayBuilder()
        builder.elements.reserveCapacity(array.count)
        if Element.self == String.self {
            // What the unkeyed container's encode(String) stores, with no box or coding-path
            // push per element (a string cannot fail to encode, nor nest).
            for string in unsafeBitCast(array, to: [String].self) {
                builder.elements.append(.uid(state.table.leafUID(string: string)))
            }
            return state.finishArray(builder)
        }
        // Elements that are one class reference each: their bits are the instance's address.
        let isObjectArray = MemoryLayout<Element>.size == MemoryLayout<UInt>.size && state.isObjectKind(Element.self)
        // A long array of class instances: their identities are about to fill the table, so
        // it grows once, not through every doubling (W2's root array: 13 of them).
        if isObjectArray && array.count >= 64 { state.table.reserveIdentities(array.count) }
        // A long array's first elements tell how much the archive grows per element: room
        // for the rest is made once they are encoded (see `reserveForRepeats`).
        let sampled = array.count >= Self.longArrayCount ? Self.sampledElements : -1
        let start = sampled > 0 ? state.table.growthMark : nil
        // Each element passed where it is stored. In this unspecialized code `for element in
        // array`, a subscript and even a pointer's `pointee` copy the element out first (a
        // struct's copy retains each of its references, and its destruction releases them);
        // an inout access does not. The element is never written.
        try array.withUnsafeBufferPointer { elements in
            guard let first = elements.baseAddress else { return }
            let stored = UnsafeMutablePointer(mutating: first)
            for index in elements.indices {
                if isObjectArray { state.table.prefetchIdentity(ofElement: index, in: UnsafeRawPointer(first), count: elements.count) }
                if index == sampled, let start {
                    state.table.reserveForRepeats(since: start, times: (elements.count &- index &+ sampled &- 1) / sampled)
                }
                if isObjectArray, let uid = state.knownReference(atAddress: UnsafeRawPointer(stored + index).load(as: UInt.self)) {
                    builder.elements.append(.uid(uid))
                    continue
                }
                state.keys.append(IndexKey(index))
                defer { state.keys.removeLast() }
                builder.elements.append(state.table.slot(forBoxed: state.member(try state.box(inPlace: &stored[index], inline: false))))
            }
        }
        return state.finishArray(builder)
    }
}
