import KeyedArchive

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One `karchive` sub-command.
protocol Command {
    /// The word that selects it, e.g. `convert`.
    static var name: String { get }
    /// One line for the tool's help.
    static var summary: String { get }
    /// The command's full `--help` text.
    static var help: String { get }
    /// Runs it; returns the exit status. Throw ``UsageError`` for bad arguments (exit 2) and
    /// any other error for failures (exit 1 with a one-line message).
    static func run(_ arguments: [String]) throws -> Int32
}

/// A command-line usage mistake: exit status 2 and a one-line message.
struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A failure with a one-line message: exit status 1.
struct ToolError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

enum Karchive {
    /// Every command, in the order the help lists them.
    static let commands: [any Command.Type] = [
        DemoCommand.self, ConvertCommand.self, LintCommand.self, PrintCommand.self,
        ArchiveCommand.self, UnarchiveCommand.self, DefaultsCommand.self,
    ]

    static var help: String {
        var text = """
            usage: karchive <command> [options] [arguments]

            Inspect, convert and edit property lists, NSKeyedArchiver archives and preferences.

            commands:

            """
        for command in commands {
            text += "  " + command.name + String(repeating: " ", count: max(1, 11 - command.name.count)) + command.summary + "\n"
        }
        text += "\nRun `karchive <command> --help` for a command's options.\n"
        return text
    }

    static func main(_ arguments: [String]) -> Int32 {
        guard let first = arguments.first else {
            Output.error(help)
            return 2
        }
        if first == "--help" || first == "-h" || first == "help" {
            Output.write(help)
            return 0
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            Output.error("karchive: unknown command '\(first)'; run `karchive --help`\n")
            return 2
        }
        let rest = Array(arguments.dropFirst())
        // Help only where an option can stand: first after the command (so a value such as
        // `defaults write D K -h` is not mistaken for it).
        if rest.first == "--help" || rest.first == "-h" || (rest.last == "--help" && !rest.contains("--")) {
            Output.write(command.help)
            return 0
        }
        do {
            return try command.run(rest)
        } catch let error as UsageError {
            Output.error("karchive \(command.name): \(error.description)\n")
            return 2
        } catch {
            Output.error("karchive \(command.name): \(oneLine(error))\n")
            return 1
        }
    }

    /// An error's description folded to one line.
    static func oneLine(_ error: any Error) -> String {
        String(describing: error).split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}

/// Standard output and error, unbuffered enough for pipes and tests.
enum Output {
    static func write(_ text: String) {
        var text = text
        text.withUTF8 { writeAll(1, UnsafeRawBufferPointer($0)) }
    }
    static func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { writeAll(1, $0) }
    }
    static func write(_ data: Data) {
        data.withUnsafeBytes { writeAll(1, $0) }
    }
    static func error(_ text: String) {
        var text = text
        text.withUTF8 { writeAll(2, UnsafeRawBufferPointer($0)) }
    }
    private static func writeAll(_ descriptor: Int32, _ buffer: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < buffer.count, let base = buffer.baseAddress {
            let written = systemWrite(descriptor, base + offset, buffer.count - offset)
            if written < 0 && errno == EINTR { continue }
            if written <= 0 { return }
            offset += written
        }
    }
}

#if canImport(Glibc)
private let systemWrite = Glibc.write
#elseif canImport(Darwin)
private let systemWrite = Darwin.write
#endif
