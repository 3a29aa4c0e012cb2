import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// Replays every input in Tests/Fixtures: inputs the fuzzers found (crashes, hangs, out of
/// memory) and hand-built ones for limits, each with the outcome `expectations.tsv` records.
/// The folder names the reader: binary/, xml/, openstep/, unarchiver/ (the generic keyed
/// unarchiver and the tool's resolver), codable/ (the Codable decoder, as `[[String]]`).
final class RegressionTests: XCTestCase {
    struct Fixture {
        var path: String
        var expect: String
        var bytes: Data
        var folder: String { String(path.split(separator: "/").first ?? "") }
    }

    static let folder = Corpus.repositoryRoot + "/Tests/Fixtures"

    static func fixtures() throws -> [Fixture] {
        let text = try String(contentsOfFile: folder + "/expectations.tsv", encoding: .utf8)
        return try text.split(separator: "\n").compactMap { line in
            if line.hasPrefix("#") || line.isEmpty { return nil }
            let columns = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard columns.count >= 3 else { throw XCTSkip("malformed line in expectations.tsv: \(line)") }
            let bytes = try Data(contentsOf: URL(fileURLWithPath: folder + "/" + columns[0]))
            return Fixture(path: columns[0], expect: columns[1], bytes: bytes)
        }
    }

    func testEveryFixtureIsListed() throws {
        let listed = Set(try Self.fixtures().map(\.path))
        let enumerator = FileManager.default.enumerator(atPath: Self.folder)
        var files: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: Self.folder + "/" + path, isDirectory: &isDirectory)
            if !isDirectory.boolValue, path.contains("/") { files.append(path) }
        }
        XCTAssertFalse(files.isEmpty)
        for file in files { XCTAssertTrue(listed.contains(file), "\(file) is not in Tests/Fixtures/expectations.tsv") }
    }

    func testFixturesGiveTheirRecordedOutcome() throws {
        for fixture in try Self.fixtures() {
            let outcome: Result<Void, Error>
            switch fixture.folder {
            case "binary": outcome = Result { _ = try BinaryPropertyListReader.read(fixture.bytes) }
            case "xml": outcome = Result { _ = try XMLPropertyListReader.read(fixture.bytes) }
            case "openstep": outcome = Result { _ = try fixture.bytes.withUnsafeBytes { try OpenStepPropertyListReader.read($0) } }
            case "unarchiver":
                // The generic unarchiver must return or throw; the expectation is the resolver's.
                _ = try? KeyedUnarchiver.unarchivedObject(
                    ofClasses: KeyedArchiveClass.foundationClasses + [.archivedObject], from: fixture.bytes)
                outcome = Result { _ = try ArchiveResolver.resolve(fixture.bytes) }
            case "codable":
                // The Codable decoder, as a nested array of strings (what the fixtures describe).
                outcome = Result { _ = try KeyedUnarchiver.unarchivedObject(ofType: [[String]].self, from: fixture.bytes) }
            default:
                XCTFail("\(fixture.path): no reader for folder \(fixture.folder)")
                continue
            }
            switch (fixture.expect, outcome) {
            case ("accept", .success):
                try assertRoundTrip(fixture)
            case ("accept", .failure(let error)): XCTFail("\(fixture.path) must be read: \(error)")
            case (_, .success): XCTFail("\(fixture.path) must be rejected (\(fixture.expect))")
            case (let expect, .failure(let error)):
                let code = (error as? PropertyListError)?.code.rawValue ?? (error as? KeyedArchiveError)?.code.rawValue
                    ?? (error as? DecodingError).map(Self.caseName)
                XCTAssertEqual("reject:" + (code ?? "\(type(of: error))"), expect, "\(fixture.path): \(error)")
            }
        }
    }

    /// `dataCorrupted`, `typeMismatch`, `valueNotFound` or `keyNotFound`.
    static func caseName(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted: "dataCorrupted"
        case .typeMismatch: "typeMismatch"
        case .valueNotFound: "valueNotFound"
        case .keyNotFound: "keyNotFound"
        @unknown default: "DecodingError"
        }
    }

    /// What the fuzzers check on every accepted input: written in its own format and read
    /// again, the value is unchanged.
    private func assertRoundTrip(_ fixture: Fixture) throws {
        let value: PropertyListValue, again: PropertyListValue
        switch fixture.folder {
        case "binary":
            value = try BinaryPropertyListReader.read(fixture.bytes)
            again = try BinaryPropertyListReader.read(try BinaryPropertyListWriter.write(value))
        case "xml":
            value = try XMLPropertyListReader.read(fixture.bytes)
            again = try XMLPropertyListReader.read(Data(try XMLPropertyListWriter.write(value)))
        case "openstep":
            value = try fixture.bytes.withUnsafeBytes { try OpenStepPropertyListReader.read($0) }
            let text = try OpenStepPropertyListWriter.write(value, options: .init(scalarStyle: .gnustep))
            again = try OpenStepPropertyListReader.read(String(decoding: text, as: UTF8.self))
        case "unarchiver":
            // The resolver's output is what `karchive unarchive` writes: binary and XML take it
            // (a NaN it holds is not equal to itself, so the writing is what is checked).
            let resolved = try ArchiveResolver.resolve(fixture.bytes)
            XCTAssertNoThrow(try XMLPropertyListWriter.write(resolved), fixture.path)
            XCTAssertNoThrow(try BinaryPropertyListWriter.write(resolved), fixture.path)
            return
        default: return
        }
        XCTAssertEqual(again, value, "\(fixture.path): the round trip changed the value")
    }

    /// CoreFoundation merges repeated keys before it turns {CF$UID: n} into a UID.
    func testRepeatedCFUIDKeyReadsAsTheLastUID() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: Self.folder + "/xml/repeated-cf-uid-key-minimal.xml"))
        XCTAssertEqual(try XMLPropertyListReader.read(bytes), [.uid(11)])
    }
}
