import Foundation
import KeyedArchive

/// Converts between ``PropertyListValue`` and the Foundation objects `PropertyListSerialization`
/// reads and writes (NSDictionary, NSArray, NSString, NSNumber, NSData, NSDate), for
/// cross-checks against Foundation. Test-only: the library never bridges per object.
public enum FoundationBridge {
    /// A value Foundation property lists cannot hold.
    public struct Unrepresentable: Error, CustomStringConvertible {
        public var description: String
    }

    /// The Foundation object for `value`. Throws for null, sets, UIDs and non-string keys.
    ///
    /// With `internScalars`, equal strings, numbers, dates and data become one shared object.
    /// CoreFoundation's writer means to unique them by value, but on this machine its uniquing
    /// set only merges identical objects (distinct equal NSStrings are written twice), so
    /// sharing the objects is how to ask CF for the layout it intends.
    public static func foundationObject(_ value: PropertyListValue, internScalars: Bool) throws -> Any {
        var interned: [InternKey: Any]? = internScalars ? [:] : nil
        return try convert(value, interned: &interned)
    }

    /// The Foundation object for `value`, every scalar a distinct object.
    public static func foundationObject(_ value: PropertyListValue) throws -> Any {
        try foundationObject(value, internScalars: false)
    }

    /// A scalar and the precision hint that value equality ignores.
    public struct InternKey: Hashable {
        var value: PropertyListValue
        var single: Bool
    }

    private static func convert(_ value: PropertyListValue, interned: inout [InternKey: Any]?) throws -> Any {
        if !value.isContainer, interned != nil {
            var single = false
            if case .real(let real) = value { single = real.isSinglePrecision }
            let key = InternKey(value: value, single: single)
            if let object = interned?[key] { return object }
            let object = try scalarObject(value)
            interned?[key] = object
            return object
        }
        switch value {
        case .array(let array): return NSArray(array: try array.map { try convert($0, interned: &interned) })
        case .dictionary(let dictionary):
            let result = NSMutableDictionary()
            for entry in dictionary.entries {
                guard case .string = entry.key else { throw Unrepresentable(description: "\(entry.key.typeName) key") }
                let key = try convert(entry.key, interned: &interned)
                guard let key = key as? NSString else { throw Unrepresentable(description: "key") }
                result[key] = try convert(entry.value, interned: &interned)
            }
            return result
        default: return try scalarObject(value)
        }
    }

    private static func scalarObject(_ value: PropertyListValue) throws -> Any {
        switch value {
        case .null: throw Unrepresentable(description: "null")
        case .set: throw Unrepresentable(description: "set")
        case .uid: throw Unrepresentable(description: "UID")
        case .bool(let bool): return NSNumber(value: bool)
        case .integer(let integer):
            if let signed = integer.int64Value { return NSNumber(value: signed) }
            return NSNumber(value: integer.bitPattern)
        case .real(let real):
            return real.isSinglePrecision ? NSNumber(value: Float(real.value)) : NSNumber(value: real.value)
        case .date(let date): return NSDate(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate)
        case .data(let data): return NSData(data: data)
        case .string(let string): return NSString(string: string.value)
        case .array, .dictionary: throw Unrepresentable(description: "container")
        }
    }

    /// The value of a Foundation property-list object. Booleans are told from numbers by their
    /// class (`__NSCFBoolean`), 4-byte from 8-byte reals and unsigned from signed integers by
    /// `objCType`.
    public static func value(_ object: Any) throws -> PropertyListValue {
        switch object {
        case let number as NSNumber:
            if String(describing: type(of: number)).contains("Boolean") { return .bool(number.boolValue) }
            switch String(cString: number.objCType) {
            case "f": return .real(PropertyListReal(number.floatValue))
            case "d": return .real(PropertyListReal(number.doubleValue))
            case "Q", "L", "I", "S", "C": return .integer(PropertyListInteger(number.uint64Value))
            default: return .integer(PropertyListInteger(number.int64Value))
            }
        case let string as NSString: return .string(PropertyListString(string as String))
        case let string as String: return .string(PropertyListString(string))
        case let data as NSData: return .data(data as Data)
        case let data as Data: return .data(data)
        case let date as NSDate: return .date(Date(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate))
        case let date as Date: return .date(date)
        case let array as NSArray: return .array(try array.map(value))
        case let dictionary as NSDictionary:
            var result = PropertyListDictionary()
            for (key, item) in dictionary {
                result.entries.append((try value(key), try value(item)))
            }
            return .dictionary(result)
        default:
            throw Unrepresentable(description: "\(type(of: object))")
        }
    }
}
