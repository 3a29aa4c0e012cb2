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

/// Keyed archives: the generic unarchiver (every Foundation class plus inert ArchivedObject),
/// a user class graph, and the tool's resolver must throw or return, never trap, hang or
/// over-allocate.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUnarchiver(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Data(FuzzSupport.buffer(data, size))
    let limits = FuzzSupport.limits
    // Parse once; the three consumers below share the parsed property list.
    guard let plist = try? PropertyList.decode(input, limits: limits) else { return 0 }
    if let unarchiver = try? KeyedUnarchiver(propertyList: plist, limits: limits) {
        CycleBreaker.breakCycles(try? unarchiver.decodeTopLevelObject(of: KeyedArchiveClass.foundationClasses + [.archivedObject]))
    }
    var fromTree: Result<FuzzNode?, any Error>?
    if let unarchiver = try? KeyedUnarchiver(propertyList: plist, limits: limits) {
        unarchiver.setClass(FuzzNode.self, forClassName: "NSObject")
        fromTree = Result { try unarchiver.decodeTopLevelObject(of: FuzzNode.self) }
        CycleBreaker.breakCycles(try? fromTree?.get())
        for node in decodedNodes { node.clearReferences() }
        decodedNodes.removeAll()
    }
    // A binary archive is also read by index, its objects' fields in place (the path of
    // `KeyedUnarchiver(data:)`). The file read whole above, every object in it is valid, so the
    // two reads must agree: both decode or both throw the same kind of error.
    if PropertyList.detectFormat(input) == .binary, let fromTree, let unarchiver = try? KeyedUnarchiver(data: input, limits: limits) {
        unarchiver.setClass(FuzzNode.self, forClassName: "NSObject")
        let inPlace = Result { try unarchiver.decodeTopLevelObject(of: FuzzNode.self) }
        CycleBreaker.breakCycles(try? inPlace.get())
        for node in decodedNodes { node.clearReferences() }
        decodedNodes.removeAll()
        switch (fromTree, inPlace) {
        case (.success(let a), .success(let b)) where (a == nil) == (b == nil):
            break
        case (.failure(let a as KeyedArchiveError), .failure(let b as KeyedArchiveError)) where a.code == b.code:
            break
        default:
            FuzzSupport.fail("read by index: \(inPlace), read whole: \(fromTree)")
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
