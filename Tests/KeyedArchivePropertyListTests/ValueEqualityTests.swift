import KeyedArchiveTestSupport
import XCTest

/// Equality of the value model: by value, order-insensitive for dictionaries and sets, literal
/// for strings, bitwise for reals and dates, and linear in the size of the values.
final class ValueEqualityTests: XCTestCase {
    func testDictionariesCompareWithoutRegardToOrderAndStringsLiterally() {
        let ordered: PropertyListValue = ["a": 1, "b": [true, "x"], "c": ["d": 2.5]]
        let shuffled = PropertyListValue.dictionary(PropertyListDictionary(stringKeys: [
            ("c", ["d": 2.5]), ("a", 1), ("b", [true, "x"]),
        ]))
        XCTAssertEqual(ordered, shuffled)
        XCTAssertEqual(ordered.hashValue, shuffled.hashValue)
        XCTAssertNotEqual(ordered, ["a": 1, "b": [true, "x"], "c": ["d": 2.25]])
        XCTAssertNotEqual(ordered, ["a": 1, "b": [true, "x"], "e": ["d": 2.5]])
        // NFC and NFD spellings are different strings and different keys, as in CoreFoundation.
        XCTAssertNotEqual(PropertyListValue("\u{E9}"), PropertyListValue("e\u{301}"))
        let both = PropertyListValue.dictionary(PropertyListDictionary(stringKeys: [("\u{E9}", 1), ("e\u{301}", 2)]))
        let swapped = PropertyListValue.dictionary(PropertyListDictionary(stringKeys: [("e\u{301}", 2), ("\u{E9}", 1)]))
        XCTAssertEqual(both, swapped)
        XCTAssertNotEqual(both, PropertyListValue.dictionary(PropertyListDictionary(stringKeys: [("e\u{301}", 1), ("\u{E9}", 2)])))
        // Duplicate keys (possible in files read from outside) pair up in their relative order.
        let duplicated = PropertyListValue.dictionary(PropertyListDictionary(stringKeys: [("k", 1), ("x", 0), ("k", 2)]))
        XCTAssertEqual(duplicated, .dictionary(PropertyListDictionary(stringKeys: [("x", 0), ("k", 1), ("k", 2)])))
        XCTAssertNotEqual(duplicated, .dictionary(PropertyListDictionary(stringKeys: [("x", 0), ("k", 2), ("k", 1)])))
        XCTAssertNotEqual(duplicated, .dictionary(PropertyListDictionary(stringKeys: [("k", 1), ("x", 0), ("k", 1)])))
    }

    func testRealsAndDatesCompareBitwiseAndWidthsAreIgnored() {
        XCTAssertEqual(PropertyListValue(Double.nan), PropertyListValue(Double.nan))
        XCTAssertNotEqual(PropertyListValue(-0.0), PropertyListValue(0.0))
        XCTAssertEqual(PropertyListValue(Float(1.5)), PropertyListValue(1.5), "a 4-byte 1.5 equals an 8-byte 1.5")
        XCTAssertEqual(PropertyListValue.integer(PropertyListInteger(5, storedWidth: 8)), 5)
        XCTAssertEqual(PropertyListValue(UInt64.max), .integer(PropertyListInteger(UInt64.max, storedWidth: 16)))
        XCTAssertNotEqual(PropertyListValue(Int64(-1)), PropertyListValue(UInt64.max))
        XCTAssertEqual(PropertyListValue(Date(timeIntervalSinceReferenceDate: .nan)), PropertyListValue(Date(timeIntervalSinceReferenceDate: .nan)))
        XCTAssertEqual(PropertyListValue.set([1, "a"]), .set(["a", 1]))
        XCTAssertNotEqual(PropertyListValue.array([1, "a"]), .array(["a", 1]))
    }

    /// Many dictionaries with the same keys in a different order used to make equality
    /// quadratic (their hashes collide by design). Doubling the input must about double the work.
    func testEqualityIsLinearForManySameShapedDictionaries() {
        func records(_ count: Int, reversedKeys: Bool) -> PropertyListValue {
            .array((0..<count).map { index in
                var entries: [(String, PropertyListValue)] = [("id", PropertyListValue(index)), ("name", PropertyListValue("n\(index % 7)")), ("tags", ["a", "b"])]
                if reversedKeys { entries.reverse() }
                return .dictionary(PropertyListDictionary(stringKeys: entries))
            })
        }
        func seconds(_ count: Int) -> Double {
            let (a, b) = (records(count, reversedKeys: false), records(count, reversedKeys: true))
            let start = ContinuousClock.now
            XCTAssertEqual(a, b)
            let elapsed = ContinuousClock.now - start
            return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        }
        _ = seconds(500)  // warm up
        let small = seconds(2_000), large = seconds(16_000)
        XCTAssertLessThan(large / max(small, 1e-6), 40, "8x the input took \(large / small)x the time")
    }

    /// The in-place accessors that hot loops use read the same key and value as `entries[i]`
    /// (their offsets are those `MemoryLayout` reports), and the bitwise fast path says "same"
    /// only for the same string bits: never for different text, not necessarily for equal text
    /// in two separate strings (the real comparison decides those).
    func testInPlaceEntryAccessAndBitwiseIdentity() {
        typealias Entry = PropertyListDictionary.Entry
        XCTAssertEqual(MemoryLayout<Entry>.offset(of: \Entry.key), 0)
        XCTAssertEqual(MemoryLayout<Entry>.offset(of: \Entry.value), MemoryLayout<PropertyListValue>.stride)
        let long = String(repeating: "long key ", count: 4)
        let entries: [Entry] = [("a", 1), (.string(PropertyListString(long)), ["x": true]), (.integer(7), "seven")]
        entries.withUnsafeBufferPointer { buffer in
            guard let first = buffer.baseAddress else { return XCTFail("no storage") }
            for index in buffer.indices {
                XCTAssertEqual(PropertyListDictionary.key(of: first + index).pointee, entries[index].key)
                XCTAssertEqual(PropertyListDictionary.value(of: first + index).pointee, entries[index].value)
                // A copy of a string key shares the original's storage: the same bits. (Other
                // cases may leave bytes unset, which a copy need not carry over.)
                if case .string = entries[index].key {
                    var copy = entries[index].key
                    XCTAssertTrue(PropertyListValue.haveSameBits(&copy, PropertyListDictionary.key(of: first + index)), "entry \(index)")
                }
            }
            XCTAssertFalse(PropertyListValue.haveSameBits(PropertyListDictionary.key(of: first), PropertyListDictionary.key(of: first + 1)))
        }
        // Small strings: equal text, equal bits; a storage hint is part of the bits.
        var small = PropertyListValue.string(PropertyListString("name", storage: .ascii))
        var same = PropertyListValue.string(PropertyListString(String(decoding: Array("name".utf8), as: UTF8.self), storage: .ascii))
        var hinted = PropertyListValue.string(PropertyListString("name", storage: .utf16))
        var other = PropertyListValue.string(PropertyListString("nama", storage: .ascii))
        XCTAssertTrue(PropertyListValue.haveSameBits(&small, &same))
        XCTAssertFalse(PropertyListValue.haveSameBits(&small, &hinted))
        XCTAssertFalse(PropertyListValue.haveSameBits(&small, &other))
        // Two long strings built separately: equal text in separate boxes, so different bits
        // (the real comparison says equal); a copy shares its box.
        let built = (0..<4).map { _ in "long key " }.joined()
        XCTAssertEqual(built, long)
        var separate = PropertyListValue.string(PropertyListString(built))
        var original = PropertyListValue.string(PropertyListString(long))
        XCTAssertFalse(PropertyListValue.haveSameBits(&separate, &original))
        XCTAssertEqual(separate, original)
        var shared = original
        XCTAssertTrue(PropertyListValue.haveSameBits(&shared, &original))
    }
}
