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
    /// Whether its arguments include values that may be any text (`defaults write`), so that a
    /// trailing `--help` is one of them rather than a request for help.
    static var takesFreeText: Bool { get }
}

extension Command {
    static var takesFreeText: Bool { false }
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
    /// Every command, in the order the help lists them. (Computed: a stored array of
    /// metatypes is global state Swift 6 cannot prove `Sendable`.)
    static var commands: [any Command.Type] {
        [
            DemoCommand.self, ConvertCommand.self, LintCommand.self, PrintCommand.self,
            ArchiveCommand.self, UnarchiveCommand.self, DefaultsCommand.self,
        ]
    }

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
        let status = dispatch(arguments)
        // A failed write to standard output (a full disk under `> file`) is a failure:
        // reported as success, `karchive convert ... > out && mv out ...` lost data. Help too.
        guard Output.standardOutputError == 0 else {
            let name = commands.first { $0.name == arguments.first }.map { "karchive " + $0.name } ?? "karchive"
            Output.error("\(name): cannot write to standard output: \(String(cString: strerror(Output.standardOutputError)))\n")
            return 1
        }
        return status
    }

    /// The first argument (counted from 1) whose bytes are not UTF-8, or nil. Swift's
    /// `CommandLine.arguments` replaces such bytes, so a file name `caf\xE9` would be opened,
    /// or written, as another name (`caf\u{FFFD}`): the tool refuses it instead.
    static func firstArgumentNotUTF8() -> Int? {
        // `1..<argc` traps when argc is 0 (an execve with an empty argv, which kernels before
        // Linux 5.18 allow).
        for index in stride(from: 1, to: Int(CommandLine.argc), by: 1) {
            guard let argument = CommandLine.unsafeArgv[index] else { continue }
            if String(validatingCString: argument) == nil { return index }
        }
        return nil
    }

    private static func dispatch(_ arguments: [String]) -> Int32 {
        if let index = firstArgumentNotUTF8() {
            Output.error("karchive: argument \(index) is not valid UTF-8; karchive takes UTF-8 file names and text\n")
            return 2
        }
        guard let first = arguments.first else {
            Output.error(help)
            return 2
        }
        if first == "--help" || first == "-h" || first == "help" {
            Output.write(help)
            return 0
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            Output.error("karchive: unknown command '\(escapingControlCharacters(first))'; run `karchive --help`\n")
            return 2
        }
        let rest = Array(arguments.dropFirst())
        // Help only where an option can stand: first after the command (so a value such as
        // `defaults write D K -h` is not mistaken for it), or last, for a command whose
        // arguments are not free text (`defaults write D K --help` stores the string; the
        // command finds its own help among its options).
        let trailingHelp = (rest.last == "--help" || rest.last == "-h") && !rest.contains("--") && !command.takesFreeText
        if rest.first == "--help" || rest.first == "-h" || trailingHelp {
            Output.write(command.help)
            return 0
        }
        do {
            return try command.run(rest)
        } catch let error as UsageError {
            Output.error("karchive \(command.name): \(oneLine(error))\n")
            return 2
        } catch {
            Output.error("karchive \(command.name): \(oneLine(error))\n")
            return 1
        }
    }

    /// An error's description folded to one line, its control characters escaped: messages
    /// quote key paths, names and file paths taken from input, which must not reach a terminal
    /// as escape sequences.
    static func oneLine(_ error: any Error) -> String {
        escapingControlCharacters(String(describing: error).split(whereSeparator: \.isNewline).joined(separator: " "))
    }

    /// `text` with each control character (``controlEscape(_:)``) escaped, everything else as
    /// it is: for messages and paths, which quote input but are not themselves quoted strings.
    static func escapingControlCharacters(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { controlEscape($0) != nil }) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if let escape = controlEscape(scalar) { result += escape } else { result.unicodeScalars.append(scalar) }
        }
        return result
    }

    /// How the tool writes a control character (Unicode's C0 controls, DEL and the C1
    /// controls, U+0000-001F and U+007F-009F; the line and paragraph separators U+2028-2029; and
    /// the bidirectional formatting characters U+061C, U+200E-200F, U+202A-202E and
    /// U+2066-2069) that comes from input: as Swift spells it in a string literal, `\n`, `\r`,
    /// `\t` and otherwise `\u{1B}` (hexadecimal), so that a crafted file cannot send the
    /// terminal escape sequences (ESC, CSI), rewrite a line (CR, BS) or make text display in
    /// another order than it is stored (U+202E); `nil` for any other character.
    static func controlEscape(_ scalar: Unicode.Scalar) -> String? {
        switch scalar.value {
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x09: return "\\t"
        case 0x00...0x1F, 0x7F...0x9F, 0x2028...0x2029, 0x061C, 0x200E...0x200F, 0x202A...0x202E, 0x2066...0x2069: return "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
        default: return nil
        }
    }
}

/// Standard output and error, unbuffered enough for pipes and tests.
enum Output {
    /// The `errno` of the first write to standard output that failed, or 0; `Karchive.main`
    /// turns it into exit status 1. (The tool writes from its main thread only.)
    nonisolated(unsafe) private(set) static var standardOutputError: Int32 = 0

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
        do {
            try AtomicFile.writeDirectly(toDescriptor: descriptor, path: descriptor == 1 ? "standard output" : "standard error") { try $0(buffer) }
        } catch {
            if descriptor == 1 && standardOutputError == 0 { standardOutputError = (error as? FileAccessError)?.code ?? EIO }
        }
    }
}
