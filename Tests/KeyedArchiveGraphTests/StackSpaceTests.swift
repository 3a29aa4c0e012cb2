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

    /// Smaller stacks: on 160 KiB (a debug build) or 64 KiB (a release build) the first 16
    /// levels, unchecked, overflowed; the check at 8 stops them.
    func testSmallerStacksStopToo() throws {
        let deep = try nestedArrays(200)
        let outcome = SmallStackThread.run(stackSize: 160 << 10) {
            Self.outcome { _ = try KeyedUnarchiver.unarchivedObject(ofClasses: [.array, .string], from: deep) }
        }
        guard case .depthLimit = outcome else { return XCTFail("\(outcome)") }
    }

    /// An unknown class's field of 200 nested inline arrays with 15 nested NSArrays at the
    /// bottom: the objects were counted from depth 0 below the inline levels, went unchecked,
    /// and overflowed a 512 KiB stack in a debug build.
    func testObjectsBelowInlineNestingAreCountedFromItsDepth() throws {
        var inner: [Any] = ["leaf"]
        for _ in 1..<15 { inner = [inner] }
        let innerArchive = try KeyedArchiver.archivedData(withRootObject: inner, format: .binary)
        // The unknown class's field: the inner archive's root reference, wrapped in 200 inline
        // arrays, in an object of a class nothing registers.
        var envelope = try PropertyList.decode(innerArchive)
        guard case .dictionary(var fields) = envelope, case .array(var objects)? = fields["$objects"],
            let root = fields["$top"]?["root"] else { return XCTFail("unexpected archive shape") }
        var field: PropertyListValue = [root]
        for _ in 1..<200 { field = [field] }
        objects.append(["$classname": "Mystery", "$classes": ["Mystery", "NSObject"]])
        objects.append(["$class": .uid(UInt32(objects.count - 1)), "f": field])
        fields["$objects"] = .array(objects)
        fields["$top"] = ["root": .uid(UInt32(objects.count - 1))]
        envelope = .dictionary(fields)
        let data = try PropertyList.encode(envelope, format: .binary)
        let outcome = SmallStackThread.run(stackSize: Self.smallStack) {
            Self.outcome { _ = try KeyedUnarchiver.unarchivedObject(ofClasses: [.archivedObject, .array, .string], from: data) }
        }
        XCTAssertNotEqual(outcome, .other("crash"), "\(outcome)")
        if case .other(let message) = outcome { XCTFail(message) }
    }
}
