import KeyedArchive

/// `karchive print`: a readable indented tree, like `plutil -p`.
enum PrintCommand: Command {
    static let name = "print"
    static let summary = "Prints a property list or archive as an indented tree"
    static let help = """
        usage: karchive print FILE

        Prints the property list in FILE (any format; `-` for standard input) as an indented tree,
        like `plutil -p`: dictionaries as { "key" => value }, arrays as [ index => value ], data
        as {length = N, bytes = 0x...}, dates in UTC, UIDs as UID(n).

        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, valueOptions: [])
        guard parsed.positional.count == 1 else { throw UsageError("expected one FILE") }
        let value = try Inputs.readPropertyList(parsed.positional[0])
        var printer = TreePrinter()
        printer.print(value)
        Output.write(printer.output)
        return 0
    }
}

/// Renders a value as an indented tree. Iterative, so depth never threatens the stack.
struct TreePrinter {
    private(set) var output = ""

    private enum Step {
        case value(PropertyListValue, prefix: String, indent: Int)
        case close(String, indent: Int)
    }

    mutating func print(_ root: PropertyListValue) {
        var steps: [Step] = [.value(root, prefix: "", indent: 0)]
        while let step = steps.popLast() {
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

    /// The one-line rendering of a non-container value (containers render as a count).
    static func scalar(_ value: PropertyListValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let bool): return bool ? "true" : "false"
        case .integer(let integer): return integer.description
        case .real(let real): return realDescription(real.value)
        case .date(let date): return DateText.utc(date)
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

    static func quoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            default: result.unicodeScalars.append(scalar)
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

/// UTC date text for people: `2001-01-01 00:00:00 +0000`, the way `plutil -p` prints dates.
enum DateText {
    static func utc(_ date: Date) -> String {
        let seconds = date.timeIntervalSinceReferenceDate
        guard seconds.isFinite, abs(seconds) < 1e15 else { return "\(seconds) seconds since 2001-01-01" }
        let whole = Int64(seconds.rounded(.down))
        let (days, secondsOfDay) = floorDivide(whole, 86_400)
        let (year, month, day) = civilDate(daysSince2001: days)
        let hour = secondsOfDay / 3600, minute = secondsOfDay % 3600 / 60, second = secondsOfDay % 60
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2)) \(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)) +0000"
    }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let quotient = a / b, remainder = a % b
        return remainder < 0 ? (quotient - 1, remainder + b) : (quotient, remainder)
    }

    /// Days since 2001-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func civilDate(daysSince2001: Int64) -> (Int64, Int64, Int64) {
        let z = daysSince2001 + 11_323 + 719_468  // days since 1970, then since 0000-03-01
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(abs(value))
        return (value < 0 ? "-" : "") + String(repeating: "0", count: max(0, width - text.count)) + text
    }
}
