import KeyedArchive
import KeyedArchiveSample

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `karchive demo`: the classic "save the settings screen on exit, restore on launch" sample.
///
/// The `ArchivingData` profile lives in a keyed archive (the Codable bridge, written atomically
/// and only when something changed); the night-mode switch and the membership deadline live in a
/// preferences domain beside it.
enum DemoCommand: Command {
    static let name = "demo"
    static let summary = "Writes, re-reads and shows the ArchivingData sample archive"
    static let help = """
        usage: karchive demo [--dir DIR] [--name NAME] [--gender TEXT] [--vocation TEXT]
                             [--page TEXT] [--slider 0...1] [--switch on|off] [--swap-image]
                             [--night on|off] [--clear]

        The settings screen of the ArchivingData sample, run from the shell. When DIR holds an
        archive from an earlier run, it is loaded and shown; otherwise the profile starts from
        the defaults with the default picture. The options change fields; the profile is then
        archived back atomically (only when something changed). Run it twice to see the state
        carried over.

        Beside the profile, a preferences domain keeps the night-mode switch and a membership
        deadline set at the first launch (two minutes later): every later launch compares the
        time with it and says "membership expired" once it has passed.

          --dir DIR        where the files live (default: \(defaultDirectoryDescription))
          --name, --gender, --vocation, --page TEXT
                           set that field
          --slider VALUE   the slider, a number from 0 to 1
          --switch on|off  the switch
          --swap-image     switch between the two shipped pictures
          --night on|off   the night-mode preference
          --clear          delete the archive and the demo's preferences, then stop

        """

    static let archiveName = "ArchivingData.archive"

    static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(
            arguments,
            valueOptions: ["--dir", "--name", "--gender", "--vocation", "--page", "--slider", "--switch", "--night"],
            flagOptions: ["--swap-image", "--clear"])
        guard parsed.positional.isEmpty else { throw UsageError("unexpected argument '\(parsed.positional[0])'") }
        let slider = try parsed.value("--slider").map(parseSlider)
        let switchOn = try parsed.value("--switch").map { try parseOnOff($0, option: "--switch") }
        let nightMode = try parsed.value("--night").map { try parseOnOff($0, option: "--night") }

        // An empty directory would put the files at the root (`--dir "$UNSET"`).
        if parsed.value("--dir") == "" { throw UsageError("--dir needs a directory") }
        let directory = parsed.value("--dir") ?? defaultDirectory()
        try AtomicFile.createDirectories(directory, mode: 0o755)
        let archivePath = directory + "/" + archiveName
        let settings = try DemoSettings(directory: directory)

        if parsed.flag("--clear") {
            try settings.clear()
            if unlink(archivePath) != 0 && errno != ENOENT { throw FileAccessError(path: archivePath, operation: "cannot remove") }
            Output.write("Cleared the profile archive and the demo preferences in \(Karchive.escapingControlCharacters(directory)).\n")
            return 0
        }

        // Load at launch: the archive from the last run, or the defaults.
        var loaded: ArchivingData?
        if access(archivePath, F_OK) == 0 {
            do {
                loaded = try ArchivingData(contentsOf: URL(fileURLWithPath: archivePath))
            } catch {
                Output.error("karchive demo: \(Karchive.escapingControlCharacters(archivePath)) is not a readable profile (\(Karchive.oneLine(error))); starting from the defaults\n")
            }
        }
        var profile = loaded ?? ArchivingData.defaultProfile

        // Apply the changes asked for.
        if let name = parsed.value("--name") { profile.name = name }
        if let gender = parsed.value("--gender") { profile.gender = gender }
        if let vocation = parsed.value("--vocation") { profile.vocation = vocation }
        if let page = parsed.value("--page") { profile.page = page }
        if let slider { profile.theSlider = slider }
        if let switchOn { profile.isSwitchOn = switchOn }
        if parsed.flag("--swap-image") {
            profile.image = profile.image == SampleImages.alternateImage ? SampleImages.defaultImage : SampleImages.alternateImage
        }

        // Write back only when a value changed (or nothing usable was on disk).
        let status: String
        if profile != loaded {
            try profile.write(to: URL(fileURLWithPath: archivePath))
            status = loaded == nil ? "created" : "saved"
        } else {
            status = "loaded, unchanged"
        }

        var report = "KeyedArchive demo: the ArchivingData settings screen\n\n"
        report += "Profile archive: \(Karchive.escapingControlCharacters(archivePath)) (\(fileSize(archivePath)) bytes, \(status))\n"
        report += describe(profile)
        report += "\n" + (try settings.launch(now: Date(), nightMode: nightMode))
        Output.write(report)
        return 0
    }

    /// The profile, one field a line.
    static func describe(_ profile: ArchivingData) -> String {
        let picture: String
        switch profile.image {
        case SampleImages.defaultImage: picture = "the default picture"
        case SampleImages.alternateImage: picture = "the alternate picture"
        default: picture = "a custom picture"
        }
        let size = pngSize(profile.image).map { ", \($0.width)x\($0.height) PNG" } ?? ""
        return """
              Name:      \(Karchive.escapingControlCharacters(profile.name))
              Gender:    \(Karchive.escapingControlCharacters(profile.gender))
              Vocation:  \(Karchive.escapingControlCharacters(profile.vocation))
              Page:      \(Karchive.escapingControlCharacters(profile.page))
              Slider:    \(profile.theSlider)
              Switch:    \(profile.isSwitchOn ? "on" : "off")
              Image:     \(picture) (\(profile.image.count) bytes\(size))

            """
    }

    static func parseSlider(_ text: String) throws -> Float {
        guard let value = Float(text), value.isFinite, (0...1).contains(value) else {
            throw UsageError("--slider takes a number from 0 to 1, not '\(text)'")
        }
        return value
    }

    static func parseOnOff(_ text: String, option: String) throws -> Bool {
        switch text.lowercased() {
        case "on", "yes", "true", "1": return true
        case "off", "no", "false", "0": return false
        default: throw UsageError("\(option) takes on or off, not '\(text)'")
        }
    }

    /// Width and height from a PNG's IHDR chunk, or `nil` when the bytes are not a PNG.
    static func pngSize(_ data: Data) -> (width: UInt32, height: UInt32)? {
        let bytes = [UInt8](data.prefix(24))
        guard bytes.count == 24, bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { return nil }
        let number = { (start: Int) in bytes[start..<start + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        return (number(16), number(20))
    }

    static func fileSize(_ path: String) -> Int64 {
        var info = stat()
        return stat(path, &info) == 0 ? Int64(info.st_size) : 0
    }

    static var defaultDirectoryDescription: String {
        #if canImport(Darwin)
        "~/Library/Application Support/KeyedArchive/Demo"
        #else
        "$XDG_DATA_HOME/keyedarchive/demo, or ~/.local/share/keyedarchive/demo"
        #endif
    }

    /// The user's data directory for the demo.
    static func defaultDirectory() -> String {
        let home = environment("HOME") ?? "."
        #if canImport(Darwin)
        return home + "/Library/Application Support/KeyedArchive/Demo"
        #else
        // A relative XDG_DATA_HOME is invalid and ignored, as the XDG specification says.
        return (environment("XDG_DATA_HOME").flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.local/share") + "/keyedarchive/demo"
        #endif
    }

    static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        let text = String(cString: value)
        return text.isEmpty ? nil : text
    }
}

/// The demo's preferences (issue 5, "The seed flows in karchive demo"): domain `karchive-demo`
/// in the demo directory, holding the night-mode switch and the membership deadline.
struct DemoSettings {
    /// `NightMode`: remembered across launches (`--night on|off`).
    static let nightMode = PreferenceKey<Bool>("NightMode", default: false)
    /// `MembershipDeadline`: set at the first launch; nil until then.
    static let membershipDeadline = PreferenceKey<Date?>("MembershipDeadline", default: nil)
    /// How long a new membership lasts.
    static let membershipLength: TimeInterval = 120

    let preferences: Preferences

    init(directory: String) throws {
        preferences = try Preferences(domain: "karchive-demo", configuration: .init(directory: directory))
    }

    /// Applies a launch: sets the deadline on the first one, compares on later ones, and applies
    /// a night-mode change. Returns the lines to show.
    func launch(now: Date, nightMode newNightMode: Bool?) throws -> String {
        var lines = ""
        if let deadline = preferences[Self.membershipDeadline] {
            let state = now >= deadline ? "membership expired" : "membership active"
            lines += "Membership: deadline \(Self.format(deadline)) UTC: \(state)\n"
        } else {
            let deadline = now.addingTimeInterval(Self.membershipLength)
            preferences[Self.membershipDeadline] = deadline
            lines += "Membership: first launch, deadline set to \(Self.format(deadline)) UTC (in 2 minutes)\n"
        }
        if let newNightMode { preferences[Self.nightMode] = newNightMode }
        lines += "Night mode: \(preferences[Self.nightMode] ? "on" : "off")\n"
        try preferences.synchronize()
        lines += "Preferences: \(Karchive.escapingControlCharacters(preferences.path))\n"
        return lines
    }

    /// Removes both keys and writes the domain.
    func clear() throws {
        preferences.removeObject(forKey: Self.membershipDeadline.name)
        preferences.removeObject(forKey: Self.nightMode.name)
        try preferences.synchronize()
    }

    /// `yyyy-MM-dd HH:mm` in UTC.
    static func format(_ date: Date) -> String {
        guard let parts = GregorianCalendar.components(of: date) else { return "\(date)" }
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.year)-\(two(parts.month))-\(two(parts.day)) \(two(parts.hour)):\(two(parts.minute))"
    }
}
