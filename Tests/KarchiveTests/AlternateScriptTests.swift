import Foundation
import KeyedArchiveTestSupport
import XCTest

/// `Benchmarks/alternate.sh`, the A/B script Docs/Performance.md describes, run on two stand-in
/// "harness builds": shell scripts that print the line `--profile` prints, with a time per run
/// that depends on whether glibc's thresholds were raised for them.
final class AlternateScriptTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("ka-alternate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    /// A stand-in build: records its arguments, then reports `raised` seconds a run when
    /// `GLIBC_TUNABLES` is set and `plain` seconds otherwise (as the harness does, on stderr).
    private func build(_ name: String, raised: String, plain: String) throws -> URL {
        let url = directory.appendingPathComponent(name)
        let script = """
            #!/usr/bin/env bash
            echo "$*" >> "\(directory.path)/\(name).calls"
            echo "building inputs" >&2
            if [ -n "${GLIBC_TUNABLES:-}" ]; then t=\(raised); else t=\(plain); fi
            echo "KeyedArchive Codable: 12 runs, $t seconds each" >&2
            """
        try script.write(to: url, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        return url
    }

    private var script: URL { URL(fileURLWithPath: Corpus.repositoryRoot).appendingPathComponent("Benchmarks/alternate.sh") }

    func testReportsEachBuildsMedianAndTheRoundsTheSecondWon() throws {
        let first = try build("first", raised: "0.010", plain: "0.010")
        let second = try build("second", raised: "8e-03", plain: "0.012")
        let profile = "W2:acyclic archive:4:KeyedArchive Codable"
        let raised = try ToolRunner.run(script, ["--rounds", "3", profile, first.path, second.path])
        XCTAssertEqual(raised.status, 0, raised.standardError)
        let lines = raised.output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, raised.output)
        XCTAssertTrue(lines[0].hasPrefix("\(first.path)  KeyedArchive Codable  rounds 3  min 10  q1 10  median 10  max 10 ms"), lines[0])
        XCTAssertTrue(lines[1].hasPrefix("\(second.path)  KeyedArchive Codable  rounds 3  min 8  q1 8  median 8  max 8 ms"), lines[1])
        XCTAssertEqual(lines[2], "KeyedArchive Codable: second / first median 0.800, second faster in 3 of 3 rounds")
        // Each build ran once a round, with the profile as one argument.
        for name in ["first", "second"] {
            let calls = try String(contentsOf: directory.appendingPathComponent("\(name).calls"), encoding: .utf8)
            XCTAssertEqual(calls, String(repeating: "--profile \(profile)\n", count: 3))
        }

        // glibc's own thresholds: the second build is now the slower one in every round.
        let plain = try ToolRunner.run(script, ["--rounds", "2", "--default-heap", profile, first.path, second.path])
        XCTAssertEqual(plain.status, 0, plain.standardError)
        XCTAssertTrue(plain.output.hasSuffix("second / first median 1.200, second faster in 0 of 2 rounds\n"), plain.output)
    }

    func testABuildThatFailsOrPrintsNoTimingStopsTheComparison() throws {
        let good = try build("good", raised: "0.010", plain: "0.010")
        let silent = directory.appendingPathComponent("silent")
        try "#!/usr/bin/env bash\necho 'no such workload' >&2\n".write(to: silent, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: silent.path)
        let result = try ToolRunner.run(script, ["W1:archive:1", good.path, silent.path])
        XCTAssertEqual(result.status, 1)
        XCTAssertTrue(result.standardError.contains("no timing in the output of"), result.standardError)
        XCTAssertTrue(result.standardError.contains("no such workload"), result.standardError)

        let usage = try ToolRunner.run(script, ["W1:archive:1"])
        XCTAssertEqual(usage.status, 2)
        XCTAssertTrue(usage.standardError.contains("alternate.sh [--rounds N]"), usage.standardError)
        let missing = try ToolRunner.run(script, ["W1:archive:1", good.path, directory.appendingPathComponent("absent").path])
        XCTAssertEqual(missing.status, 2)
        XCTAssertTrue(missing.standardError.contains("not an executable"), missing.standardError)
    }
}
