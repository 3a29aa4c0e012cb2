#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file-system failure, with the path, what was being done and the system error number.
public struct FileAccessError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The file or directory involved.
    public var path: String
    /// What was being done, e.g. "cannot replace".
    public var operation: String
    /// `errno` at the time.
    public var code: Int32

    /// Creates an error; `code` defaults to the current `errno`.
    public init(path: String, operation: String, code: Int32 = errno) {
        self.path = path
        self.operation = operation
        self.code = code
    }

    /// `operation path: strerror(code)`.
    public var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
}

/// Whole-file reads and crash-safe whole-file replacement, shared by every layer that keeps
/// files (archive storage, the preferences store, the `karchive` tool).
///
/// A write goes to a temporary file in the same directory (so the rename cannot cross file
/// systems), is flushed with `fsync`, renamed over the target (atomic on POSIX), and the
/// directory is flushed so the rename itself survives a power loss. A reader, or a process killed
/// at any instant, sees the old contents or the new ones, never a mix. An existing file keeps its
/// permission bits, and its owner and group where the process may give them (root replacing a
/// user's file); a new file gets the default mode less the process's umask, as `open` gives.
package enum AtomicFile {
    /// Replaces the file at `path` with `bytes` atomically and durably.
    package static func write(_ bytes: UnsafeRawBufferPointer, to path: String, defaultMode: mode_t = 0o666) throws {
        try write(to: path, defaultMode: defaultMode) { append in try append(bytes) }
    }

    /// Replaces the file at `path` atomically and durably with the bytes `produce` passes, in
    /// order, to the function it is given; for outputs too large to hold in memory at once. If
    /// `produce` throws, the temporary file is removed and the old file is left as it was.
    package static func write(
        to path: String, defaultMode: mode_t = 0o666,
        producing produce: (_ append: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        let directory = parentDirectory(of: path)
        // A replaced file's temporary starts owner-only and takes the old file's owner and mode
        // before a byte is written: whoever may not read the old file must not read the new
        // one while it is written (a 0600 file converted in place was readable, 0644, for the
        // whole write). A new file starts with its final mode, the default less the umask.
        let existing = ExistingFile(path)
        let (descriptor, temporaryPath) = try createTemporaryFile(for: path, in: directory, mode: existing == nil ? defaultMode : 0o600)
        var renamed = false
        defer { if !renamed { unlink(temporaryPath) } }
        do {
            defer { close(descriptor) }
            if let existing { try existing.give(to: descriptor, temporaryPath: temporaryPath) }
            var writeback = Writeback()
            try produce { bytes in
                try writeFully(bytes, to: descriptor, path: temporaryPath) { writeback.wrote($0, to: descriptor) }
            }
            guard fsync(descriptor) == 0 else { throw FileAccessError(path: temporaryPath, operation: "cannot flush") }
        }
        guard rename(temporaryPath, path) == 0 else { throw FileAccessError(path: path, operation: "cannot replace") }
        renamed = true
        try syncDirectory(directory)
    }

    /// Whether `path` names something that exists and is neither a regular file nor a
    /// directory (through any links): a FIFO, a device, a socket, `/dev/stdout` on a pipe or a
    /// terminal. Such a destination cannot be replaced by a rename, and must not be (`/dev/null`
    /// would become a file); see ``writeDirectly(to:producing:)``.
    package static func isSpecialFile(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        let type = info.st_mode & S_IFMT
        return type != S_IFREG && type != S_IFDIR
    }

    /// Writes the bytes `produce` passes, in order, into the existing file at `path`, opened for
    /// writing as it is (`cp` writes a FIFO or a device this way): for destinations that
    /// ``isSpecialFile(_:)`` says cannot be replaced; nothing about it is atomic.
    package static func writeDirectly(
        to path: String, producing produce: (_ append: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        let descriptor = open(path, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileAccessError(path: path, operation: "cannot open") }
        defer { close(descriptor) }
        try writeDirectly(toDescriptor: descriptor, path: path, producing: produce)
    }

    /// Writes the bytes `produce` passes, in order, to an open descriptor (`path` names it in
    /// errors): `-o /dev/stdout` writes the process's own standard output this way.
    package static func writeDirectly(
        toDescriptor descriptor: Int32, path: String,
        producing produce: (_ append: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        try produce { bytes in try writeFully(bytes, to: descriptor, path: path) { _ in } }
    }

    /// Writes all of `bytes` to `descriptor`, retrying short and interrupted writes; `wrote` is
    /// told each amount written. A write of nothing is an error (EIO), not a reason to loop.
    private static func writeFully(
        _ bytes: UnsafeRawBufferPointer, to descriptor: Int32, path: String, wrote: (Int) -> Void
    ) throws {
        var offset = 0
        while offset < bytes.count, let base = bytes.baseAddress {
            let written = systemWrite(descriptor, base + offset, bytes.count - offset)
            if written <= 0 {
                if written < 0 && errno == EINTR { continue }
                throw FileAccessError(path: path, operation: "cannot write", code: written < 0 ? errno : EIO)
            }
            offset += written
            wrote(written)
        }
    }

    /// Replaces the file at `path` with `data` atomically and durably.
    package static func write(_ data: Data, to path: String, defaultMode: mode_t = 0o666) throws {
        try data.withUnsafeBytes { try write($0, to: path, defaultMode: defaultMode) }
    }

    /// Replaces the file at `path` with `bytes` atomically and durably.
    package static func write(_ bytes: [UInt8], to path: String, defaultMode: mode_t = 0o666) throws {
        try bytes.withUnsafeBytes { try write($0, to: path, defaultMode: defaultMode) }
    }

    /// Flushes a directory's entries (after a rename) to disk.
    package static func syncDirectory(_ directory: String) throws {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileAccessError(path: directory, operation: "cannot open directory") }
        defer { close(descriptor) }
        // Some file systems refuse fsync on directories (EINVAL); the rename is then as durable as they allow.
        if fsync(descriptor) != 0 && errno != EINVAL {
            throw FileAccessError(path: directory, operation: "cannot flush directory")
        }
    }

    /// Creates a directory and any missing parents with `mode` (existing ones are left alone).
    package static func createDirectories(_ path: String, mode: mode_t) throws {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, mode) != 0 && errno != EEXIST {
                throw FileAccessError(path: current, operation: "cannot create directory")
            }
        }
    }

    /// The whole file, refusing files longer than `limit` bytes without reading them all.
    ///
    /// A regular file goes straight into one buffer of its size. One of 8 MiB or more is read
    /// by two threads at once, half each, when the machine has a spare core: most of the time
    /// of a read is the kernel providing fresh pages for the buffer, and two cores do that
    /// faster (W3's 50 MB: 30 ms -> 20 ms). A file that shrinks meanwhile (a half comes back
    /// short) is read again from the start on one thread; one that grows is read on past its old
    /// size. Anything else (a pipe, a terminal, `/dev/stdin`) is read in sequence from where it
    /// stands.
    package static func read(_ path: String, limit: Int) throws -> Data {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileAccessError(path: path, operation: "cannot open") }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw FileAccessError(path: path, operation: "cannot read") }
        guard info.st_mode & S_IFMT == S_IFREG else {
            return try readToEnd(descriptor, into: try ReadBuffer(capacity: 1 << 16, path: path), atOffsets: false, limit: limit, path: path)
        }
        let size = Int(info.st_size)
        guard size <= limit else { throw FileAccessError(path: path, operation: "file too large:", code: EFBIG) }
        // A page more than the size, so that the read that finds the end has room to try.
        var buffer = try ReadBuffer(capacity: size &+ 4096, path: path)
        if size >= twoThreadReadLength, SecondThread<Int>.hasSpareCore {
            let base = buffer.base, half = size / 2
            let second = SecondThread { readFully(descriptor, into: base + half, count: size - half, at: half) }
            let first = readFully(descriptor, into: base, count: half, at: 0)
            let rest = second.join() ?? -Int(EIO)
            if first == half && rest == size - half {
                buffer.count = size
            } else if first < 0 || rest < 0 {
                throw FileAccessError(path: path, operation: "cannot read", code: Int32(truncatingIfNeeded: -min(first, rest)))
            }
        }
        // The rest: all of it unless read above, or what was added since `fstat`.
        return try readToEnd(descriptor, into: buffer, atOffsets: true, limit: limit, path: path)
    }

    /// Everything left to read on an open descriptor (standard input), in sequence, refusing
    /// more than `limit` bytes; when memory runs out the read fails (`ENOMEM`) instead of the
    /// process trapping, as `Data`'s growth does. `path` names the input in errors.
    package static func readToEnd(descriptor: Int32, path: String, limit: Int) throws -> Data {
        try readToEnd(descriptor, into: try ReadBuffer(capacity: 1 << 16, path: path), atOffsets: false, limit: limit, path: path)
    }

    /// Files this long and longer are read by two threads.
    package static let twoThreadReadLength = 8 << 20

    /// Reads `count` bytes at `offset` into `target`: the number read (short at the end of the
    /// file), or minus the error number.
    private static func readFully(_ descriptor: Int32, into target: UnsafeMutableRawPointer, count: Int, at offset: Int) -> Int {
        var done = 0
        while done < count {
            let read = pread(descriptor, target + done, count - done, off_t(offset + done))
            if read < 0 {
                if errno == EINTR { continue }
                return -Int(errno)
            }
            if read == 0 { break }
            done += read
        }
        return done
    }

    /// Reads on to the end of `descriptor` after `buffer`'s bytes, growing it: a regular file at
    /// the offset of the buffer's end (`atOffsets`), anything else (a pipe, a terminal) in
    /// sequence from where it stands.
    private static func readToEnd(
        _ descriptor: Int32, into buffer: consuming ReadBuffer, atOffsets: Bool, limit: Int, path: String
    ) throws -> Data {
        while true {
            if buffer.count == buffer.capacity {
                guard buffer.count < limit else { throw FileAccessError(path: path, operation: "file too large:", code: EFBIG) }
                try buffer.grow(path: path)
            }
            let room = buffer.capacity - buffer.count
            let count = atOffsets
                ? pread(descriptor, buffer.base + buffer.count, room, off_t(buffer.count))
                : systemRead(descriptor, buffer.base + buffer.count, room)
            if count < 0 {
                if errno == EINTR { continue }
                throw FileAccessError(path: path, operation: "cannot read")
            }
            if count == 0 { break }
            buffer.count += count
            guard buffer.count <= limit else { throw FileAccessError(path: path, operation: "file too large:", code: EFBIG) }
        }
        return buffer.takeData()
    }

    /// The directory part of a path (`.` when there is none).
    package static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The last component of a path.
    package static func fileName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }

    /// Creates `DIRECTORY/.NAME.tmp-XXXXXX` (six random letters or digits) for writing, failing
    /// if it exists. Not `mkstemp`: that makes the file 0600 whatever the umask, and a new
    /// output must get the mode `open` gives it (`umask 022`: 0644; `umask 077`: 0600), as
    /// `cp`, a shell's `>` and Foundation's atomic writes give theirs.
    /// The name's first 200 bytes at most (whole characters) go into the temporary name, so
    /// that a name near the file system's 255-byte limit can still be written.
    private static func createTemporaryFile(for path: String, in directory: String, mode: mode_t) throws -> (descriptor: Int32, path: String) {
        var name = Substring(fileName(of: path))
        while name.utf8.count > 200 { name.removeLast() }
        let prefix = directory + "/." + name + ".tmp-"
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<100 {
            let suffix = (0..<6).map { _ in alphabet[Int(generator.next(upperBound: UInt(alphabet.count)))] }
            let candidate = prefix + String(decoding: suffix, as: UTF8.self)
            let descriptor = open(candidate, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
            if descriptor >= 0 { return (descriptor, candidate) }
            if errno != EEXIST && errno != EINTR { break }
        }
        throw FileAccessError(path: directory, operation: "cannot create a temporary file in")
    }
}

/// The owner, group and permission bits of a file about to be replaced.
private struct ExistingFile {
    var owner: uid_t
    var group: gid_t
    var mode: mode_t
    /// Whether the path is a link (the rename replaces the link, not its target).
    var isLink: Bool

    /// The file at `path`, through links; nil when there is none.
    init?(_ path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        var link = stat()
        isLink = lstat(path, &link) == 0 && link.st_mode & S_IFMT == S_IFLNK
        owner = info.st_uid
        group = info.st_gid
        mode = info.st_mode & 0o7777
    }

    /// Gives the new file (open as `descriptor`) this owner, group and mode. The owner first:
    /// changing it may clear set-user-ID bits that the mode then sets again. An owner the
    /// process may not give (an ordinary user replacing another's file in a shared directory)
    /// stays the process's, the group kept if it may be; the replacement still happens. A
    /// link's target lends only its permission bits (no owner, no set-ID bits) to the file
    /// that replaces the link.
    func give(to descriptor: Int32, temporaryPath: String) throws {
        var created = stat()
        if !isLink, fstat(descriptor, &created) == 0, created.st_uid != owner || created.st_gid != group {
            if fchown(descriptor, owner, group) != 0 && created.st_gid != group {
                _ = fchown(descriptor, uid_t.max, group)  // -1: the owner unchanged
            }
        }
        guard fchmod(descriptor, isLink ? mode & 0o777 : mode) == 0 else {
            throw FileAccessError(path: temporaryPath, operation: "cannot set permissions of")
        }
    }
}

/// A `malloc` buffer that a file is read into, handed to `Data` without a copy.
private struct ReadBuffer: ~Copyable {
    private(set) var base: UnsafeMutableRawPointer
    private(set) var capacity: Int
    var count = 0

    init(capacity: Int, path: String) throws {
        guard let base = HugePages.allocate(capacity) else { throw FileAccessError(path: path, operation: "file too large:", code: ENOMEM) }
        self.base = base
        self.capacity = max(capacity, 1)
    }

    deinit { free(base) }

    /// Doubles the capacity.
    mutating func grow(path: String) throws {
        let (doubled, overflow) = capacity.multipliedReportingOverflow(by: 2)
        guard !overflow, let grown = realloc(base, doubled) else { throw FileAccessError(path: path, operation: "file too large:", code: ENOMEM) }
        base = grown
        capacity = doubled
        HugePages.advise(grown, length: doubled)
    }

    /// The bytes read, as `Data` that frees the buffer.
    consuming func takeData() -> Data {
        let data = count > 0 ? Data(bytesNoCopy: base, count: count, deallocator: .free) : Data()
        if count == 0 { free(base) }
        discard self
        return data
    }
}

/// Starts the disk writes of a long output while it is still being made, so that the `fsync`
/// at the end waits for the last few megabytes instead of all of them (88 MB of XML: `fsync`
/// 70 ms -> 8 ms on this project's test machine). Linux only (`sync_file_range`); elsewhere
/// the `fsync` does it all. It only starts writeback: durability still comes from the `fsync`.
private struct Writeback {
    private var written: Int64 = 0
    private var started: Int64 = 0
    /// Start writing back every this many bytes.
    private static let step: Int64 = 8 << 20

    mutating func wrote(_ count: Int, to descriptor: Int32) {
        written += Int64(count)
        #if os(Linux)
        guard written - started >= Self.step else { return }
        // SYNC_FILE_RANGE_WRITE (2): start writeback of the range's dirty pages, do not wait.
        // A failure only leaves the work to the fsync.
        _ = Self.syncFileRange?(descriptor, started, written - started, 2)
        started = written
        #endif
    }

    #if os(Linux)
    /// glibc's `sync_file_range` (Linux 2.6.17 and later), which the Glibc module does not
    /// import; looked up once by name, nil where the C library lacks it.
    private static let syncFileRange: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32)? = {
        guard let library = dlopen(nil, RTLD_NOW), let symbol = dlsym(library, "sync_file_range") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int64, Int64, UInt32) -> Int32).self)
    }()
    #endif
}

#if canImport(Glibc)
private let systemWrite = Glibc.write
private let systemRead = Glibc.read
#elseif canImport(Darwin)
private let systemWrite = Darwin.write
private let systemRead = Darwin.read
#endif
