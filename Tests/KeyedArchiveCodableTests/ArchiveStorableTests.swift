import Foundation
import KeyedArchive
import KeyedArchiveSample
import XCTest

final class ArchiveStorableTests: XCTestCase {
    private func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("codable-storage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    func testWriteAndLoadBack() throws {
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("profile.archive")
        var profile = KeyedArchiveSample.ArchivingData.defaultProfile
        try profile.write(to: file)
        XCTAssertEqual(try KeyedArchiveSample.ArchivingData(contentsOf: file), profile)
        // Overwrite: the new contents replace the old, no temporary files stay behind.
        profile.name = "Changed"
        profile.image = SampleImages.alternateImage
        try profile.write(to: file)
        XCTAssertEqual(try KeyedArchiveSample.ArchivingData(contentsOf: file), profile)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), ["profile.archive"])
        // The file is an ordinary keyed archive Foundation reads.
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: Data(contentsOf: file))
        unarchiver.requiresSecureCoding = false
        unarchiver.setClass(ArchivingData.self, forClassName: "ArchivingData")
        XCTAssertEqual((unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey) as? ArchivingData)?.name, "Changed")
    }

    func testPermissionsKeptAndErrorsThrown() throws {
        let directory = try temporaryDirectory()
        let file = directory.appendingPathComponent("p.archive")
        try KeyedArchiveSample.ArchivingData.defaultProfile.write(to: file)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        try KeyedArchiveSample.ArchivingData.defaultProfile.write(to: file)
        let mode = try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        XCTAssertThrowsError(try KeyedArchiveSample.ArchivingData(contentsOf: directory.appendingPathComponent("missing")))
        XCTAssertThrowsError(try KeyedArchiveSample.ArchivingData.defaultProfile.write(to: directory.appendingPathComponent("no/such/dir")))
        try Data("garbage".utf8).write(to: file)
        XCTAssertThrowsError(try KeyedArchiveSample.ArchivingData(contentsOf: file)) { error in
            XCTAssertTrue(error is DecodingError)
        }
    }
}
