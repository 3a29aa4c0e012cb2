import KeyedArchive

/// The classic "settings screen" model: archived when the app goes to the background and
/// restored at launch.
///
/// Its coding keys and class name are the ones the original Objective-C sample used
/// (`encodeObject:forKey:@"NameKey"`, `encodeFloat:forKey:@"TheSliderKey"`, ...), so an archive of
/// this struct made through the Codable bridge is what that Objective-C class would have written,
/// and the other way round.
public struct ArchivingData: Codable, Equatable, Sendable {
    /// The profile picture, as encoded image bytes (PNG in the sample).
    public var image: Data
    /// The user's name.
    public var name: String
    /// The user's gender, as free text.
    public var gender: String
    /// The user's vocation.
    public var vocation: String
    /// The selected page of the settings screen.
    public var page: String
    /// The slider position, 0 to 1. Archived as a 4-byte real, like `encodeFloat:forKey:`.
    public var theSlider: Float
    /// The switch position.
    public var isSwitchOn: Bool

    /// Creates a profile.
    public init(image: Data, name: String, gender: String, vocation: String, page: String, theSlider: Float, isSwitchOn: Bool) {
        self.image = image
        self.name = name
        self.gender = gender
        self.vocation = vocation
        self.page = page
        self.theSlider = theSlider
        self.isSwitchOn = isSwitchOn
    }

    /// The keys the Objective-C sample archived its fields under.
    public enum CodingKeys: String, CodingKey, Sendable {
        /// Archived as `ImageKey`, the Objective-C sample's key.
        case image = "ImageKey"
        /// Archived as `NameKey`, the Objective-C sample's key.
        case name = "NameKey"
        /// Archived as `GenderKey`, the Objective-C sample's key.
        case gender = "GenderKey"
        /// Archived as `VocationKey`, the Objective-C sample's key.
        case vocation = "VocationKey"
        /// Archived as `PageKey`, the Objective-C sample's key.
        case page = "PageKey"
        /// Archived as `TheSliderKey`, the Objective-C sample's key.
        case theSlider = "TheSliderKey"
        /// Archived as `IsSwitchOnKey`, the Objective-C sample's key.
        case isSwitchOn = "IsSwitchOnKey"
    }

    /// The class name the archive records (`$classname`), without a module prefix.
    public static let archiveClassName = "ArchivingData"

    /// The profile a first launch starts from.
    public static let defaultProfile = ArchivingData(
        image: SampleImages.defaultImage, name: "Jane Appleseed", gender: "Female", vocation: "Engineer",
        page: "1", theSlider: 0.5, isSwitchOn: true
    )
}

/// The two images shipped with the sample (real 64x64 PNGs).
public enum SampleImages {
    /// The picture a new profile starts with.
    public static var defaultImage: Data { Data(defaultPNG) }
    /// The picture `karchive demo --swap-image` switches to.
    public static var alternateImage: Data { Data(alternatePNG) }
}

/// The sample's class name comes from ``ArchivingData/archiveClassName``.
extension ArchivingData: KeyedArchiveClassNaming {}

/// The sample saves and loads itself with `write(to:)` / `init(contentsOf:)`.
extension ArchivingData: ArchiveStorable {}
