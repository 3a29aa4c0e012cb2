import Foundation
import KeyedArchive
import KeyedArchiveTestSupport
import XCTest

/// A small converter between our values and Foundation property-list objects, private to the XML
/// tests (the shared bridge lives in TestSupport; this one avoids depending on it).
enum XMLTestFoundation {
    /// Foundation's CoreFoundation XML writer.
    static func xml(_ object: Any) throws -> [UInt8] {
        [UInt8](try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0))
    }

    /// Foundation's reader (any format).
    static func read(_ bytes: [UInt8]) throws -> Any {
        try PropertyListSerialization.propertyList(from: Data(bytes), options: [], format: nil)
    }

    /// The Foundation object for a value without null, sets or UIDs; `nil` otherwise.
    static func object(_ value: PropertyListValue) -> Any? {
        switch value {
        case .null, .set, .uid: return nil
        case .bool(let bool): return bool
        case .integer(let integer):
            if let signed = integer.int64Value { return NSNumber(value: signed) }
            return NSNumber(value: integer.bitPattern)
        case .real(let real): return NSNumber(value: real.value)
        case .date(let date): return date
        case .data(let data): return data
        case .string(let string): return string.value
        case .array(let elements):
            var array: [Any] = []
            for element in elements {
                guard let object = object(element) else { return nil }
                array.append(object)
            }
            return array
        case .dictionary(let dictionary):
            // NSMutableDictionary: a Swift dictionary literal would trap on NFC/NFD twins.
            let result = NSMutableDictionary()
            for entry in dictionary.entries {
                guard case .string(let key) = entry.key, let object = object(entry.value) else { return nil }
                result[NSString(string: key.value)] = object
            }
            return result
        }
    }

    /// Our value for a Foundation object; UIDs (opaque on Linux) become the string `"<UID>"`.
    static func value(_ object: Any) -> PropertyListValue? {
        if type(of: object) == Bool.self, let bool = object as? Bool { return .bool(bool) }
        if let number = object as? NSNumber {
            switch String(cString: number.objCType) {
            case "c", "B": return .bool(number.boolValue)
            case "d", "f": return .real(PropertyListReal(number.doubleValue))
            case "Q": return .integer(PropertyListInteger(number.uint64Value))
            default: return .integer(PropertyListInteger(number.int64Value))
            }
        }
        if let string = object as? String { return .string(PropertyListString(string)) }
        if let date = object as? Date { return .date(date) }
        if let data = object as? Data { return .data(data) }
        if let array = object as? [Any] {
            var elements: [PropertyListValue] = []
            for element in array {
                guard let value = value(element) else { return nil }
                elements.append(value)
            }
            return .array(elements)
        }
        if let dictionary = object as? NSDictionary {
            var entries: [PropertyListDictionary.Entry] = []
            for (key, element) in dictionary {
                guard let key = key as? String, let value = value(element) else { return nil }
                entries.append((.string(PropertyListString(key)), value))
            }
            return .dictionary(PropertyListDictionary(entries))
        }
        if String(describing: type(of: object)).contains("KeyedArchiverUID") { return "<UID>" }
        return nil
    }

    /// `value` with every UID replaced by `"<UID>"`, to compare with ``value(_:)`` results.
    static func opaqueUIDs(_ value: PropertyListValue) -> PropertyListValue {
        transform(value) { if case .uid = $0 { return "<UID>" } else { return nil } }
    }

    /// Applies `leaf` to every non-container value (returning `nil` keeps it) and to string keys.
    static func transform(_ value: PropertyListValue, _ leaf: (PropertyListValue) -> PropertyListValue?) -> PropertyListValue {
        switch value {
        case .array(let elements): return .array(elements.map { transform($0, leaf) })
        case .set(let members): return .set(members.map { transform($0, leaf) })
        case .dictionary(let dictionary):
            return .dictionary(PropertyListDictionary(dictionary.entries.map { (leaf($0.key) ?? $0.key, transform($0.value, leaf)) }))
        default: return leaf(value) ?? value
        }
    }

    /// `value` with "~" put before every string and key that starts with U+FEFF: Foundation's XML
    /// reader drops such a leading U+FEFF (peers-on-linux.md), which would make those strings
    /// differ and could merge keys.
    static func avoidingLeadingBOM(_ value: PropertyListValue) -> PropertyListValue {
        transform(value) { leaf in
            if case .string(let string) = leaf, string.value.unicodeScalars.first == "\u{FEFF}" {
                return .string(PropertyListString("~" + string.value))
            }
            return nil
        }
    }

    /// Fails with the path of the first difference between two values (readable for big values).
    static func assertEqual(_ actual: PropertyListValue, _ expected: PropertyListValue, _ message: String, file: StaticString = #filePath, line: UInt = #line) {
        guard actual != expected else { return }
        XCTFail("\(message): \(firstDifference(actual, expected, path: "") ?? "values differ")", file: file, line: line)
    }

    /// A description of the first difference, by path.
    static func firstDifference(_ a: PropertyListValue, _ b: PropertyListValue, path: String) -> String? {
        if a == b { return nil }
        switch (a, b) {
        case (.array(let x), .array(let y)) where x.count == y.count:
            for index in x.indices { if let found = firstDifference(x[index], y[index], path: path + "[\(index)]") { return found } }
        case (.dictionary(let x), .dictionary(let y)):
            for entry in x.entries {
                guard let other = y[entry.key] else { return "\(path): key \(entry.key) only in the first (\(x.count) vs \(y.count) entries)" }
                if let found = firstDifference(entry.value, other, path: path + "." + (entry.key.stringValue ?? "?")) { return found }
            }
            for entry in y.entries where x[entry.key] == nil { return "\(path): key \(entry.key) only in the second" }
        default: break
        }
        return "\(path): \(a) != \(b)"
    }

    /// Random options for values every XML peer can represent.
    static var xmlOptions: RandomPropertyList.Options {
        var options = RandomPropertyList.Options()
        options.fractionalDates = false
        options.null = false
        options.set = false
        options.uid = false
        return options
    }
}
