import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// A link in a chain decoded in phase 2, so a long chain never nests.
private final class ChainLink: KeyedArchiving {
    static var archivedClassName: String { "ChainLink" }
    var index: Int
    var next: ChainLink?
    init(index: Int) { self.index = index }
    func encode(with coder: KeyedArchiver) throws {
        coder.encode(index, forKey: "index")
        try coder.encode(next, forKey: "next")
    }
    init(coder: KeyedUnarchiver) throws { index = try coder.decodeInt(forKey: "index") }
    func decodeReferences(with coder: KeyedUnarchiver) throws { next = try coder.decodeObject(of: ChainLink.self, forKey: "next") }
}

/// A node that fails its phase 2 when its label says so, and counts how often phase 2 ran.
private final class FailingNode: KeyedArchiving {
    static var archivedClassName: String { "FailingNode" }
    var label: String
    var next: FailingNode?
    var phase2Runs = 0
    init(label: String) { self.label = label }
    func encode(with coder: KeyedArchiver) throws {
        try coder.encode(label, forKey: "label")
        try coder.encode(next, forKey: "next")
    }
    init(coder: KeyedUnarchiver) throws { label = try coder.decodeObject(of: String.self, forKey: "label") ?? "" }
    func decodeReferences(with coder: KeyedUnarchiver) throws {
        phase2Runs += 1
        next = try coder.decodeObject(of: FailingNode.self, forKey: "next")
        if label == "fail" { throw KeyedArchiveError(.invalidObject, "refused by the test", path: "") }
    }
}

/// The archive layers' limits: the resolver counts string and data bytes at every use, and
/// decoding time stays linear on long chains and key-heavy dictionaries.
final class ArchiveLimitsTests: XCTestCase {
    static func sharedArrays(fan: Int, leaf: PropertyListValue) throws -> Data {
        try ArchiveFixtures.sharedArrays(fan: fan, leaf: leaf)
    }

    func testResolverCountsStringBytesAtEveryUse() throws {
        let data = try Self.sharedArrays(fan: 16, leaf: PropertyListValue(String(repeating: "s", count: 100)))
        let bytes = 16 * 16 * 100
        let resolved = try ArchiveResolver(data: data, limits: DecodingLimits(maximumExpandedByteCount: bytes)).resolve()
        XCTAssertEqual(resolved.arrayValue?.count, 16)
        XCTAssertThrowsError(try ArchiveResolver(data: data, limits: DecodingLimits(maximumExpandedByteCount: bytes - 1)).resolve()) { error in
            XCTAssertEqual((error as? KeyedArchiveError)?.code, .objectLimitExceeded, "\(error)")
        }
        // The generic unarchiver shares the decoded string instead of copying it, so only the
        // property-list layer counts (each string once here): a small limit is enough.
        let decoded = try KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .string], from: data, limits: DecodingLimits(maximumExpandedByteCount: 2_000))
        XCTAssertEqual((decoded as? [Any])?.count, 16)
    }

    /// A failed top-level decode leaves nothing half-built behind: a later decode of the same
    /// objects runs their phase 2 again instead of returning objects whose phase 2 never ran.
    /// (It also empties the fields of the ArchivedObjects it made, so cycles among them do not
    /// leak; the unarchiver fuzz target checks that under LeakSanitizer.)
    func testFailedDecodeLeavesNoHalfBuiltObjects() throws {
        let shared = FailingNode(label: "shared"), failing = FailingNode(label: "fail")
        shared.next = failing
        failing.next = shared
        let archiver = KeyedArchiver()
        try archiver.encode(failing, forKey: "bad")
        try archiver.encode(shared, forKey: "good")
        let unarchiver = try KeyedUnarchiver(data: try archiver.finishEncoding())
        XCTAssertThrowsError(try unarchiver.decodeTopLevelObject(of: [.type(FailingNode.self)], forKey: "bad"))
        // `shared` was built during the failed call and its phase 2 never ran (the failure
        // cleared the queue). Returning it from the cache would hand out `next == nil`; decoded
        // afresh, its phase 2 reaches the failing node again and fails the same way.
        XCTAssertThrowsError(try unarchiver.decodeTopLevelObject(of: [.type(FailingNode.self)], forKey: "good")) { error in
            XCTAssertTrue("\(error)".contains("refused by the test"), "\(error)")
        }
    }

    /// Reading the input built for `8n` takes less than 30 times as long as for `n` (8 when
    /// linear, 64 when quadratic; see `LinearTime.ratio`).
    private func assertLinear(_ name: String, n: Int, _ make: (Int) throws -> Data, _ read: (Data) throws -> Void) throws {
        let ratio = try LinearTime.ratio(n: n, make, read)
        print("linear-time check \(name): 8n/n time ratio \(String(format: "%.1f", ratio))")
        XCTAssertLessThan(ratio, 30, "\(name): 8n takes \(ratio) times as long as n")
    }

    func testLongChainsDecodeInLinearTime() throws {
        func chain(_ n: Int) throws -> Data {
            let links = (0..<n).map(ChainLink.init)
            for index in 0..<(n - 1) { links[index].next = links[index + 1] }
            return try KeyedArchiver.archivedData(withRootObject: links[0], format: .binary)
        }
        try assertLinear("unarchiver, chain of links", n: 250, chain) { data in
            var link = try KeyedUnarchiver.unarchivedObject(ofClass: ChainLink.self, from: data)
            var count = 0
            while let current = link {
                count += 1
                link = current.next
            }
            XCTAssertGreaterThanOrEqual(count, 250)
        }
    }

    func testKeyHeavyDictionariesDecodeInLinearTime() throws {
        // Keys sharing a 184-character prefix, through the unarchiver and the resolver.
        let prefix = String(repeating: "com.example.preference.", count: 8)
        func dictionary(_ n: Int) throws -> Data {
            var keyed: [String: Int] = [:]
            for index in 0..<n { keyed[prefix + String(index)] = index }
            return try KeyedArchiver.archivedData(withRootObject: keyed, format: .binary)
        }
        try assertLinear("unarchiver, NSDictionary keys with a long shared prefix", n: 400, dictionary) { data in
            _ = try KeyedUnarchiver.unarchivedObject(ofClasses: [.dictionary, .string, .number], from: data)
        }
        try assertLinear("resolver, NSDictionary keys with a long shared prefix", n: 400, dictionary) { data in
            _ = try ArchiveResolver.resolve(data)
        }
    }
}
