import KeyedArchive

/// `karchive defaults`: placeholder until its issue lands.
enum DefaultsCommand: Command {
    static let name = "defaults"
    static let summary = "Reads and writes preference domains, like macOS defaults"
    static let help = "usage: karchive defaults ...\n\nReads and writes preference domains, like macOS defaults.\n"
    static func run(_ arguments: [String]) throws -> Int32 {
        throw ToolError("not implemented yet")
    }
}
