import Foundation

/// The shape of a W2 graph: who is whose friend, independent of any class.
public struct GraphSpec: Sendable {
    public var count: Int
    public var cyclic: Bool
    public var names: [String]
    public var ages: [Int]
    public var scores: [Double]
    /// Three friend indices per person. Acyclic graphs only point to earlier people; cyclic
    /// graphs point anywhere (self-references included), so almost every person is on a cycle.
    public var friends: [[Int]]

    /// The deterministic graph of `count` people.
    public static func make(seed: UInt64, count: Int, cyclic: Bool) -> GraphSpec {
        var random = BenchRandom(seed: seed, stream: cyclic ? 3 : 2)
        var spec = GraphSpec(count: count, cyclic: cyclic, names: [], ages: [], scores: [], friends: [])
        spec.names.reserveCapacity(count)
        for index in 0..<count {
            spec.names.append("Person \(index) " + random.word(6))
            spec.ages.append(18 + random.below(70))
            spec.scores.append(Double(random.below(1_000_000)) / 1000)
            if cyclic {
                spec.friends.append((0..<3).map { _ in random.below(count) })
            } else {
                spec.friends.append(index == 0 ? [] : (0..<3).map { _ in random.below(index) })
            }
        }
        return spec
    }
}

/// The peer's Person: an NSCoding class with three friend references under separate keys.
///
/// Separate keys, not an NSArray of friends: NSKeyedArchiver merges objects by equality and an
/// NSArray hashes by its count, so arrays of three would make the peer quadratic (peers-on-linux.md).
public final class PeerPerson: NSObject, NSCoding {
    var name: NSString
    var age: Int
    var score: Double
    var friends: [PeerPerson] = []

    init(name: String, age: Int, score: Double) {
        self.name = NSString(string: name)
        self.age = age
        self.score = score
    }

    public func encode(with coder: NSCoder) {
        coder.encode(name, forKey: "name")
        coder.encode(age, forKey: "age")
        coder.encode(score, forKey: "score")
        for (index, friend) in friends.enumerated() { coder.encode(friend, forKey: "friend\(index)") }
    }

    public init?(coder: NSCoder) {
        guard let name = coder.decodeObject(forKey: "name") as? NSString else { return nil }
        self.name = name
        age = coder.decodeInteger(forKey: "age")
        score = coder.decodeDouble(forKey: "score")
        // Swift's corelibs NSKeyedUnarchiver aborts on a missing key: ask first.
        for index in 0..<3 where coder.containsValue(forKey: "friend\(index)") {
            if let friend = coder.decodeObject(forKey: "friend\(index)") as? PeerPerson { friends.append(friend) }
        }
    }

    /// The people of `spec`, linked.
    static func graph(_ spec: GraphSpec) -> NSArray {
        let people = (0..<spec.count).map { PeerPerson(name: spec.names[$0], age: spec.ages[$0], score: spec.scores[$0]) }
        for (index, person) in people.enumerated() { person.friends = spec.friends[index].map { people[$0] } }
        return NSArray(array: people)
    }
}

/// The peer's Person of the "friends in arrays" row: its friends in one NSArray, decoded
/// with the person (as `PeerPerson` decodes its three). The peer reads an archive our
/// archiver wrote (see ``Workload/graphOperations(context:ours:peer:workload:peerSkip:friendLists:)``).
public final class PeerListedPerson: NSObject, NSCoding {
    var name: NSString
    var age: Int
    var score: Double
    var friends: [PeerListedPerson] = []

    public func encode(with coder: NSCoder) {
        coder.encode(name, forKey: "name")
        coder.encode(age, forKey: "age")
        coder.encode(score, forKey: "score")
        coder.encode(NSArray(array: friends), forKey: "friends")
    }

    public init?(coder: NSCoder) {
        guard let name = coder.decodeObject(forKey: "name") as? NSString else { return nil }
        self.name = name
        age = coder.decodeInteger(forKey: "age")
        score = coder.decodeDouble(forKey: "score")
        friends = (coder.decodeObject(forKey: "friends") as? NSArray)?.compactMap { $0 as? PeerListedPerson } ?? []
    }
}

/// Our Codable Person for the Codable-bridge side of W2 (acyclic only: Codable cannot express
/// a cycle on decode, and the bridge rejects one on encode by design).
public final class CodablePerson: Codable {
    public let name: String
    public let age: Int
    public let score: Double
    public let friends: [CodablePerson]

    init(name: String, age: Int, score: Double, friends: [CodablePerson]) {
        self.name = name
        self.age = age
        self.score = score
        self.friends = friends
    }

    /// The people of an acyclic `spec`, friends built before the people who name them.
    static func graph(_ spec: GraphSpec) -> [CodablePerson] {
        var people: [CodablePerson] = []
        people.reserveCapacity(spec.count)
        for index in 0..<spec.count {
            people.append(CodablePerson(
                name: spec.names[index], age: spec.ages[index], score: spec.scores[index],
                friends: spec.friends[index].map { people[$0] }))
        }
        return people
    }
}

/// W2's "graph floor": the graph an unarchive of a W2 archive makes, made without an archive.
/// Any unarchiver that returns it pays this much: the people allocated, their names made from
/// UTF-8 bytes (as an archive holds them), each friend appended (a retain of a person made
/// earlier, at random), and the whole graph released when the result is dropped: a cyclic
/// graph as its row releases it (``GraphRelease``), an acyclic one as its rows do, by ARC alone
/// (cutting an acyclic graph's links first, as a cyclic one's are, would free the people in the
/// order they were made and halve this row, but the rows it bounds drop theirs as a user does).
public struct GraphFloor: Sendable {
    /// The names' UTF-8 bytes one after another, and where each ends.
    private let nameBytes: [UInt8]
    private let nameEnds: [Int]
    private let ages: [Int]
    private let scores: [Double]
    /// The friends' indices one after another, and where each person's end.
    private let friends: [Int]
    private let friendEnds: [Int]
    private let cyclic: Bool

    /// The floor of `spec`'s graph.
    public init(_ spec: GraphSpec) {
        var nameBytes: [UInt8] = [], nameEnds: [Int] = [], friends: [Int] = [], friendEnds: [Int] = []
        for index in 0..<spec.count {
            nameBytes += Array(spec.names[index].utf8)
            nameEnds.append(nameBytes.count)
            friends += spec.friends[index]
            friendEnds.append(friends.count)
        }
        (self.nameBytes, self.nameEnds, self.friends, self.friendEnds) = (nameBytes, nameEnds, friends, friendEnds)
        (ages, scores, cyclic) = (spec.ages, spec.scores, spec.cyclic)
    }

    /// Makes the graph and returns how many people it has (the timed row: the graph is
    /// released on return, as the unarchive rows release theirs).
    public func makeGraph() -> Int { GraphRelease.release(graph(), cyclic: cyclic) }

    /// The graph made, read back as a spec, and how many of its people outlived the row's
    /// release (tests: it must be the spec it was made from, and none may outlive it).
    public func madeGraph() -> (spec: GraphSpec, survivors: Int) {
        var made = GraphSpec(count: 0, cyclic: cyclic, names: [], ages: [], scores: [], friends: [])
        let survivors = GraphRelease.survivors(cyclic: cyclic) {
            let people = graph()
            let indices = Dictionary(uniqueKeysWithValues: people.enumerated().map { (ObjectIdentifier($1), $0) })
            made = GraphSpec(
                count: people.count, cyclic: cyclic, names: people.map(\.name), ages: people.map(\.age), scores: people.map(\.score),
                friends: people.map { $0.friends.map { indices[ObjectIdentifier($0)] ?? -1 } })
            return people
        }
        return (made, survivors.alive)
    }

    /// Everyone first, then the friends, as the unarchiver's two phases do, for either kind
    /// of graph. (Linking an acyclic graph's people as they are made, in one pass, was slower
    /// in four of five alternating loops in session 41: 42-46 against 39-41 ms.)
    private func graph() -> [ArchivedPerson] {
        var people: [ArchivedPerson] = []
        people.reserveCapacity(ages.count)
        nameBytes.withUnsafeBufferPointer { bytes in
            var nameStart = 0
            for index in ages.indices {
                let name = String(decoding: UnsafeBufferPointer(rebasing: bytes[nameStart..<nameEnds[index]]), as: UTF8.self)
                people.append(ArchivedPerson(name: name, age: ages[index], score: scores[index]))
                nameStart = nameEnds[index]
            }
        }
        var friendStart = 0
        for (index, person) in people.enumerated() {
            for friend in friends[friendStart..<friendEnds[index]] { person.friends.append(people[friend]) }
            friendStart = friendEnds[index]
        }
        return people
    }
}

/// W2's "walk floor": what any archiver of a W2 graph does besides formatting: visit every
/// person once in the root array's order, copy out its name, age and score, and identify each
/// friend by a probe of an identity table (open addressing, made for each archive and sized
/// for the graph, as an archiver must make one). It bounds the archive rows as the graph floor
/// bounds the unarchives; the identity of a random friend among 10^6 people is a cache miss.
public final class WalkFloor: @unchecked Sendable {
    // @unchecked: the people are made in `init` and only read afterwards.
    private let graph: LinkedPeople
    private var people: [ArchivedPerson] { graph.people }

    /// The floor of `spec`'s graph (the people made and linked here, untimed).
    public init(_ spec: GraphSpec) { graph = LinkedPeople(spec) }

    /// Walks the graph and returns the bytes written (the timed row).
    public func walk() -> Int { walk(identified: nil) }

    /// The friends' indices as the walk identified them (tests: they must be the spec's).
    public func identifiedFriends() -> [[Int]] {
        var identified: [[Int]] = []
        _ = walk(identified: &identified)
        return identified
    }

    private func walk(identified: UnsafeMutablePointer<[[Int]]>?) -> Int {
        // Twice the people, rounded up to a power of two: probes stay short.
        var capacity = 16
        while capacity < 2 * people.count { capacity <<= 1 }
        var keys = [UInt](repeating: 0, count: capacity)
        var indices = [Int32](repeating: 0, count: capacity)
        let mask = capacity - 1
        func slot(of person: ArchivedPerson) -> Int {
            let key = UInt(bitPattern: ObjectIdentifier(person))
            var slot = Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
            while keys[slot] != 0 && keys[slot] != key { slot = (slot + 1) & mask }
            keys[slot] = key
            return slot
        }
        for (index, person) in people.enumerated() { indices[slot(of: person)] = Int32(truncatingIfNeeded: index) }
        var out: [UInt8] = []
        out.reserveCapacity(people.count * 48)
        for person in people {
            out.append(contentsOf: person.name.utf8)
            withUnsafeBytes(of: person.age.littleEndian) { out.append(contentsOf: $0) }
            withUnsafeBytes(of: person.score.bitPattern.littleEndian) { out.append(contentsOf: $0) }
            var friends: [Int] = []
            for friend in person.friends {
                let index = indices[slot(of: friend)]
                withUnsafeBytes(of: index.littleEndian) { out.append(contentsOf: $0) }
                if identified != nil { friends.append(Int(index)) }
            }
            identified?.pointee.append(friends)
        }
        return out.count
    }
}

/// The people of a spec, linked: the input the archive rows and the walk floor read. Its
/// deinit cuts the links, so a cyclic input is freed when its rows are.
final class LinkedPeople {
    let people: [ArchivedPerson]

    init(_ spec: GraphSpec) {
        let people = (0..<spec.count).map { ArchivedPerson(name: spec.names[$0], age: spec.ages[$0], score: spec.scores[$0]) }
        for (index, person) in people.enumerated() { person.friends = spec.friends[index].map { people[$0] } }
        self.people = people
    }

    deinit { _ = GraphRelease.release(people, cyclic: true) }
}

/// How a W2 row drops the graph it made. ARC frees no cycle, so a cyclic graph's friend links
/// are cut first, as its user would have to: a row that leaked its graph would skip the
/// teardown the acyclic rows pay and take fresh memory on every run (and did, until session 41).
enum GraphRelease {
    /// Releases `people` (cutting the friend links of a cyclic graph) and returns their number.
    static func release(_ people: [ArchivedPerson], cyclic: Bool) -> Int {
        if cyclic {
            for person in people { person.friends = [] }
        }
        return people.count
    }

    /// Makes a graph with `make`, releases it as its row does, and counts the people made and
    /// those still alive afterwards (tests).
    static func survivors(cyclic: Bool, _ make: () throws -> [ArchivedPerson]) rethrows -> (made: Int, alive: Int) {
        final class Watcher {
            weak var person: ArchivedPerson?
            init(_ person: ArchivedPerson) { self.person = person }
        }
        let watchers = try { () throws -> [Watcher] in
            let people = try make()
            defer { _ = release(people, cyclic: cyclic) }
            return people.map(Watcher.init)
        }()
        return (watchers.count, watchers.filter { $0.person != nil }.count)
    }
}

extension Workload {
    /// W2: a graph of Person objects with three shared friends each, acyclic and cyclic.
    public static let w2 = Workload(
        id: "W2", title: "object graph",
        stresses: "object identity (shared references via UIDs), per-object class lookup and key dictionaries, cycles"
    ) { context in
        graphOperations(
            context: context, ours: context.scale.w2Objects, peer: context.scale.w2PeerObjects, workload: "W2", friendLists: true,
            graphFloor: true)
    }

    /// The unarchive of an acyclic graph whose people keep their friends in one array.
    static func listedUnarchive(spec: GraphSpec, peerSpec: GraphSpec, ours: Int, peer: Int, peerNote: String?, workload: String) -> BenchmarkOperation {
        let oursBox = Box<Data>(), peerBox = Box<Data>()
        return BenchmarkOperation(workload, "acyclic unarchive, friends in arrays", check: .objects, [
            Implementation("KeyedArchive NSCoding-style", ours: true, units: ours, prepare: {
                if oursBox.value == nil { oursBox.value = try OurSide.listedGraphArchive(for: spec) }
            }) {
                try OurSide.listedGraphUnarchive(oursBox.value ?? Data())
            },
            Implementation("NSKeyedUnarchiver", units: peer, note: (peerNote.map { $0 + "; " } ?? "") + "reads our archiver's file", prepare: {
                if peerBox.value == nil { peerBox.value = try OurSide.listedGraphArchive(for: peerSpec) }
            }) {
                let root = try Peer.keyedUnarchive(peerBox.value ?? Data(), classNames: [OurSide.listedPersonClassName: PeerListedPerson.self]) as? NSArray
                return root?.count ?? 0
            },
        ])
    }

    /// Archive and unarchive operations for acyclic and cyclic graphs of the given sizes.
    /// With `friendLists`, the acyclic graph is also unarchived with each person's friends in
    /// one array (`decodeArrayOfObjects(ofClass:forKey:)`, the usual NSCoding shape): both
    /// sides read the same archive, written by our archiver (NSKeyedArchiver merges objects by
    /// equality and hashes an NSArray by its count, which makes it quadratic in such graphs).
    /// With `graphFloor`, each archive also times ``WalkFloor`` and each unarchive
    /// ``GraphFloor`` (reference rows).
    static func graphOperations(
        context: Context, ours: Int, peer: Int, workload: String, peerSkip: String? = nil, friendLists: Bool = false,
        graphFloor: Bool = false
    ) -> [BenchmarkOperation] {
        var operations: [BenchmarkOperation] = []
        for cyclic in [false, true] {
            let kind = cyclic ? "cyclic" : "acyclic"
            let spec = GraphSpec.make(seed: context.seed, count: ours, cyclic: cyclic)
            let peerSpec = peer == ours || peerSkip != nil ? spec : GraphSpec.make(seed: context.seed, count: peer, cyclic: cyclic)
            let peerNote = peer == ours ? nil : "peer at N=\(Format.count(peer))"
            let coder = Result { try OurSide.graphCoder(for: spec) }
            let peerRoot = cyclic || peerSkip != nil ? nil : PeerPerson.graph(peerSpec)
            let codableRoot = cyclic ? [] : CodablePerson.graph(spec)
            let cyclicSkip = cyclic
                ? "skipped: NSKeyedArchiver crashes on a 100,000-object cyclic graph and NSKeyedUnarchiver overflows the stack on any cycle (peers-on-linux.md)"
                : peerSkip
            let codableSkip = cyclic ? "skipped: Codable cannot express cycles (the bridge rejects them by design)" : nil
            let oursBox = Box<Data>(), codableBox = Box<Data>(), peerBox = Box<Data>()
            let walkFloor = graphFloor ? WalkFloor(spec) : nil

            var archives = [
                Implementation("KeyedArchive NSCoding-style", ours: true, units: ours) {
                    let data = try coder.get().archive()
                    oursBox.value = data
                    return data.count
                },
                Implementation("KeyedArchive Codable", ours: true, units: ours, skip: codableSkip) {
                    let data = try OurSide.archive(codableRoot)
                    codableBox.value = data
                    return data.count
                },
                Implementation("NSKeyedArchiver", units: peer, note: peerNote, skip: cyclicSkip) {
                    let data = Peer.keyedArchive(peerRoot ?? NSArray())
                    peerBox.value = data
                    return data.count
                },
                Implementation(
                    "PropertyListEncoder", units: ours,
                    skip: "not run: it copies every shared instance at each reference, so a graph with shared friends expands exponentially"
                ) { 0 },
            ]
            if let walkFloor {
                archives.append(Implementation(
                    "walk floor", units: ours,
                    note: "reference: the graph walked alone (each person copied out, each friend identified by an identity-table probe; no archive format)"
                ) {
                    walkFloor.walk()
                })
            }
            operations.append(BenchmarkOperation(workload, "\(kind) archive", check: .bytes, archives))
            var unarchives = [
                Implementation("KeyedArchive NSCoding-style", ours: true, units: ours, prepare: {
                    if oursBox.value == nil { oursBox.value = try coder.get().archive() }
                }) {
                    try coder.get().unarchive(oursBox.value ?? Data())
                },
                Implementation("KeyedArchive Codable", ours: true, units: ours, skip: codableSkip, prepare: {
                    if codableBox.value == nil { codableBox.value = try OurSide.archive(codableRoot) }
                }) {
                    try OurSide.unarchive([CodablePerson].self, from: codableBox.value ?? Data()).count
                },
                Implementation("NSKeyedUnarchiver", units: peer, note: peerNote, skip: cyclicSkip, prepare: {
                    if peerBox.value == nil { peerBox.value = Peer.keyedArchive(peerRoot ?? NSArray()) }
                }) {
                    let root = try Peer.keyedUnarchive(peerBox.value ?? Data(), classes: [PeerPerson.self]) as? NSArray
                    return root?.count ?? 0
                },
            ]
            if graphFloor {
                let floor = GraphFloor(spec)
                unarchives.append(Implementation(
                    "graph floor", units: ours,
                    note: "reference: the decoded graph alone (people made, named from UTF-8 bytes, linked, released; no archive read)"
                ) {
                    floor.makeGraph()
                })
            }
            operations.append(BenchmarkOperation(workload, "\(kind) unarchive", check: .objects, unarchives))
            if friendLists && !cyclic {
                operations.append(listedUnarchive(spec: spec, peerSpec: peerSpec, ours: ours, peer: peer, peerNote: peerNote, workload: workload))
            }
        }
        return operations
    }
}
