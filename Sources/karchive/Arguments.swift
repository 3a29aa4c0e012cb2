import KeyedArchive

/// A small hand-written argument parser: options with values (`--format xml`, `-o FILE`),
/// flags, and positional arguments. `--` ends the options.
struct Arguments {
    private(set) var positional: [String] = []
    private var values: [String: String] = [:]
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
                values[argument] = arguments[index]
                index += 1
            } else if let equals = argument.firstIndex(of: "="), valueOptions.contains(String(argument[..<equals])) {
                values[String(argument[..<equals])] = String(argument[argument.index(after: equals)...])
            } else if flagOptions.contains(argument) {
                flags.insert(argument)
            } else {
                throw UsageError("unknown option \(argument)")
            }
        }
    }

    /// The value of an option, by any of its spellings.
    func value(_ names: String...) -> String? {
        names.lazy.compactMap { values[$0] }.first
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
    /// `produce` throws as ``ToolError`` pass through unchanged, and the old file is kept.
    /// A FIFO, a device or a terminal (`-o /dev/stdout`, `-o /dev/null`) is written as it is,
    /// as `cp` writes one: replaced, it became a regular file. A link is followed, so that it
    /// stays and its target is replaced (`/dev/stdout` redirected to a file replaced the link).
    static func write(to path: String, producing produce: ((UnsafeRawBufferPointer) throws -> Void) throws -> Void) throws {
        do {
            if AtomicFile.isSpecialFile(path) {
                try AtomicFile.writeDirectly(to: path, producing: produce)
            } else {
                try AtomicFile.write(to: linkTarget(path) ?? path, producing: produce)
            }
        } catch let error as ToolError {
            throw error
        } catch {
            throw ToolError("\(path): \(error)")
        }
    }

    /// The file a symbolic link at `path` leads to, if `path` is one and its target exists.
    private static func linkTarget(_ path: String) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK, let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

enum FileHandleReader {
    static func readStandardInput() throws -> Data {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { systemRead(0, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw FileAccessError(path: "<stdin>", operation: "cannot read") }
            if count == 0 { break }
            data.append(contentsOf: buffer[0..<count])
        }
        return data
    }
}

#if canImport(Glibc)
import Glibc
private let systemRead = Glibc.read
#elseif canImport(Darwin)
import Darwin
private let systemRead = Darwin.read
#endif
