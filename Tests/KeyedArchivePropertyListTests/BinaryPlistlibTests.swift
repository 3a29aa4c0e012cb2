import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// Cross-checks with CPython's plistlib: it reads our bytes and reports each value in a tagged
/// JSON form that keeps what JSON would lose (integer range, float bits, bytes, UIDs); plistlib's
/// own binary output is read back by our reader.
final class BinaryPlistlibTests: XCTestCase {
    /// Reads length-prefixed binary plists from stdin; prints one JSON array with, per input,
    /// the tagged value and plistlib's own binary encoding of it (hex), or the error.
    static let script = #"""
import sys, json, plistlib, struct, datetime
EPOCH = datetime.datetime(2001, 1, 1)
def tag(v):
    if v is None: return ["n"]
    if isinstance(v, bool): return ["b", v]
    if isinstance(v, int): return ["i", str(v)]
    if isinstance(v, float): return ["r", v.hex()]
    if isinstance(v, str): return ["s", v]
    if isinstance(v, bytes): return ["d", v.hex()]
    if isinstance(v, plistlib.UID): return ["u", v.data]
    if isinstance(v, datetime.datetime): return ["t", (v - EPOCH).total_seconds()]
    if isinstance(v, list): return ["a", [tag(x) for x in v]]
    if isinstance(v, dict): return ["o", [[k, tag(x)] for k, x in v.items()]]
    raise TypeError(type(v))
data = sys.stdin.buffer.read()
out, pos = [], 0
while pos < len(data):
    (n,) = struct.unpack(">I", data[pos:pos+4]); pos += 4
    chunk = data[pos:pos+n]; pos += n
    try:
        v = plistlib.loads(chunk, fmt=plistlib.FMT_BINARY)
        try: again = plistlib.dumps(v, fmt=plistlib.FMT_BINARY, sort_keys=False).hex()
        except Exception: again = None
        out.append({"value": tag(v), "binary": again})
    except Exception as e:
        out.append({"error": repr(e)})
print(json.dumps(out))
"""#

    func testPlistlibReadsOurBytes() throws {
        guard Python.executable != nil else { print("SKIP: python3 not found; plistlib cross-check not run"); return }
        var options = RandomPropertyList.Options()
        options.null = true  // plistlib reads null as None; it has no sets.
        var random = RandomPropertyList(seed: 0x5EED, options: options)
        let values = (0..<300).map { index in index % 2 == 0 ? random.rootDictionary() : random.value() }
        var input = Data()
        for value in values {
            let bytes = try BinaryPropertyListWriter.write(value)
            var length = UInt32(bytes.count).bigEndian
            input.append(Data(bytes: &length, count: 4))
            input.append(contentsOf: bytes)
        }
        let output = try Python.run(Self.script, input: input)
        let results = try XCTUnwrap(try JSONSerialization.jsonObject(with: output) as? [[String: Any]])
        XCTAssertEqual(results.count, values.count)
        var rereadCount = 0
        for (index, (value, result)) in zip(values, results).enumerated() {
            if let error = result["error"] {
                XCTFail("value \(index): plistlib could not read our bytes: \(error)")
                continue
            }
            XCTAssertTrue(Self.matches(value, result["value"] as Any), "value \(index): plistlib read something else")
            // plistlib's writer (no null support; merges -0.0 into 0.0) is read back by ours.
            if let hex = result["binary"] as? String, !Self.contains(value, where: { $0 == .null || $0.isNegativeZero }) {
                let reread = try BinaryPropertyListReader.read(Self.bytes(hex: hex))
                XCTAssertTrue(Self.equalIgnoringPrecision(reread, value), "value \(index): plistlib's bytes read back differently")
                rereadCount += 1
            }
        }
        XCTAssertGreaterThan(rereadCount, 100)
    }

    // MARK: - Helpers

    static func bytes(hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var iterator = hex.utf8.makeIterator()
        func nibble(_ c: UInt8) -> UInt8 { c >= 97 ? c - 87 : c - 48 }
        while let high = iterator.next(), let low = iterator.next() { result.append(nibble(high) << 4 | nibble(low)) }
        return result
    }

    static func contains(_ value: PropertyListValue, where predicate: (PropertyListValue) -> Bool) -> Bool {
        if predicate(value) { return true }
        switch value {
        case .array(let items), .set(let items): return items.contains { contains($0, where: predicate) }
        case .dictionary(let dictionary): return dictionary.entries.contains { contains($0.value, where: predicate) }
        default: return false
        }
    }

    /// Equality, except that dates need only agree to plistlib's microseconds.
    static func equalIgnoringPrecision(_ a: PropertyListValue, _ b: PropertyListValue) -> Bool {
        switch (a, b) {
        case (.date(let x), .date(let y)):
            let (s, t) = (x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
            return abs(s - t) <= 1e-6 * max(1, abs(s) / 1e9)
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { equalIgnoringPrecision($0, $1) }
        case (.dictionary(let x), .dictionary(let y)):
            // Both keep file order, and plistlib writes keys in the order it read them.
            return x.count == y.count && zip(x.entries, y.entries).allSatisfy { $0.key == $1.key && equalIgnoringPrecision($0.value, $1.value) }
        default:
            return a == b
        }
    }

    /// Whether plistlib's tagged JSON describes `value`.
    static func matches(_ value: PropertyListValue, _ node: Any) -> Bool {
        guard let node = node as? [Any], let tag = node.first as? String else { return false }
        let payload = node.count > 1 ? node[1] : nil
        switch (value, tag) {
        case (.null, "n"): return true
        case (.bool(let bool), "b"): return (payload as? Bool) == bool
        case (.integer(let integer), "i"): return (payload as? String) == integer.description
        case (.real(let real), "r"):
            guard let text = payload as? String else { return false }
            if real.value.isNaN { return text == "nan" }
            return Double(text)?.bitPattern == real.value.bitPattern
        case (.string(let string), "s"):
            guard let text = payload as? String else { return false }
            return Array(text.unicodeScalars) == Array(string.value.unicodeScalars)
        case (.data(let data), "d"): return (payload as? String) == data.map { String(format: "%02x", $0) }.joined()
        case (.uid(let uid), "u"): return (payload as? NSNumber)?.uint32Value == uid
        case (.date(let date), "t"):
            // plistlib keeps microseconds.
            guard let seconds = (payload as? NSNumber)?.doubleValue else { return false }
            return abs(seconds - date.timeIntervalSinceReferenceDate) <= 1e-6 * max(1, abs(seconds) / 1e9)
        case (.array(let items), "a"):
            guard let list = payload as? [Any], list.count == items.count else { return false }
            return zip(items, list).allSatisfy { matches($0, $1) }
        case (.dictionary(let dictionary), "o"):
            guard let pairs = payload as? [[Any]], pairs.count == dictionary.count else { return false }
            var byKey: [String: Any] = [:]
            for pair in pairs { if let key = pair.first as? String, pair.count == 2 { byKey[key] = pair[1] } }
            return dictionary.entries.allSatisfy { entry in
                guard case .string(let key) = entry.key, let other = byKey.first(where: { Array($0.key.unicodeScalars) == Array(key.value.unicodeScalars) })?.value else { return false }
                return matches(entry.value, other)
            }
        default: return false
        }
    }
}

extension PropertyListValue {
    fileprivate var isNegativeZero: Bool {
        if case .real(let real) = self { return real.value == 0 && real.value.sign == .minus }
        return false
    }
}
