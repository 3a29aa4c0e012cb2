import Foundation
import KeyedArchiveSample
import KeyedArchiveTestSupport
import XCTest

/// The examples of Docs/GettingStarted.md, compiled and run, so the guide stays true.
final class GettingStartedTests: XCTestCase {
    final class Note: KeyedArchiving {
        static var archivedClassName: String { "Note" }
        var title: String
        var stars: Int
        var next: Note?

        init(title: String, stars: Int) { self.title = title; self.stars = stars }

        func encode(with coder: KeyedArchiver) throws {
            try coder.encode(title, forKey: "title")
            coder.encode(stars, forKey: "stars")
            try coder.encode(next, forKey: "next")
        }
        init(coder: KeyedUnarchiver) throws {
            title = try coder.decodeObject(of: String.self, forKey: "title") ?? ""
            stars = try coder.decodeInt(forKey: "stars")
        }
        func decodeReferences(with coder: KeyedUnarchiver) throws {
            next = try coder.decodeObject(of: Note.self, forKey: "next")
        }
    }

    private var folder: String!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("getting-started-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    func testPropertyLists() throws {
        let settings: PropertyListValue = ["Name": "Ada", "Volume": 0.5, "Tags": ["swift", "plist"]]
        let binary = try PropertyList.encode(settings)
        let xml = try PropertyList.encode(settings, format: .xml)
        let back = try PropertyList.decode(xml)
        XCTAssertTrue(back == settings && back["Name"]?.stringValue == "Ada")
        XCTAssertEqual(try PropertyList.decode(binary), settings)
        // Independent check: Foundation reads both.
        for bytes in [binary, xml] {
            let object = try PropertyListSerialization.propertyList(from: bytes, format: nil)
            XCTAssertEqual(try FoundationBridge.value(object), settings)
        }
    }

    func testKeyedArchivesWithACycle() throws {
        let first = Note(title: "Buy milk", stars: 2)
        first.next = first
        let archive = try KeyedArchiver.archivedData(withRootObject: first, format: .binary)
        let copy = try KeyedUnarchiver.unarchivedObject(ofClass: Note.self, from: archive)
        XCTAssertTrue(copy?.next === copy)
        XCTAssertEqual(copy?.title, "Buy milk")
        XCTAssertEqual(copy?.stars, 2)
        // A class the caller did not name is refused.
        XCTAssertThrowsError(try KeyedUnarchiver.unarchivedObject(ofClasses: [.string], from: archive))
    }

    func testCodableTypes() throws {
        // (This test module has an NSCoding class of the same name for the Foundation interop
        // tests, hence the module-qualified name.)
        let fileURL = URL(fileURLWithPath: folder + "/profile.archive")
        let profile = KeyedArchiveSample.ArchivingData(
            image: SampleImages.defaultImage, name: "Ada", gender: "Female",
            vocation: "Analyst", page: "1", theSlider: 0.5, isSwitchOn: true)
        let bytes = try KeyedArchiver.archivedData(withRootObject: profile)
        let restored = try KeyedUnarchiver.unarchivedObject(ofType: KeyedArchiveSample.ArchivingData.self, from: bytes)
        XCTAssertEqual(restored, profile)
        try profile.write(to: fileURL)
        let loaded = try KeyedArchiveSample.ArchivingData(contentsOf: fileURL)
        XCTAssertEqual(loaded, profile)
    }

    func testPreferences() throws {
        let preferences = try Preferences(domain: "com.example.notes", configuration: .init(directory: folder))
        preferences.register(defaults: ["FontSize": 12])
        preferences[.gettingStartedNightMode] = true
        try preferences.synchronize()
        XCTAssertEqual(preferences.integer(forKey: "FontSize"), 12)
        // On disk when synchronize returns, and Foundation reads the file.
        let file = try Data(contentsOf: URL(fileURLWithPath: folder + "/com.example.notes.plist"))
        let stored = try XCTUnwrap(try PropertyListSerialization.propertyList(from: file, format: nil) as? [String: Any])
        XCTAssertEqual(stored["NightMode"] as? Bool, true)
        XCTAssertNil(stored["FontSize"], "registered defaults are never written")
    }
}

extension PreferenceKeys {
    static let gettingStartedNightMode = Key<Bool>("NightMode", default: false)
}
