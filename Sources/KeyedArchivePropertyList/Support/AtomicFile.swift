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
/// permission bits.
package enum AtomicFile {
    /// Replaces the file at `path` with `bytes` atomically and durably.
    package static func write(_ bytes: UnsafeRawBufferPointer, to path: String, defaultMode: mode_t = 0o644) throws {
        try write(to: path, defaultMode: defaultMode) { append in try append(bytes) }
    }

    /// Replaces the file at `path` atomically and durably with the bytes `produce` passes, in
    /// order, to the function it is given; for outputs too large to hold in memory at once. If
    /// `produce` throws, the temporary file is removed and the old file is left as it was.
    package static func write(
        to path: String, defaultMode: mode_t = 0o644,
        producing produce: (_ append: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        let directory = parentDirectory(of: path)
        var template = Array((directory + "/." + fileName(of: path) + ".tmp-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { buffer in buffer.baseAddress.map { mkstemp($0) } ?? -1 }
        guard descriptor >= 0 else { throw FileAccessError(path: directory, operation: "cannot create a temporary file in") }
        let temporaryPath = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var renamed = false
        defer { if !renamed { unlink(temporaryPath) } }
        do {
            defer { close(descriptor) }
            var writeback = Writeback()
            try produce { bytes in
                var offset = 0
                while offset < bytes.count, let base = bytes.baseAddress {
                    let written = systemWrite(descriptor, base + offset, bytes.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw FileAccessError(path: temporaryPath, operation: "cannot write")
                    }
                    offset += written
                    writeback.wrote(written, to: descriptor)
                }
            }
            // mkstemp creates the file 0600; give it the old file's mode, or the default.
            let mode = existingMode(path) ?? defaultMode
            guard fchmod(descriptor, mode) == 0 else { throw FileAccessError(path: temporaryPath, operation: "cannot set permissions of") }
            guard fsync(descriptor) == 0 else { throw FileAccessError(path: temporaryPath, operation: "cannot flush") }
        }
        guard rename(temporaryPath, path) == 0 else { throw FileAccessError(path: path, operation: "cannot replace") }
        renamed = true
        try syncDirectory(directory)
    }

    /// Replaces the file at `path` with `data` atomically and durably.
    package static func write(_ data: Data, to path: String, defaultMode: mode_t = 0o644) throws {
        try data.withUnsafeBytes { try write($0, to: path, defaultMode: defaultMode) }
    }

    /// Replaces the file at `path` with `bytes` atomically and durably.
    package static func write(_ bytes: [UInt8], to path: String, defaultMode: mode_t = 0o644) throws {
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
    package static func read(_ path: String, limit: Int) throws -> Data {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileAccessError(path: path, operation: "cannot open") }
        defer { close(descriptor) }
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileAccessError(path: path, operation: "cannot read")
            }
            if count == 0 { break }
            guard count <= limit - result.count else { throw FileAccessError(path: path, operation: "file too large:", code: EFBIG) }
            result.append(contentsOf: buffer[0..<count])
        }
        return result
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

    private static func existingMode(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
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
