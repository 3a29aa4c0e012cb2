// Equality and hashing by value; see the discussion on ``PropertyListValue``.
//
// Containers are compared with explicit work lists rather than recursion, so that comparing two
// deeply nested values cannot overflow the stack.

extension PropertyListValue: Hashable {
    /// Equal by value (see ``PropertyListValue``), compared without recursion.
    public static func == (lhs: PropertyListValue, rhs: PropertyListValue) -> Bool {
        // Scalars (the common case, e.g. as dictionary keys) compare without a work list.
        switch (lhs, rhs) {
        case (.string(let a), .string(let b)): return a == b
        case (.integer(let a), .integer(let b)): return a == b
        case (.real(let a), .real(let b)): return a == b
        case (.uid(let a), .uid(let b)): return a == b
        case (.bool(let a), .bool(let b)): return a == b
        case (.data(let a), .data(let b)): return a == b
        case (.null, .null): return true
        case (.date(let a), .date(let b)):
            return a.timeIntervalSinceReferenceDate.bitPattern == b.timeIntervalSinceReferenceDate.bitPattern
        case (.array, .array), (.set, .set), (.dictionary, .dictionary): break
        default: return false
        }
        var pending: [(PropertyListValue, PropertyListValue)] = [(lhs, rhs)]
        while let (left, right) = pending.popLast() {
            switch (left, right) {
            case (.null, .null): continue
            case (.bool(let a), .bool(let b)): if a != b { return false }
            case (.integer(let a), .integer(let b)): if a != b { return false }
            case (.real(let a), .real(let b)): if a != b { return false }
            case (.date(let a), .date(let b)):
                if a.timeIntervalSinceReferenceDate.bitPattern != b.timeIntervalSinceReferenceDate.bitPattern {
                    return false
                }
            case (.data(let a), .data(let b)): if a != b { return false }
            case (.string(let a), .string(let b)): if a != b { return false }
            case (.uid(let a), .uid(let b)): if a != b { return false }
            case (.array(let a), .array(let b)):
                guard a.count == b.count else { return false }
                for index in a.indices { pending.append((a[index], b[index])) }
            case (.set(let a), .set(let b)):
                guard a.count == b.count, unorderedEqual(a, b) else { return false }
            case (.dictionary(let a), .dictionary(let b)):
                guard a.count == b.count else { return false }
                if a.entries.indices.allSatisfy({ a.entries[$0].key == b.entries[$0].key }) {
                    for index in a.entries.indices { pending.append((a.entries[index].value, b.entries[index].value)) }
                } else {
                    // Pair the entries by key (keys are scalars in practice, so hashing them is
                    // cheap and exact), then compare the values through the work list. Entries
                    // with the same key (files from outside can have them) pair in order.
                    var positions: [PropertyListValue: [Int]] = [:]
                    positions.reserveCapacity(b.count)
                    for (index, entry) in b.entries.enumerated().reversed() { positions[entry.key, default: []].append(index) }
                    for entry in a.entries {
                        guard let index = positions[entry.key]?.popLast() else { return false }
                        pending.append((entry.value, b.entries[index].value))
                    }
                }
            default:
                return false
            }
        }
        return true
    }

    /// Hashes shallowly (kinds, counts, scalar keys), consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        // Shallow on purpose: containers contribute their kind and count (dictionaries also an
        // order-independent digest of their scalar keys), so hashing never walks deep values;
        // equality decides the rest.
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(1); hasher.combine(value)
        case .integer(let value): hasher.combine(2); hasher.combine(value)
        case .real(let value): hasher.combine(3); hasher.combine(value)
        case .date(let value): hasher.combine(4); hasher.combine(value.timeIntervalSinceReferenceDate.bitPattern)
        case .data(let value): hasher.combine(5); hasher.combine(value)
        case .string(let value): hasher.combine(6); hasher.combine(value)
        case .uid(let value): hasher.combine(7); hasher.combine(value)
        case .array(let values): hasher.combine(8); hasher.combine(values.count)
        case .set(let values): hasher.combine(9); hasher.combine(values.count)
        case .dictionary(let dictionary):
            hasher.combine(10)
            hasher.combine(dictionary.count)
            // Keys only, and only scalar ones: cheap, order-independent and never deep.
            var digest = 0
            for entry in dictionary.entries where !entry.key.isContainer {
                digest = digest &+ entry.key.hashValue
            }
            hasher.combine(digest)
        }
    }

    /// True for arrays, sets and dictionaries.
    public var isContainer: Bool {
        switch self {
        case .array, .set, .dictionary: true
        default: false
        }
    }
}

/// Multiset equality of two equally long collections.
private func unorderedEqual<T: Hashable>(_ a: [T], _ b: [T]) -> Bool {
    var counts: [T: Int] = [:]
    counts.reserveCapacity(a.count)
    for element in a { counts[element, default: 0] += 1 }
    for element in b {
        // One lookup per element: each lookup may compare nested values in full, so a second
        // one per level would make comparing nested dictionaries exponential in their depth.
        guard let index = counts.index(forKey: element), counts.values[index] > 0 else { return false }
        counts.values[index] -= 1
    }
    return true
}

extension PropertyListDictionary: Equatable {
    /// The same entries, in any order, as dictionary values compare.
    public static func == (lhs: PropertyListDictionary, rhs: PropertyListDictionary) -> Bool {
        PropertyListValue.dictionary(lhs) == PropertyListValue.dictionary(rhs)
    }
}

extension PropertyListDictionary: Hashable {
    /// Hashes as the dictionary value does.
    public func hash(into hasher: inout Hasher) {
        PropertyListValue.dictionary(self).hash(into: &hasher)
    }
}

extension PropertyListValue {
    /// True when the values at `a` and `b` have the same bytes, read in place (no copy, no
    /// retain). Then they are the same value, as long as both are alive: two live strings with
    /// the same bits share their storage or are the same small (inline) string. Different bytes
    /// say nothing (two equal strings built separately; bytes a case leaves unset, as `.uid`
    /// and `.bool` do, which are read but can only make a miss), so this is only a fast path
    /// before a real comparison, for keys that are usually the very same string object after
    /// object.
    /// True when this is a string held in place (up to 14 UTF-8 bytes, see
    /// ``PropertyListString``). Such a string sets every byte of the value, so two of them with
    /// the same text and storage hint have the same bits, and ``haveSameBits(_:_:)`` against
    /// one made the same way is a complete test, not only a fast path: a scan for a short key
    /// among keys all made by `PropertyListValue(_: String)` compares bits and nothing else.
    @inlinable
    package var isInlineString: Bool {
        guard case .string(let string) = self, case .inline = string.text else { return false }
        return true
    }

    @inlinable @inline(__always)
    package static func haveSameBits(_ a: UnsafePointer<PropertyListValue>, _ b: UnsafePointer<PropertyListValue>) -> Bool {
        let (left, right) = (UnsafeRawPointer(a), UnsafeRawPointer(b))
        let size = MemoryLayout<PropertyListValue>.size
        var offset = 0
        while offset + 8 <= size {
            guard left.loadUnaligned(fromByteOffset: offset, as: UInt64.self) == right.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            else { return false }
            offset += 8
        }
        while offset < size {
            guard left.load(fromByteOffset: offset, as: UInt8.self) == right.load(fromByteOffset: offset, as: UInt8.self) else { return false }
            offset += 1
        }
        return true
    }
}
