#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `Codable` model saved to and loaded from a keyed-archive file with no hand-written coding
/// (the MFDynamicStorage model, in Swift).
///
/// ```swift
/// struct Profile: Codable, ArchiveStorable { var name: String; var slider: Float }
/// try profile.write(to: url)                 // atomic: temp file, fsync, rename, fsync dir
/// let restored = try Profile(contentsOf: url)
/// ```
///
/// Writes are atomic: a reader (or a crash at any instant) sees the old file or the new one,
/// never a mix. The archive is an ordinary NSKeyedArchiver file (see Docs/CodableBridge.md).
public protocol ArchiveStorable: Codable {}

extension ArchiveStorable {
    /// Archives the model and replaces the file at `url` atomically.
    public func write(to url: URL, encoder: KeyedArchiveEncoder = KeyedArchiveEncoder()) throws {
        let data = try encoder.encode(self)
        try AtomicFile.write(data, to: url.path)
    }

    /// Loads a model archived with ``write(to:encoder:)`` (or any keyed archive of it).
    public init(contentsOf url: URL, decoder: KeyedArchiveDecoder = KeyedArchiveDecoder()) throws {
        let data = try AtomicFile.read(url.path, limit: decoder.limits.maximumDataLength)
        self = try decoder.decode(Self.self, from: data)
    }
}

/// A file-system failure while saving or loading (with the path and the system error).
public struct ArchiveFileError: Error, Sendable, CustomStringConvertible {
    /// The file involved.
    public var path: String
    /// What was being done.
    public var operation: String
    /// `errno` at the time.
    public var code: Int32

    /// `operation path: strerror(code)`.
    public var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
}

/// Atomic whole-file replacement: write a temporary file in the same directory, fsync it,
/// rename it over the target, fsync the directory.
///
/// The preferences store (branch `prefs`) has the same routine in its `Platform.swift`; it
/// sits above this module, so one of the two should serve both once merged.
enum AtomicFile {
    static func write(_ data: Data, to path: String, mode: mode_t = 0o644) throws {
        let directory = parentDirectory(of: path)
        let temporary = directory + "/.\(fileName(of: path)).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, existingMode(path) ?? mode)
        guard descriptor >= 0 else { throw ArchiveFileError(path: temporary, operation: "cannot create", code: errno) }
        var renamed = false
        defer { if !renamed { unlink(temporary) } }
        do {
            defer { close(descriptor) }
            try data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = systemWrite(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw ArchiveFileError(path: temporary, operation: "cannot write", code: errno)
                    }
                    offset += written
                }
            }
            guard fsync(descriptor) == 0 else { throw ArchiveFileError(path: temporary, operation: "cannot flush", code: errno) }
        }
        guard rename(temporary, path) == 0 else { throw ArchiveFileError(path: path, operation: "cannot replace", code: errno) }
        renamed = true
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            // Some file systems refuse fsync on directories (EINVAL); the rename is then as durable as they allow.
            let result = fsync(directoryDescriptor)
            let failure = errno
            close(directoryDescriptor)
            if result != 0 && failure != EINVAL { throw ArchiveFileError(path: directory, operation: "cannot flush", code: failure) }
        }
    }

    static func read(_ path: String, limit: Int) throws -> Data {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ArchiveFileError(path: path, operation: "cannot open", code: errno) }
        defer { close(descriptor) }
        var result = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw ArchiveFileError(path: path, operation: "cannot read", code: errno)
            }
            if count == 0 { break }
            guard result.count + count <= limit else { throw ArchiveFileError(path: path, operation: "file too large:", code: EFBIG) }
            result.append(contentsOf: buffer[0..<count])
        }
        return result
    }

    private static func existingMode(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o7777
    }

    static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    static func fileName(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[path.index(after: slash)...])
    }
}

#if canImport(Glibc)
private let systemWrite = Glibc.write
private let systemRead = Glibc.read
#elseif canImport(Darwin)
private let systemWrite = Darwin.write
private let systemRead = Darwin.read
#endif
