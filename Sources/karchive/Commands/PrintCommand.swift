import KeyedArchive

/// `karchive print`: placeholder until its issue lands.
enum PrintCommand: Command {
    static let name = "print"
    static let summary = "Prints a property list or archive as an indented tree"
    static let help = "usage: karchive print ...\n\nPrints a property list or archive as an indented tree.\n"
    static func run(_ arguments: [String]) throws -> Int32 {
        throw ToolError("not implemented yet")
    }
}
