import Foundation
import KeyedArchiveSample

/// W1 archives the sample model itself.
public typealias SampleProfile = ArchivingData

extension ArchivingData {
    /// The deterministic sample with an image of `imageBytes` random bytes.
    public static func make(seed: UInt64, imageBytes: Int) -> ArchivingData {
        var random = BenchRandom(seed: seed, stream: 1)
        return ArchivingData(
            image: random.bytes(imageBytes), name: "Ada Lovelace", gender: "Female", vocation: "Analyst",
            page: "https://example.org/ada", theSlider: 0.75, isSwitchOn: true)
    }
}

/// The peer's NSCoding class for the sample: what an Objective-C app's model class does.
public final class PeerSampleProfile: NSObject, NSCoding {
    let image: NSData
    let name: NSString
    let gender: NSString
    let vocation: NSString
    let page: NSString
    let theSlider: Float
    let isSwitchOn: Bool

    init(_ profile: SampleProfile) {
        image = NSData(data: profile.image)
        name = NSString(string: profile.name)
        gender = NSString(string: profile.gender)
        vocation = NSString(string: profile.vocation)
        page = NSString(string: profile.page)
        theSlider = profile.theSlider
        isSwitchOn = profile.isSwitchOn
    }

    public func encode(with coder: NSCoder) {
        coder.encode(image, forKey: "ImageKey")
        coder.encode(name, forKey: "NameKey")
        coder.encode(gender, forKey: "GenderKey")
        coder.encode(vocation, forKey: "VocationKey")
        coder.encode(page, forKey: "PageKey")
        coder.encode(theSlider, forKey: "TheSliderKey")
        coder.encode(isSwitchOn, forKey: "IsSwitchOnKey")
    }

    public init?(coder: NSCoder) {
        guard let image = coder.decodeObject(forKey: "ImageKey") as? NSData,
            let name = coder.decodeObject(forKey: "NameKey") as? NSString,
            let gender = coder.decodeObject(forKey: "GenderKey") as? NSString,
            let vocation = coder.decodeObject(forKey: "VocationKey") as? NSString,
            let page = coder.decodeObject(forKey: "PageKey") as? NSString
        else { return nil }
        self.image = image
        self.name = name
        self.gender = gender
        self.vocation = vocation
        self.page = page
        theSlider = coder.decodeFloat(forKey: "TheSliderKey")
        isSwitchOn = coder.decodeBool(forKey: "IsSwitchOnKey")
    }
}

extension Workload {
    /// W1: one ArchivingData-like sample with a 256 KiB image, archived and unarchived; then
    /// the sample's own default profile (a 664-byte PNG), where the fixed costs of one archive
    /// are nearly all of its time.
    public static let w1 = Workload(
        id: "W1", title: "ArchivingData sample",
        stresses: "per-archive fixed costs and copying one large data blob (256 KiB image) plus six small fields; the default profile (664-byte image): the fixed costs alone"
    ) { context in
        let profile = SampleProfile.make(seed: context.seed, imageBytes: context.scale.w1ImageBytes)
        let large = sampleOperations(profile, archive: "archive", unarchive: "unarchive", floors: true)
        let small = sampleOperations(
            .defaultProfile, archive: "archive, default profile", unarchive: "unarchive, default profile", floors: false)
        return [large.archive, large.unarchive, small.archive, small.unarchive]
    }

    /// The archive and unarchive operations of W1 for one profile: ours, NSKeyedArchiver /
    /// NSKeyedUnarchiver and PropertyListEncoder / PropertyListDecoder, and with `floors` the
    /// copy floors (one copy of the image: what a large image's archive cannot go below).
    static func sampleOperations(
        _ profile: SampleProfile, archive: String, unarchive: String, floors: Bool
    ) -> (archive: BenchmarkOperation, unarchive: BenchmarkOperation) {
        let peerProfile = PeerSampleProfile(profile)
        let ours = Box<Data>(), keyed = Box<Data>(), plist = Box<Data>()
        var archivers = [
            Implementation("KeyedArchive", ours: true, units: 1) {
                let data = try OurSide.archive(profile)
                ours.value = data
                return data.count
            },
            Implementation("NSKeyedArchiver", units: 1) {
                let data = Peer.keyedArchive(peerProfile)
                keyed.value = data
                return data.count
            },
            Implementation("PropertyListEncoder", units: 1) {
                let data = try Peer.plistEncoder().encode(profile)
                plist.value = data
                return data.count
            },
        ]
        var unarchivers = [
            Implementation("KeyedArchive", ours: true, units: 1, prepare: { if ours.value == nil { ours.value = try OurSide.archive(profile) } }) {
                let back = try OurSide.unarchive(SampleProfile.self, from: ours.value ?? Data())
                return back == profile ? 1 : 0
            },
            Implementation("NSKeyedUnarchiver", units: 1, prepare: { if keyed.value == nil { keyed.value = Peer.keyedArchive(peerProfile) } }) {
                let back = try Peer.keyedUnarchive(keyed.value ?? Data(), classes: [PeerSampleProfile.self]) as? PeerSampleProfile
                // The whole image compared, as the other rows compare theirs (the length alone
                // was checked before session 65).
                return back?.image.isEqual(to: profile.image) == true ? 1 : 0
            },
            Implementation("PropertyListDecoder", units: 1, prepare: { if plist.value == nil { plist.value = try Peer.plistEncoder().encode(profile) } }) {
                let back = try PropertyListDecoder().decode(SampleProfile.self, from: plist.value ?? Data())
                return back == profile ? 1 : 0
            },
        ]
        if floors {
            archivers.append(Implementation("copy floor", units: 1, note: "reference: one copy of the image into a new Data, the least an archive that copies it costs") {
                profile.image.withUnsafeBytes { Data($0) }.count
            })
            unarchivers.append(Implementation("copy floor", units: 1, note: "reference: one copy of the image, compared as the other rows compare theirs") {
                profile.image.withUnsafeBytes { Data($0) } == profile.image ? 1 : 0
            })
        }
        return (
            BenchmarkOperation("W1", archive, check: .bytes, minimumSampleSeconds: 0.01, archivers),
            BenchmarkOperation("W1", unarchive, check: .objects, minimumSampleSeconds: 0.01, unarchivers)
        )
    }
}
