import KeyedArchive

/// `karchive demo`: placeholder until its issue lands.
enum DemoCommand: Command {
    static let name = "demo"
    static let summary = "Writes, re-reads and shows the ArchivingData sample archive"
    static let help = "usage: karchive demo ...\n\nWrites, re-reads and shows the ArchivingData sample archive.\n"
    static func run(_ arguments: [String]) throws -> Int32 {
        throw ToolError("not implemented yet")
    }
}
