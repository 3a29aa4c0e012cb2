import Foundation
import XCTest
@testable import KeyedArchivePropertyList

/// `AtomicFile.read`: whole files, large ones read by two threads at once, checked against
/// Foundation's `Data(contentsOf:)`; and the queue through which a second thread hands over work.
final class FileReadingTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("file-reading-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    /// `count` bytes that differ from place to place, so that a half read into the wrong place
    /// or twice cannot go unnoticed.
    private func bytes(_ count: Int, seed: UInt64) -> Data {
        var state = seed | 1
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            for index in buffer.indices {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                buffer[index] = UInt8(truncatingIfNeeded: state >> 56)
            }
        }
        return data
    }

    func testFilesOfEverySizeReadAsFoundationReadsThem() throws {
        let threshold = AtomicFile.twoThreadReadLength
        let sizes = [0, 1, 4095, 4096, 4097, 65_537, threshold - 1, threshold, threshold + 1, threshold + 4097, 3 * threshold / 2 + 7]
        for (index, size) in sizes.enumerated() {
            let url = directory.appendingPathComponent("file-\(size)")
            try bytes(size, seed: UInt64(index + 1)).write(to: url)
            let read = try AtomicFile.read(url.path, limit: .max)
            XCTAssertEqual(read.count, size, "size \(size)")
            XCTAssertTrue(read == (try Data(contentsOf: url)), "size \(size): not the file's bytes")
        }
    }

    func testTheLimitRefusesLongerFiles() throws {
        let url = directory.appendingPathComponent("limited")
        let size = AtomicFile.twoThreadReadLength + 3
        try bytes(size, seed: 7).write(to: url)
        XCTAssertEqual(try AtomicFile.read(url.path, limit: size).count, size)
        for limit in [size - 1, 10, 0] {
            XCTAssertThrowsError(try AtomicFile.read(url.path, limit: limit), "limit \(limit)") { error in
                XCTAssertEqual((error as? FileAccessError)?.code, EFBIG, "limit \(limit)")
            }
        }
    }

    func testMissingFilesAndDirectoriesAreErrors() throws {
        XCTAssertThrowsError(try AtomicFile.read(directory.appendingPathComponent("absent").path, limit: .max)) { error in
            XCTAssertEqual((error as? FileAccessError)?.code, ENOENT)
        }
        XCTAssertThrowsError(try AtomicFile.read(directory.path, limit: .max)) { error in
            XCTAssertNotNil(error as? FileAccessError)
        }
    }

    #if os(Linux)
    func testFilesWhoseSizeIsNotKnownAreReadToTheEnd() throws {
        // `/proc` files report a size of 0 and are read until the end.
        let status = try AtomicFile.read("/proc/self/status", limit: .max)
        XCTAssertTrue(String(decoding: status, as: UTF8.self).contains("VmRSS"))
        // A named pipe cannot be read at an offset: read in sequence.
        let fifo = directory.appendingPathComponent("fifo").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let expected = bytes(200_000, seed: 9)
        let writer = Thread {
            let descriptor = open(fifo, O_WRONLY)
            expected.withUnsafeBytes { buffer in
                var done = 0
                while done < buffer.count {
                    let count = write(descriptor, buffer.baseAddress! + done, buffer.count - done)
                    if count <= 0 { break }
                    done += count
                }
            }
            close(descriptor)
        }
        writer.start()
        XCTAssertTrue(try AtomicFile.read(fifo, limit: .max) == expected)
    }
    #endif

    func testTheHandoffQueueKeepsTheOrderAcrossThreads() {
        let queue = HandoffQueue<Int>()
        let count = 100_000
        let producer = Thread {
            for value in 0..<count { queue.put(value) }
        }
        producer.start()
        var outOfOrder = 0
        for expected in 0..<count where queue.take() != expected { outOfOrder += 1 }
        XCTAssertEqual(outOfOrder, 0)
    }
}
