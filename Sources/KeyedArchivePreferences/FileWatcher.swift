import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Tells a store that files in its directory changed, without busy polling.
protocol FileWatcher: Sendable {
    func stop()
}

/// The best watcher for the platform: inotify on Linux, a DispatchSource on the directory on
/// Apple platforms, and a 1-second timer as the fallback when neither can be set up.
func makeFileWatcher(directory: String, names: Set<String>, onChange: @escaping @Sendable () -> Void) -> any FileWatcher {
    #if canImport(Glibc) || canImport(Musl)
    if let watcher = InotifyWatcher(directory: directory, names: names, onChange: onChange) { return watcher }
    #elseif canImport(Darwin)
    if let watcher = DirectorySourceWatcher(directory: directory, onChange: onChange) { return watcher }
    #endif
    return PollingWatcher(interval: 1, onChange: onChange)
}

/// Calls `onChange` on a timer; the store's stat check makes each call cheap.
final class PollingWatcher: FileWatcher, @unchecked Sendable {
    private let timer: DispatchSourceTimer

    init(interval: Double, onChange: @escaping @Sendable () -> Void) {
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
        timer.schedule(deadline: .now() + interval, repeating: interval)
        timer.setEventHandler(handler: onChange)
        timer.resume()
    }

    func stop() { timer.cancel() }
}

#if canImport(Darwin)
/// A vnode DispatchSource on the directory: fires when entries are added, renamed or removed
/// (the store's atomic rename is such a change).
final class DirectorySourceWatcher: FileWatcher, @unchecked Sendable {
    private let source: DispatchSourceFileSystemObject

    init?(directory: String, onChange: @escaping @Sendable () -> Void) {
        let descriptor = open(directory, O_EVTONLY)
        guard descriptor >= 0 else { return nil }
        source = DispatchSource.makeFileSystemObjectSource(fileDescriptor: descriptor, eventMask: [.write, .rename, .delete], queue: DispatchQueue.global())
        source.setEventHandler(handler: onChange)
        source.setCancelHandler { close(descriptor) }
        source.resume()
    }

    func stop() { source.cancel() }
}
#endif

#if canImport(Glibc) || canImport(Musl)
/// What one batch of inotify events means for the store.
struct InotifyEventSummary: Equatable {
    /// An event named a watched file, or events may have been dropped (the queue overflowed),
    /// or the directory itself went away: the store should look at its files.
    var relevant = false
    /// The directory's watch is gone (the directory was removed, moved away or unmounted): the
    /// watcher must watch the path again, or it would hear of no later change.
    var watchLost = false

    /// Reads the events in `events` (the bytes `read(2)` returned) for the watch `watch`.
    /// Lengths come from the events and are kept within `events` (the kernel returns whole
    /// events; a name cut short by the end would be matched as far as it goes).
    static func of(_ events: UnsafeRawBufferPointer, watch: Int32, names: Set<String>) -> InotifyEventSummary {
        var summary = InotifyEventSummary()
        // struct inotify_event { int wd; uint32_t mask; uint32_t cookie; uint32_t len; char name[]; }
        let header = MemoryLayout<inotify_event>.size
        var offset = 0
        while header <= events.count - offset {
            let descriptor = events.loadUnaligned(fromByteOffset: offset, as: Int32.self)
            let mask = events.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let length = Int(events.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            let nameStart = offset + header
            let nameEnd = nameStart + min(length, events.count - nameStart)
            if mask & UInt32(IN_Q_OVERFLOW) != 0 {
                summary.relevant = true
            } else if descriptor == watch, mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT) != 0 {
                summary.relevant = true
                summary.watchLost = true
            } else if length > 0 {
                let name = String(decoding: events[nameStart..<nameEnd].prefix { $0 != 0 }, as: UTF8.self)
                if names.contains(name) { summary.relevant = true }
            }
            offset = nameEnd
        }
        return summary
    }
}

/// inotify on the directory (a file watch would be lost when the file is replaced by rename):
/// a thread blocks in poll(2) on the inotify descriptor and a stop pipe, and calls `onChange`
/// when an event names one of the watched files. When the directory's watch is lost (the
/// directory removed or moved away), the thread calls `onChange` and tries to watch the path
/// again once a second until it can, then calls `onChange` once more.
final class InotifyWatcher: FileWatcher, @unchecked Sendable {
    private static let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)
    private let inotify: Int32
    private let directory: String
    /// The directory's watch, or -1 while the path cannot be watched. Used by the watcher's
    /// thread only, once started.
    private var watch: Int32
    private let stopPipe: (read: Int32, write: Int32)
    private let names: Set<String>
    private let onChange: @Sendable () -> Void
    private let stopped = Protected(false)

    init?(directory: String, names: Set<String>, onChange: @escaping @Sendable () -> Void) {
        let descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        guard descriptor >= 0 else { return nil }
        let watch = inotify_add_watch(descriptor, directory, Self.mask)
        guard watch >= 0 else {
            close(descriptor)
            return nil
        }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else {
            close(descriptor)
            return nil
        }
        _ = fcntl(pipeEnds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipeEnds[1], F_SETFD, FD_CLOEXEC)
        inotify = descriptor
        self.directory = directory
        self.watch = watch
        stopPipe = (pipeEnds[0], pipeEnds[1])
        self.names = names
        self.onChange = onChange
        startThread()
    }

    private func startThread() {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            guard let context else { return nil }
            let watcher = Unmanaged<InotifyWatcher>.fromOpaque(context).takeRetainedValue()
            watcher.run()
            return nil
        }, context)
        if result == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<InotifyWatcher>.fromOpaque(context).release()
        }
    }

    private func run() {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var descriptors = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)]
        while !stopped.withLock({ $0 }) {
            let ready = poll(&descriptors, 2, watch >= 0 ? -1 : 1_000)
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if descriptors[1].revents != 0 { break }
            if ready == 0 {
                // Not watching: the directory may be back (another process's write makes it).
                if watchAgain() { onChange() }
                continue
            }
            guard descriptors[0].revents != 0 else { continue }
            var summary = InotifyEventSummary()
            while true {
                let count = buffer.withUnsafeMutableBytes { Glue.read(inotify, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                let batch = buffer.withUnsafeBytes { InotifyEventSummary.of(UnsafeRawBufferPointer(rebasing: $0[..<count]), watch: watch, names: names) }
                summary.relevant = summary.relevant || batch.relevant
                summary.watchLost = summary.watchLost || batch.watchLost
            }
            if summary.watchLost {
                // A directory moved away keeps its watch; drop it (its IN_IGNORED then names a
                // watch that is no longer ours) and watch what is at the path now, if anything.
                _ = inotify_rm_watch(inotify, watch)
                watch = -1
                _ = watchAgain()
            }
            if summary.relevant { onChange() }
        }
        close(inotify)
        close(stopPipe.read)
    }

    /// Watches the directory's path again; true when it could.
    private func watchAgain() -> Bool {
        watch = inotify_add_watch(inotify, directory, Self.mask)
        return watch >= 0
    }

    func stop() {
        let first = stopped.withLock { stopped -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = Glue.write(stopPipe.write, &byte, 1)
        close(stopPipe.write)
    }
}
#endif
