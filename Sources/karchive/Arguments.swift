import KeyedArchive

/// A small hand-written argument parser: options with values (`--format xml`, `-o FILE`),
/// flags, and positional arguments. `--` ends the options.
struct Arguments {
    private(set) var positional: [String] = []
    /// Each value option's last value and where it stood, so that of two spellings of one
    /// option (`-o` and `--output`) the later wins, as a repeated option's later value does.
    private var values: [String: (value: String, position: Int)] = [:]
    private var flags: Set<String> = []

    /// Parses `arguments`; `valueOptions` take a value, `flagOptions` do not.
    init(_ arguments: [String], valueOptions: Set<String>, flagOptions: Set<String> = []) throws {
        var index = 0
        var optionsEnded = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if optionsEnded || argument == "-" || !argument.hasPrefix("-") {
                positional.append(argument)
            } else if argument == "--" {
                optionsEnded = true
            } else if valueOptions.contains(argument) {
                guard index < arguments.count else { throw UsageError("option \(argument) needs a value") }
                values[argument] = (arguments[index], index)
                index += 1
            } else if let equals = argument.firstIndex(of: "="), valueOptions.contains(String(argument[..<equals])) {
                values[String(argument[..<equals])] = (String(argument[argument.index(after: equals)...]), index)
            } else if flagOptions.contains(argument) {
                flags.insert(argument)
            } else {
                throw UsageError("unknown option \(argument)")
            }
        }
    }

    /// The value of an option, by any of its spellings: the one given last.
    func value(_ names: String...) -> String? {
        names.compactMap { values[$0] }.max { $0.position < $1.position }?.value
    }

    /// True when a flag was given.
    func flag(_ name: String) -> Bool { flags.contains(name) }
}

/// Reading inputs and writing outputs, with `-` meaning standard input or output.
enum Files {
    static func read(_ path: String) throws -> Data {
        if path == "-" {
            return try FileHandleReader.readStandardInput()
        }
        do {
            return try AtomicFile.read(path, limit: .max)
        } catch let error as FileAccessError {
            // The reason (missing, a directory, no permission), which the path already names.
            throw ToolError("\(path): cannot read the file: \(String(cString: strerror(error.code)))")
        } catch {
            throw ToolError("\(path): cannot read the file")
        }
    }

    static func write(_ bytes: Data, to path: String?) throws {
        guard let path, path != "-" else {
            Output.write(bytes)
            return
        }
        try write(to: path) { append in try bytes.withUnsafeBytes(append) }
    }

    /// Writes the file at `path` atomically from the pieces `produce` appends; errors that
    /// `produce` throws as ``ToolError`` pass through unchanged, and the old file is kept (a
    /// FIFO, a device or a descriptor, which are written as they are, may have had part).
    ///
    /// - `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` and `/proc/self/fd/N` (see `Destination`)
    ///   write the process's own descriptor, as `-` does: followed to the file the shell
    ///   opened and replaced, the shell's other output to it was lost.
    /// - A FIFO, a device or a terminal (`-o /dev/null`) is written as it is, as `cp` writes
    ///   one: replaced, it became a regular file.
    /// - A link is followed, so that it stays and its target is replaced; a link whose target
    ///   does not exist is refused, as `cp` refuses it, rather than replaced by a file.
    static func write(to path: String, producing produce: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
        do {
            if let descriptor = Destination.ownDescriptor(path) {
                try AtomicFile.writeDirectly(toDescriptor: descriptor, path: path, producing: produce)
                Destination.truncateAtOffset(descriptor)
            } else if AtomicFile.isSpecialFile(path) {
                try AtomicFile.writeDirectly(to: path, producing: produce)
            } else {
                try AtomicFile.write(to: Destination.linkTarget(path) ?? path, producing: produce)
            }
        } catch let error as ToolError {
            throw error
        } catch {
            throw ToolError("\(path): \(error)")
        }
    }
}

/// Where an output path leads, for ``Files/write(to:producing:)``.
enum Destination {
    /// The descriptor `path` names, when it is one of the process's own (`/dev/stdout`,
    /// `/dev/stderr`, `/dev/fd/N`, `/proc/self/fd/N`, `/proc/thread-self/fd/N`, however
    /// spelled: `/dev//fd/1` too),
    /// directly or through links (at most 16).
    static func ownDescriptor(_ path: String) -> Int32? {
        let descriptorDirectories = Set(["/dev/fd", "/proc/self/fd", "/proc/thread-self/fd"].compactMap(canonical))
        var current = path
        for _ in 0..<16 {
            switch current {
            case "/dev/stdin": return 0
            case "/dev/stdout": return 1
            case "/dev/stderr": return 2
            default: break
            }
            // In a directory of descriptors, by what the directory is, not how it is spelled.
            if let directory = canonical(directory(of: current)), descriptorDirectories.contains(directory),
                let number = Int32(current.split(separator: "/").last ?? "")
            {
                return number
            }
            guard let next = readLink(current) else { return nil }
            // A relative target is relative to the link's directory.
            current = next.hasPrefix("/") ? next : directory(of: current) + "/" + next
        }
        return nil
    }

    /// The file a symbolic link at `path` leads to (through any further links), or `nil` when
    /// `path` is not a link; throws when the link leads nowhere.
    static func linkTarget(_ path: String) throws -> String? {
        guard readLink(path) != nil else { return nil }
        guard let resolved = canonical(path) else {
            throw ToolError("\(path): a link to a file that does not exist (or cannot be reached); not writing through it")
        }
        return resolved
    }

    /// After writing a regular file through a descriptor the shell opened for reading and
    /// writing (`1<>file`), cuts off what was there past the new output, as `cp` (which opens
    /// `/dev/stdout` anew, truncating) leaves it. A descriptor opened to append, or anything but a
    /// regular file, is left alone.
    static func truncateAtOffset(_ descriptor: Int32) {
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return }
        let flags = fcntl(descriptor, F_GETFL)
        guard flags >= 0, flags & O_APPEND == 0 else { return }
        let offset = lseek(descriptor, 0, SEEK_CUR)
        if offset >= 0 { _ = ftruncate(descriptor, offset) }
    }

    /// The path with every link and `.`, `..` and `//` resolved, if it exists.
    private static func canonical(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The target a symbolic link at `path` names, or `nil` when it is not a link.
    private static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "" : String(path[..<slash])
    }
}

enum FileHandleReader {
    /// All of standard input. Memory running out is an error (exit 1), not a trap.
    static func readStandardInput() throws -> Data {
        do {
            return try AtomicFile.readToEnd(descriptor: 0, path: "standard input", limit: .max)
        } catch let error as FileAccessError {
            throw ToolError("standard input: cannot read: \(String(cString: strerror(error.code)))")
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
