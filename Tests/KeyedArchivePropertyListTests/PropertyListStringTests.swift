import Foundation
import KeyedArchivePropertyList
import XCTest

/// `PropertyListString` keeps UTF-8 bytes inline up to 14 and a boxed `String` beyond, so that a
/// `PropertyListValue` is 16 bytes. These tests pin the layout and check that the two forms
/// behave as one value type: text, equality, hashing, storage hints, copies.
final class PropertyListStringTests: XCTestCase {
    /// The point of the representation: a value of 16 bytes and a dictionary entry of 32 (with
    /// a `String` inside, they were 18 and 48). A change to any payload that costs the enums
    /// their spare bits fails here.
    func testValueIsSixteenBytes() throws {
        #if _pointerBitWidth(_64)
        XCTAssertEqual(MemoryLayout<PropertyListValue>.size, 16)
        XCTAssertEqual(MemoryLayout<PropertyListValue>.stride, 16)
        XCTAssertEqual(MemoryLayout<PropertyListDictionary.Entry>.stride, 32)
        #else
        throw XCTSkip("the layout is pinned for 64-bit platforms")
        #endif
    }

    /// Texts on both sides of the inline capacity, with multi-byte scalars across it: the text,
    /// the byte count and the form (inline up to 14 bytes) are what went in.
    func testTextRoundTripsAroundTheInlineCapacity() {
        let pieces = ["a", "é", "日", "😀", "e\u{301}", "\u{0}"]
        var texts: [String] = [""]
        for piece in pieces {
            var text = ""
            for _ in 0..<20 {
                text += piece
                texts.append(text)
                texts.append("abcdefghijklm" + text)
            }
        }
        for text in texts {
            let string = PropertyListString(text)
            XCTAssertEqual(string.value, text)
            XCTAssertTrue(string.value.utf8.elementsEqual(text.utf8), "bytes of \(text.debugDescription)")
            XCTAssertEqual(string.utf8Count, text.utf8.count)
            XCTAssertEqual(string.withUTF8 { Array($0) }, Array(text.utf8))
            switch string.text {
            case .inline: XCTAssertLessThanOrEqual(text.utf8.count, 14, text.debugDescription)
            case .boxed: XCTAssertGreaterThan(text.utf8.count, 14, text.debugDescription)
            }
            XCTAssertTrue(string.hasText(text))
            XCTAssertFalse(string.hasText(text + "x"))
            XCTAssertEqual(string.isASCII, text.utf8.allSatisfy { $0 < 0x80 })
        }
    }

    /// A string held inline sets every byte of its value: the same short text with the same
    /// hint has the same bits however it was made and whatever the memory held before, which is
    /// what lets the archiver find a key by its bits alone; different texts, hints or cases do not.
    func testShortStringsHaveTheSameBitsHoweverMade() {
        let texts = ["", "a", "name", "é", "日本語", "abcdefghijklmn", "😀😀😀"]
        for text in texts {
            let probe = PropertyListValue(text)
            XCTAssertTrue(probe.isInlineString, text)
            let made: [PropertyListValue] = [
                .string(PropertyListString(String(decoding: Array(text.utf8), as: UTF8.self))),
                .string(Array(text.utf8).withUnsafeBytes { PropertyListString(validatedUTF8: $0, storage: nil) }),
                { var string = PropertyListString(text, storage: .utf16); string.storage = nil; return .string(string) }(),
                { var string = PropertyListString("x"); string.value = text; return .string(string) }(),
            ]
            // Slots that held other cases (whose unused bytes are not set) before the string.
            var slots: [PropertyListValue] = [.uid(0xDEAD_BEEF), .bool(true), .integer(PropertyListInteger(-1)),
                                              .real(PropertyListReal(-0.5)), PropertyListValue(String(repeating: "z", count: 30)), .null]
            for (index, value) in made.enumerated() {
                slots[index % slots.count] = value
                slots.withUnsafeBufferPointer { slots in
                    withUnsafePointer(to: probe) { probe in
                        guard let base = slots.baseAddress else { return XCTFail("no slots") }
                        XCTAssertTrue(PropertyListValue.haveSameBits(probe, base + index % slots.count), "\(text.debugDescription) made way \(index)")
                    }
                }
            }
            for other in [PropertyListValue(text + "x"), .string(PropertyListString(text, storage: .ascii)),
                          .data(Data(text.utf8)), PropertyListValue(String(text.reversed()) == text ? text + "y" : String(text.reversed()))] {
                withUnsafePointer(to: probe) { probe in
                    withUnsafePointer(to: other) { other in
                        XCTAssertFalse(PropertyListValue.haveSameBits(probe, other), "\(text.debugDescription) against \(other.pointee)")
                    }
                }
            }
        }
        XCTAssertFalse(PropertyListValue(String(repeating: "k", count: 15)).isInlineString)
        XCTAssertFalse(PropertyListValue.data(Data()).isInlineString)
    }

    /// Equality and hashing are by bytes, in both forms, with the storage hint ignored; texts
    /// that differ in one byte, or are only canonically equivalent, are different strings.
    func testEqualityAndHashingAreByBytes() {
        for length in [0, 1, 13, 14, 15, 16, 40, 300] {
            let text = String(repeating: "k", count: length)
            let a = PropertyListString(text)
            let b = PropertyListString(String(decoding: Array(text.utf8), as: UTF8.self), storage: .utf16)
            XCTAssertEqual(a, b, "length \(length)")
            XCTAssertEqual(a.hashValue, b.hashValue, "length \(length)")
            if length > 0 {
                var bytes = Array(text.utf8)
                bytes[length - 1] = UInt8(ascii: "j")
                let c = PropertyListString(String(decoding: bytes, as: UTF8.self))
                XCTAssertNotEqual(a, c, "length \(length)")
                bytes[length - 1] = UInt8(ascii: "k")
                bytes[0] = UInt8(ascii: "j")
                XCTAssertNotEqual(a, PropertyListString(String(decoding: bytes, as: UTF8.self)), "length \(length)")
            }
            XCTAssertNotEqual(a, PropertyListString(text + "k"), "length \(length)")
        }
        let composed = PropertyListString("caf\u{E9}")
        let decomposed = PropertyListString("cafe\u{301}")
        XCTAssertEqual(composed.value, decomposed.value)  // Swift's String == normalises...
        XCTAssertNotEqual(composed, decomposed)  // ...a property-list string does not.
        XCTAssertEqual(Set([composed, decomposed, PropertyListString("caf\u{E9}")]).count, 2)
        let longComposed = PropertyListString(String(repeating: "x", count: 20) + "\u{E9}")
        let longDecomposed = PropertyListString(String(repeating: "x", count: 20) + "e\u{301}")
        XCTAssertNotEqual(longComposed, longDecomposed)
    }

    /// A storage hint is kept, can be changed, and changing it on a copy leaves the original as
    /// it was (long texts share one box between copies).
    func testStorageHintsAreValuesInBothForms() {
        for text in ["short", String(repeating: "long text ", count: 3)] {
            var string = PropertyListString(text, storage: .ascii)
            XCTAssertEqual(string.storage, .ascii)
            let copy = string
            string.storage = .utf16
            XCTAssertEqual(string.storage, .utf16)
            XCTAssertEqual(copy.storage, .ascii)
            XCTAssertEqual(string.value, text)
            XCTAssertEqual(string.storageForWriting, .utf16)
            string.storage = nil
            XCTAssertNil(string.storage)
            XCTAssertEqual(string.storageForWriting, .ascii)
            string.value = text + "é"
            XCTAssertNil(string.storage)
            XCTAssertEqual(string.storageForWriting, .utf16)
            XCTAssertEqual(copy.value, text)
        }
    }

    /// Strings of both forms, every storage, through the binary writer and reader and Foundation:
    /// the reader keeps the storage it read, and Foundation reads the text we wrote (it refused
    /// the empty string written as UTF-16, which the writer wrote for a `.utf16` hint before).
    func testBinaryRoundTripKeepsTextAndStorage() throws {
        let texts = ["", "a", "fourteen bytes", "fifteen bytes!!", "日本語のテキスト", "😀 and 𝄞 beyond the BMP, long enough"]
        var entries: [PropertyListDictionary.Entry] = []
        for (index, text) in texts.enumerated() {
            entries.append((.string(PropertyListString("k\(index)\(text)")), .string(PropertyListString(text, storage: .utf16))))
            entries.append((.string(PropertyListString("a\(index)")), .string(PropertyListString(text))))
        }
        let value = PropertyListValue.dictionary(PropertyListDictionary(entries))
        let bytes = try BinaryPropertyListWriter.write(value)
        let read = try BinaryPropertyListReader.read(bytes)
        XCTAssertEqual(read, value)
        guard case .dictionary(let dictionary) = read else { return XCTFail("not a dictionary") }
        for (index, text) in texts.enumerated() {
            guard case .string(let hinted)? = dictionary["k\(index)\(text)"], case .string(let plain)? = dictionary["a\(index)"] else {
                return XCTFail("entry \(index) missing")
            }
            // The empty string is always written as ASCII (Foundation on Linux refuses it as UTF-16).
            XCTAssertEqual(hinted.storage, text.isEmpty ? .ascii : .utf16)
            XCTAssertEqual(plain.storage, text.utf8.allSatisfy { $0 < 0x80 } ? .ascii : .utf16)
        }
        let foundation = try XCTUnwrap(
            PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil) as? [String: String])
        for (index, text) in texts.enumerated() {
            XCTAssertEqual(foundation["k\(index)\(text)"], text)
            XCTAssertEqual(foundation["a\(index)"], text)
        }
    }
}
