import KeyedArchive

/// `karchive convert`: placeholder until its issue lands.
enum ConvertCommand: Command {
    static let name = "convert"
    static let summary = "Converts a property list between binary, XML, OpenStep and JSON"
    static let help = "usage: karchive convert ...\n\nConverts a property list between binary, XML, OpenStep and JSON.\n"
    static func run(_ arguments: [String]) throws -> Int32 {
        throw ToolError("not implemented yet")
    }
}
