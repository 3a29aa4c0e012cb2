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

    /// The temporary file of a write that replaces a file got the old file's mode only after
    /// the whole write, and was 0644 (umask 022) until then: a 0600 file being replaced was
    /// readable by every user for as long as the write took. Checked from inside the write.
    func testAReplacedFileIsNeverMoreReadableWhileItIsWritten() throws {
        let target = directory.appendingPathComponent("secret.plist")
        func temporaryFiles() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix(".secret.plist.tmp-") }
        }
        func mode(_ path: String) -> mode_t {
            var info = stat()
            return stat(path, &info) == 0 ? info.st_mode & 0o7777 : 0o7777
        }
        for oldMode: mode_t in [0o600, 0o640, 0o2640] {
            try Data("old".utf8).write(to: target)
            XCTAssertEqual(chmod(target.path, oldMode), 0)
            var seen: [mode_t] = []
            try AtomicFile.write(to: target.path) { append in
                try [UInt8]("new".utf8).withUnsafeBytes { try append($0) }
                // Mid-write: the temporary file is there, with the old mode already.
                for name in try temporaryFiles() { seen.append(mode(directory.appendingPathComponent(name).path)) }
                try [UInt8](" contents".utf8).withUnsafeBytes { try append($0) }
            }
            XCTAssertEqual(seen, [oldMode])
            XCTAssertEqual(mode(target.path), oldMode)
            XCTAssertEqual(try String(contentsOf: target, encoding: .utf8), "new contents")
        }
        // A new file is written with its final mode from the start: the default less the umask.
        let fresh = directory.appendingPathComponent("fresh.plist")
        // The umask, read without setting it (the process's other threads may be creating files).
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("Umask:") }
        let mask = try XCTUnwrap(line.flatMap { mode_t($0.dropFirst(6).trimmingCharacters(in: .whitespaces), radix: 8) })
        var seenNew: [mode_t] = []
        try AtomicFile.write(to: fresh.path) { append in
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasPrefix(".fresh.plist.tmp-") {
                seenNew.append(mode(directory.appendingPathComponent(name).path))
            }
            try [UInt8]("x".utf8).withUnsafeBytes { try append($0) }
        }
        XCTAssertEqual(seenNew, [0o666 & ~mask])
        XCTAssertEqual(mode(fresh.path), 0o666 & ~mask)
        // A link is replaced by a file with its target's permission bits, not its set-ID bits.
        let linkTarget = directory.appendingPathComponent("target")
        try Data("t".utf8).write(to: linkTarget)
        XCTAssertEqual(chmod(linkTarget.path, 0o4750), 0)
        let link = directory.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: linkTarget)
        try AtomicFile.write(Data("replaced".utf8), to: link.path)
        var info = stat()
        XCTAssertEqual(lstat(link.path, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFREG)
        XCTAssertEqual(info.st_mode & 0o7777, 0o750)
    }
}
