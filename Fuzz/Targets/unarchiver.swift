import KeyedArchive

/// A user class with every kind of reference: a scalar field, an array of children decoded in
/// `init(coder:)`, and a `next` link and a dictionary of named nodes decoded in phase 2 (so they
/// may form cycles).
final class FuzzNode: KeyedArchiving, FuzzGraphNode {
    static var archivedClassName: String { "FuzzNode" }
    var name: String
    var value: Int
    var children: [FuzzNode]
    var next: FuzzNode?
    var named: [String: FuzzNode] = [:]

    init(name: String, value: Int, children: [FuzzNode] = []) {
        self.name = name
        self.value = value
        self.children = children
    }

    var references: [Any] { children + (next.map { [$0] } ?? []) + Array(named.values) }
    func clearReferences() {
        children = []
        next = nil
        named = [:]
    }

    func encode(with coder: KeyedArchiver) throws {
        try coder.encode(name, forKey: "name")
        coder.encode(value, forKey: "value")
        try coder.encode(children, forKey: "children")
        try coder.encode(next, forKey: "next")
        try coder.encode(named, forKey: "named")
    }

    init(coder: KeyedUnarchiver) throws {
        name = try coder.decodeObject(of: String.self, forKey: "name") ?? ""
        value = try coder.decodeInt(forKey: "value")
        children = try coder.decodeArrayOfObjects(ofClass: FuzzNode.self, forKey: "children") ?? []
        decodedNodes.append(self)
    }

    func decodeReferences(with coder: KeyedUnarchiver) throws {
        next = try coder.decodeObject(of: FuzzNode.self, forKey: "next")
        named = try coder.decodeDictionary(withKeyClass: String.self, objectClass: FuzzNode.self, forKey: "named") ?? [:]
    }
}

/// Every node decoded for the current input. A decode that fails after phase 2 linked user
/// objects into a cycle drops them, and the unarchiver cannot break cycles that run through a
/// user class's own fields (nor can Apple's; Docs/Security.md), so the harness tears them down
/// itself after each input to keep LeakSanitizer meaningful. libFuzzer runs one input at a time.
nonisolated(unsafe) var decodedNodes: [FuzzNode] = []

/// What one unarchiver makes of an input with `FuzzNode` as its user class: the root as a node,
/// then the root as an array of nodes (`decodeArrayOfObjects` under a `$top` key). Cycles among
/// the decoded nodes are broken before it returns.
struct NodeDecodes: CustomStringConvertible {
    var root: Result<Bool, any Error>
    var array: Result<Int?, any Error>

    init(_ unarchiver: KeyedUnarchiver) {
        unarchiver.setClass(FuzzNode.self, forClassName: "NSObject")
        let node = Result { try unarchiver.decodeTopLevelObject(of: FuzzNode.self) }
        CycleBreaker.breakCycles(try? node.get())
        root = node.map { $0 != nil }
        let nodes = Result { try unarchiver.decodeArrayOfObjects(ofClass: FuzzNode.self, forKey: "root") }
        CycleBreaker.breakCycles(try? nodes.get())
        array = nodes.map { $0?.count }
        for node in decodedNodes { node.clearReferences() }
        decodedNodes.removeAll()
    }

    /// Both decodes gave the same result, or failed with the same error code.
    func agrees(with other: NodeDecodes) -> Bool {
        sameOutcome(root, other.root) && sameOutcome(array, other.array)
    }

    var description: String { "root \(root), array \(array)" }
}

/// Whether two decodes gave equal results, or failed with the same error code.
private func sameOutcome<T: Equatable>(_ a: Result<T, any Error>, _ b: Result<T, any Error>) -> Bool {
    switch (a, b) {
    case (.success(let x), .success(let y)): x == y
    case (.failure(let x as KeyedArchiveError), .failure(let y as KeyedArchiveError)): x.code == y.code
    default: false
    }
}

/// The root decoded with every Foundation class and inert ArchivedObject allowed: whether it
/// decoded to a value, with the value's shape, or the code of its error. Cycles among the
/// decoded objects are broken before it returns.
struct GenericDecode: CustomStringConvertible {
    var result: Result<String, any Error>

    init(_ unarchiver: KeyedUnarchiver) {
        let decoded = Result { try unarchiver.decodeTopLevelObject(of: KeyedArchiveClass.foundationClasses + [.archivedObject]) }
        result = decoded.map { Self.shape($0) }
        CycleBreaker.breakCycles(try? decoded.get())
    }

    /// The kind of a decoded value and, for collections, their member count (not their members:
    /// ArchivedObjects may form cycles).
    private static func shape(_ value: Any?) -> String {
        switch value {
        case nil: "nil"
        case let array as [Any]: "array \(array.count)"
        case let set as Set<AnyHashable>: "set \(set.count)"
        case let dictionary as [AnyHashable: Any]: "dictionary \(dictionary.count)"
        case let value?: "\(type(of: value))"
        }
    }

    /// Both decodes gave the same shape, or failed with the same error code.
    func agrees(with other: GenericDecode) -> Bool {
        sameOutcome(result, other.result)
    }

    var description: String { "\(result)" }
}

/// Keyed archives: the generic unarchiver (every Foundation class plus inert ArchivedObject),
/// a user class graph, and the tool's resolver must throw or return, never trap, hang or
/// over-allocate.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUnarchiver(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Data(FuzzSupport.buffer(data, size))
    let limits = FuzzSupport.limits
    // Parse once; the three consumers below share the parsed property list.
    guard let plist = try? PropertyList.decode(input, limits: limits) else { return 0 }
    var genericFromTree: GenericDecode?
    if let unarchiver = try? KeyedUnarchiver(propertyList: plist, limits: limits) {
        genericFromTree = GenericDecode(unarchiver)
    }
    var fromTree: NodeDecodes?
    if let unarchiver = try? KeyedUnarchiver(propertyList: plist, limits: limits) {
        fromTree = NodeDecodes(unarchiver)
    }
    // A binary archive is also read by index, its objects' fields in place (the path of
    // `KeyedUnarchiver(data:)`). The file read whole above, every object in it is valid, so the
    // two reads must agree: both decode or both throw the same kind of error.
    if PropertyList.detectFormat(input) == .binary, let fromTree, let unarchiver = try? KeyedUnarchiver(data: input, limits: limits) {
        let inPlace = NodeDecodes(unarchiver)
        if !inPlace.agrees(with: fromTree) {
            FuzzSupport.fail("read by index: \(inPlace), read whole: \(fromTree)")
        }
    }
    // The generic decode (untyped Foundation collections take their members from the file when
    // read by index) must agree in the same way.
    if PropertyList.detectFormat(input) == .binary, let genericFromTree, let unarchiver = try? KeyedUnarchiver(data: input, limits: limits) {
        let inPlace = GenericDecode(unarchiver)
        if !inPlace.agrees(with: genericFromTree) {
            FuzzSupport.fail("generic decode read by index: \(inPlace), read whole: \(genericFromTree)")
        }
    }
    if let resolved = try? ArchiveResolver(propertyList: plist, limits: limits).resolveTopLevel() {
        // What `karchive unarchive` does next: the resolved tree must be writable.
        do { _ = try BinaryPropertyListWriter.write(resolved) } catch {
            FuzzSupport.fail("the resolver produced a value the binary writer refuses: \(error)")
        }
    }
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzUnarchiverInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    var options = RandomPropertyList.Options()
    options.uid = false
    options.set = true
    options.null = true
    var made = 0
    FuzzSupport.generateSeedsIfAsked({ value in
        made += 1
        // Random plists as Foundation graphs, plus a small user graph with sharing and a cycle.
        let root = FuzzNode(name: "root", value: 1)
        let shared = FuzzNode(name: "shared", value: 2)
        root.children = [shared, FuzzNode(name: "leaf", value: 3, children: [shared])]
        shared.next = root
        root.named = ["self": root, "shared": shared]
        let withGraph = made % 2 == 0
        let object: Any = withGraph ? [value, root] as [Any] : value
        defer { CycleBreaker.breakCycles(root) }
        return [UInt8](try KeyedArchiver.archivedData(withRootObject: object, format: .binary))
    }, options: options)
    return 0
}
