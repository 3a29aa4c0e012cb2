import KeyedArchive

/// `karchive convert`: any property list in, the chosen format out.
enum ConvertCommand: Command {
    static let name = "convert"
    static let summary = "Converts a property list between binary, XML, OpenStep and JSON"
    static let help = """
        usage: karchive convert [--format binary|xml|openstep|json] INPUT [-o OUTPUT]

        Reads a property list in any format (binary bplist00, XML or OpenStep text, detected from
        its bytes) and writes it in the chosen format (default: binary).

          -f, --format FORMAT  binary (default), xml, openstep or json
          -o, --output FILE    where to write; `-` or no -o means standard output. A file is
                               replaced atomically (through a link, its target is); a FIFO,
                               a device or /dev/stdout is written as it is
          INPUT                the file to read; `-` means standard input

        JSON output is for tooling and is lossy where JSON is: data becomes a base64 string,
        dates ISO 8601 strings, UIDs {"CF$UID": n} objects, and integer and real widths, sets and
        key types are not kept. Reading JSON back is not supported.

        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, valueOptions: ["-f", "--format", "-o", "--output"])
        guard parsed.positional.count == 1 else { throw UsageError("expected one INPUT file (or - for standard input)") }
        let format = try OutputFormat(parsed.value("-f", "--format") ?? "binary")
        let input = parsed.positional[0]
        let destination = parsed.value("-o", "--output")
        var data: Data? = try Files.read(input)
        if case .propertyList(.xml) = format, let bytes = data, PropertyList.detectFormat(bytes) == .binary {
            // Binary to XML streams: no value tree, and into a file, no output buffer either.
            // Standard output gets nothing unless the whole conversion succeeds.
            let budget = Inputs.outputBudget(forInputLength: bytes.count)
            if let destination, destination != "-" {
                try Files.write(to: destination) { append in
                    try Inputs.describingFailures(of: input) {
                        try PropertyList.convert(bytes, to: .xml, maximumOutputLength: budget, into: append)
                    }
                }
            } else {
                let output = try Inputs.describingFailures(of: input) {
                    try PropertyList.convert(bytes, to: .xml, maximumOutputLength: budget)
                }
                try Files.write(output, to: destination)
            }
            return 0
        }
        // Other conversions read a tree; the input's bytes are let go before the output is made.
        let length = data?.count ?? 0
        let value = try Inputs.decodePropertyList(data ?? Data(), path: input)
        data = nil
        let output = try Inputs.describingFailures(of: input) { try format.encode(value, inputLength: length) }
        try Files.write(output, to: destination)
        return 0
    }
}

/// The formats `convert` and friends can write.
enum OutputFormat {
    case propertyList(PropertyListFormat)
    case json

    init(_ name: String, allowed: [String] = ["binary", "xml", "openstep", "json"]) throws {
        guard allowed.contains(name.lowercased()) else {
            throw UsageError("unknown format '\(name)'; expected one of: \(allowed.joined(separator: ", "))")
        }
        switch name.lowercased() {
        case "xml": self = .propertyList(.xml)
        case "openstep": self = .propertyList(.openStep)
        case "json": self = .json
        default: self = .propertyList(.binary)
        }
    }

    /// The property-list format, for outputs that cannot be JSON.
    var propertyListFormat: PropertyListFormat {
        if case .propertyList(let format) = self { return format }
        return .binary
    }

    /// Writes `value`, with text output bounded by ``Inputs/outputBudget(forInputLength:)``.
    func encode(_ value: PropertyListValue, inputLength: Int) throws -> Data {
        let budget = Inputs.outputBudget(forInputLength: inputLength)
        switch self {
        case .propertyList(let format): return try PropertyList.encode(value, format: format, maximumOutputLength: budget)
        case .json: return Data(try JSONPropertyListWriter.write(value, pretty: true, maximumOutputLength: budget))
        }
    }
}

/// Reading property lists from files with messages that name the file.
enum Inputs {
    static func readPropertyList(_ path: String) throws -> PropertyListValue {
        try readPropertyListAndLength(path).value
    }

    /// The property list in a file and the file's length (for ``outputBudget(forInputLength:)``).
    static func readPropertyListAndLength(_ path: String) throws -> (value: PropertyListValue, length: Int) {
        let data = try Files.read(path)
        return (try decodePropertyList(data, path: path), data.count)
    }

    /// The property list in `data`, read from `path`, with errors that name the file.
    static func decodePropertyList(_ data: Data, path: String) throws -> PropertyListValue {
        do {
            return try PropertyList.decode(data)
        } catch let error as PropertyListError {
            throw ToolError("\(displayName(path)): \(error)")
        }
    }

    /// The most text the tool writes for an input of `inputLength` bytes: 64 MiB, or 16 times
    /// the input when that is more. Real files stay far below it (XML is about 3 times binary);
    /// a small file whose shared references expand to gigabytes of text stops with a clear error
    /// instead of filling the disk and memory.
    static func outputBudget(forInputLength inputLength: Int) -> Int {
        max(64 << 20, inputLength.multipliedReportingOverflow(by: 16).overflow ? Int.max : inputLength * 16)
    }

    static func displayName(_ path: String) -> String { path == "-" ? "<stdin>" : path }

    /// Runs `body`, turning any failure into a one-line error that names the input.
    static func describingFailures<T>(of path: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as UsageError {
            throw error
        } catch let error as FileAccessError {
            // A failure writing the output, not one of the input: the caller names the output.
            throw error
        } catch {
            throw ToolError("\(displayName(path)): \(error)")
        }
    }

    /// True for a property list shaped like an NSKeyedArchiver archive.
    static func isKeyedArchive(_ value: PropertyListValue) -> Bool {
        guard case .dictionary(let dictionary) = value else { return false }
        return dictionary["$objects"] != nil && dictionary["$top"] != nil && dictionary["$archiver"] != nil
    }
}
