import KeyedArchive
import Foundation

/// Our side of every workload: the only place the harness calls KeyedArchive.
///
/// APIs that have not landed yet throw `NotImplementedYet`, and the table shows
/// "n/a (not implemented yet)". To enable one when it lands, replace the `throw` line with the
/// call written in the comment above it; nothing else in the harness changes.
public enum OurSide {
    // MARK: Property lists (issue 2)

    /// Reads a property list in any format.
    public static func decode(_ data: Data) throws -> PropertyListValue {
        try PropertyList.decode(data)
    }

    /// Writes a property list.
    public static func encode(_ value: PropertyListValue, format: PropertyListFormat) throws -> Data {
        try PropertyList.encode(value, format: format)
    }

    /// Converts a property list to `format` in one call (binary to XML streams, without a tree).
    public static func convert(_ data: Data, to format: PropertyListFormat) throws -> Data {
        try PropertyList.convert(data, to: format)
    }

    // MARK: Codable bridge (issue 4)

    /// Archives an `Encodable` value as an NSKeyedArchiver-format archive.
    public static func archive<T: Encodable>(_ value: T) throws -> Data {
        try KeyedArchiver.archivedData(withRootObject: value)
    }

    /// Unarchives a `Decodable` value with the default limits.
    public static func unarchive<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        try KeyedUnarchiver.unarchivedObject(ofType: type, from: data)
    }

    /// Unarchives a `Decodable` value with caller-chosen limits: the 10^6-record scaling archive
    /// (408 MB, 21.7 M objects) is above the default `maximumObjectCount` of 2^24, so the scaling
    /// run passes raised limits there, as a caller who expects such files would.
    public static func unarchive<T: Decodable>(_ type: T.Type, from data: Data, limits: DecodingLimits) throws -> T {
        try KeyedUnarchiver.unarchivedObject(ofType: type, from: data, limits: limits)
    }

    // MARK: NSCoding-style object graphs (issue 3)

    /// Archives Foundation-style values (here nested `[Any]` arrays of numbers) with the keyed archiver.
    public static func archiveObject(_ root: Any) throws -> Data {
        try KeyedArchiver.archivedData(withRootObject: root, format: .binary)
    }

    /// Unarchives nested arrays of numbers; returns the root array's count.
    public static func unarchiveNestedArrays(_ data: Data) throws -> Int {
        (try KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .number], from: data) as? [Any])?.count ?? -1
    }

    /// Builds (untimed) our object graph for `spec` and returns the timed archive/unarchive steps.
    ///
    /// ENABLE (issue 3): define a `Person` class adopting the graph layer's coding protocol
    /// (name, age, score as inline primitives; friends under "friend0"..."friend2", exactly as
    /// `PeerPerson.encode(with:)` does), build `spec.count` instances, link `spec.friends`
    /// (cycles included when `spec.cyclic`), and return closures that archive the root array
    /// with the keyed archiver and unarchive it (returning the number of people decoded).
    public static func graphCoder(for spec: GraphSpec) throws -> GraphCoder {
        let graph = LinkedPeople(spec)
        return GraphCoder(
            archive: { try KeyedArchiver.archivedData(withRootObject: graph.people, format: .binary) },
            unarchivePeople: { data in
                let unarchiver = try KeyedUnarchiver(data: data)
                unarchiver.setClass(ArchivedPerson.self, forClassName: ArchivedPerson.archivedClassName)
                return try unarchiver.decodeArrayOfObjects(ofClass: ArchivedPerson.self, forKey: "root") ?? []
            },
            cyclic: spec.cyclic)
    }
}

extension OurSide {
    /// The class name of ``ListedPerson`` in an archive.
    public static var listedPersonClassName: String { ListedPerson.archivedClassName }

    /// Archives the people of `spec` with their friends in arrays (untimed: the input of the
    /// "friends in arrays" row).
    public static func listedGraphArchive(for spec: GraphSpec) throws -> Data {
        let people = (0..<spec.count).map { ListedPerson(name: spec.names[$0], age: spec.ages[$0], score: spec.scores[$0]) }
        for (index, person) in people.enumerated() { person.friends = spec.friends[index].map { people[$0] } }
        defer { for person in people { person.friends = [] } }
        return try KeyedArchiver.archivedData(withRootObject: people, format: .binary)
    }

    /// Unarchives an archive of ``listedGraphArchive(for:)``; returns the number of people.
    public static func listedGraphUnarchive(_ data: Data) throws -> Int {
        let unarchiver = try KeyedUnarchiver(data: data)
        unarchiver.setClass(ListedPerson.self, forClassName: ListedPerson.archivedClassName)
        return try unarchiver.decodeArrayOfObjects(ofClass: ListedPerson.self, forKey: "root")?.count ?? 0
    }
}

/// Our side's Person of the "friends in arrays" row: `PeerListedPerson`'s fields and keys, its
/// friends in one array, decoded in phase 2 as an array of objects.
final class ListedPerson: ArchivedPerson {
    override class var archivedClassName: String { "ListedPerson" }

    override func encode(with coder: KeyedArchiver) throws {
        try encodeScalars(with: coder)
        try coder.encode(friends, forKey: "friends")
    }

    override func decodeReferences(with coder: KeyedUnarchiver) throws {
        friends = try coder.decodeArrayOfObjects(ofClass: ListedPerson.self, forKey: "friends") ?? []
    }
}

/// Our side's W2 Person: the same fields and keys as `PeerPerson`, through ``KeyedArchiving``.
/// Friends are decoded in phase 2 so that cyclic graphs come back too. (Not final only for
/// ``ListedPerson``, which stores its friends in an array.)
class ArchivedPerson: KeyedArchiving {
    class var archivedClassName: String { "Person" }
    var name: String
    var age: Int
    var score: Double
    var friends: [ArchivedPerson] = []

    init(name: String, age: Int, score: Double) {
        self.name = name
        self.age = age
        self.score = score
    }

    func encode(with coder: KeyedArchiver) throws {
        try encodeScalars(with: coder)
        for (index, friend) in friends.enumerated() { try coder.encode(friend, forKey: Self.friendKeys[index]) }
    }

    /// The fields other than the friends.
    final func encodeScalars(with coder: KeyedArchiver) throws {
        try coder.encode(name, forKey: "name")
        coder.encode(age, forKey: "age")
        coder.encode(score, forKey: "score")
    }

    required init(coder: KeyedUnarchiver) throws {
        name = try coder.decodeObject(of: String.self, forKey: "name") ?? ""
        age = try coder.decodeInt(forKey: "age")
        score = try coder.decodeDouble(forKey: "score")
    }

    func decodeReferences(with coder: KeyedUnarchiver) throws {
        for key in Self.friendKeys {
            if let friend = try coder.decodeObject(of: ArchivedPerson.self, forKey: key) { friends.append(friend) }
        }
    }

    private static let friendKeys = ["friend0", "friend1", "friend2"]
}

/// Timed steps of our NSCoding-style graph workload.
public struct GraphCoder {
    /// Archives the graph built from the spec.
    public var archive: () throws -> Data
    /// Unarchives an archive made by `archive` into the people of its root array.
    let unarchivePeople: (Data) throws -> [ArchivedPerson]
    /// Whether the graph has cycles (its release then cuts them, ``GraphRelease``).
    let cyclic: Bool

    /// Unarchives an archive made by `archive`, releases the graph as its user must, and
    /// returns the number of people in the root array.
    public func unarchive(_ data: Data) throws -> Int {
        GraphRelease.release(try unarchivePeople(data), cyclic: cyclic)
    }

    /// Unarchives as ``unarchive(_:)`` does and counts the people decoded and those still
    /// alive after the release (tests: a row must not leak its graph).
    public func unarchiveSurvivors(_ data: Data) throws -> (decoded: Int, alive: Int) {
        let survivors = try GraphRelease.survivors(cyclic: cyclic) { try unarchivePeople(data) }
        return (survivors.made, survivors.alive)
    }
}
