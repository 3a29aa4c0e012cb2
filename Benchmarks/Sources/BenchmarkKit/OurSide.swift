import KeyedArchive
import Foundation

/// Our side of every workload: the only place the harness calls KeyedArchive.
///
/// APIs that have not landed yet throw `NotImplementedYet`, and the table shows
/// "n/a (not implemented yet)". To enable one when it lands, replace the `throw` line with the
/// call written in the comment above it; nothing else in the harness changes.
public enum OurSide {
    // MARK: Property lists (issue 2): the API exists; the codecs are placeholders until they land.

    /// Reads a property list in any format.
    public static func decode(_ data: Data) throws -> PropertyListValue {
        try PropertyList.decode(data)
    }

    /// Writes a property list.
    public static func encode(_ value: PropertyListValue, format: PropertyListFormat) throws -> Data {
        try PropertyList.encode(value, format: format)
    }

    // MARK: Codable bridge (issue 4)

    /// Archives an `Encodable` value as an NSKeyedArchiver-format archive.
    public static func archive<T: Encodable>(_ value: T) throws -> Data {
        // ENABLE (issue 4): return try KeyedArchiver.archivedData(withRootObject: value)
        throw NotImplementedYet("KeyedArchiver.archivedData(withRootObject:) (Codable bridge, issue 4)")
    }

    /// Unarchives a `Decodable` value.
    public static func unarchive<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        // ENABLE (issue 4): return try KeyedUnarchiver.unarchivedObject(ofType: type, from: data)
        throw NotImplementedYet("KeyedUnarchiver.unarchivedObject(ofType:from:) (Codable bridge, issue 4)")
    }

    // MARK: NSCoding-style object graphs (issue 3)

    /// Builds (untimed) our object graph for `spec` and returns the timed archive/unarchive steps.
    ///
    /// ENABLE (issue 3): define a `Person` class adopting the graph layer's coding protocol
    /// (name, age, score as inline primitives; friends under "friend0"..."friend2", exactly as
    /// `PeerPerson.encode(with:)` does), build `spec.count` instances, link `spec.friends`
    /// (cycles included when `spec.cyclic`), and return closures that archive the root array
    /// with the keyed archiver and unarchive it (returning the number of people decoded).
    public static func graphCoder(for spec: GraphSpec) throws -> GraphCoder {
        throw NotImplementedYet("keyed archiver NSCoding-style API (issue 3)")
    }
}

/// Timed steps of our NSCoding-style graph workload.
public struct GraphCoder {
    /// Archives the graph built from the spec.
    public var archive: () throws -> Data
    /// Unarchives an archive made by `archive`; returns the number of people in the root array.
    public var unarchive: (Data) throws -> Int

    /// Steps.
    public init(archive: @escaping () throws -> Data, unarchive: @escaping (Data) throws -> Int) {
        self.archive = archive
        self.unarchive = unarchive
    }
}
