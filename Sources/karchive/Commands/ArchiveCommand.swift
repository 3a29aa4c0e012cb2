import KeyedArchive

/// `karchive archive`: placeholder until its issue lands.
enum ArchiveCommand: Command {
    static let name = "archive"
    static let summary = "Archives a plain property list as an NSKeyedArchiver archive"
    static let help = "usage: karchive archive ...\n\nArchives a plain property list as an NSKeyedArchiver archive.\n"
    static func run(_ arguments: [String]) throws -> Int32 {
        throw ToolError("not implemented yet")
    }
}
