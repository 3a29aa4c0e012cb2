/// The argument domain: `-Key value` pairs in a program's arguments, highest in the search list,
/// so `myapp -NightMode YES` overrides the stored value for one run.
public enum ArgumentDomain {
    /// Parses `-Key value` pairs as Foundation does: a value that does not start with `-` is
    /// taken; when it starts with `{`, `(`, `<`, `[` or `"` it is read as a property list
    /// (OpenStep text or XML), and if that fails, or otherwise, it is the string itself. OpenStep
    /// has no numbers or booleans, so `-NightMode YES` gives the string `YES`, which the typed
    /// getters convert (`bool` is true for `YES`); GNUstep's typed values are not read either
    /// (`-Count '<*I5>'` is that string, as in Foundation).
    public static func parse(_ arguments: [String]) -> [String: PropertyListValue] {
        var result: [String: PropertyListValue] = [:]
        var index = 0
        while index + 1 < arguments.count {
            let current = arguments[index], next = arguments[index + 1]
            guard current.count > 1, current.hasPrefix("-"), !next.hasPrefix("-") else {
                index += 1
                continue
            }
            let key = String(current.dropFirst())
            let text = next.trimmingASCIIWhitespaceForArguments()
            var value = PropertyListValue(next)
            if let first = text.first, "{(<[\"".contains(first), let parsed = try? PropertyList.decodeAsFoundation(Data(text.utf8)) {
                value = parsed
            }
            result[key] = value
            index += 2
        }
        return result
    }

    /// The current process's argument domain, parsed once.
    public static let current: [String: PropertyListValue] = parse(Array(CommandLine.arguments.dropFirst()))
}

extension String {
    fileprivate func trimmingASCIIWhitespaceForArguments() -> String {
        let scalars = unicodeScalars
        let isSpace: (Unicode.Scalar) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = scalars.firstIndex(where: { !isSpace($0) }), let last = scalars.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(scalars[first...last])
    }
}
