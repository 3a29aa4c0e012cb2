import KeyedArchive

/// `karchive lint`: checks files the way `plutil -lint` does.
enum LintCommand: Command {
    static let name = "lint"
    static let summary = "Checks property lists and reports what is wrong and where"
    static let help = """
        usage: karchive lint FILE...

        Reads each FILE as a property list (binary, XML or OpenStep). Prints `FILE: OK` for each
        valid file. For each invalid one prints `FILE: <what is wrong and where>` on standard
        error. Exits 0 when every file is valid, 1 otherwise.

        """

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, valueOptions: [])
        guard !parsed.positional.isEmpty else { throw UsageError("expected at least one FILE") }
        var allValid = true
        for path in parsed.positional {
            do {
                _ = try Inputs.readPropertyList(path)
                Output.write("\(Karchive.escapingControlCharacters(Inputs.displayName(path))): OK\n")
            } catch {
                allValid = false
                Output.error("\(Karchive.oneLine(error))\n")
            }
        }
        return allValid ? 0 : 1
    }
}
