/// Where preference domains live.
///
/// Each domain `D` is the binary property list `DIRECTORY/D.plist`; the global domain shared by
/// all programs of the user is `DIRECTORY/.GlobalPreferences.plist` (Apple's name).
public enum PreferencesDirectory {
    /// The environment variable that overrides the default directory
    /// (`KEYEDARCHIVE_PREFERENCES_DIR=/srv/app/prefs`).
    public static let environmentVariable = "KEYEDARCHIVE_PREFERENCES_DIR"

    /// The default directory:
    /// 1. `$KEYEDARCHIVE_PREFERENCES_DIR` when set;
    /// 2. on Apple platforms `~/Library/Preferences` (note that `cfprefsd` caches those files:
    ///    a program using both this store and `UserDefaults` on one domain should pick one);
    /// 3. elsewhere `$XDG_CONFIG_HOME/keyedarchive/preferences`, with `XDG_CONFIG_HOME`
    ///    defaulting to `~/.config` as the XDG Base Directory specification says.
    public static var `default`: String {
        if let override = SystemFiles.environment(environmentVariable) { return override }
        #if canImport(Darwin)
        return SystemFiles.homeDirectory() + "/Library/Preferences"
        #else
        // A relative XDG_CONFIG_HOME is invalid and ignored, as the specification says (it
        // would put the files wherever the process happens to run).
        let config = SystemFiles.environment("XDG_CONFIG_HOME").flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (SystemFiles.homeDirectory() + "/.config")
        return config + "/keyedarchive/preferences"
        #endif
    }

    /// The file of a domain in a directory.
    public static func path(ofDomain domain: String, in directory: String) -> String {
        directory + "/" + domain + ".plist"
    }

    /// The domains stored in a directory: the names of its `*.plist` files, without hidden ones
    /// (the global domain and lock files), sorted.
    public static func domains(in directory: String) -> [String] {
        SystemFiles.list(directory).compactMap { name in
            guard !name.hasPrefix("."), name.hasSuffix(".plist"), name.count > 6 else { return nil }
            return String(name.dropLast(6))
        }
    }

    /// Throws if `directory` is empty: `DIR + "/" + name` would put the domain's file, and its
    /// lock, at the root of the file system (a script's `--dir "$UNSET"` run as root).
    static func validate(directory: String) throws {
        guard !directory.isEmpty, !directory.utf8.contains(0) else {
            throw PreferencesError("invalid preferences directory '\(directory)'")
        }
    }

    /// Throws unless `domain` is usable as a file name (no `/`, not empty, not `.` or `..`).
    /// Its length is the file system's business: a name whose lock file (`.D.plist.lock`, 12
    /// bytes more) does not fit fails when written, with the system's error, and still reads.
    static func validate(domain: String) throws {
        guard !domain.isEmpty, domain != ".", domain != "..", !domain.contains("/"), !domain.utf8.contains(0) else {
            throw PreferencesError("invalid domain name '\(domain)'")
        }
    }
}
