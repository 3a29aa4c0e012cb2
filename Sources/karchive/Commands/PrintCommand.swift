import KeyedArchive

/// `karchive print`: a readable indented tree, like `plutil -p`.
enum PrintCommand: Command {
    static let name = "print"
    static let summary = "Prints a property list or archive as an indented tree"
    static let help = """
        usage: karchive print [--raw] FILE

        Prints the property list in FILE (any format; `-` for standard input) as an indented tree,
        like `plutil -p`: dictionaries as { "key" => value }, arrays as [ index => value ], data
        as {length = N, bytes = 0x...}, dates in UTC (to the microsecond), UIDs as UID(n). Strings are quoted, with
        \\", \\\\, \\n, \\r, \\t and other control characters (U+0000-001F, U+007F-009F) as
        \\u{1B} (hexadecimal), as in a Swift string literal, so that no control character
        reaches the terminal.

        When FILE is an NSKeyedArchiver archive, prints the resolved object graph instead (the
        tree `karchive unarchive` produces): objects of other classes as their fields plus
        "$class", cycles as {"$ref": index}; the `root` object when $top has one (a note on
        standard error names the other keys), otherwise every $top key.

          --raw   print an archive's property list as stored ($objects, UIDs) instead

        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, valueOptions: [], flagOptions: ["--raw"])
        guard parsed.positional.count == 1 else { throw UsageError("expected one FILE") }
        var (value, length) = try Inputs.readPropertyListAndLength(parsed.positional[0])
        if !parsed.flag("--raw"), Inputs.isKeyedArchive(value) {
            let archive = value
            // Data is printed as its length and first 24 bytes: its bytes beyond are no measure
            // of what is printed (600 references to one 2 MB NSData, 1.2 GB expanded, were
            // refused). Strings and keys still count in full toward the limit.
            var resolver = try Inputs.describingFailures(of: parsed.positional[0]) { try ArchiveResolver(propertyList: archive) }
            resolver.countedBytesPerData = 24
            value = try Inputs.describingFailures(of: parsed.positional[0]) { try resolver.resolveTopLevel() }
            // With `root`, only the root is printed: say what else `$top` holds.
            let others = resolver.topLevelKeys.filter { $0 != "root" }
            if resolver.topLevelKeys.contains("root"), !others.isEmpty {
                let names = others.map { Karchive.escapingControlCharacters($0) }.joined(separator: ", ")
                Output.error("karchive print: note: $top also holds \(names); `karchive unarchive --all` shows every key\n")
            }
        }
        var printer = TreePrinter(budget: OutputBudget(Inputs.outputBudget(forInputLength: length)))
        try Inputs.describingFailures(of: parsed.positional[0]) { try printer.print(value) }
        Output.write(printer.output)
        return 0
    }
}

/// Renders a value as an indented tree. Iterative, so depth never threatens the stack.
struct TreePrinter {
    private(set) var output = ""
    /// Stops printing a tree whose shared references expand past the tool's output budget.
    let budget: OutputBudget

    private enum Step {
        case value(PropertyListValue, prefix: String, indent: Int)
        case close(String, indent: Int)
    }

    mutating func print(_ root: PropertyListValue) throws {
        var steps: [Step] = [.value(root, prefix: "", indent: 0)]
        while let step = steps.popLast() {
            try budget.check(output.utf8.count)
            switch step {
            case .close(let bracket, let indent):
                output += String(repeating: "  ", count: indent) + bracket + "\n"
            case .value(let value, let prefix, let indent):
                let pad = String(repeating: "  ", count: indent)
                switch value {
                case .array(let elements), .set(let elements):
                    let (open, close) = value.setValue != nil ? ("{(", ")}") : ("[", "]")
                    output += pad + prefix + open + "\n"
                    steps.append(.close(close, indent: indent))
                    for (index, element) in elements.enumerated().reversed() {
                        steps.append(.value(element, prefix: value.setValue != nil ? "" : "\(index) => ", indent: indent + 1))
                    }
                case .dictionary(let dictionary):
                    output += pad + prefix + "{\n"
                    steps.append(.close("}", indent: indent))
                    for entry in dictionary.entries.reversed() {
                        steps.append(.value(entry.value, prefix: Self.scalar(entry.key) + " => ", indent: indent + 1))
                    }
                default:
                    output += pad + prefix + Self.scalar(value) + "\n"
                }
            }
        }
    }

    /// A date as `defaults` spells it, with the fraction of a second when there is one, to the
    /// microsecond (`2017-02-23 06:15:58.684097 +0000`): a timeline needs it, and `print` is
    /// read, not parsed (OpenStep text and `defaults read` keep whole seconds).
    static func dateDescription(_ date: Date) -> String {
        let text = OpenStepDate.format(date)
        let seconds = date.timeIntervalSinceReferenceDate
        let fraction = seconds - seconds.rounded(.down)
        let suffix = " +0000"
        guard fraction.isFinite, fraction > 0, text.hasSuffix(suffix) else { return text }
        let micro = min(Int((fraction * 1_000_000).rounded()), 999_999)
        guard micro > 0 else { return text }
        var digits = String(micro)
        digits = String(repeating: "0", count: 6 - digits.count) + digits
        while digits.hasSuffix("0") { digits.removeLast() }
        return String(text.dropLast(suffix.count)) + "." + digits + suffix
    }

    /// The one-line rendering of a non-container value (containers render as a count).
    static func scalar(_ value: PropertyListValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let bool): return bool ? "true" : "false"
        case .integer(let integer): return integer.description
        case .real(let real): return realDescription(real.value)
        case .date(let date): return dateDescription(date)
        case .data(let data):
            let shown = data.prefix(24).map { hexByte($0) }.joined()
            return "{length = \(data.count), bytes = 0x\(shown)\(data.count > 24 ? "..." : "")}"
        case .string(let string): return quoted(string.value)
        case .uid(let uid): return "UID(\(uid))"
        case .array(let elements): return "[\(elements.count) elements]"
        case .set(let members): return "{(\(members.count) members)}"
        case .dictionary(let dictionary): return "{\(dictionary.count) entries}"
        }
    }

    /// `string` in double quotes, escaped as a Swift string literal: `\"`, `\\` and control
    /// characters (``Karchive/controlEscape(_:)``); the rest as it is.
    static func quoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            default:
                if let escape = Karchive.controlEscape(scalar) { result += escape } else { result.unicodeScalars.append(scalar) }
            }
        }
        return result + "\""
    }

    static func realDescription(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        return "\(value)"
    }

    static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
