// The few system calls the store needs (file locks, atomic replace, fsync, stat), wrapped once.
@_exported import KeyedArchiveCodable

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An error from the preferences store: what failed, on which file, and the system error.
public struct PreferencesError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var message: String
    /// The file or directory involved.
    public var path: String?
    /// The `errno` value, when a system call failed.
    public var errorNumber: Int32?

    /// Creates an error.
    public init(_ message: String, path: String? = nil, errorNumber: Int32? = nil) {
        self.message = message
        self.path = path
        self.errorNumber = errorNumber
    }

    /// `path: message (reason)`.
    public var description: String {
        var text = path.map { "\($0): \(message)" } ?? message
        if let errorNumber, let reason = strerror(errorNumber) {
            let length = strlen(reason)
            text += " (" + String(decoding: UnsafeRawBufferPointer(start: reason, count: length), as: UTF8.self) + ")"
        }
        return text
    }

    static func system(_ message: String, path: String?) -> PreferencesError {
        PreferencesError(message, path: path, errorNumber: errno)
    }
}

/// What identifies one version of a file: a different value means the file was replaced or changed.
struct FileStamp: Hashable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    var modificationSeconds: Int64
    var modificationNanoseconds: Int64
    var mode: UInt32

    /// The stamp of the file at `path`, or `nil` when it does not exist.
    static func of(_ path: String) -> FileStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return FileStamp(info)
    }

    init(_ info: stat) {
        #if canImport(Darwin)
        let seconds = Int64(info.st_mtimespec.tv_sec), nanoseconds = Int64(info.st_mtimespec.tv_nsec)
        #else
        let seconds = Int64(info.st_mtim.tv_sec), nanoseconds = Int64(info.st_mtim.tv_nsec)
        #endif
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modificationSeconds = seconds
        modificationNanoseconds = nanoseconds
        mode = UInt32(info.st_mode)
    }
}

enum SystemFiles {
    /// The longest preferences file read: past it the file is refused, not loaded into memory.
    static let maximumFileLength = 256 << 20

    /// The whole contents of a file and the stamp of what was read (from the same open file),
    /// or `nil` when it does not exist. Only regular files of at most ``maximumFileLength``
    /// bytes are read (a link to /dev/zero would otherwise exhaust memory). The file is opened
    /// without blocking: opening a FIFO waits for a writer, and one at a domain's path (or the
    /// global domain's, which every store reads) hung every reader, `flock` held by a writer.
    static func read(_ path: String) throws -> (bytes: [UInt8], stamp: FileStamp)? {
        var descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if descriptor < 0 && errno == EWOULDBLOCK {
            // A regular file under another holder's lease (Samba, NFS): waits for the lease
            // to be broken, as a plain open does (a FIFO opened for reading never says this).
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
        }
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw PreferencesError.system("cannot open", path: path)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw PreferencesError.system("cannot stat", path: path) }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw PreferencesError("not a regular file", path: path)
        }
        let stamp = FileStamp(info)
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glue.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw PreferencesError.system("cannot read", path: path)
            }
            if count == 0 { break }
            guard count <= maximumFileLength - bytes.count else {
                throw PreferencesError("longer than \(maximumFileLength) bytes", path: path)
            }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return (bytes, stamp)
    }

    /// Replaces the file at `path` atomically and durably (see ``AtomicFile``); a new
    /// preferences file is private to its user (0600), an existing one keeps its permissions.
    static func writeAtomically(_ bytes: [UInt8], to path: String) throws {
        do {
            try AtomicFile.write(bytes, to: path, defaultMode: 0o600)
        } catch let error as FileAccessError {
            throw PreferencesError(error.operation, path: error.path, errorNumber: error.code)
        }
    }

    /// Creates a directory and its parents (mode 0700, like ~/Library/Preferences).
    static func createDirectory(_ path: String) throws {
        do {
            try AtomicFile.createDirectories(path, mode: 0o700)
        } catch let error as FileAccessError {
            throw PreferencesError(error.operation, path: error.path, errorNumber: error.code)
        }
    }

    static func fileName(of path: String) -> String { AtomicFile.fileName(of: path) }

    /// The names of the entries of a directory.
    static func list(_ directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let string = String(cString: value)
        return string.isEmpty ? nil : string
    }

    static func homeDirectory() -> String {
        if let home = environment("HOME") { return home }
        if let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir { return String(cString: directory) }
        return "/tmp"
    }
}

/// An exclusive advisory lock (flock) on a domain's lock file, held for one read-modify-write.
///
/// The lock is on a separate, never-replaced file (`.NAME.plist.lock`), because the domain file
/// itself is replaced by rename on every write and a lock on a replaced inode protects nothing.
struct DomainFileLock: ~Copyable {
    private let descriptor: Int32

    init(path: String) throws {
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw PreferencesError.system("cannot open lock file", path: path) }
        while flock(descriptor, LOCK_EX) != 0 {
            if errno == EINTR { continue }
            let error = PreferencesError.system("cannot lock", path: path)
            close(descriptor)
            throw error
        }
        self.descriptor = descriptor
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}

/// Names that differ between the C libraries, bound once.
enum Glue {
    #if canImport(Glibc)
    static let read = Glibc.read
    static let write = Glibc.write
    #elseif canImport(Musl)
    static let read = Musl.read
    static let write = Musl.write
    #elseif canImport(Darwin)
    static let read = Darwin.read
    static let write = Darwin.write
    #endif
}
