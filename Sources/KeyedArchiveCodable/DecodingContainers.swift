/// The fields of one keyed value: an archived object's dictionary or an NSDictionary's entries
/// by key.
///
/// An object's fields are looked up as the unarchiver looks them up (the first entry whose key
/// matches byte for byte), but starting where the last lookup matched, since fields are
/// usually read in the order they were written: scanning from the start copied every key
/// before the one wanted (+22% instructions for a W5 decode). An entry found past the cursor
/// is the first one with its key unless an entry before the cursor has the key too; that can
/// only be one the lookups have looked at before, so a fingerprint of each key looked at (length
/// and first and last bytes, as one bit of 64) tells when the entries before the cursor must be
/// searched again: for repeated keys (damaged or hand-made archives) and fingerprint collisions
/// (scanning again on length alone cost 9% more instructions on W5 than with the first byte).
///
/// In an archive read by index, an object's fields are read in place instead
/// (``InPlaceKeyedStorage``, over the graph layer's `InPlaceLookup`, which looks them up the
/// same way).
///
/// The storage also holds the decode it belongs to and the container's depth, so that a
/// container is one reference: the standard library's type-erasing box copies the container
/// (and destroys the copy) at every call, and with three fields that was 12% of a W5 decode's
/// instructions.
class KeyedStorage {
    /// The decode this container belongs to.
    let state: ArchiveDecodingState
    /// The length of the container's coding path (set again when an in-place storage is
    /// reused).
    @exclusivity(unchecked) fileprivate(set) var depth: Int
    /// The stack path of a container made by another (see
    /// `ArchiveDecodingState.withPath(_:_:)`); nil for one a decode makes.
    @exclusivity(unchecked) var nestedPath: [any CodingKey]?
    let entries: [PropertyListDictionary.Entry]
    let map: [String: PropertyListValue]?
    /// Where the next lookup starts: the entry after the last match.
    @exclusivity(unchecked) private var cursor = 0
    /// The fingerprints of every key a lookup has looked at: all those before the cursor, and
    /// maybe more.
    @exclusivity(unchecked) private var seen: UInt64 = 0

    init(entries: [PropertyListDictionary.Entry], state: ArchiveDecodingState, depth: Int) {
        self.state = state
        self.depth = depth
        self.entries = entries
        self.map = nil
    }

    init(map: [String: PropertyListValue], state: ArchiveDecodingState, depth: Int) {
        self.state = state
        self.depth = depth
        self.entries = []
        self.map = map
    }

    @inline(__always)
    private static func fingerprint(length: Int, first: UInt8?, last: UInt8?) -> UInt64 {
        InPlaceLookup.fingerprint(length: length, first: first, last: last)
    }

    /// The value for a user key (escaped as stored when it starts with `$`). Throws only when
    /// the fields are read in place and the file is damaged there.
    @inline(__always)
    final func value(forKey key: String) throws -> PropertyListValue? {
        if let map { return map[key] }
        return try storedValue(forKey: Self.stored(key))
    }

    /// True when a user key has a value (which is not read).
    final func hasValue(forKey key: String) -> Bool {
        if let map { return map[key] != nil }
        return hasValue(forStoredKey: Self.stored(key))
    }

    /// A user key as stored (``ArchiveKeys/escape(_:)``), checked here first: `escape` is not
    /// inlined across modules, and most keys need no escape.
    @inline(__always)
    private static func stored(_ key: String) -> String {
        ArchiveKeys.startsWithDollar(key) ? ArchiveKeys.escape(key) : key
    }

    /// True when a key as stored has a value.
    func hasValue(forStoredKey stored: String) -> Bool {
        index(ofStoredKey: stored) != nil
    }

    /// The value for a key as stored (`$class`, or a user key already escaped).
    func storedValue(forKey stored: String) throws -> PropertyListValue? {
        index(ofStoredKey: stored).flatMap { PropertyListDictionary.value(at: $0, in: entries) }
    }

    /// The position of the first entry whose key is `stored`, byte for byte; moves the cursor.
    /// Keys are read through pointers (`entries[index].key` copied the whole entry).
    @inline(__always)
    private func index(ofStoredKey stored: String) -> Int? {
        let length = stored.utf8.count
        let count = entries.count
        let start = cursor < count ? cursor : 0
        return entries.withUnsafeBufferPointer { buffer -> Int? in
            guard let first = buffer.baseAddress else { return nil }
            // The usual case: the entry at the cursor has the key.
            if start < count, case .string(let name) = PropertyListDictionary.key(of: first + start).pointee,
                name.hasText(stored)
            {
                let fingerprint = Self.fingerprint(length: length, first: stored.utf8.first, last: stored.utf8.last)
                return found(start, start: start, stored: stored, fingerprint: fingerprint, looked: fingerprint)
            }
            var index = start
            var looked: UInt64 = 0
            for _ in 0..<count {
                if case .string(let name) = PropertyListDictionary.key(of: first + index).pointee {
                    let nameLength = name.utf8Count
                    looked |= name.withUTF8 { Self.fingerprint(length: nameLength, first: $0.first, last: $0.last) }
                    if nameLength == length, name.hasText(stored) {
                        return found(index, start: start, stored: stored, fingerprint: Self.fingerprint(length: length, first: stored.utf8.first, last: stored.utf8.last), looked: looked)
                    }
                }
                index = index + 1 == count ? 0 : index + 1
            }
            seen |= looked
            return nil
        }
    }

    /// A match at `index`, found by a scan from `start` that looked at the keys `looked`: the
    /// first entry with the key unless an entry before the cursor has it too, which only a key
    /// looked at before can be (`fingerprint` is the key's, computed only when needed).
    @inline(__always)
    private func found(_ index: Int, start: Int, stored: String, fingerprint: @autoclosure () -> UInt64, looked: UInt64) -> Int {
        var index = index
        if index >= start, start > 0, seen & fingerprint() != 0,
            let earlier = PropertyListDictionary.index(ofStringKey: stored, in: entries, before: start)
        {
            index = earlier
        }
        seen |= looked
        cursor = index + 1
        return index
    }

    /// The user keys, unescaped, in stored order.
    var keyNames: [String] {
        if let map { return Array(map.keys) }
        return entries.compactMap { entry in
            guard case .string(let name) = entry.key, !ArchiveKeys.isReserved(name.value) else { return nil }
            return ArchiveKeys.unescape(name.value)
        }
    }
}

/// An archived object's fields read in place from a file read by index (the graph layer's
/// `InPlaceLookup`: the same first-match rule, cursor and fingerprints as ``KeyedStorage``, with
/// keys compared in the file or recognised from the file's key cache). No dictionary is built
/// for the object, and the lookup is held inline, with no object of its own.
final class InPlaceKeyedStorage: KeyedStorage {
    /// Read and moved in place (its lookups are `mutating` for that).
    @exclusivity(unchecked) var lookup: InPlaceLookup

    /// The fields of an object read in place (the lookup's cursor as it is: just past `$class`,
    /// where the lookup that classified the entry left it).
    init(_ lookup: InPlaceLookup, state: ArchiveDecodingState, depth: Int) {
        self.lookup = lookup
        super.init(entries: [], state: state, depth: depth)
    }

    /// Makes this storage the fields of another object at `depth` (the caller restarts its
    /// lookup in place): only when no container refers to it any more (the decoding state
    /// checks), so no reader can see the change.
    @inline(__always)
    func reuse(depth: Int, nestedPath: [any CodingKey]?) {
        self.depth = depth
        // (Stored only when either is set: storing nil over nil released it at every object.)
        // (Matched, not compared: `!= nil` on an optional array looked up the array type's
        // metadata at every object.)
        if case .some = nestedPath {
            self.nestedPath = nestedPath
        } else if case .some = self.nestedPath {
            self.nestedPath = nil
        }
    }

    override func hasValue(forStoredKey stored: String) -> Bool {
        ((try? lookup.index(ofStoredKey: stored)) ?? nil) != nil
    }

    override func storedValue(forKey stored: String) throws -> PropertyListValue? {
        guard let index = try lookup.index(ofStoredKey: stored) else { return nil }
        return try lookup.value(at: index)
    }

    override var keyNames: [String] {
        ((try? lookup.dictionary())?.entries ?? []).compactMap { entry in
            guard case .string(let name) = entry.key, !ArchiveKeys.isReserved(name.value) else { return nil }
            return ArchiveKeys.unescape(name.value)
        }
    }
}

struct KeyedArchiveDecodingContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    /// The fields, with the decode and the depth (one reference: see ``KeyedStorage``).
    let storage: KeyedStorage
    @inline(__always) var state: ArchiveDecodingState { storage.state }
    @inline(__always) var depth: Int { storage.depth }

    var codingPath: [any CodingKey] { state.containerPath(depth: depth, nestedPath: storage.nestedPath) }
    var allKeys: [Key] { storage.keyNames.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { storage.hasValue(forKey: key.stringValue) }

    /// `body` with the key stack holding this container's path (see
    /// `ArchiveDecodingState.withPath(_:_:)`).
    @inline(__always)
    private func inPath<R>(_ body: () throws -> R) rethrows -> R { try state.withPath(storage.nestedPath, body) }

    /// The stored value for `key`, if any; a field the file cannot give is `dataCorrupted` here.
    @inline(__always)
    private func lookup(_ key: Key) throws -> PropertyListValue? {
        try lookup(named: key.stringValue, key: key)
    }

    /// (Generic over the key, so that it is made an existential only when the read fails: an
    /// `any CodingKey` parameter boxed the key at every field.)
    @inline(__always)
    private func lookup<FieldKey: CodingKey>(named name: String, key: FieldKey) throws -> PropertyListValue? {
        do {
            return try storage.value(forKey: name)
        } catch {
            try throwUnreadable(error, key: key)
        }
    }

    @inline(__always)
    private func require(_ key: Key) throws -> PropertyListValue {
        guard let value = try lookup(key) else { try throwKeyNotFound(key) }
        return value
    }

    // The errors are made out of line: inlined into every `decode(_:forKey:)`, they gave each
    // field's read a frame of hundreds of bytes to set up.

    @inline(never)
    private func throwUnreadable<FieldKey: CodingKey>(_ error: any Error, key: FieldKey) throws -> Never {
        try inPath { throw state.unreadable(error, key: key) }
    }

    @inline(never)
    private func throwKeyNotFound(_ key: Key) throws -> Never {
        throw DecodingError.keyNotFound(
            key, DecodingError.Context(codingPath: codingPath, debugDescription: "no value for key \"\(key.stringValue)\""))
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let value = try lookup(key) else { return true }
        return state.isNil(value)
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        let value = try require(key)
        if let quick = state.quickBool(value) { return quick }
        return try slowBool(value, key)
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        let value = try require(key)
        if let quick = state.quickString(value) { return quick }
        return try slowString(value, key)
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
        let value = try require(key)
        if let quick = state.quickDouble(value) { return quick }
        return try slowDouble(value, key)
    }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try slowFloat(try require(key), key) }

    // The full decoders (every error), in the container's path, out of line: the closure of
    // ``inPath(_:)`` inlined into the quick paths made every field's read dearer.
    @inline(never) private func slowBool(_ value: PropertyListValue, _ key: Key) throws -> Bool {
        try inPath { try state.decodeBool(value, key: key) }
    }
    @inline(never) private func slowString(_ value: PropertyListValue, _ key: Key) throws -> String {
        try inPath { try state.decodeString(value, key: key) }
    }
    @inline(never) private func slowDouble(_ value: PropertyListValue, _ key: Key) throws -> Double {
        try inPath { try state.decodeDouble(value, key: key) }
    }
    @inline(never) private func slowFloat(_ value: PropertyListValue, _ key: Key) throws -> Float {
        try inPath { try state.decodeFloat(value, key: key) }
    }
    @inline(never) private func slowInteger<I: FixedWidthInteger>(_ type: I.Type, _ value: PropertyListValue, _ key: Key) throws -> I {
        try inPath { try state.decodeInteger(type, value, key: key) }
    }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decodeInteger(type, forKey: key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decodeInteger(type, forKey: key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decodeInteger(type, forKey: key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decodeInteger(type, forKey: key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decodeInteger(type, forKey: key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decodeInteger(type, forKey: key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decodeInteger(type, forKey: key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decodeInteger(type, forKey: key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decodeInteger(type, forKey: key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decodeInteger(type, forKey: key) }

    /// Every integer width: the common inline form quickly, anything else (and every error)
    /// through the state's full decoder.
    @inline(__always)
    private func decodeInteger<I: FixedWidthInteger>(_ type: I.Type, forKey key: Key) throws -> I {
        let value = try require(key)
        if let quick = state.quickInteger(type, value) { return quick }
        return try slowInteger(type, value, key)
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try decodeValue(type, from: try require(key), forKey: key)
    }

    /// Missing key and `$null` alike are nil.
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = try lookup(key), !state.isNil(value) else { return nil }
        return try decodeValue(type, from: value, forKey: key)
    }

    /// Decodes a stored value under `key`. (A container a decode made needs no path of its
    /// own: the closure ``inPath(_:)`` takes cost a W5 decode 0.7% more instructions when it
    /// wrapped every value.)
    @inline(__always)
    private func decodeValue<T: Decodable>(_ type: T.Type, from value: PropertyListValue, forKey key: Key) throws -> T {
        if case .some = storage.nestedPath { return try decodeValueInNestedPath(type, from: value, forKey: key) }
        state.keys.append(key)
        defer { state.keys.removeLast() }
        return try state.decodeValue(type, from: value, checkCycle: true)
    }

    @inline(never)
    private func decodeValueInNestedPath<T: Decodable>(_ type: T.Type, from value: PropertyListValue, forKey key: Key) throws -> T {
        try inPath {
            state.keys.append(key)
            defer { state.keys.removeLast() }
            return try state.decodeValue(type, from: value, checkCycle: true)
        }
    }

    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let value = try lookup(key), !state.isNil(value) else { return nil }
        return try inPath { try state.decodeString(value, key: key) }
    }

    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        guard let value = try lookup(key), !state.isNil(value) else { return nil }
        return try inPath { try state.decodeInteger(type, value, key: key) }
    }

    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        guard let value = try lookup(key), !state.isNil(value) else { return nil }
        return try inPath { try state.decodeDouble(value, key: key) }
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        guard let value = try lookup(key), !state.isNil(value) else { return nil }
        return try inPath { try state.decodeBool(value, key: key) }
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        let value = try require(key)
        return try inPath {
            state.keys.append(key)
            defer { state.keys.removeLast() }
            return try state.keyedContainer(
                for: value, expected: nil, keyedBy: type, depth: try state.checkedDepth(depth + 1), nestedPath: state.keys.path)
        }
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        let value = try require(key)
        return try inPath {
            state.keys.append(key)
            defer { state.keys.removeLast() }
            return try state.unkeyedContainer(for: value, depth: try state.checkedDepth(depth + 1), nestedPath: state.keys.path)
        }
    }

    func superDecoder() throws -> any Decoder {
        try superDecoder(value: try lookup(named: "super", key: NameKey.super), key: NameKey.super)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        try superDecoder(value: try lookup(key), key: key)
    }

    /// A decoder of the value stored under `key` (nil, missing, as `$null`).
    private func superDecoder(value: PropertyListValue?, key: any CodingKey) throws -> any Decoder {
        try inPath {
            ValueArchiveDecoder(
                state: state, value: value ?? .uid(0), stackPath: state.keys.path + [key], depth: try state.checkedDepth(depth + 1))
        }
    }
}

struct UnkeyedArchiveDecodingContainer: UnkeyedDecodingContainer {
    let state: ArchiveDecodingState
    let elements: [PropertyListValue]
    let depth: Int
    /// The stack path of a container made by another, nil for one a decode made (see
    /// `ArchiveDecodingState.withPath(_:_:)`).
    let nestedPath: [any CodingKey]?
    private(set) var currentIndex = 0

    init(state: ArchiveDecodingState, elements: [PropertyListValue], depth: Int, nestedPath: [any CodingKey]?) {
        self.state = state
        self.elements = elements
        self.depth = depth
        self.nestedPath = nestedPath
    }

    var codingPath: [any CodingKey] { state.containerPath(depth: depth, nestedPath: nestedPath) }

    /// `body` with the key stack holding this container's path (see the keyed container's).
    @inline(__always)
    private func inPath<R>(_ body: () throws -> R) rethrows -> R { try state.withPath(nestedPath, body) }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// The element at `currentIndex`, which the caller passes (`currentIndex += 1`) only once
    /// it decoded: a failed decode leaves the element to try as another type, as Foundation's
    /// decoders do (`if let n = try? c.decode(Int.self) ... else try c.decode(String.self)`).
    private func next<T>(_ type: T.Type) throws -> PropertyListValue {
        guard currentIndex < elements.count else {
            throw DecodingError.valueNotFound(
                type, DecodingError.Context(codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "unkeyed container is at end"))
        }
        return elements[currentIndex]
    }

    /// `result`, having passed the element it was decoded from.
    @inline(__always)
    private mutating func passing<T>(_ result: T) -> T {
        currentIndex += 1
        return result
    }

    mutating func decodeNil() throws -> Bool {
        guard currentIndex < elements.count else {
            throw DecodingError.valueNotFound(
                Any?.self, DecodingError.Context(codingPath: codingPath + [IndexKey(currentIndex)], debugDescription: "unkeyed container is at end"))
        }
        if state.isNil(elements[currentIndex]) {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let index = currentIndex
        let value = try next(type)
        if let quick = state.quickBool(value) { return passing(quick) }
        return passing(try inPath { try state.decodeBool(value, key: IndexKey(index)) })
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let index = currentIndex
        let value = try next(type)
        if let quick = state.quickString(value) { return passing(quick) }
        return passing(try inPath { try state.decodeString(value, key: IndexKey(index)) })
    }
    mutating func decode(_ type: Double.Type) throws -> Double {
        let index = currentIndex
        let value = try next(type)
        if let quick = state.quickDouble(value) { return passing(quick) }
        return passing(try inPath { try state.decodeDouble(value, key: IndexKey(index)) })
    }
    mutating func decode(_ type: Float.Type) throws -> Float {
        let index = currentIndex
        let value = try next(type)
        return passing(try inPath { try state.decodeFloat(value, key: IndexKey(index)) })
    }
    mutating func decode(_ type: Int.Type) throws -> Int { try decodeInteger(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(type) }

    /// Every integer width: the common inline form quickly, anything else (and every error)
    /// through the state's full decoder.
    @inline(__always)
    private mutating func decodeInteger<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        let index = currentIndex
        let value = try next(type)
        if let quick = state.quickInteger(type, value) { return passing(quick) }
        return passing(try inPath { try state.decodeInteger(type, value, key: IndexKey(index)) })
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let index = currentIndex
        let value = try next(type)
        if case .some = nestedPath { return passing(try decodeInNestedPath(type, from: value, at: index)) }
        state.keys.append(IndexKey(index))
        defer { state.keys.removeLast() }
        return passing(try state.decodeValue(type, from: value, checkCycle: true))
    }

    /// ``decode(_:)`` in a nested container (apart: see the keyed container's `decodeValue`).
    @inline(never)
    private func decodeInNestedPath<T: Decodable>(_ type: T.Type, from value: PropertyListValue, at index: Int) throws -> T {
        try inPath {
            state.keys.append(IndexKey(index))
            defer { state.keys.removeLast() }
            return try state.decodeValue(type, from: value, checkCycle: true)
        }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let index = currentIndex
        let value = try next(type)
        return passing(try inPath {
            state.keys.append(IndexKey(index))
            defer { state.keys.removeLast() }
            return try state.keyedContainer(
                for: value, expected: nil, keyedBy: type, depth: try state.checkedDepth(depth + 1), nestedPath: state.keys.path)
        })
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let index = currentIndex
        let value = try next([Any].self)
        return passing(try inPath {
            state.keys.append(IndexKey(index))
            defer { state.keys.removeLast() }
            return try state.unkeyedContainer(for: value, depth: try state.checkedDepth(depth + 1), nestedPath: state.keys.path)
        })
    }

    mutating func superDecoder() throws -> any Decoder {
        let index = currentIndex
        let value = try next(Any.self)
        return passing(try inPath {
            ValueArchiveDecoder(
                state: state, value: value, stackPath: state.keys.path + [IndexKey(index)], depth: try state.checkedDepth(depth + 1))
        })
    }
}

struct SingleValueArchiveDecodingContainer: SingleValueDecodingContainer {
    let state: ArchiveDecodingState
    let value: PropertyListValue
    let depth: Int
    /// The stack path of a super decoder's container, nil for one a decode made (see
    /// `ArchiveDecodingState.withPath(_:_:)`).
    var nestedPath: [any CodingKey]? = nil

    var codingPath: [any CodingKey] { state.containerPath(depth: depth, nestedPath: nestedPath) }

    /// `body` with the key stack holding this container's path (see the keyed container's).
    @inline(__always)
    private func inPath<R>(_ body: () throws -> R) rethrows -> R { try state.withPath(nestedPath, body) }

    func decodeNil() -> Bool { state.isNil(value) }
    func decode(_ type: Bool.Type) throws -> Bool { try inPath { try state.decodeBool(value) } }
    func decode(_ type: String.Type) throws -> String { try inPath { try state.decodeString(value) } }
    func decode(_ type: Double.Type) throws -> Double { try inPath { try state.decodeDouble(value) } }
    func decode(_ type: Float.Type) throws -> Float { try inPath { try state.decodeFloat(value) } }
    func decode(_ type: Int.Type) throws -> Int { try decodeInteger(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger(type) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try inPath { try state.decodeValue(type, from: value, checkCycle: false) }
    }

    @inline(__always)
    private func decodeInteger<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        try inPath { try state.decodeInteger(type, value) }
    }
}

/// The decoder handed out by `superDecoder()`: reads one stored value.
final class ValueArchiveDecoder: Decoder {
    let state: ArchiveDecodingState
    let value: PropertyListValue
    /// Its path on the key stack, its own key last (see `ArchiveDecodingState.withPath(_:_:)`).
    let stackPath: [any CodingKey]
    /// Its containers' depth, checked when it was made (see `ArchiveDecodingState.checkedDepth(_:)`).
    let depth: Int
    var codingPath: [any CodingKey] { state.visiblePath(stackPath) }
    var userInfo: [CodingUserInfoKey: Any] { state.userInfo }

    init(state: ArchiveDecodingState, value: PropertyListValue, stackPath: [any CodingKey], depth: Int) {
        self.state = state
        self.value = value
        self.stackPath = stackPath
        self.depth = depth
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        try state.withPath(stackPath) {
            try state.keyedContainer(for: value, expected: nil, keyedBy: type, depth: depth, nestedPath: stackPath)
        }
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try state.withPath(stackPath) { try state.unkeyedContainer(for: value, depth: depth, nestedPath: stackPath) }
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        SingleValueArchiveDecodingContainer(state: state, value: value, depth: depth, nestedPath: stackPath)
    }
}
