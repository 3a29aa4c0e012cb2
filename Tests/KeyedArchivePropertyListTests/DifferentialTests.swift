import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// Mutated corpus files fed to our binary reader and to Foundation's `PropertyListSerialization`
/// (CoreFoundation's CFBinaryPList.c on this machine).
///
/// - Both accept: the values must be equal.
/// - We accept and Foundation refuses: allowed only in the explained categories below.
/// - We refuse and Foundation accepts: allowed (we may be stricter); the categories are counted
///   and printed, and explained in Docs/Security.md.
///
/// Foundation can hang or crash on hostile bytes (reference bombs, see peers-on-linux.md), so it
/// reads the mutants in a child process (this test bundle re-run with one test selected), which
/// is killed when it stops making progress; the mutant it was stuck on is counted as a Foundation
/// hang or crash and the child restarts after it.
final class DifferentialTests: XCTestCase {
    /// Environment variable that turns ``testFoundationChildProcess`` into the Foundation side.
    static let childVariable = "KA_DIFFERENTIAL_CHILD"

    /// What Foundation did with one mutant.
    enum FoundationResult: Equatable {
        case accepted(PropertyListValue)
        /// Read as a text format (Foundation detects the format; "bplist0" alone is an OpenStep string).
        case acceptedAsText(String)
        /// Read, but holds something our value bridge cannot map (NSSet, UID, NSNull).
        case unbridgeable(String)
        case rejected(String)
        /// The child crashed or stopped making progress on this input (with how it ended).
        case crashedOrHung(String)
    }

    // MARK: - Mutants

    /// Small valid binary files from the corpus: small so Foundation stays quick on them.
    static func sources() -> [(path: String, bytes: [UInt8])] {
        BinaryCorpusTests.binaryEntries()
            .filter { $0.expect == "MUST-PARSE" }
            .map { ($0.path, Array($0.data)) }
            .filter { $0.1.count >= 42 && $0.1.count <= 3_000 }
    }

    /// The trailer fields of a file (enough to aim mutations at the offset table and trailer).
    struct Layout {
        var offsetSize: Int
        var refSize: Int
        var count: Int
        var tableOffset: Int

        init?(_ bytes: [UInt8]) {
            guard bytes.count >= 40 else { return nil }
            let start = bytes.count - 32
            func u64(_ at: Int) -> Int {
                var value = 0
                for index in at..<(at + 8) { value = value << 8 | Int(bytes[index]) }
                return value
            }
            offsetSize = Int(bytes[start + 6])
            refSize = Int(bytes[start + 7])
            count = u64(start + 8)
            tableOffset = u64(start + 24)
            guard (1...8).contains(offsetSize), (1...8).contains(refSize), count > 0, count < 1 << 20,
                tableOffset >= 8, tableOffset + count * offsetSize + 32 == bytes.count
            else { return nil }
        }
    }

    /// One mutant of `original`, by a mutation chosen with `generator`.
    static func mutate(_ original: [UInt8], _ generator: inout SeededGenerator) -> (bytes: [UInt8], kind: String) {
        var bytes = original
        let layout = Layout(original)
        func randomIndex(_ range: Range<Int>) -> Int { Int.random(in: range, using: &generator) }
        switch Int.random(in: 0..<10, using: &generator) {
        case 0, 1:
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                bytes[randomIndex(0..<bytes.count)] ^= 1 << UInt8.random(in: 0...7, using: &generator)
            }
            return (bytes, "bit flip")
        case 2:
            bytes.insert(UInt8.random(in: 0...255, using: &generator), at: randomIndex(8..<bytes.count))
            return (bytes, "byte insert")
        case 3:
            bytes.remove(at: randomIndex(8..<bytes.count))
            return (bytes, "byte delete")
        case 4:
            return (Array(bytes.prefix(randomIndex(0..<bytes.count))), "truncation")
        case 5:
            // Point an offset-table entry at another object's offset, or nudge it by one.
            guard let layout else { fallthrough }
            let entry = layout.tableOffset + randomIndex(0..<layout.count) * layout.offsetSize + layout.offsetSize - 1
            if generator.chance(0.5) {
                let other = layout.tableOffset + randomIndex(0..<layout.count) * layout.offsetSize
                for index in 0..<layout.offsetSize { bytes[entry - layout.offsetSize + 1 + index] = original[other + index] }
            } else {
                bytes[entry] = bytes[entry] &+ (generator.chance(0.5) ? 1 : 255)
            }
            return (bytes, "offset-table entry")
        case 6:
            // Trailer: sizes, object count, top object, table offset nudged by one.
            let start = bytes.count - 32
            let field = [start + 6, start + 7, start + 15, start + 23, start + 31].randomElement(using: &generator) ?? start + 7
            bytes[field] = bytes[field] &+ (generator.chance(0.5) ? 1 : 255)
            return (bytes, "trailer field")
        default:
            // An object byte (often a reference or a count) set to a small number: creates
            // sharing, cycles, wrong kinds and wrong lengths.
            let end = layout?.tableOffset ?? bytes.count - 32
            guard end > 8 else { return (bytes, "unchanged") }
            bytes[randomIndex(8..<end)] = UInt8.random(in: 0...UInt8(min(layout?.count ?? 16, 255)), using: &generator)
            return (bytes, "object byte")
        }
    }

    // MARK: - The test

    func testMutatedCorpusFilesAgainstFoundation() throws {
        guard Corpus.root != nil else { print("SKIP: corpus not found (../shared/corpus): no differential test"); return }
        let sources = Self.sources()
        XCTAssertGreaterThan(sources.count, 50)
        var generator = SeededGenerator(seed: 0xD1FF)
        var mutants: [(source: String, kind: String, bytes: [UInt8])] = []
        for source in sources {
            for _ in 0..<14 {
                let (bytes, kind) = Self.mutate(source.bytes, &generator)
                if bytes != source.bytes { mutants.append((source.path, kind, bytes)) }
            }
        }
        let foundation = try Self.runFoundation(mutants.map(\.bytes))
        let dump = ProcessInfo.processInfo.environment["KA_DIFFERENTIAL_DUMP"]

        var bothAccept = 0, bothReject = 0, normalized = 0
        var tally: [String: Int] = [:]
        var examples: [String: String] = [:]
        func note(_ category: String, _ label: String, _ bytes: [UInt8]) {
            tally[category, default: 0] += 1
            if examples[category] == nil {
                examples[category] = label
                if let dump {
                    let name = category.filter { $0.isLetter || $0.isNumber || $0 == " " }.replacingOccurrences(of: " ", with: "-")
                    try? Data(bytes).write(to: URL(fileURLWithPath: "\(dump)/\(name).bplist"))
                }
            }
        }
        for (index, mutant) in mutants.enumerated() {
            let ours = Result { try BinaryPropertyListReader.read(mutant.bytes) }
            if case .failure(let error) = ours, !(error is PropertyListError) {
                XCTFail("\(mutant.source) (\(mutant.kind)) mutant \(index): threw a non-PropertyListError \(error)")
            }
            let label = "\(mutant.source) (\(mutant.kind)) mutant \(index)"
            switch (ours, foundation[index]) {
            case (.success(let value), .accepted(let theirs)):
                bothAccept += 1
                if value != theirs {
                    // The two documented differences in what is kept (Docs/Security.md).
                    XCTAssertEqual(Self.normalized(value), Self.normalized(theirs), "\(label): both accept but the values differ")
                    normalized += 1
                    note("both accept; equal once NaN payloads and repeated keys are normalized", label, mutant.bytes)
                }
            case (.failure, .rejected):
                bothReject += 1
            case (.failure, .acceptedAsText(let format)):
                note("Foundation reads the bytes as \(format) text, not binary", label, mutant.bytes)
            case (.failure(let error), .accepted), (.failure(let error), .unbridgeable):
                note("we reject, Foundation accepts: " + Self.category(of: error), label, mutant.bytes)
            case (.success(let value), .unbridgeable(let what)):
                // Foundation read it too; only our bridge lacks NSSet/UID/NSNull.
                XCTAssertTrue(Self.holdsNonFoundationValue(value), "\(label): Foundation read a \(what) where we read \(value)")
                bothAccept += 1
            case (.success(let value), .rejected(let message)):
                let category = Self.looserCategory(value, mutant.bytes)
                note("we accept, Foundation rejects: " + category, label, mutant.bytes)
                if !Self.explainedLooser.contains(category) {
                    XCTFail("\(label): we accept what Foundation rejects (\(message)), category \(category): \(value)")
                }
            case (.success, .acceptedAsText(let format)):
                XCTFail("\(label): we read binary what Foundation reads as \(format)")
            case (_, .crashedOrHung(let how)):
                note("Foundation crashed or hung", label + " (\(how))", mutant.bytes)
            }
        }
        XCTAssertGreaterThan(bothAccept, 50, "too few accepted mutants for the comparison to mean anything")
        print("differential: \(mutants.count) mutants of \(sources.count) files; both accept \(bothAccept) (\(normalized) after normalizing), both reject \(bothReject)")
        for (category, count) in tally.sorted(by: { $0.value > $1.value }) {
            print("  \(count) × \(category)  e.g. \(examples[category] ?? "")")
        }
    }

    /// `value` with every NaN made the default NaN (Foundation's NSNumber drops NaN payloads and
    /// signs) and, in dictionaries, only the first entry of a repeated key (CoreFoundation's
    /// binary reader keeps the first; we keep every entry and look up the first).
    static func normalized(_ value: PropertyListValue) -> PropertyListValue {
        switch value {
        case .real(let real) where real.value.isNaN:
            return .real(real.isSinglePrecision ? PropertyListReal(Float.nan) : PropertyListReal(Double.nan))
        case .array(let items): return .array(items.map(normalized))
        case .set(let items): return .set(items.map(normalized))
        case .dictionary(let dictionary):
            var seen = Set<PropertyListValue>()
            var result = PropertyListDictionary()
            for entry in dictionary.entries where seen.insert(entry.key).inserted {
                result.entries.append((normalized(entry.key), normalized(entry.value)))
            }
            return .dictionary(result)
        default: return value
        }
    }

    /// Where we accept and Foundation does not, for a documented reason (Docs/Security.md).
    static let explainedLooser: Set<String> = [emptyUTF16]

    /// A short category for a refusal: the error code and the start of its message.
    static func category(of error: Error) -> String {
        guard let error = error as? PropertyListError else { return "\(type(of: error))" }
        let words = error.message.split(separator: " ").prefix(4).map { word in
            word.contains { $0.isNumber } ? "N" : String(word)
        }
        return "\(error.code.rawValue): \(words.joined(separator: " "))"
    }

    /// Why a file we read might be refused by Foundation.
    static func looserCategory(_ value: PropertyListValue, _ bytes: [UInt8]) -> String {
        var pending = [value]
        while let next = pending.popLast() {
            switch next {
            case .string(let string) where string.value.isEmpty && string.storage == .utf16: return emptyUTF16
            case .array(let items), .set(let items): pending += items
            case .dictionary(let dictionary): pending += dictionary.keys + dictionary.values
            default: break
            }
        }
        return "unexplained"
    }

    /// CoreFoundation refuses a zero-length UTF-16 string (marker 0x60, or 0x6F with a count
    /// of 0); the format allows it, plistlib reads it, and it is the same value as `""`.
    static let emptyUTF16 = "an empty UTF-16 string"

    /// True when the value holds something Foundation reads as a type the bridge does not map.
    static func holdsNonFoundationValue(_ value: PropertyListValue) -> Bool {
        var pending = [value]
        while let next = pending.popLast() {
            switch next {
            case .null, .set, .uid: return true
            case .array(let items): pending += items
            case .dictionary(let dictionary):
                for entry in dictionary.entries {
                    if case .string = entry.key {} else { return true }
                    pending.append(entry.value)
                }
            default: break
            }
        }
        return false
    }

    // MARK: - The Foundation side, in a child process

    /// Runs Foundation over every mutant in child processes, restarting after a crash or hang.
    static func runFoundation(_ inputs: [[UInt8]]) throws -> [FoundationResult] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ka-differential-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var batch = Data()
        for input in inputs {
            var length = UInt32(input.count).bigEndian
            withUnsafeBytes(of: &length) { batch.append(contentsOf: $0) }
            batch.append(contentsOf: input)
        }
        let inputURL = directory.appendingPathComponent("mutants")
        try batch.write(to: inputURL)

        var results = [FoundationResult?](repeating: nil, count: inputs.count)
        var start = 0
        var attempt = 0
        while start < inputs.count {
            attempt += 1
            let outputURL = directory.appendingPathComponent("results-\(attempt)")
            _ = FileManager.default.createFile(atPath: outputURL.path, contents: nil)
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
            process.arguments = ["KeyedArchivePropertyListTests.DifferentialTests/testFoundationChildProcess"]
            process.environment = ProcessInfo.processInfo.environment.merging(
                [childVariable: "\(inputURL.path)|\(outputURL.path)|\(start)"]) { $1 }
            process.standardOutput = FileHandle.nullDevice
            let errorURL = directory.appendingPathComponent("stderr-\(attempt)")
            _ = FileManager.default.createFile(atPath: errorURL.path, contents: nil)
            process.standardError = try FileHandle(forWritingTo: errorURL)
            try process.run()
            // Kill the child when no new result arrives for a while (a hang or a runaway).
            var lastSize = -1
            var lastProgress = Date()
            while process.isRunning {
                usleep(20_000)
                let size = (try? FileManager.default.attributesOfItem(atPath: outputURL.path)[.size] as? Int) ?? 0
                if size != lastSize {
                    lastSize = size
                    lastProgress = Date()
                } else if Date().timeIntervalSince(lastProgress) > 10 {
                    kill(process.processIdentifier, SIGKILL)
                }
            }
            process.waitUntilExit()
            var next = start
            let text = String(decoding: (try? Data(contentsOf: outputURL)) ?? Data(), as: UTF8.self)
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
                guard fields.count == 3, let index = Int(fields[0]), index >= 0, index < inputs.count else { continue }
                switch fields[1] {
                case "A":
                    guard let data = Data(base64Encoded: fields[2]), let value = try? BinaryPropertyListReader.read(data) else { continue }
                    results[index] = .accepted(value)
                case "U": results[index] = .unbridgeable(fields[2])
                case "T": results[index] = .acceptedAsText(fields[2])
                default: results[index] = .rejected(fields[2])
                }
                next = max(next, index + 1)
            }
            if next < inputs.count {
                // The child died or was killed on input `next`.
                let errorText = String(decoding: (try? Data(contentsOf: errorURL)) ?? Data(), as: UTF8.self)
                let reason = process.terminationReason == .uncaughtSignal ? "signal \(process.terminationStatus)" : "exit \(process.terminationStatus)"
                results[next] = .crashedOrHung("\(reason): " + errorText.split(separator: "\n").suffix(2).joined(separator: " | "))
                next += 1
            }
            guard attempt < 200 else { throw XCTSkip("the Foundation child failed too often") }
            start = next
        }
        return results.map { $0 ?? .crashedOrHung("no result") }
    }

    private struct TextFormat: Error {
        var format: PropertyListSerialization.PropertyListFormat
    }

    /// The Foundation side: a no-op in a normal run; in the child process (``childVariable``
    /// set to `input|output|start`), reads every mutant from `start` on with
    /// `PropertyListSerialization` and appends one result line per mutant to `output`.
    func testFoundationChildProcess() throws {
        guard let spec = ProcessInfo.processInfo.environment[Self.childVariable] else { return }
        let parts = spec.split(separator: "|").map(String.init)
        guard parts.count == 3, let start = Int(parts[2]) else { return XCTFail("bad \(Self.childVariable): \(spec)") }
        let batch = [UInt8](try Data(contentsOf: URL(fileURLWithPath: parts[0])))
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: parts[1]))
        var position = 0
        var index = 0
        while position + 4 <= batch.count {
            let length = batch[position..<(position + 4)].reduce(0) { $0 << 8 | Int($1) }
            position += 4
            let input = Data(batch[position..<(position + length)])
            position += length
            defer { index += 1 }
            guard index >= start else { continue }
            var line: String
            do {
                var format = PropertyListSerialization.PropertyListFormat.binary
                let object = try PropertyListSerialization.propertyList(from: input, options: [], format: &format)
                do {
                    guard format == .binary else { throw TextFormat(format: format) }
                    let value = try FoundationBridge.value(object)
                    line = "A\t" + Data(try BinaryPropertyListWriter.write(value)).base64EncodedString()
                } catch let text as TextFormat {
                    line = "T\t\(text.format)"
                } catch {
                    line = "U\t\(error)"
                }
            } catch {
                line = "R\t" + "\(error)".replacingOccurrences(of: "\n", with: " ")
            }
            output.write(Data("\(index)\t\(line)\n".utf8))
        }
        try output.close()
    }
}
