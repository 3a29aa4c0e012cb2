import Foundation
import KeyedArchive
import XCTest

/// A container referenced from several places counts toward the depth limit wherever it is
/// referenced, not only where it was first decoded: otherwise a chain of shared containers,
/// each first met near the top, builds a value far deeper than the limit, which overflows the
/// stack when it is released.
final class SharedContainerDepthTests: XCTestCase {
    /// A binary plist of arrays only: `arrays[i]` lists the members of object `i` (object 0 is
    /// the top). Two-byte references, four-byte offsets.
    static func binaryArrays(_ arrays: [[Int]]) -> Data {
        var body = Array("bplist00".utf8)
        var offsets: [Int] = []
        for members in arrays {
            offsets.append(body.count)
            if members.count < 15 {
                body.append(0xA0 | UInt8(members.count))
            } else {
                body += [0xAF, 0x11, UInt8(members.count >> 8), UInt8(members.count & 0xFF)]
            }
            for member in members { body += [UInt8(member >> 8), UInt8(member & 0xFF)] }
        }
        let tableOffset = body.count
        for offset in offsets { body += (0..<4).map { UInt8(truncatingIfNeeded: offset >> (24 - 8 * $0)) } }
        body += [0, 0, 0, 0, 0, 0, 4, 2]
        for field in [arrays.count, 0, tableOffset] { body += (0..<8).map { UInt8(truncatingIfNeeded: field >> (56 - 8 * $0)) } }
        return Data(body)
    }

    /// `count` chains of `length` nested arrays; the innermost array of each holds the previous
    /// chain's head; the top lists every head. Each array is first met at most `length` deep,
    /// but the value is `count * length + 1` deep.
    static func chains(count: Int, length: Int) -> Data {
        var arrays: [[Int]] = [(0..<count).map { 1 + $0 * length }]
        for chain in 0..<count {
            let head = 1 + chain * length
            for level in 0..<length {
                if level < length - 1 {
                    arrays.append([head + level + 1])
                } else {
                    arrays.append(chain == 0 ? [] : [head - length])
                }
            }
        }
        return binaryArrays(arrays)
    }

    private func assertTooDeep(_ data: Data, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try BinaryPropertyListReader.read(data), file: file, line: line) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .depthLimitExceeded, "\(error)", file: file, line: line)
        }
        XCTAssertThrowsError(try PropertyList.convert(data, to: .xml), file: file, line: line) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .depthLimitExceeded, "\(error)", file: file, line: line)
        }
    }

    func testSharedChainsDeeperThanTheLimitAreRefused() {
        // Two chains of 300: each under the limit of 512, together 601 deep.
        assertTooDeep(Self.chains(count: 2, length: 300))
    }

    func testSharedChainsFarDeeperThanTheLimitAreRefusedInsteadOfCrashing() {
        // 60,001 deep from a 480 KB file: the value crashed the process when it was released.
        assertTooDeep(Self.chains(count: 120, length: 500))
    }

    /// A shared chain `height` arrays tall referenced at the top and again `depth` levels down,
    /// against the same tree with no sharing (the chain written out twice): both read, or both
    /// fail the same way, at every depth around the limit.
    func testASharedContainerCountsAsDeepAsTheSameTreeWithoutSharing() throws {
        let limits = DecodingLimits(maximumDepth: 10)
        var outcomes = (read: 0, refused: 0)
        for height in 1...4 {
            for depth in 1...10 {
                func tree(shared: Bool) -> Data {
                    // Object 0 (the top): [chain, wrapper 1]; wrappers 1..<depth, each the
                    // next's parent, the last holding the second use of the chain, which thus
                    // starts `depth` levels below the top (the first use: one level below).
                    let chainStart = depth
                    let second = shared ? chainStart : chainStart + height
                    var arrays: [[Int]] = [[chainStart, depth > 1 ? 1 : second]]
                    for wrapper in stride(from: 1, to: depth, by: 1) { arrays.append([wrapper + 1 < depth ? wrapper + 1 : second]) }
                    for copy in 0..<(shared ? 1 : 2) {
                        let start = chainStart + copy * height
                        for level in 0..<height { arrays.append(level < height - 1 ? [start + level + 1] : []) }
                    }
                    return Self.binaryArrays(arrays)
                }
                let unshared = Result { try BinaryPropertyListReader.read(tree(shared: false), limits: limits) }
                let shared = Result { try BinaryPropertyListReader.read(tree(shared: true), limits: limits) }
                switch (unshared, shared) {
                case (.success(let a), .success(let b)):
                    XCTAssertEqual(a, b, "height \(height), depth \(depth)")
                    outcomes.read += 1
                case (.failure(let a), .failure(let b)):
                    XCTAssertEqual((a as? PropertyListError)?.code, .depthLimitExceeded, "height \(height), depth \(depth): \(a)")
                    XCTAssertEqual((b as? PropertyListError)?.code, .depthLimitExceeded, "height \(height), depth \(depth): \(b)")
                    outcomes.refused += 1
                default:
                    XCTFail("height \(height), depth \(depth): unshared \(unshared), shared \(shared)")
                }
            }
        }
        // Both sides of the limit were met: depth + height up to 10 reads (the deepest array at
        // level 9), past it is refused.
        XCTAssertEqual(outcomes.read, (1...4).map { height in (1...10).filter { $0 + height <= 10 }.count }.reduce(0, +))
        XCTAssertEqual(outcomes.refused, 40 - outcomes.read)
    }
}
