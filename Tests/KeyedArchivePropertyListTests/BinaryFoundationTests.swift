import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// Cross-checks with Foundation's `PropertyListSerialization`, which on this machine is
/// CoreFoundation's C reader and writer (CFBinaryPList.c): the writer oracle.
final class BinaryFoundationTests: XCTestCase {
    /// What Foundation property lists can hold: no null, set or UID; string keys.
    static var foundationOptions: RandomPropertyList.Options {
        var options = RandomPropertyList.Options()
        options.null = false
        options.set = false
        options.uid = false
        return options
    }

    static func foundationBytes(_ value: PropertyListValue) throws -> [UInt8] {
        let object = try FoundationBridge.foundationObject(value, internScalars: true)
        return Array(try PropertyListSerialization.data(fromPropertyList: object, format: .binary, options: 0))
    }

    /// Reading Foundation's bytes and writing them back reproduces Foundation's bytes exactly:
    /// object order, uniquing, integer and reference widths, boolean handling.
    func testWriterReproducesFoundationBytes() throws {
        var random = RandomPropertyList(seed: 0xF0_0D, options: Self.foundationOptions)
        var values: [PropertyListValue] = (0..<250).map { index in index % 2 == 0 ? random.rootDictionary() : random.value() }
        // Counts of 15+ and 65,536+ members, repeated booleans and numbers, and every integer width.
        values.append(.array((0..<70_000).map { PropertyListValue(Int64($0 % 300)) }))
        // Integers past the writer's direct table at first (150,000), found again after it grew
        // past them (see `NumberTable`).
        values.append(.array([150_000] + (0..<70_000).map { PropertyListValue(Int64($0)) } + [140_000, 150_000, 69_999, 150_000]))
        // More distinct strings and reals than the uniquing tables keep inline (16,384), each
        // found again soon (while it waits for its slot) and late (see `UniquingWordPairTable`).
        values.append(.array((0..<60_000).flatMap { index -> [PropertyListValue] in
            let recent = index - index % 7, late = index % 25_000
            return [
                .string(PropertyListString("s\(index % 30_000)")), .string(PropertyListString("s\(recent % 30_000)")),
                .string(PropertyListString("a longer string, number \(late)")), PropertyListValue(Double(late) + 0.5),
            ]
        }))
        values.append(.array([true, true, false, true, 1, 1, 1.0, 1.0, PropertyListValue(Float(1)), "a", "a", .string("é"), .string("é")]))
        values.append(.array([.integer(PropertyListInteger(UInt64.max)), .integer(PropertyListInteger(Int64.min)), -1, 255, 256, 65_535, 65_536, 4_294_967_296]))
        // Equal containers are not merged.
        values.append(.array([[1], [1], .dictionary([:]), .dictionary([:]), [], []]))
        values.append(.dictionary(PropertyListDictionary(stringKeys: (0..<40).map { ("key\($0)", PropertyListValue(Int64($0))) })))
        for (index, value) in values.enumerated() {
            let foundation = try Self.foundationBytes(value)
            let read = try BinaryPropertyListReader.read(foundation)
            XCTAssertEqual(read, value, "value \(index): our reader disagrees with Foundation's writer")
            let ours = try BinaryPropertyListWriter.write(read)
            if ours != foundation {
                if let dir = ProcessInfo.processInfo.environment["KA_MISMATCH_DIR"] {
                    try Data(ours).write(to: URL(fileURLWithPath: "\(dir)/f\(index).ours"))
                    try Data(foundation).write(to: URL(fileURLWithPath: "\(dir)/f\(index).cf"))
                }
                XCTFail("value \(index): our bytes differ from Foundation's (\(ours.count) vs \(foundation.count) bytes)")
            }
        }
    }

    /// Foundation reads our bytes back as the value we wrote.
    func testFoundationReadsOurBytes() throws {
        var random = RandomPropertyList(seed: 0xBEEF, options: Self.foundationOptions)
        for index in 0..<250 {
            let value = index % 2 == 0 ? random.rootDictionary() : random.value()
            let ours = try BinaryPropertyListWriter.write(value)
            let object = try PropertyListSerialization.propertyList(from: Data(ours), options: [], format: nil)
            XCTAssertEqual(try FoundationBridge.value(object), value, "value \(index)")
        }
    }

    /// Our depth limit sits where CoreFoundation's does: 512 nested arrays read, 513 do not.
    func testDepthLimitMatchesFoundation() throws {
        func nested(_ depth: Int) -> PropertyListValue {
            var value: PropertyListValue = "leaf"
            for _ in 0..<depth { value = .array([value]) }
            return value
        }
        for depth in [511, 512, 513, 514] {
            let bytes = try BinaryPropertyListWriter.write(nested(depth))
            let foundationAccepts = (try? PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil)) != nil
            let weAccept = (try? BinaryPropertyListReader.read(bytes)) != nil
            XCTAssertEqual(weAccept, foundationAccepts, "depth \(depth)")
        }
        XCTAssertThrowsError(try BinaryPropertyListReader.read(try BinaryPropertyListWriter.write(nested(513)))) { error in
            XCTAssertEqual((error as? PropertyListError)?.code, .depthLimitExceeded)
        }
    }
}
