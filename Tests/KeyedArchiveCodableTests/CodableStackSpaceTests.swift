import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The Codable decoder recurses through the types' own `init(from:)` as deep as the archive
/// nests, so `maximumDepth` bounds the levels but not the bytes: a chain near the limit
/// overflowed a 256 KiB stack (SIGSEGV). It now throws while stack is left.
final class CodableStackSpaceTests: XCTestCase {
    private enum Outcome: Sendable, Equatable {
        case decoded(Int)
        case failed(String)
    }

    func testADeepChainStopsBeforeASmallStackRunsOut() throws {
        let data = try KeyedArchiver.archivedData(withRootObject: Link.chain(400))
        let decode: @Sendable () -> Outcome = {
            do {
                var node: Link? = try KeyedUnarchiver.unarchivedObject(ofType: Link.self, from: data)
                var count = 0
                while let current = node { (count, node) = (count + 1, current.next) }
                return .decoded(count)
            } catch {
                return .failed("\(error)")
            }
        }
        let small = SmallStackThread.run(stackSize: 256 << 10, decode)
        guard case .failed(let message) = small else { return XCTFail("\(small)") }
        XCTAssertTrue(message.contains("more stack than this thread has left"), message)
        XCTAssertEqual(SmallStackThread.run(stackSize: 64 << 20, decode), .decoded(400))
    }
}
