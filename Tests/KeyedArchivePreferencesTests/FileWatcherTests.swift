#if canImport(Glibc)
import Foundation
import Glibc
@testable import KeyedArchivePreferences
import KeyedArchivePropertyList
import XCTest

/// The inotify watcher: what a batch of events means, and observers that keep hearing of
/// other processes' changes after the directory itself was removed or moved away.
final class FileWatcherTests: PreferencesTestCase {
    /// An event as the kernel lays it out: `wd`, `mask`, `cookie`, `len`, then `len` bytes of
    /// name padded with NULs.
    private func event(watch: Int32, mask: Int32, name: String = "", paddedTo length: Int? = nil) -> [UInt8] {
        var nameBytes = Array(name.utf8)
        if !name.isEmpty { nameBytes += [UInt8](repeating: 0, count: (length ?? (nameBytes.count + 4) / 4 * 4) - nameBytes.count) }
        var bytes: [UInt8] = []
        for word in [UInt32(bitPattern: watch), UInt32(bitPattern: mask), 0, UInt32(nameBytes.count)] {
            withUnsafeBytes(of: word.littleEndian) { bytes += $0 }
        }
        return bytes + nameBytes
    }

    private func summary(_ bytes: [UInt8], watch: Int32 = 1) -> InotifyEventSummary {
        bytes.withUnsafeBytes { InotifyEventSummary.of($0, watch: watch, names: ["d.plist"]) }
    }

    func testEventsThatConcernTheStore() {
        XCTAssertEqual(MemoryLayout<inotify_event>.size, 16)
        XCTAssertEqual(summary(event(watch: 1, mask: IN_MOVED_TO, name: "d.plist")), .init(relevant: true))
        XCTAssertEqual(summary(event(watch: 1, mask: IN_CLOSE_WRITE, name: "other.plist")), .init())
        XCTAssertEqual(
            summary(event(watch: 1, mask: IN_CREATE, name: "a") + event(watch: 1, mask: IN_CLOSE_WRITE, name: "d.plist", paddedTo: 32)),
            .init(relevant: true))
        // Events were dropped: any of them may have named the file.
        XCTAssertEqual(summary(event(watch: -1, mask: IN_Q_OVERFLOW)), .init(relevant: true))
        // The directory's watch ended (removed, moved away, unmounted); a watch that is no
        // longer ours ending means nothing.
        for mask in [IN_IGNORED, IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT] {
            XCTAssertEqual(summary(event(watch: 1, mask: mask)), .init(relevant: true, watchLost: true), "mask \(mask)")
            XCTAssertEqual(summary(event(watch: 1, mask: mask), watch: 2), .init(), "mask \(mask)")
        }
        // An event cut short by the end of the bytes read is read no further than the bytes.
        let whole = event(watch: 1, mask: IN_MOVED_TO, name: "d.plist", paddedTo: 64)
        for length in 0..<whole.count { _ = summary(Array(whole[..<length])) }
        XCTAssertEqual(summary(Array(whole[..<20])), .init())
    }

    /// Another process writes after the directory was removed, or moved away, and made again:
    /// the observer hears of it. The watch on the old directory ended with it (it was moved
    /// along with the directory), and nothing was told any more.
    func testObserverSeesChangesAfterTheDirectoryIsMadeAgain() throws {
        for (round, moveAway) in [false, true].enumerated() {
            let domain = "observed\(round)"
            let store = try makeStore(domain)
            let values = Protected<[String?]>([])
            let observation = store.observe("Color") { value in values.withLock { $0.append(value?.stringValue) } }
            defer { observation.cancel() }
            func waitFor(_ value: String?, _ what: String) {
                let deadline = Date().addingTimeInterval(15)
                while values.withLock({ $0.last }) != .some(value), Date() < deadline { usleep(10_000) }
                XCTAssertEqual(values.withLock { $0.last }, .some(value), "\(what), directory \(moveAway ? "moved away" : "removed")")
            }
            XCTAssertEqual(try run(["write", domain, "Color", "red"]).0, 0)
            waitFor("red", "first write")
            if moveAway {
                try FileManager.default.moveItem(atPath: directory, toPath: directory + ".old")
            } else {
                try FileManager.default.removeItem(atPath: directory)
            }
            waitFor(nil, "the file gone with its directory")
            // karchive makes the directory again.
            XCTAssertEqual(try run(["write", domain, "Color", "teal"]).0, 0)
            waitFor("teal", "write into the new directory")
            try? FileManager.default.removeItem(atPath: directory + ".old")
        }
    }
}
#endif
