import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The unarchiver and the resolver recurse as deep as the archive nests; `maximumDepth`
/// bounds the levels, not the bytes. A 3.5 KB archive of 150 nested arrays overflowed a
/// 512 KiB stack (Apple's default for secondary threads) in a release build, a crash
/// (SIGSEGV) from input; they now throw `depthLimitExceeded` while stack is left.
final class StackSpaceTests: XCTestCase {
    private static let smallStack = 512 << 10

    /// An archive of `depth` arrays, each holding the next.
    private func nestedArrays(_ depth: Int) throws -> Data {
        var value: [Any] = ["leaf"]
        for _ in 1..<depth { value = [value] }
        return try KeyedArchiver.archivedData(withRootObject: value, format: .binary)
    }

    private enum Outcome: Sendable, Equatable {
        case decoded
        case depthLimit(String)
        case other(String)
    }

    private static func outcome(_ body: () throws -> Void) -> Outcome {
        do {
            try body()
            return .decoded
        } catch let error as KeyedArchiveError where error.code == .depthLimitExceeded {
            return .depthLimit(error.message)
        } catch {
            return .other("\(error)")
        }
    }

    func testDeepArchivesStopBeforeASmallStackRunsOut() throws {
        let deep = try nestedArrays(200)
        let shallow = try nestedArrays(12)
        let decoders: [(String, @Sendable (Data) throws -> Void)] = [
            ("unarchiver", { @Sendable data in _ = try KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .string], from: data) }),
            ("resolver", { @Sendable data in _ = try ArchiveResolver.resolve(data) }),
        ]
        for (name, decode) in decoders {
            // On a 512 KiB stack: the deep one stops with a clear error, the shallow one decodes.
            let small = SmallStackThread.run(stackSize: Self.smallStack) { Self.outcome { try decode(deep) } }
            guard case .depthLimit(let message) = small else { return XCTFail("\(name): \(small)") }
            XCTAssertTrue(message.contains("stack"), message)
            XCTAssertEqual(SmallStackThread.run(stackSize: Self.smallStack) { Self.outcome { try decode(shallow) } }, .decoded, name)
            // With room (64 MiB), the same archive decodes: the limit is the stack, not the depth.
            XCTAssertEqual(SmallStackThread.run(stackSize: 64 << 20) { Self.outcome { try decode(deep) } }, .decoded, name)
        }
    }
}
