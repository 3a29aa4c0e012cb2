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
            try checkArchiveLength(of: value, budget: OutputBudget(Inputs.outputBudget(forInputLength: length)))
            return try KeyedArchiver.archivedData(withRootObject: value, format: format.propertyListFormat)
        }
        try Files.write(archive, to: parsed.value("-o", "--output"))
        return 0
    }

    /// Throws when the archive of `value` would be longer than `budget` (the tool's output
    /// budget, as for `convert` and `print`), before archiving it.
    ///
    /// A container the input's binary form shares by reference (a 139-byte file can nest 24
    /// arrays that each hold the next twice) is a new NSArray or NSDictionary at every use, so
    /// the archive grows with the containers reached, not with the file: 16 million arrays,
    /// gigabytes of memory. This counts, over the value as the archiver walks it, a lower
    /// bound of the binary archive's length (XML is longer): at least 8 bytes for each
    /// container (its object and its member list, each a marker and an offset, and the
    /// object's `$class` and list entries) and a byte for each member reference (leaves are
    /// stored once, so they add nothing). It stops as soon as the bound passes the budget.
    static func checkArchiveLength(of value: PropertyListValue, budget: OutputBudget) throws {
        // Containers only are kept for later (depth first), so a wide array of leaves costs no
        // memory here; the bound (at most the budget) is the wrapping arithmetic's guard.
        var bound = 0
        var pending: [PropertyListValue] = isContainer(value) ? [value] : []
        while let next = pending.popLast() {
            switch next {
            case .array(let members), .set(let members):
                bound &+= 8 &+ members.count
                for member in members where isContainer(member) { pending.append(member) }
            case .dictionary(let dictionary):
                bound &+= 8 &+ 2 &* dictionary.count
                for entry in dictionary.entries where isContainer(entry.value) { pending.append(entry.value) }
            case .string, .integer, .real, .bool, .date, .data, .uid, .null:
                continue
            }
            try budget.check(bound)
        }
    }

    private static func isContainer(_ value: PropertyListValue) -> Bool {
        switch value {
        case .array, .set, .dictionary: true
        case .string, .integer, .real, .bool, .date, .data, .uid, .null: false
        }
    }
}
