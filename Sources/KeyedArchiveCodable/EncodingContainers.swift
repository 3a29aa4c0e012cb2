@_spi(KeyedArchiveInternals) import KeyedArchiveGraph

/// A keyed container: fields of an archived object (object form, primitives inline) or the
/// entries of an NSDictionary (nested containers, everything by reference).
struct KeyedArchiveEncodingContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let state: ArchiveEncodingState
    let builder: ContainerBuilder
    /// `state.table`, held here: reached through `state`, the table was retained and released
    /// around every string stored (8 ms of a 220 ms W5 encode).
    let table: ArchiveObjectTable
    /// `Key`'s stored keys by value, when its values are a byte of plain data (a synthesized
    /// `CodingKeys`); nil: found by their text.
    let keySlots: CodingKeySlots?

    init(state: ArchiveEncodingState, builder: ContainerBuilder) {
        self.state = state
        self.builder = builder
        table = state.table
        keySlots = state.codingKeySlots(for: Key.self)
    }

    var codingPath: [any CodingKey] { state.keys.prefix(builder.depth) }

    /// The stored-key slot of an object's field named `key`.
    @inline(__always)
    private func storedKey(_ key: Key) -> ArchiveSlot {
        if let keySlots { return keySlots.slot(for: key, storedKeys: state.storedKeys, table: table) }
        return state.storedKeys.slot(for: key.stringValue, in: table)
    }

    @inline(__always)
    private func set(_ value: ArchiveSlot, forKey key: Key) {
        if builder.kind == .object {
            builder.fields.append(ArchiveField(key: storedKey(key), value: value))
        } else {
            builder.fields.append(ArchiveField(key: .uid(table.leafUID(string: key.stringValue)), value: value))
        }
    }

    /// A number or boolean: `inline` (its slot, made here) in an object's fields, else a
    /// reference to `value` as a uniqued leaf. The slot is made in this module: through the
    /// table's `slot(for:)` it was a call from here and the value's enum copied into it.
    @inline(__always)
    private func setPrimitive(_ value: @autoclosure () -> PropertyListValue, inline: ArchiveSlot, forKey key: Key) {
        set(builder.kind == .object ? inline : .uid(table.leafUID(value())), forKey: key)
    }

    /// `$null` in an object's fields; the NSNull object in an NSDictionary's entries.
    mutating func encodeNil(forKey key: Key) throws {
        set(builder.kind == .object ? .uid(0) : .uid(state.nullObjectUID()), forKey: key)
    }

    // Nil optionals (synthesized `encode(to:)` passes them here) that are objects to
    // Objective-C (strings, data, dates, collections, structs, classes) are `$null` in an
    // object's fields, as `encodeObject:nil forKey:` writes them: NSCoding readers find the key
    // (swift-corelibs-foundation's `decodeObject(forKey:)` fails on a missing one). Nil
    // booleans and numbers stay left out (the protocol's default), as Objective-C writes no
    // `encodeInteger:` for a value it does not have and reads it after `containsValueForKey:`.
    // An NSDictionary cannot hold nil: its entries leave every nil out.
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { if let value { try encode(value, forKey: key) } else { setAbsent(key) } }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        if let value {
            try encode(value, forKey: key)
        } else if !(T.self is any BinaryInteger.Type || T.self is any BinaryFloatingPoint.Type || T.self is Bool.Type) {
            // (A generic type's `V?` comes here even when V is a number or Bool: left out too.)
            setAbsent(key)
        }
    }

    /// A nil optional: `$null` in an object's fields, nothing in an NSDictionary's entries.
    private func setAbsent(_ key: Key) {
        if builder.kind == .object { set(.uid(0), forKey: key) }
    }
    mutating func encode(_ value: Bool, forKey key: Key) throws { setPrimitive(.bool(value), inline: .bool(value), forKey: key) }
    mutating func encode(_ value: String, forKey key: Key) throws {
        set(.uid(table.leafUID(string: value)), forKey: key)
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        setPrimitive(.real(PropertyListReal(value)), inline: .real(value), forKey: key)
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        setPrimitive(.real(PropertyListReal(value)), inline: .float(value), forKey: key)
    }
    mutating func encode(_ value: Int, forKey key: Key) throws { setSigned(Int64(value), forKey: key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { setSigned(Int64(value), forKey: key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { setSigned(Int64(value), forKey: key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { setSigned(Int64(value), forKey: key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { setSigned(value, forKey: key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { setUnsigned(UInt64(value), forKey: key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { setUnsigned(UInt64(value), forKey: key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { setUnsigned(UInt64(value), forKey: key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { setUnsigned(UInt64(value), forKey: key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { setUnsigned(value, forKey: key) }

    @inline(__always)
    private func setSigned(_ value: Int64, forKey key: Key) {
        setPrimitive(.integer(PropertyListInteger(value)), inline: .integer(value), forKey: key)
    }

    @inline(__always)
    private func setUnsigned(_ value: UInt64, forKey key: Key) {
        setPrimitive(.integer(PropertyListInteger(value)), inline: .unsigned(value), forKey: key)
    }

    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        state.keys.append(key)
        defer { state.keys.removeLast() }
        let boxed = try state.box(value, inline: builder.kind == .object)
        set(table.slot(forBoxed: builder.kind == .object ? boxed : state.member(boxed)), forKey: key)
    }

    mutating func encodeConditional<T: AnyObject & Encodable>(_ object: T, forKey key: Key) throws {
        state.keys.append(key)
        defer { state.keys.removeLast() }
        if builder.kind == .object {
            if let value = try state.conditionalReference(to: object, from: builder, keyUID: nil) {
                builder.fields.append(ArchiveField(key: storedKey(key), value: table.slot(for: value)))
            }
        } else {
            let keyUID = table.leafUID(string: key.stringValue)
            if let value = try state.conditionalReference(to: object, from: builder, keyUID: keyUID) {
                builder.fields.append(ArchiveField(key: .uid(keyUID), value: table.slot(for: value)))
            }
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        state.keys.append(key)
        defer { state.keys.removeLast() }
        let nested = state.nestedBuilder(.dictionary)
        set(.uid(nested.uid), forKey: key)
        return KeyedEncodingContainer(KeyedArchiveEncodingContainer<NestedKey>(state: state, builder: nested))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        state.keys.append(key)
        defer { state.keys.removeLast() }
        let nested = state.nestedBuilder(.array)
        set(.uid(nested.uid), forKey: key)
        return UnkeyedArchiveEncodingContainer(state: state, builder: nested)
    }

    mutating func superEncoder() -> any Encoder { superEncoder(named: NameKey.super) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(named: key) }

    private func superEncoder(named key: any CodingKey) -> any Encoder {
        let path = codingPath + [key]
        let builder = self.builder
        let state = self.state
        let table = self.table
        state.retireKeptContainer(of: builder)
        return ReferencingArchiveEncoder(state: state, codingPath: path) { value in
            if builder.kind == .object {
                builder.fields.append(
                    ArchiveField(key: state.storedKeys.slot(for: key.stringValue, in: table), value: table.slot(for: value)))
            } else {
                builder.fields.append(
                    ArchiveField(key: .uid(table.leafUID(string: key.stringValue)), value: table.slot(for: state.member(value))))
            }
        }
    }
}

/// An unkeyed container: the elements of an NSArray, each stored by reference.
struct UnkeyedArchiveEncodingContainer: UnkeyedEncodingContainer {
    let state: ArchiveEncodingState
    let builder: ContainerBuilder
    /// `state.table`, held here for the reason ``KeyedArchiveEncodingContainer/table`` is.
    let table: ArchiveObjectTable

    init(state: ArchiveEncodingState, builder: ContainerBuilder) {
        self.state = state
        self.builder = builder
        table = state.table
    }

    var codingPath: [any CodingKey] { state.keys.prefix(builder.depth) }
    var count: Int { builder.elements.count }

    @inline(__always)
    private func append(_ value: PropertyListValue) { builder.elements.append(.uid(table.leafUID(value))) }

    /// The NSNull object: an NSArray cannot hold nil.
    mutating func encodeNil() throws { builder.elements.append(.uid(state.nullObjectUID())) }
    mutating func encode(_ value: Bool) throws { append(.bool(value)) }
    mutating func encode(_ value: String) throws { builder.elements.append(.uid(table.leafUID(string: value))) }
    mutating func encode(_ value: Double) throws { append(.real(PropertyListReal(value))) }
    mutating func encode(_ value: Float) throws { append(.real(PropertyListReal(value))) }
    mutating func encode(_ value: Int) throws { append(.integer(PropertyListInteger(Int64(value)))) }
    mutating func encode(_ value: Int8) throws { append(.integer(PropertyListInteger(Int64(value)))) }
    mutating func encode(_ value: Int16) throws { append(.integer(PropertyListInteger(Int64(value)))) }
    mutating func encode(_ value: Int32) throws { append(.integer(PropertyListInteger(Int64(value)))) }
    mutating func encode(_ value: Int64) throws { append(.integer(PropertyListInteger(value))) }
    mutating func encode(_ value: UInt) throws { append(.integer(PropertyListInteger(UInt64(value)))) }
    mutating func encode(_ value: UInt8) throws { append(.integer(PropertyListInteger(UInt64(value)))) }
    mutating func encode(_ value: UInt16) throws { append(.integer(PropertyListInteger(UInt64(value)))) }
    mutating func encode(_ value: UInt32) throws { append(.integer(PropertyListInteger(UInt64(value)))) }
    mutating func encode(_ value: UInt64) throws { append(.integer(PropertyListInteger(value))) }

    mutating func encode<T: Encodable>(_ value: T) throws {
        state.keys.append(IndexKey(builder.elements.count))
        defer { state.keys.removeLast() }
        builder.elements.append(table.slot(forBoxed: state.member(try state.box(value, inline: false))))
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        state.keys.append(IndexKey(builder.elements.count))
        defer { state.keys.removeLast() }
        let nested = state.nestedBuilder(.dictionary)
        builder.elements.append(.uid(nested.uid))
        return KeyedEncodingContainer(KeyedArchiveEncodingContainer<NestedKey>(state: state, builder: nested))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        state.keys.append(IndexKey(builder.elements.count))
        defer { state.keys.removeLast() }
        let nested = state.nestedBuilder(.array)
        builder.elements.append(.uid(nested.uid))
        return UnkeyedArchiveEncodingContainer(state: state, builder: nested)
    }

    mutating func superEncoder() -> any Encoder {
        let builder = self.builder
        let table = self.table
        let state = self.state
        return ReferencingArchiveEncoder(state: state, codingPath: codingPath + [IndexKey(builder.elements.count)]) { value in
            builder.elements.append(table.slot(for: state.member(value)))
        }
    }
}

/// The container of a value encoded as one primitive or one nested value.
struct SingleValueArchiveEncodingContainer: SingleValueEncodingContainer {
    let state: ArchiveEncodingState
    var codingPath: [any CodingKey] { state.keys.path }

    private func set(_ value: PropertyListValue) {
        var hasValue = state.level.builder != nil
        // Matched, not compared: `!= nil` copied the stored value (a retain and a release).
        if case .some = state.level.single { hasValue = true }
        if hasValue { state.level.misuse = "encoded more than one value in a single-value container" }
        state.level.single = value
    }

    mutating func encodeNil() throws { set(.uid(0)) }
    mutating func encode(_ value: Bool) throws { set(.bool(value)) }
    mutating func encode(_ value: String) throws { set(.string(PropertyListString(value))) }
    mutating func encode(_ value: Double) throws { set(.real(PropertyListReal(value))) }
    mutating func encode(_ value: Float) throws { set(.real(PropertyListReal(value))) }
    mutating func encode(_ value: Int) throws { set(.integer(PropertyListInteger(Int64(value)))) }
    mutating func encode(_ value: Int8) throws { set(.integer(PropertyListInteger(Int64(value)))) }
    mutating func encode(_ value: Int16) throws { set(.integer(PropertyListInteger(Int64(value)))) }
    mutating func encode(_ value: Int32) throws { set(.integer(PropertyListInteger(Int64(value)))) }
    mutating func encode(_ value: Int64) throws { set(.integer(PropertyListInteger(value))) }
    mutating func encode(_ value: UInt) throws { set(.integer(PropertyListInteger(UInt64(value)))) }
    mutating func encode(_ value: UInt8) throws { set(.integer(PropertyListInteger(UInt64(value)))) }
    mutating func encode(_ value: UInt16) throws { set(.integer(PropertyListInteger(UInt64(value)))) }
    mutating func encode(_ value: UInt32) throws { set(.integer(PropertyListInteger(UInt64(value)))) }
    mutating func encode(_ value: UInt64) throws { set(.integer(PropertyListInteger(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        set(try state.box(value, inline: true))
    }
}

/// The encoder handed out by `superEncoder()`: whatever is encoded through it is stored in the
/// parent container (nested keyed containers as NSDictionary, unkeyed as NSArray).
final class ReferencingArchiveEncoder: Encoder {
    let state: ArchiveEncodingState
    let codingPath: [any CodingKey]
    private let store: (PropertyListValue) -> Void
    @exclusivity(unchecked) private var builder: ContainerBuilder?
    var userInfo: [CodingUserInfoKey: Any] { state.userInfo }

    init(state: ArchiveEncodingState, codingPath: [any CodingKey], store: @escaping (PropertyListValue) -> Void) {
        self.state = state
        self.codingPath = codingPath
        self.store = store
    }

    private func builder(_ kind: ContainerBuilder.Kind) -> ContainerBuilder {
        if let builder { return builder }
        let new = state.nestedBuilder(kind)
        builder = new
        store(.uid(new.uid))
        return new
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedArchiveEncodingContainer<Key>(state: state, builder: builder(.dictionary)))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedArchiveEncodingContainer(state: state, builder: builder(.array))
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        ReferencingSingleValueContainer(encoder: self)
    }

    fileprivate func storeSingle(_ value: PropertyListValue) { store(state.store(value, inline: false)) }

    private struct ReferencingSingleValueContainer: SingleValueEncodingContainer {
        let encoder: ReferencingArchiveEncoder
        var codingPath: [any CodingKey] { encoder.codingPath }
        mutating func encodeNil() throws { encoder.storeSingle(.uid(0)) }
        mutating func encode(_ value: Bool) throws { encoder.storeSingle(.bool(value)) }
        mutating func encode(_ value: String) throws { encoder.storeSingle(.string(PropertyListString(value))) }
        mutating func encode(_ value: Double) throws { encoder.storeSingle(.real(PropertyListReal(value))) }
        mutating func encode(_ value: Float) throws { encoder.storeSingle(.real(PropertyListReal(value))) }
        mutating func encode(_ value: Int) throws { encoder.storeSingle(.integer(PropertyListInteger(Int64(value)))) }
        mutating func encode(_ value: Int8) throws { encoder.storeSingle(.integer(PropertyListInteger(Int64(value)))) }
        mutating func encode(_ value: Int16) throws { encoder.storeSingle(.integer(PropertyListInteger(Int64(value)))) }
        mutating func encode(_ value: Int32) throws { encoder.storeSingle(.integer(PropertyListInteger(Int64(value)))) }
        mutating func encode(_ value: Int64) throws { encoder.storeSingle(.integer(PropertyListInteger(value))) }
        mutating func encode(_ value: UInt) throws { encoder.storeSingle(.integer(PropertyListInteger(UInt64(value)))) }
        mutating func encode(_ value: UInt8) throws { encoder.storeSingle(.integer(PropertyListInteger(UInt64(value)))) }
        mutating func encode(_ value: UInt16) throws { encoder.storeSingle(.integer(PropertyListInteger(UInt64(value)))) }
        mutating func encode(_ value: UInt32) throws { encoder.storeSingle(.integer(PropertyListInteger(UInt64(value)))) }
        mutating func encode(_ value: UInt64) throws { encoder.storeSingle(.integer(PropertyListInteger(value))) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            encoder.storeSingle(try encoder.state.box(value, inline: false))
        }
    }
}
