import KeyedArchive

/// Decoded graphs may legitimately contain reference cycles (the archive asked for them), which
/// ARC cannot free. Breaking them after each input keeps LeakSanitizer on for everything else:
/// a leak it reports is then a leak in the library, not in the graph the input described.
enum CycleBreaker {
    /// Clears the references of every object reachable from `root`.
    static func breakCycles(_ root: Any?) {
        var visited = Set<ObjectIdentifier>()
        var pending: [Any] = root.map { [$0] } ?? []
        var objects: [AnyObject] = []
        while let next = pending.popLast() {
            switch next {
            case let object as ArchivedObject:
                guard visited.insert(ObjectIdentifier(object)).inserted else { continue }
                objects.append(object)
                for field in object.fields { collect(field.value, into: &pending) }
            case let node as FuzzGraphNode:
                guard visited.insert(ObjectIdentifier(node)).inserted else { continue }
                objects.append(node)
                pending.append(contentsOf: node.references)
            case let array as [Any]: pending.append(contentsOf: array)
            case let set as Set<AnyHashable>: pending.append(contentsOf: set.map(\.base))
            case let dictionary as [AnyHashable: Any]:
                for (key, value) in dictionary { pending.append(key.base); pending.append(value) }
            case let ordered as ArchivedOrderedSet: pending.append(contentsOf: ordered.elements)
            default: break
            }
        }
        for object in objects {
            if let archived = object as? ArchivedObject { archived.fields = [] }
            if let node = object as? FuzzGraphNode { node.clearReferences() }
        }
    }

    private static func collect(_ field: ArchivedField, into pending: inout [Any]) {
        switch field {
        case .inline: break
        case .object(let object): if let object { pending.append(object) }
        case .array(let fields), .set(let fields): for field in fields { collect(field, into: &pending) }
        case .dictionary(let entries): for entry in entries { collect(entry.value, into: &pending) }
        }
    }
}

/// A fuzz target's own class whose references the cycle breaker can clear.
protocol FuzzGraphNode: AnyObject {
    /// Everything this object holds on to.
    var references: [Any] { get }
    /// Drops those references.
    func clearReferences()
}
