import Foundation
import KeyedArchiveSample
import KeyedArchiveTestSupport
import XCTest

/// `karchive demo`: the settings screen carried across launches, as a user runs it.
final class DemoCommandTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("karchive-demo-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    private func demo(_ arguments: [String] = []) throws -> ToolRunner.Result {
        let result = try ToolRunner.karchive(["demo", "--dir", directory.path] + arguments)
        XCTAssertFalse(result.crashed)
        return result
    }

    private var archiveURL: URL { directory.appendingPathComponent("ArchivingData.archive") }

    func testStateCarriesOverBetweenRunsAndIsWrittenOnlyWhenChanged() throws {
        let first = try demo()
        XCTAssertEqual(first.status, 0, first.standardError)
        XCTAssertTrue(first.output.contains("created"), first.output)
        XCTAssertTrue(first.output.contains(archiveURL.path), "prints where the file is")
        let size = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: archiveURL.path)[.size] as? Int)
        XCTAssertTrue(first.output.contains("(\(size) bytes"), "prints its size")
        XCTAssertEqual(try ArchivingData(contentsOf: archiveURL), ArchivingData.defaultProfile)

        let second = try demo(["--name", "Ada Lovelace", "--slider", "0.25", "--switch", "off", "--swap-image"])
        XCTAssertEqual(second.status, 0, second.standardError)
        XCTAssertTrue(second.output.contains("saved"), second.output)
        var expected = ArchivingData.defaultProfile
        expected.name = "Ada Lovelace"
        expected.theSlider = 0.25
        expected.isSwitchOn = false
        expected.image = SampleImages.alternateImage
        XCTAssertEqual(try ArchivingData(contentsOf: archiveURL), expected)

        // A launch without changes shows the carried-over state and leaves the file alone.
        let inode = try FileManager.default.attributesOfItem(atPath: archiveURL.path)[.systemFileNumber] as? Int
        let third = try demo()
        XCTAssertTrue(third.output.contains("Ada Lovelace"), third.output)
        XCTAssertTrue(third.output.contains("the alternate picture"), third.output)
        XCTAssertTrue(third.output.contains("unchanged"), third.output)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: archiveURL.path)[.systemFileNumber] as? Int, inode)
    }

    func testTheArchiveIsAKeyedArchiveFoundationAndPlistlibRead() throws {
        XCTAssertEqual(try demo(["--name", "Grace"]).status, 0)
        let data = try Data(contentsOf: archiveURL)
        // Foundation sees an NSKeyedArchiver archive whose root object's class is ArchivingData.
        let plist = try XCTUnwrap(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        XCTAssertEqual(plist["$archiver"] as? String, "NSKeyedArchiver")
        let objects = try XCTUnwrap(plist["$objects"] as? [Any])
        let root = try XCTUnwrap(objects.compactMap { $0 as? [String: Any] }.first { $0["NameKey"] != nil })
        XCTAssertEqual(Set(root.keys), ["$class", "ImageKey", "NameKey", "GenderKey", "VocationKey", "PageKey", "TheSliderKey", "IsSwitchOnKey"])
        guard Python.executable != nil else {
            print("python3 not found: skipping the plistlib read of the demo archive")
            return
        }
        let script = """
            import plistlib, sys
            d = plistlib.load(sys.stdin.buffer)
            o = d['$objects']
            root = o[d['$top']['root'].data]
            print(o[root['NameKey'].data], round(root['TheSliderKey'], 3), root['IsSwitchOnKey'], o[o[root['$class'].data]['$classname'].data] if isinstance(o[root['$class'].data]['$classname'], plistlib.UID) else o[root['$class'].data]['$classname'])
            """
        let output = String(decoding: try Python.run(script, input: data), as: UTF8.self)
        XCTAssertEqual(output, "Grace 0.5 True ArchivingData\n")
    }

    func testMembershipDeadlineAndNightModeFlows() throws {
        let first = try demo(["--night", "on"])
        XCTAssertTrue(first.output.contains("first launch, deadline set"), first.output)
        XCTAssertTrue(first.output.contains("Night mode: on"), first.output)
        let second = try demo()
        XCTAssertTrue(second.output.contains("membership active"), second.output)
        XCTAssertTrue(second.output.contains("Night mode: on"), "night mode remembered: \(second.output)")

        // Move the stored deadline into the past, as time passing would.
        let domain = directory.appendingPathComponent("karchive-demo.plist")
        var stored = try PropertyList.decode(try Data(contentsOf: domain))
        guard case .dictionary(var entries) = stored else { return XCTFail("domain file is not a dictionary") }
        entries["MembershipDeadline"] = .date(Date(timeIntervalSinceNow: -60))
        stored = .dictionary(entries)
        try PropertyList.encode(stored).write(to: domain)
        let third = try demo(["--night", "off"])
        XCTAssertTrue(third.output.contains("membership expired"), third.output)
        XCTAssertTrue(third.output.contains("Night mode: off"), third.output)

        let cleared = try demo(["--clear"])
        XCTAssertEqual(cleared.status, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: archiveURL.path))
        XCTAssertTrue(try demo().output.contains("first launch"), "clearing forgets the deadline")
    }

    func testBadOptionsAndADamagedArchive() throws {
        for bad in [["--slider", "2"], ["--slider", "x"], ["--switch", "maybe"], ["extra"]] {
            let result = try demo(bad)
            XCTAssertEqual(result.status, 2, "\(bad)")
            XCTAssertEqual(result.standardError.split(separator: "\n").count, 1)
        }
        XCTAssertEqual(try demo().status, 0)
        try Data("bplist00 but not really".utf8).write(to: archiveURL)
        let recovered = try demo()
        XCTAssertEqual(recovered.status, 0)
        XCTAssertTrue(recovered.standardError.contains("not a readable profile"), recovered.standardError)
        XCTAssertEqual(try ArchivingData(contentsOf: archiveURL), ArchivingData.defaultProfile, "rewritten from the defaults")
    }

    func testEmbeddedImagesAreTheShippedPNGFiles() throws {
        let folder = URL(fileURLWithPath: Corpus.repositoryRoot).appendingPathComponent("Sources/KeyedArchiveSample/Images")
        XCTAssertEqual(try Data(contentsOf: folder.appendingPathComponent("default.png")), SampleImages.defaultImage)
        XCTAssertEqual(try Data(contentsOf: folder.appendingPathComponent("alternate.png")), SampleImages.alternateImage)
        XCTAssertNotEqual(SampleImages.defaultImage, SampleImages.alternateImage)
        guard Python.executable != nil else {
            print("python3 not found: skipping the PNG structure check")
            return
        }
        // Both are real PNGs: every chunk's CRC is right and the image data inflates to 64 rows.
        let script = """
            import struct, sys, zlib
            b = sys.stdin.buffer.read(); i = 8; idat = b''
            assert b[:8] == b'\\x89PNG\\r\\n\\x1a\\n'
            while i < len(b):
                n, = struct.unpack('>I', b[i:i+4]); t = b[i+4:i+8]; d = b[i+8:i+8+n]
                assert zlib.crc32(t + d) & 0xffffffff == struct.unpack('>I', b[i+8+n:i+12+n])[0]
                if t == b'IHDR': w, h = struct.unpack('>II', d[:8])
                if t == b'IDAT': idat += d
                i += 12 + n
            print(w, h, len(zlib.decompress(idat)) == h * (1 + 3 * w))
            """
        for image in [SampleImages.defaultImage, SampleImages.alternateImage] {
            XCTAssertEqual(String(decoding: try Python.run(script, input: image), as: UTF8.self), "64 64 True\n")
        }
    }
}
