import Foundation
import KeyedArchiveTestSupport
import XCTest

/// Every command that reads a file, on every malformed input we have: the corpus's malformed
/// folder, the regression fixtures and mutated archives. Each run must end with status 0 or 1
/// (1 and a one-line message when the input is refused), never a crash or a backtrace.
final class MalformedInputCLITests: XCTestCase {
    private static let commands: [[String]] = [["lint"], ["convert", "-f", "xml"], ["print"], ["unarchive", "--all"]]

    /// Runs `commands` on `path`; returns how many refused it.
    @discardableResult
    private func assertCleanRuns(_ path: String, label: String, mustRefuse: Bool, commands: [[String]] = commands) throws -> Int {
        var refused = 0
        for command in commands {
            let run = try ToolRunner.karchive(command + [path])
            let what = "karchive \(command.joined(separator: " ")) \(label)"
            XCTAssertFalse(run.crashed, "\(what) crashed: \(run.standardError.prefix(300))")
            XCTAssertTrue(run.status == 0 || run.status == 1, "\(what) exited \(run.status)")
            XCTAssertFalse(run.standardError.contains("Backtrac") || run.standardError.contains("Fatal error"), "\(what): \(run.standardError)")
            if run.status == 1 {
                refused += 1
                XCTAssertEqual(run.standardError.split(separator: "\n").count, 1, "\(what): \(run.standardError)")
            }
            if mustRefuse, command[0] != "print" {
                // print shows whatever parses; the others must refuse a file that does not parse.
                XCTAssertEqual(run.status, 1, "\(what) must refuse it")
            }
        }
        return refused
    }

    func testEveryMalformedCorpusFileThroughEveryCommand() throws {
        guard let root = Corpus.root else {
            print("../shared/corpus not found: skipping the malformed-input check of every command")
            return
        }
        let entries = Corpus.entries(in: "malformed")
        XCTAssertGreaterThan(entries.count, 150)
        // lint takes them all in one run: one line per refused file.
        let lint = try ToolRunner.karchive(["lint"] + entries.map { root + "/" + $0.path })
        XCTAssertFalse(lint.crashed)
        XCTAssertEqual(lint.status, 1)
        let refusals = lint.standardError.split(separator: "\n")
        XCTAssertGreaterThanOrEqual(refusals.count, entries.filter { $0.expect == "MUST-REJECT" }.count, lint.standardError)
        XCTAssertEqual(refusals.count + lint.output.split(separator: "\n").count, entries.count, "one line per file")
        // The per-file commands: unarchive (the resolver) on every file, print and convert on
        // every other and every fourth (KarchiveCLITests covers more print and convert runs),
        // to keep the spawns few.
        for (index, entry) in entries.enumerated() {
            var commands: [[String]] = [["unarchive", "--all"]]
            if index % 2 == 0 { commands.append(["print"]) }
            if index % 4 == 1 { commands.append(["convert", "-f", "xml"]) }
            // MUST-REJECT files do not parse at all; the others (ARCHIVE-REJECT, MAY-PARSE,
            // MUST-NOT-CRASH, ...) may parse as property lists, so only a clean exit is required.
            try assertCleanRuns(root + "/" + entry.path, label: entry.path, mustRefuse: entry.expect == "MUST-REJECT", commands: commands)
        }
    }

    func testRegressionFixturesThroughEveryCommand() throws {
        let folder = Corpus.repositoryRoot + "/Tests/Fixtures"
        let manifest = try String(contentsOfFile: folder + "/expectations.tsv", encoding: .utf8)
        var count = 0
        for line in manifest.split(separator: "\n") where !line.hasPrefix("#") {
            let columns = line.split(separator: "\t").map(String.init)
            guard columns.count >= 2 else { continue }
            // Plist-level refusals must be refused by every command; archive- and Codable-level
            // ones are valid property lists, which lint and convert accept.
            let plistLevel = columns[0].hasPrefix("binary/") || columns[0].hasPrefix("xml/") || columns[0].hasPrefix("openstep/")
            try assertCleanRuns(folder + "/" + columns[0], label: columns[0], mustRefuse: plistLevel && columns[1].hasPrefix("reject"))
            count += 1
        }
        XCTAssertGreaterThan(count, 3)
    }

    /// Mutated keyed archives from the corpus: hostile archives rather than hostile plists.
    func testMutatedArchivesThroughEveryCommand() throws {
        guard Corpus.root != nil else {
            print("../shared/corpus not found: skipping the mutated-archive check of every command")
            return
        }
        let archives = Corpus.entries(in: "keyed").filter { $0.expect == "MUST-PARSE" }.map { ($0.path, [UInt8]($0.data)) }
            .filter { $0.1.count > 60 && $0.1.count < 4_000 }
        XCTAssertGreaterThan(archives.count, 20)
        var generator = SeededGenerator(seed: 0xCA11)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ka-cli-mutants-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var refused = 0
        for index in 0..<20 {
            guard let (name, original) = archives.randomElement(using: &generator) else { continue }
            var bytes = original
            // Set a few bytes of the object area to small numbers: references move, counts
            // shrink, markers change; most mutants still parse as property lists.
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                bytes[Int.random(in: 8..<(bytes.count - 32), using: &generator)] = UInt8.random(in: 0...20, using: &generator)
            }
            let url = directory.appendingPathComponent("mutant-\(index).bplist")
            try Data(bytes).write(to: url)
            refused += try assertCleanRuns(url.path, label: "\(name) mutant \(index)", mustRefuse: false)
        }
        XCTAssertGreaterThan(refused, 0, "no mutant was refused: the mutations do not reach the readers")
    }
}
