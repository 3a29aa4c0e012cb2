import KeyedArchive

/// `karchive lint`: placeholder until its issue lands.
enum LintCommand: Command {
    static let name = "lint"
    static let summary = "Checks property lists and reports what is wrong and where"
    static let help = "usage: karchive lint ...\n\nChecks property lists and reports what is wrong and where.\n"
    static func run(_ arguments: [String]) throws -> Int32 {
        throw ToolError("not implemented yet")
    }
}
