import KeyedArchive

/// `karchive unarchive`: resolves an NSKeyedArchiver archive into a plain property list
/// (the rules are on ``ArchiveResolver``).
enum UnarchiveCommand: Command {
    static let name = "unarchive"
    static let summary = "Resolves an NSKeyedArchiver archive into a plain property list"
    static let help = """
        usage: karchive unarchive [--format binary|xml|json] [--key KEY | --all] INPUT [-o OUTPUT]

        Resolves an NSKeyedArchiver archive (binary or XML) into a plain property list: arrays,
        dictionaries, strings, numbers, data and dates as themselves; sets and ordered sets as
        arrays; NSNull and nil as "$null"; NSURL as its absolute URL string; NSUUID as its
        uppercase string; any other class as a dictionary of its fields plus "$class"; a
        reference back into an object still being written (a cycle) as {"$ref": index}.
        The root object (top-level key "root") is written; an archive without one is an error
        unless --key or --all says what to write instead. INPUT may be - for standard input.

        options:
          --key KEY       write the object under top-level key KEY instead of "root"
          --all           write a dictionary of every top-level key and its object
          -f, --format F  binary, xml (default) or json
          -o, --output F  write to F instead of standard output

        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, valueOptions: ["-f", "--format", "-o", "--output", "--key"], flagOptions: ["--all"])
        guard parsed.positional.count == 1, let input = parsed.positional.first else {
            throw UsageError("expected one INPUT (see --help)")
        }
        if parsed.flag("--all"), parsed.value("--key") != nil { throw UsageError("--all and --key cannot be used together") }
        let format = try OutputFormat(parsed.value("-f", "--format") ?? "xml", allowed: ["binary", "xml", "json"])
        let (archive, length) = try Inputs.readPropertyListAndLength(input)
        let resolved = try Inputs.describingFailures(of: input) {
            let resolver = try ArchiveResolver(propertyList: archive)
            guard parsed.flag("--all") else { return try resolver.resolve(topLevelKey: parsed.value("--key") ?? "root") }
            var all = PropertyListDictionary()
            for key in resolver.topLevelKeys { all[key] = try resolver.resolve(topLevelKey: key) }
            return .dictionary(all)
        }
        let output = try Inputs.describingFailures(of: input) { try format.encode(resolved, inputLength: length) }
        try Files.write(output, to: parsed.value("-o", "--output"))
        return 0
    }
}
