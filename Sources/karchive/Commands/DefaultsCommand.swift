import KeyedArchive

/// `karchive defaults`: reads and writes preference domains like macOS `defaults`, on the same
/// binary property-list files the `Preferences` store uses.
enum DefaultsCommand: Command {
    static let name = "defaults"
    static let summary = "Reads and writes preference domains, like macOS defaults"
    static let takesFreeText = true
    static let help = """
        usage: karchive defaults [--dir DIR] <verb> ...

        Reads and writes preference domains, like macOS defaults. The domain D is the binary
        property list DIR/D.plist; DIR defaults to $KEYEDARCHIVE_PREFERENCES_DIR, else
        ~/Library/Preferences on Apple platforms and $XDG_CONFIG_HOME/keyedarchive/preferences
        (~/.config/...) elsewhere. The domain -g or NSGlobalDomain is the global domain.

        verbs:
          read [DOMAIN [KEY]]         print all domains, a domain, or one value
          read-type DOMAIN KEY        print the type of a value ("Type is boolean")
          write DOMAIN KEY VALUE      VALUE without any of "(){}[]<> is a string as it stands ("" the
                                      empty string); with them, a property list ({a = b;}, (x, y),
                                      <0fbd>, XML), or an error
          write DOMAIN KEY TYPE VALUE...
                                      TYPE: -string -int -float -bool -date -data
                                            -array -array-add -dict -dict-add
                                      (array items and dictionary values may each be preceded
                                      by a type, else are read as VALUE is; -array-add and
                                      -dict-add refuse a key holding another type)
          write DOMAIN '{ PLIST }'    replace the whole domain with the dictionary
          rename DOMAIN KEY NEWKEY    move a value to another key
          delete DOMAIN [KEY]         remove a key, or the whole domain
          domains                     list the domains in the directory
          export DOMAIN FILE          write the domain as a binary plist (FILE - : XML to stdout)
          import DOMAIN FILE          replace the domain with a plist file (any format; - : stdin)

        """

    static func run(_ arguments: [String]) throws -> Int32 {
        var rest = arguments
        var directory: String?
        if rest.first == "--dir" {
            guard rest.count >= 2 else { throw UsageError("--dir needs a directory") }
            directory = rest[1]
            rest.removeFirst(2)
        } else if let first = rest.first, first.hasPrefix("--dir=") {
            directory = String(first.dropFirst(6))
            rest.removeFirst()
        }
        // An empty directory would put the files at the root (`--dir "$UNSET"`).
        if directory == "" { throw UsageError("--dir needs a directory") }
        // Help where an option can stand: instead of the verb, or as a verb's only operand
        // (`defaults --dir D read --help`); later, `--help` is a value (`write D K --help`).
        if rest.first == "--help" || rest.first == "-h" || (rest.count == 2 && rest.last == "--help") {
            Output.write(help)
            return 0
        }
        guard let verb = rest.first else { throw UsageError("missing verb; run `karchive defaults --help`") }
        let operands = Array(rest.dropFirst())
        let tool = DefaultsTool(directory: directory ?? PreferencesDirectory.default)
        switch verb {
        case "read": return try tool.read(operands)
        case "read-type": return try tool.readType(operands)
        case "write": return try tool.write(operands)
        case "rename": return try tool.rename(operands)
        case "delete": return try tool.delete(operands)
        case "domains": return try tool.domains(operands)
        case "export": return try tool.export(operands)
        case "import": return try tool.importDomain(operands)
        case "x-write-many": return try tool.writeMany(operands)
        case "x-churn": return try tool.churn(operands)
        default: throw UsageError("unknown verb '\(verb)'")
        }
    }
}

/// The verbs, over one directory.
struct DefaultsTool {
    let directory: String

    private func domainName(_ operand: String) -> String {
        operand == "-g" || operand == "NSGlobalDomain" || operand == "-globalDomain" ? Preferences.globalDomainName : operand
    }

    /// A store on exactly one domain file: no argument or global domain, explicit synchronize
    /// (so failures become errors, not warnings).
    private func store(_ domain: String) throws -> Preferences {
        try Preferences(
            domain: domainName(domain),
            configuration: .init(directory: directory, argumentDomain: [:], globalDomain: nil, writeDelay: .seconds(3600)))
    }

    /// The values stored in a domain; throws when its file is there but cannot be read, which
    /// the store itself takes as an empty domain (with a warning), so that `read` and `export`
    /// never report a damaged domain as `{}` with success.
    private func storedValues(_ domain: String) throws -> [String: PropertyListValue] {
        let path = PreferencesDirectory.path(ofDomain: domainName(domain), in: directory)
        if let problem = Preferences.readProblem(ofDomainFile: path) {
            throw ToolError("Domain \(domain) cannot be read: \(problem)")
        }
        return try store(domain).persistentDomain()
    }

    private func exists(_ domain: String) -> Bool {
        FileStampCheck.exists(PreferencesDirectory.path(ofDomain: domainName(domain), in: directory))
    }

    /// OpenStep text with sorted keys, as Apple's `description` prints dictionaries.
    private func text(_ value: PropertyListValue) throws -> String {
        try OpenStepPropertyListWriter.string(value, options: .init(trailingNewline: false, sortsKeys: true)) + "\n"
    }

    private func sortedDictionary(_ values: [String: PropertyListValue]) -> PropertyListValue {
        .dictionary(PropertyListDictionary(values.keys.sorted().map { (PropertyListValue($0), values[$0] ?? .null) }))
    }

    func read(_ operands: [String]) throws -> Int32 {
        switch operands.count {
        case 0:
            var all: [(String, PropertyListValue)] = []
            for domain in PreferencesDirectory.domains(in: directory) {
                all.append((domain, sortedDictionary(try storedValues(domain))))
            }
            Output.write(try text(.dictionary(PropertyListDictionary(stringKeys: all))))
        case 1:
            guard exists(operands[0]) else { throw ToolError("Domain \(operands[0]) does not exist") }
            Output.write(try text(sortedDictionary(try storedValues(operands[0]))))
        case 2:
            guard let value = try storedValues(operands[0])[operands[1]] else {
                throw ToolError("The domain/default pair of (\(operands[0]), \(operands[1])) does not exist")
            }
            // Like macOS defaults: scalars print bare, containers as OpenStep text.
            switch value {
            case .string(let string): Output.write(string.value + "\n")
            case .date(let date): Output.write(OpenStepDate.format(date) + "\n")
            case .bool, .integer, .real:
                Output.write((PreferenceConversions.string(value) ?? "") + "\n")
            default: Output.write(try text(value))
            }
        default:
            throw UsageError("read takes at most a domain and a key")
        }
        return 0
    }

    func readType(_ operands: [String]) throws -> Int32 {
        guard operands.count == 2 else { throw UsageError("read-type needs a domain and a key") }
        guard let value = try storedValues(operands[0])[operands[1]] else {
            throw ToolError("The domain/default pair of (\(operands[0]), \(operands[1])) does not exist")
        }
        let type: String
        switch value {
        case .bool: type = "boolean"
        case .integer: type = "integer"
        case .real: type = "float"
        case .string: type = "string"
        case .date: type = "date"
        case .data: type = "data"
        case .array, .set: type = "array"
        case .dictionary: type = "dictionary"
        case .uid: type = "UID"
        case .null: type = "null"
        }
        Output.write("Type is \(type)\n")
        return 0
    }

    func write(_ operands: [String]) throws -> Int32 {
        guard operands.count >= 2 else { throw UsageError("write needs a domain and a dictionary, or a domain, a key and a value") }
        let preferences = try store(operands[0])
        guard operands.count >= 3 else {
            // `write DOMAIN '{ plist }'`: the dictionary becomes the whole domain.
            guard let dictionary = PreferenceConversions.dictionary(try parseUntyped(operands[1])) else {
                throw ToolError("Rep argument is not a dictionary\nDefaults have not been changed.")
            }
            try replaceDomain(of: preferences, with: dictionary)
            return 0
        }
        let key = operands[1]
        var values = Array(operands.dropFirst(2))
        let flag = values.first ?? ""
        let existing = preferences.persistentDomain()[key]
        let value: PropertyListValue
        switch flag {
        case "-array", "-array-add":
            values.removeFirst()
            var items = try parseItems(values)
            if flag == "-array-add", let existing {
                // Appending to a value of another type would replace it: refused, as by macOS defaults.
                guard let array = existing.arrayValue else {
                    throw ToolError("Value for key \(key) is not an array; cannot append. Leaving defaults unchanged.")
                }
                items = array + items
            }
            value = .array(items)
        case "-dict", "-dict-add":
            values.removeFirst()
            var dictionary = PropertyListDictionary()
            if flag == "-dict-add", let existing {
                guard let entries = existing.dictionaryValue else {
                    throw ToolError("Value for key \(key) is not a dictionary; cannot append. Leaving defaults unchanged.")
                }
                dictionary = entries
            }
            var index = 0
            while index < values.count {
                let entryKey = values[index]
                index += 1
                guard index < values.count else { throw UsageError("-dict needs a value for key \(entryKey)") }
                let (entryValue, next) = try parseItem(values, at: index)
                dictionary[entryKey] = entryValue
                index = next
            }
            value = .dictionary(dictionary)
        default:
            let (parsed, next) = try parseItem(values, at: 0)
            guard next == values.count else { throw UsageError("too many values; use -array or -dict for several") }
            value = parsed
        }
        try refuseUnstorable([key: value])
        preferences.set(value, forKey: key)
        try preferences.synchronize()
        return 0
    }

    /// Throws, changing nothing, when a value is one the store refuses
    /// (`Preferences.storageProblem`): `set` would only warn, and a rename or an import that
    /// went on lost the value or half applied.
    private func refuseUnstorable(_ values: [String: PropertyListValue]) throws {
        for key in values.keys.sorted() {
            if let value = values[key], let problem = Preferences.storageProblem(value) {
                throw ToolError("cannot store \(key): \(problem); leaving defaults unchanged")
            }
        }
    }

    /// Makes `dictionary` the whole of the domain.
    private func replaceDomain(of preferences: Preferences, with dictionary: [String: PropertyListValue]) throws {
        try refuseUnstorable(dictionary)
        for key in preferences.persistentDomain().keys where dictionary[key] == nil { preferences.removeObject(forKey: key) }
        for (key, value) in dictionary { preferences.set(value, forKey: key) }
        try preferences.synchronize()
    }

    /// `rename DOMAIN OLD NEW`: moves a value to another key.
    func rename(_ operands: [String]) throws -> Int32 {
        guard operands.count == 3 else { throw UsageError("rename needs a domain, a key and a new key") }
        let preferences = try store(operands[0])
        guard let value = preferences.persistentDomain()[operands[1]] else {
            throw ToolError("Key \(operands[1]) does not exist in domain \(operands[0]); leaving defaults unchanged")
        }
        try refuseUnstorable([operands[2]: value])
        preferences.removeObject(forKey: operands[1])
        preferences.set(value, forKey: operands[2])
        try preferences.synchronize()
        return 0
    }

    private func parseItems(_ values: [String]) throws -> [PropertyListValue] {
        var items: [PropertyListValue] = []
        var index = 0
        while index < values.count {
            let (value, next) = try parseItem(values, at: index)
            items.append(value)
            index = next
        }
        return items
    }

    /// A value given without a type, as macOS `defaults` reads one: text with none of
    /// `"(){}[]<>` is a string as it stands (`a=b;`, `PATH=/usr/bin`, "" the empty string);
    /// other text must be a property list (`{a = b;}`, `(x, y)`, `<0fbd>`, XML), or nothing is
    /// written, rather than a mistyped one stored as a string.
    private func parseUntyped(_ text: String) throws -> PropertyListValue {
        guard text.contains(where: { "\"(){}[]<>".contains($0) }) else { return PropertyListValue(text) }
        do {
            // As Foundation reads it: GNUstep's `<*I5>` is not an integer there.
            return try PropertyList.decodeAsFoundation(Data(text.utf8))
        } catch {
            throw ToolError("Could not parse: \(text). Try single-quoting it. (\(error))")
        }
    }

    /// One value, optionally preceded by a type flag; returns the index after it.
    private func parseItem(_ values: [String], at index: Int) throws -> (PropertyListValue, Int) {
        guard index < values.count else { throw UsageError("missing value") }
        let first = values[index]
        if ["-array", "-array-add", "-dict", "-dict-add"].contains(first) {
            throw UsageError("cannot nest composite types (\(first) inside an array or a dictionary); give the item as a property list, e.g. '(a, b)'")
        }
        let types = ["-string", "-int", "-integer", "-float", "-bool", "-boolean", "-date", "-data"]
        guard types.contains(first) else { return (try parseUntyped(first), index + 1) }
        guard index + 1 < values.count else { throw UsageError("\(first) needs a value") }
        let text = values[index + 1]
        let value: PropertyListValue
        switch first {
        case "-string": value = PropertyListValue(text)
        case "-int", "-integer":
            if let integer = Int64(text) {
                value = .integer(PropertyListInteger(integer))
            } else if let unsigned = UInt64(text) {
                value = .integer(PropertyListInteger(unsigned))
            } else {
                throw ToolError("'\(text)' is not an integer")
            }
        case "-float":
            guard let real = Double(text) else { throw ToolError("'\(text)' is not a number") }
            value = .real(PropertyListReal(real))
        case "-bool", "-boolean":
            switch text.lowercased() {
            case "yes", "true", "1": value = .bool(true)
            case "no", "false", "0": value = .bool(false)
            default: throw ToolError("'\(text)' is not a boolean (use YES, NO, true, false, 1 or 0)")
            }
        case "-date":
            guard let date = OpenStepDate.parse(text) else {
                throw ToolError("'\(text)' is not a date (use yyyy-MM-dd HH:mm:ss +zzzz)")
            }
            value = .date(date)
        default:
            let digits = text.filter { !$0.isWhitespace && $0 != "<" && $0 != ">" }
            guard digits.count % 2 == 0, let data = try? OpenStepPropertyListReader.read("<" + digits + ">").dataValue else {
                throw ToolError("'\(text)' is not hex data")
            }
            value = .data(data)
        }
        return (value, index + 2)
    }

    func delete(_ operands: [String]) throws -> Int32 {
        switch operands.count {
        case 1:
            guard exists(operands[0]) else { throw ToolError("Domain (\(operands[0])) not found.") }
            let preferences = try store(operands[0])
            preferences.removeAll()
            try preferences.synchronize()
            // An emptied domain disappears, as on macOS (a directory at its path, which the
            // store cannot read, is an error rather than a silent success).
            try FileStampCheck.remove(preferences.path, unlessMissing: true)
        case 2:
            let preferences = try store(operands[0])
            guard preferences.persistentDomain()[operands[1]] != nil else {
                throw ToolError("Domain (\(operands[0])) not found.\nDefaults have not been changed.")
            }
            preferences.removeObject(forKey: operands[1])
            try preferences.synchronize()
        default:
            throw UsageError("delete takes a domain and an optional key")
        }
        return 0
    }

    func domains(_ operands: [String]) throws -> Int32 {
        guard operands.isEmpty else { throw UsageError("domains takes no arguments") }
        Output.write(PreferencesDirectory.domains(in: directory).map(Karchive.escapingControlCharacters).joined(separator: ", ") + "\n")
        return 0
    }

    func export(_ operands: [String]) throws -> Int32 {
        guard operands.count == 2 else { throw UsageError("export needs a domain and a file") }
        guard exists(operands[0]) else { throw ToolError("Domain \(operands[0]) does not exist") }
        let value = sortedDictionary(try storedValues(operands[0]))
        if operands[1] == "-" {
            Output.write(try PropertyList.encode(value, format: .xml))
        } else {
            try Files.write(try PropertyList.encode(value, format: .binary), to: operands[1])
        }
        return 0
    }

    func importDomain(_ operands: [String]) throws -> Int32 {
        guard operands.count == 2 else { throw UsageError("import needs a domain and a file") }
        let value = try Inputs.decodePropertyList(try Files.read(operands[1]), path: operands[1])
        guard let dictionary = PreferenceConversions.dictionary(value) else {
            throw ToolError("\(operands[1]): the file must hold a dictionary with string keys")
        }
        try replaceDomain(of: try store(operands[0]), with: dictionary)
        return 0
    }

    // MARK: Helpers for the test suite (not in --help)

    /// `x-write-many DOMAIN PREFIX COUNT [BATCH]`: writes PREFIX0...PREFIX(COUNT-1) = index,
    /// synchronising every BATCH keys (default 1), to interleave with another writer.
    func writeMany(_ operands: [String]) throws -> Int32 {
        guard operands.count >= 3, let count = Int(operands[2]) else { throw UsageError("x-write-many DOMAIN PREFIX COUNT [BATCH]") }
        let batch = max(1, operands.count > 3 ? Int(operands[3]) ?? 1 : 1)
        let preferences = try store(operands[0])
        for index in 0..<count {
            preferences.set(index, forKey: operands[1] + String(index))
            if (index + 1) % batch == 0 || index == count - 1 { try preferences.synchronize() }
        }
        return 0
    }

    /// `x-churn DOMAIN`: rewrites the domain forever with generation n and a payload derived
    /// from n (so a reader can tell a torn file), printing "ready" after the first write.
    func churn(_ operands: [String]) throws -> Int32 {
        guard operands.count == 1 else { throw UsageError("x-churn DOMAIN") }
        let preferences = try store(operands[0])
        var generation = preferences.integer(forKey: "Generation")
        while true {
            generation += 1
            let size = 1_000 + (generation * 7_919) % 200_000
            preferences.set(generation, forKey: "Generation")
            preferences.set(Data(repeating: UInt8(truncatingIfNeeded: generation), count: size), forKey: "Payload")
            preferences.set(size, forKey: "PayloadSize")
            try preferences.synchronize()
            if generation % 5 == 1 { Output.write("ready \(generation)\n") }
        }
    }
}

/// File checks the tool needs beyond the store.
enum FileStampCheck {
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    static func remove(_ path: String, unlessMissing: Bool = false) throws {
        guard unlink(path) == 0 || (unlessMissing && errno == ENOENT) else {
            throw ToolError("\(path): cannot remove (\(String(cString: strerror(errno))))")
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
