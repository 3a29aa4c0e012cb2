import Foundation
import KeyedArchive
import XCTest

/// Coding paths in decoding errors and in `codingPath`, against Foundation's decoders on the same
/// types: the path is what a user debugs a failed decode with.
final class CodingPathTests: XCTestCase {
    // An enum with payloads: its synthesized coding uses nested keyed containers.
    enum Shape: Codable { case circle(radius: Int), rect(width: Int, height: Int) }
    enum ShapeWithTextRadius: Codable { case circle(radius: String), rect(width: Int, height: Int) }
    enum ShapeWithDepth: Codable { case circle(radius: Int), rect(width: Int, height: Int, depth: Int) }
    struct Drawing<S: Codable>: Codable { var title: String; var shapes: [S] }

    /// A decode's failure as its kind and its path (string and integer values).
    struct Failure: Equatable, CustomStringConvertible {
        var kind: String
        var path: [String]
        var description: String { "\(kind) at \(path)" }

        init(_ error: any Error) {
            let context: DecodingError.Context?
            switch error as? DecodingError {
            case .typeMismatch(_, let c)?: (kind, context) = ("typeMismatch", c)
            case .valueNotFound(_, let c)?: (kind, context) = ("valueNotFound", c)
            case .keyNotFound(let key, let c)?: (kind, context) = ("keyNotFound(\(key.stringValue))", c)
            case .dataCorrupted(let c)?: (kind, context) = ("dataCorrupted", c)
            default: (kind, context) = ("\(error)", nil)
            }
            path = (context?.codingPath ?? []).map { $0.intValue.map { "#\($0)" } ?? $0.stringValue }
        }
    }

    /// The failures of ours, PropertyListDecoder and JSONDecoder decoding `value` as `Target`.
    func failures<Source: Codable, Target: Decodable>(
        _ value: Source, as target: Target.Type, file: StaticString = #filePath, line: UInt = #line
    ) throws -> [Failure] {
        var result: [Failure] = []
        let decodes: [() throws -> Void] = [
            { _ = try KeyedUnarchiver.unarchivedObject(ofType: target, from: try KeyedArchiver.archivedData(withRootObject: value)) },
            { _ = try PropertyListDecoder().decode(target, from: try PropertyListEncoder().encode(value)) },
            { _ = try JSONDecoder().decode(target, from: try JSONEncoder().encode(value)) },
        ]
        for decode in decodes {
            XCTAssertThrowsError(try decode(), file: file, line: line) { result.append(Failure($0)) }
        }
        return result
    }

    func testAnEnumPayloadsMismatchNamesTheCaseLikeFoundation() throws {
        let results = try failures(Shape.circle(radius: 3), as: ShapeWithTextRadius.self)
        XCTAssertEqual(results.first, Failure.expected("typeMismatch", ["circle", "radius"]))
        XCTAssertEqual(Set(results.map(\.path)).count, 1, "\(results)")
    }

    func testAMissingKeyInAnArrayOfEnumsNamesTheElementLikeFoundation() throws {
        let drawing = Drawing(title: "t", shapes: [Shape.circle(radius: 1), .rect(width: 2, height: 3)])
        let results = try failures(drawing, as: Drawing<ShapeWithDepth>.self)
        XCTAssertEqual(results.first, Failure.expected("keyNotFound(depth)", ["shapes", "#1", "rect"]))
        XCTAssertEqual(Set(results.map(\.path)).count, 1, "\(results)")
    }

    func testAMismatchAtTheRootHasAnEmptyPathLikeFoundation() throws {
        struct Number: Codable { var value: Int }
        struct Text: Codable { var value: String }
        let results = try failures(Number(value: 1), as: Text.self)
        XCTAssertEqual(results.first, Failure.expected("typeMismatch", ["value"]))
        XCTAssertEqual(Set(results.map(\.path)).count, 1, "\(results)")
    }

    /// Containers nested two deep, used after the call that made them returned, and a super
    /// decoder's: each reports its own path, whatever the key stack holds when it is used.
    struct Layered: Decodable {
        enum Keys: String, CodingKey { case outer, inner, leaf, base, other }
        var paths: [[String]] = []
        var failures: [Failure] = []

        init(from decoder: any Decoder) throws {
            func names(_ path: [any CodingKey]) -> [String] { path.map { $0.intValue.map { "#\($0)" } ?? $0.stringValue } }
            paths.append(names(decoder.codingPath))
            let top = try decoder.container(keyedBy: Keys.self)
            let outer = try top.nestedContainer(keyedBy: Keys.self, forKey: .outer)
            let inner = try outer.nestedContainer(keyedBy: Keys.self, forKey: .inner)
            let other = try top.nestedUnkeyedContainer(forKey: .other)
            paths.append(names(inner.codingPath))
            paths.append(names(other.codingPath))
            do { _ = try inner.decode(String.self, forKey: .leaf) } catch { failures.append(Failure(error)) }
            var list = other
            do { _ = try list.decode(String.self) } catch { failures.append(Failure(error)) }
            let base = try top.superDecoder(forKey: .base)
            paths.append(names(base.codingPath))
            let baseFields = try base.container(keyedBy: Keys.self)
            paths.append(names(baseFields.codingPath))
            do { _ = try baseFields.decode(String.self, forKey: .leaf) } catch { failures.append(Failure(error)) }
            do { _ = try baseFields.decode(Int.self, forKey: .other) } catch { failures.append(Failure(error)) }
        }
    }

    struct LayeredSource: Encodable {
        func encode(to encoder: any Encoder) throws {
            var top = encoder.container(keyedBy: Layered.Keys.self)
            var outer = top.nestedContainer(keyedBy: Layered.Keys.self, forKey: .outer)
            var inner = outer.nestedContainer(keyedBy: Layered.Keys.self, forKey: .inner)
            try inner.encode(7, forKey: .leaf)
            var other = top.nestedUnkeyedContainer(forKey: .other)
            try other.encode(8)
            var base = top.nestedContainer(keyedBy: Layered.Keys.self, forKey: .base)
            try base.encode(9, forKey: .leaf)
        }
    }

    func testNestedContainersAndSuperDecodersKeepTheirPathsLikeFoundation() throws {
        let ours = try KeyedUnarchiver.unarchivedObject(ofType: Layered.self, from: try KeyedArchiver.archivedData(withRootObject: LayeredSource()))
        let plist = try PropertyListDecoder().decode(Layered.self, from: try PropertyListEncoder().encode(LayeredSource()))
        let json = try JSONDecoder().decode(Layered.self, from: try JSONEncoder().encode(LayeredSource()))
        XCTAssertEqual(ours.paths, [[], ["outer", "inner"], ["other"], ["base"], ["base"]])
        XCTAssertEqual(ours.failures, [
            .expected("typeMismatch", ["outer", "inner", "leaf"]), .expected("typeMismatch", ["other", "#0"]),
            .expected("typeMismatch", ["base", "leaf"]), .expected("keyNotFound(other)", ["base"]),
        ])
        XCTAssertEqual(ours.paths, plist.paths)
        XCTAssertEqual(ours.failures, plist.failures)
        XCTAssertEqual(ours.paths, json.paths)
        XCTAssertEqual(ours.failures, json.failures)
    }
}

extension CodingPathTests {
    /// A container kept by one value and used while a sibling at the same depth decodes: the
    /// key stack then has the container's parent's length but another branch, and the
    /// container's key was pushed onto that branch (`[b, x, leaf]` for `[a, x, leaf]`).
    final class Escape: @unchecked Sendable {
        var container: KeyedDecodingContainer<EscapeKeys>?
        static let key = CodingUserInfoKey(rawValue: "escape")!
    }
    enum EscapeKeys: String, CodingKey { case a, b, x, leaf }

    struct Sibling: Decodable {
        init(from decoder: any Decoder) throws {
            guard let escaped = (decoder.userInfo[Escape.key] as? Escape)?.container else { return }
            _ = try escaped.decode(Int.self, forKey: .leaf)
        }
    }
    struct Keeper: Decodable {
        init(from decoder: any Decoder) throws {
            let top = try decoder.container(keyedBy: EscapeKeys.self)
            let a = try top.nestedContainer(keyedBy: EscapeKeys.self, forKey: .a)
            (decoder.userInfo[Escape.key] as? Escape)?.container = try a.nestedContainer(keyedBy: EscapeKeys.self, forKey: .x)
            _ = try top.decode(Sibling.self, forKey: .b)
        }
    }
    struct KeeperSource: Encodable {
        func encode(to encoder: any Encoder) throws {
            var top = encoder.container(keyedBy: EscapeKeys.self)
            var a = top.nestedContainer(keyedBy: EscapeKeys.self, forKey: .a)
            var x = a.nestedContainer(keyedBy: EscapeKeys.self, forKey: .x)
            try x.encode("text", forKey: .leaf)
            var b = top.nestedContainer(keyedBy: EscapeKeys.self, forKey: .b)
            try b.encode(1, forKey: .leaf)
        }
    }

    func testAContainerUsedDuringASiblingsDecodeKeepsItsOwnPath() throws {
        let ours = KeyedArchiveDecoder()
        ours.userInfo[Escape.key] = Escape()
        let peer = PropertyListDecoder()
        peer.userInfo[Escape.key] = Escape()
        var results: [Failure] = []
        XCTAssertThrowsError(try ours.decode(Keeper.self, from: try KeyedArchiver.archivedData(withRootObject: KeeperSource()))) { results.append(Failure($0)) }
        XCTAssertThrowsError(try peer.decode(Keeper.self, from: try PropertyListEncoder().encode(KeeperSource()))) { results.append(Failure($0)) }
        XCTAssertEqual(results, [.expected("typeMismatch", ["a", "x", "leaf"]), .expected("typeMismatch", ["a", "x", "leaf"])])
    }
}

extension CodingPathTests.Failure {
    static func expected(_ kind: String, _ path: [String]) -> Self {
        var failure = Self(CancellationError())
        failure.kind = kind
        failure.path = path
        return failure
    }
}
