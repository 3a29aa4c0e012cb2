import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// The XML reader and writer on the shared corpus (`../shared/corpus`).
final class XMLCorpusTests: XCTestCase {
    /// Every XML-looking corpus file: the xml/ folder, XML keyed archives and XML-looking
    /// malformed files (by content, so `.bin` files that are XML count).
    private var xmlEntries: [Corpus.Entry] {
        Corpus.entries.filter { entry in
            if entry.path.hasPrefix("xml/") { return true }
            guard entry.path.hasPrefix("keyed/") || entry.path.hasPrefix("malformed/") else { return false }
            return entry.path.hasSuffix(".xml") || PropertyList.detectFormat(entry.data) == .xml
        }
    }

    private func skipWithoutCorpus() throws {
        if Corpus.root == nil {
            print("XMLCorpusTests: ../shared/corpus not found; skipping corpus checks")
            throw XCTSkip("corpus not found")
        }
    }

    /// MUST-PARSE (and ARCHIVE-REJECT: valid plists) parse; MUST-REJECT and SHOULD-REJECT throw a
    /// PropertyListError; MAY-PARSE, PARSER-DIFFERENTIAL and MUST-NOT-CRASH do either (printed).
    func testExpectations() throws {
        try skipWithoutCorpus()
        let entries = xmlEntries
        XCTAssertGreaterThan(entries.count, 120)
        for entry in entries {
            let outcome: Result<PropertyListValue, Error> = Result { try XMLPropertyListReader.read(entry.data) }
            if case .failure(let error) = outcome, !(error is PropertyListError) {
                XCTFail("\(entry.path): threw \(type(of: error)), not PropertyListError")
            }
            switch entry.expect {
            case "MUST-PARSE", "ARCHIVE-REJECT":
                if case .failure(let error) = outcome { XCTFail("\(entry.path) (\(entry.expect)) did not parse: \(error)") }
            case "MUST-REJECT", "SHOULD-REJECT":
                if case .success = outcome { XCTFail("\(entry.path) (\(entry.expect)) parsed") }
            default:
                switch outcome {
                case .success(let value): print("XML corpus \(entry.expect) \(entry.path): parsed (\(value.typeName))")
                case .failure(let error): print("XML corpus \(entry.expect) \(entry.path): rejected: \(error)")
                }
            }
        }
    }

    /// Our reader and Foundation's (CoreFoundation's XML parser) read every valid XML corpus file
    /// to the same value, apart from documented differences.
    func testReaderAgreesWithFoundation() throws {
        try skipWithoutCorpus()
        var compared = 0
        for entry in xmlEntries where entry.expect == "MUST-PARSE" || entry.expect == "ARCHIVE-REJECT" {
            let ours = try XMLPropertyListReader.read(entry.data)
            guard let object = try? XMLTestFoundation.read([UInt8](entry.data)) else {
                print("XML corpus: Foundation cannot read \(entry.path); ours read it as \(ours.typeName)")
                continue
            }
            let theirs = try XCTUnwrap(XMLTestFoundation.value(object), entry.path)
            XMLTestFoundation.assertEqual(XMLTestFoundation.opaqueUIDs(XMLTestFoundation.avoidingLeadingBOMForComparison(ours)), theirs, entry.path)
            compared += 1
        }
        print("XML corpus: compared \(compared) files with Foundation's reader")
        XCTAssertGreaterThan(compared, 80)
    }

    /// Apple-made XML files (Producer mentions Apple, CF, Xcode, macOS or Foundation) read and
    /// written back unchanged: the share that comes out byte-identical.
    func testAppleMadeFilesRewriteByteIdentical() throws {
        try skipWithoutCorpus()
        let producers = try appleProducedPaths()
        var identical: [String] = []
        var different: [String] = []
        var identicalButHeader = 0
        for entry in xmlEntries where producers.contains(entry.path) && (entry.expect == "MUST-PARSE" || entry.expect == "ARCHIVE-REJECT") {
            let original = [UInt8](entry.data)
            let rewritten = try XMLPropertyListWriter.write(try XMLPropertyListReader.read(entry.data))
            if rewritten == original {
                identical.append(entry.path)
            } else {
                different.append(entry.path + ": " + firstDifferingLine(original, rewritten))
                // Files from before 2005 name "Apple Computer" in the DOCTYPE; the value model keeps no header.
                let oldHeader = Array("-//Apple Computer//DTD PLIST 1.0//EN".utf8), newHeader = Array("-//Apple//DTD PLIST 1.0//EN".utf8)
                if let range = firstRange(of: oldHeader, in: original),
                    Array(original[..<range.lowerBound]) + newHeader + Array(original[range.upperBound...]) == rewritten
                {
                    identicalButHeader += 1
                }
                // Whatever differs, Foundation's writer makes exactly our bytes from the same file.
                if let object = try? XMLTestFoundation.read(original) {
                    XCTAssertEqual(try XMLTestFoundation.xml(object), rewritten, "\(entry.path): Foundation writes other bytes")
                }
            }
        }
        let total = identical.count + different.count
        print("XML corpus: \(identical.count) of \(total) Apple-made XML files rewrite byte-identical; \(identicalButHeader) more differ only in the old \"Apple Computer\" DOCTYPE; the rest were not laid out by CF's current writer (re-indented, unsorted keys)")
        for line in different { print("  differs: \(line)") }
        XCTAssertGreaterThanOrEqual(total, 30)
        XCTAssertGreaterThanOrEqual(identical.count * 100, total * 35, "byte-identical share fell below 35%")
    }

    /// Truncated and bit-flipped versions of every XML corpus file never crash or hang the reader.
    func testTruncatedAndBitFlippedFilesNeverCrash() throws {
        try skipWithoutCorpus()
        var generator = SeededGenerator(seed: 0x584D_4C)
        var attempts = 0
        for entry in xmlEntries {
            let bytes = [UInt8](entry.data)
            guard !bytes.isEmpty else { continue }
            var variants: [[UInt8]] = []
            for step in 0..<24 {
                variants.append(Array(bytes.prefix(bytes.count * step / 24)))
            }
            for _ in 0..<40 {
                var flipped = bytes
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                flipped[index] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
                variants.append(flipped)
            }
            for variant in variants {
                do {
                    _ = try XMLPropertyListReader.read(Data(variant))
                } catch is PropertyListError {
                } catch {
                    XCTFail("\(entry.path): variant threw \(type(of: error))")
                }
                attempts += 1
            }
        }
        XCTAssertGreaterThan(attempts, 5000)
    }

    // MARK: - Helpers

    /// The corpus paths whose MANIFEST.md Producer column names an Apple producer.
    private func appleProducedPaths() throws -> Set<String> {
        let root = try XCTUnwrap(Corpus.root)
        let manifest = try String(contentsOfFile: root + "/MANIFEST.md", encoding: .utf8)
        var folder = ""
        var paths: Set<String> = []
        for line in manifest.split(separator: "\n") {
            if line.hasPrefix("## "), let name = line.dropFirst(3).split(separator: "/").first {
                folder = String(name)
                continue
            }
            guard line.hasPrefix("| `") else { continue }
            let columns = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard columns.count > 6 else { continue }
            let file = columns[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))
            let producer = columns[6]
            if ["Apple", "CF", "Xcode", "macOS", "Foundation"].contains(where: { producer.contains($0) }) {
                paths.insert(folder + "/" + file)
            }
        }
        return paths
    }

    private func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard needle.count <= haystack.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start..<(start + needle.count)
        }
        return nil
    }

    private func firstDifferingLine(_ a: [UInt8], _ b: [UInt8]) -> String {
        let left = a.split(separator: 0x0A, omittingEmptySubsequences: false)
        let right = b.split(separator: 0x0A, omittingEmptySubsequences: false)
        for index in 0..<max(left.count, right.count) {
            let x = index < left.count ? String(decoding: left[index], as: UTF8.self) : "<end>"
            let y = index < right.count ? String(decoding: right[index], as: UTF8.self) : "<end>"
            if x != y { return "line \(index + 1): \(x.prefix(70).debugDescription) -> \(y.prefix(70).debugDescription)" }
        }
        return "same lines"
    }
}

extension XMLTestFoundation {
    /// Our value with a leading U+FEFF dropped from strings, as Foundation's reader drops it.
    static func avoidingLeadingBOMForComparison(_ value: PropertyListValue) -> PropertyListValue {
        transform(value) { leaf in
            if case .string(let string) = leaf, string.value.unicodeScalars.first == "\u{FEFF}" {
                return .string(PropertyListString(String(string.value.unicodeScalars.dropFirst())))
            }
            return nil
        }
    }
}
