import KeyedArchive

/// `karchive unarchive`: placeholder until its issue lands.
enum UnarchiveCommand: Command {
    static let name = "unarchive"
    static let summary = "Resolves an NSKeyedArchiver archive into a plain property list"
    static let help = "usage: karchive unarchive ...\n\nResolves an NSKeyedArchiver archive into a plain property list.\n"
    static func run(_ arguments: [String]) throws -> Int32 {
        throw ToolError("not implemented yet")
    }
}
