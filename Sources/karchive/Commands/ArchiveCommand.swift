import KeyedArchive

/// `karchive archive`: archives a plain property list as an NSKeyedArchiver archive.
enum ArchiveCommand: Command {
    static let name = "archive"
    static let summary = "Archives a plain property list as an NSKeyedArchiver archive"
    static let help = """
        usage: karchive archive [--format binary|xml] INPUT [-o OUTPUT]

        Reads a plain property list in any format (binary, XML, OpenStep) and writes an
        NSKeyedArchiver archive of it with the root under "root": arrays as NSArray,
        dictionaries as NSDictionary, sets as NSSet, strings, numbers and data inline,
        dates as NSDate. INPUT may be - for standard input.

        options:
          -f, --format F  binary (default) or xml
          -o, --output F  write to F instead of standard output

        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, valueOptions: ["-f", "--format", "-o", "--output"])
        guard parsed.positional.count == 1, let input = parsed.positional.first else {
            throw UsageError("expected one INPUT (see --help)")
        }
        let format = try OutputFormat(parsed.value("-f", "--format") ?? "binary", allowed: ["binary", "xml"])
        let (value, length) = try Inputs.readPropertyListAndLength(input)
        let archive = try Inputs.describingFailures(of: input) {
            let budget = OutputBudget(Inputs.outputBudget(forInputLength: length))
            // Before archiving: a small file's shared containers can expand past any memory.
            try KeyedArchiver.checkArchivedLength(of: value, format: format.propertyListFormat, budget: budget)
            let archive = try KeyedArchiver.archivedData(withRootObject: value, format: format.propertyListFormat)
            // The bound above is a lower one: the archive itself must fit as well.
            try budget.check(archive.count)
            return archive
        }
        try Files.write(archive, to: parsed.value("-o", "--output"))
        return 0
    }
}
