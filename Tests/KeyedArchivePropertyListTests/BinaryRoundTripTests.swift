import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// Seeded round trips through our own writer and reader: values survive, bytes are stable.
final class BinaryRoundTripTests: XCTestCase {
    static var allKinds: RandomPropertyList.Options {
        var options = RandomPropertyList.Options()
        options.null = true
        options.set = true
        return options
    }

    func testRandomValuesRoundTripAndAreByteStable() throws {
        var random = RandomPropertyList(seed: 20_260_101, options: Self.allKinds)
        for index in 0..<2_000 {
            let value = index % 3 == 0 ? random.rootDictionary() : random.value()
            let bytes = try BinaryPropertyListWriter.write(value)
            let read = try BinaryPropertyListReader.read(bytes)
            XCTAssertEqual(read, value, "value \(index)")
            XCTAssertEqual(try BinaryPropertyListWriter.write(read), bytes, "value \(index): not byte-stable")
            // Through the format-detecting entry points too.
            if index % 100 == 0 {
                let data = try PropertyList.encode(value, format: .binary)
                XCTAssertEqual(PropertyList.detectFormat(data), .binary)
                XCTAssertEqual(try PropertyList.decode(data), value)
            }
        }
    }

    func testHugeContainers() throws {
        // More than 65,535 members (3-byte counts, 4-byte references), with repeats to unique.
        let big = 65_536 + 37
        let array = PropertyListValue.array((0..<big).map { $0 % 3 == 0 ? PropertyListValue("s\($0 % 1_000)") : PropertyListValue(Int64($0)) })
        let dictionary = PropertyListValue.dictionary(PropertyListDictionary(stringKeys: (0..<big).map { ("k\($0)", PropertyListValue(Double($0 % 7))) }))
        let set = PropertyListValue.set((0..<big).map { PropertyListValue(Int64($0)) })
        for (name, value) in [("array", array), ("dictionary", dictionary), ("set", set)] {
            let bytes = try BinaryPropertyListWriter.write(value)
            let read = try BinaryPropertyListReader.read(bytes)
            XCTAssertEqual(read, value, name)
            XCTAssertEqual(try BinaryPropertyListWriter.write(read), bytes, name)
        }
    }

    /// Storage hints survive: stored widths, 4-byte reals, UTF-16 storage of ASCII text.
    func testStorageHintsRoundTrip() throws {
        let value: PropertyListValue = .array([
            .integer(PropertyListInteger(Int64(5), storedWidth: 8)),
            .integer(PropertyListInteger(Int64(5), storedWidth: 2)),
            .integer(PropertyListInteger(Int64(5), storedWidth: 16)),
            .integer(PropertyListInteger(Int64(-5), storedWidth: 16)),
            .integer(PropertyListInteger(Int64(5))),
            .real(PropertyListReal(Float(0.5))),
            .real(PropertyListReal(0.5)),
            .string(PropertyListString("abc", storage: .utf16)),
            .string(PropertyListString("abc", storage: .ascii)),
            .string(PropertyListString("abc")),
        ])
        let bytes = try BinaryPropertyListWriter.write(value)
        let read = try BinaryPropertyListReader.read(bytes)
        guard case .array(let items) = read, items.count == 10 else { return XCTFail("not an array of 10") }
        let widths: [UInt8] = items.compactMap { if case .integer(let i) = $0 { return i.storedWidth } else { return nil } }
        XCTAssertEqual(widths, [8, 2, 16, 16, 1])
        XCTAssertEqual(items[3].int64Value, -5)
        XCTAssertEqual(items.compactMap { if case .real(let r) = $0 { return r.isSinglePrecision } else { return nil } }, [true, false])
        let storages: [PropertyListString.Storage] = items.compactMap { if case .string(let s) = $0 { return s.storage } else { return nil } }
        XCTAssertEqual(storages, [.utf16, .ascii, .ascii])
        // Equal values with different hints are different objects: 5 integers, 2 reals,
        // 2 strings (the two ASCII ones merge), plus the array.
        XCTAssertEqual(bytes[bytes.count - 17], 10)
        XCTAssertEqual(try BinaryPropertyListWriter.write(read), bytes)
    }

    func testDeepNestingRoundTripsIteratively() throws {
        var value: PropertyListValue = "leaf"
        for index in 0..<3_000 { value = index % 2 == 0 ? .array([value]) : .dictionary(["k": value]) }
        let bytes = try BinaryPropertyListWriter.write(value)
        XCTAssertThrowsError(try BinaryPropertyListReader.read(bytes)) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .depthLimitExceeded)
        }
        let read = try BinaryPropertyListReader.read(bytes, limits: DecodingLimits(maximumDepth: 3_000))
        XCTAssertEqual(read, value)
        XCTAssertEqual(try BinaryPropertyListWriter.write(read), bytes)
    }

    func testWriterRefusesWhatTheReaderRefuses() {
        let badKey = PropertyListValue.dictionary(PropertyListDictionary([(.bool(true), "v")]))
        let containerKey = PropertyListValue.dictionary(PropertyListDictionary([(.array([]), "v")]))
        let nanDate = PropertyListValue.date(Date(timeIntervalSinceReferenceDate: .nan))
        for value in [badKey, containerKey, nanDate] {
            XCTAssertThrowsError(try BinaryPropertyListWriter.write(value)) { error in
                XCTAssertEqual((error as? PropertyListError)?.code, .unrepresentableValue)
            }
        }
        // Integer keys (Instruments traffic) are fine.
        let intKey = PropertyListValue.dictionary(PropertyListDictionary([(1, "one")]))
        XCTAssertEqual(try BinaryPropertyListReader.read(try BinaryPropertyListWriter.write(intKey)), intKey)
    }
}

/// A 4-byte NaN keeps its sign, payload and signalling bit through a read and a write: the
/// Float-Double conversions quieted a signalling NaN (`7f800001` came back as `7fc00001`).
final class SinglePrecisionNaNTests: XCTestCase {
    /// A one-object binary plist holding the 4-byte real with `bits`.
    private static func file(_ bits: UInt32) -> Data {
        var bytes = Array("bplist00".utf8) + [0x22]
        bytes += (0..<4).map { UInt8(truncatingIfNeeded: bits >> (24 - 8 * $0)) }
        bytes += [8]  // the offset table: object 0 at byte 8
        bytes += [0, 0, 0, 0, 0, 0, 1, 1]
        for field in [1, 0, 13] { bytes += (0..<8).map { UInt8(truncatingIfNeeded: field >> (56 - 8 * $0)) } }
        return Data(bytes)
    }

    func testFourByteNaNsRoundTripBitForBit() throws {
        for bits: UInt32 in [0x7F80_0001, 0xFFA0_0005, 0x7FC0_0000, 0x7FBF_FFFF, 0x3F80_0000, 0x8000_0000] {
            let value = try BinaryPropertyListReader.read(Self.file(bits))
            guard case .real(let real) = value else { return XCTFail("not a real: \(value)") }
            XCTAssertTrue(real.isSinglePrecision)
            XCTAssertEqual(real.value.isNaN, Float(bitPattern: bits).isNaN)
            let written = [UInt8](try BinaryPropertyListWriter.write(value))
            XCTAssertEqual(Array(written[8..<13]), [0x22] + (0..<4).map { UInt8(truncatingIfNeeded: bits >> (24 - 8 * $0)) }, String(bits, radix: 16))
            // The same value made in code writes the same bytes.
            let made = [UInt8](try BinaryPropertyListWriter.write(.real(PropertyListReal(Float(bitPattern: bits)))))
            XCTAssertEqual(made, written, String(bits, radix: 16))
        }
    }
}
