import KeyedArchive

/// `karchive unarchive`: resolves an NSKeyedArchiver archive into a plain property list
/// (the rules are on ``ArchiveResolver``).
enum UnarchiveCommand: Command {
    static let name = "unarchive"
    static let summary = "Resolves an NSKeyedArchiver archive into a plain property list"
    static let help = """
        usage: karchive unarchive [--format binary|xml|json] INPUT [-o OUTPUT]

        Resolves an NSKeyedArchiver archive (binary or XML) into a plain property list: arrays,
        dictionaries, strings, numbers, data and dates as themselves; sets and ordered sets as
        arrays; NSNull and nil as "$null"; NSURL as its absolute URL string; NSUUID as its
        uppercase string; any other class as a dictionary of its fields plus "$class"; a
        reference back into an object still being written (a cycle) as {"$ref": index}.
        The root object is written; an archive without "root" gives a dictionary of all its
        top-level keys. INPUT may be - for standard input.

        options:
          --format F      binary, xml (default) or json
          -o, --output F  write to F instead of standard output

        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, valueOptions: ["--format", "-o", "--output"])
        guard parsed.positional.count == 1, let input = parsed.positional.first else {
            throw UsageError("expected one INPUT (see --help)")
        }
        let format = parsed.value("--format") ?? "xml"
        guard ["binary", "xml", "json"].contains(format) else {
            throw UsageError("unknown format '\(format)' (binary, xml or json)")
        }
        let data = try Files.read(input)
        let resolved: PropertyListValue
        do {
            resolved = try ArchiveResolver.resolve(data)
        } catch let error as KeyedArchiveError {
            throw ToolError("\(input): \(error)")
        }
        let output: Data
        do {
            switch format {
            case "binary": output = try PropertyList.encode(resolved, format: .binary)
            case "json": output = Data(try JSONPropertyListWriter.write(resolved, pretty: true))
            default: output = try PropertyList.encode(resolved, format: .xml)
            }
        } catch {
            throw ToolError("\(input): cannot write \(format): \(error)")
        }
        try Files.write(output, to: parsed.value("-o", "--output"))
        return 0
    }
}
