import Foundation
import KeyedArchive

/// Shared pieces of the fuzz entry points: the limits they run under, the round-trip oracle,
/// and the seed generator (run by `run.sh` before fuzzing, through the same binary).
enum FuzzSupport {
    /// Limits small enough that a legitimate input can never need more memory than libFuzzer's
    /// -rss_limit_mb allows, so any out-of-memory report is a real bug, not a big valid input.
    static let limits = DecodingLimits(
        maximumDepth: 512, maximumObjectCount: 1 << 20, maximumExpandedNodeCount: 1 << 22,
        maximumStringLength: 1 << 24, maximumDataLength: 1 << 24)

    /// Whether `KA_FUZZ_PIPELINE` is set: targets that encode also compare their archives
    /// written with the table's layout on a second thread (from the second entry on) and
    /// without (a thread started per input: slower, so not by default).
    static let checksLayoutPipeline = getenv("KA_FUZZ_PIPELINE") != nil

    /// The input as a buffer; libFuzzer may pass a null pointer for size 0.
    static func buffer(_ data: UnsafePointer<UInt8>?, _ size: Int) -> UnsafeRawBufferPointer {
        guard let data, size > 0 else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: data, count: size)
    }

    /// A broken invariant: print it and abort, so libFuzzer records the input as a crash.
    static func fail(_ message: String) -> Never {
        printError("FUZZ INVARIANT BROKEN: \(message)")
        abort()
    }

    /// If `KA_FUZZ_SEEDS` names a folder, writes seeds there and exits: `count` random values
    /// (`KA_FUZZ_SEED_COUNT`, default 200) encoded by `encode`, and every file under
    /// `KA_FUZZ_CONVERT` that reads as a property list, re-encoded by `encode`.
    static func generateSeedsIfAsked(_ encode: (PropertyListValue) throws -> [UInt8]?, options: RandomPropertyList.Options = .init()) {
        guard let folder = getenv("KA_FUZZ_SEEDS").map({ String(cString: $0) }) else { return }
        let count = getenv("KA_FUZZ_SEED_COUNT").flatMap { Int(String(cString: $0)) } ?? 200
        var written = 0
        func save(_ bytes: [UInt8], _ name: String) {
            let url = URL(fileURLWithPath: folder).appendingPathComponent(name)
            if (try? Data(bytes).write(to: url)) != nil { written += 1 }
        }
        var options = options
        options.maximumDepth = 4
        for seed in 0..<count {
            var random = RandomPropertyList(seed: UInt64(seed), options: options)
            let value = seed % 3 == 0 ? random.value() : random.rootDictionary()
            if let bytes = try? encode(value), bytes.count <= 64 * 1024 { save(bytes, "generated-\(seed)") }
        }
        if let convert = getenv("KA_FUZZ_CONVERT").map({ String(cString: $0) }),
            let files = FileManager.default.enumerator(atPath: convert)
        {
            for case let path as String in files {
                guard let data = FileManager.default.contents(atPath: convert + "/" + path), data.count <= 64 * 1024,
                    let value = try? PropertyList.decode(data), let bytes = try? encode(value)
                else { continue }
                save(bytes, "converted-" + path.replacingOccurrences(of: "/", with: "_"))
            }
        }
        printError("wrote \(written) seeds to \(folder)")
        exit(0)
    }

    static func printError(_ message: String) {
        FileHandle.standardError.write(Data((message + "\n").utf8))
    }

    /// Writing a value that was read and reading it back must give the same value.
    static func checkRoundTrip(
        _ value: PropertyListValue, _ format: String, write: (PropertyListValue) throws -> [UInt8],
        read: (UnsafeRawBufferPointer) throws -> PropertyListValue
    ) {
        let bytes: [UInt8]
        do { bytes = try write(value) } catch { fail("\(format) writer refused a value its reader produced: \(error)") }
        let again: PropertyListValue
        do { again = try bytes.withUnsafeBytes { try read($0) } } catch {
            fail("\(format) reader refused its writer's output: \(error)")
        }
        guard again == value else { fail("\(format) round trip changed the value:\n\(value)\n->\n\(again)") }
    }
}
