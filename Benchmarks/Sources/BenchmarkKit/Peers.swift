import Foundation
import KeyedArchive

/// Thin wrappers around the Foundation peers, used the way an application uses them.
public enum Peer {
    /// `NSKeyedArchiver` with the root object under "root", binary output.
    public static func keyedArchive(_ root: Any) -> Data {
        let archiver = NSKeyedArchiver(requiringSecureCoding: false)
        archiver.encode(root, forKey: NSKeyedArchiveRootObjectKey)
        archiver.finishEncoding()
        return archiver.encodedData
    }

    /// `NSKeyedUnarchiver` of the root object, mapping archived class names to `classes`
    /// (swift-corelibs-foundation writes module-qualified names; `setClass` makes lookup explicit).
    public static func keyedUnarchive(_ data: Data, classes: [AnyClass]) throws -> Any? {
        try keyedUnarchive(data, classNames: Dictionary(classes.map { (NSStringFromClass($0), $0) }) { first, _ in first })
    }

    /// `NSKeyedUnarchiver` of the root object, with archived class names mapped to classes as
    /// given (for archives another archiver wrote under its own names).
    public static func keyedUnarchive(_ data: Data, classNames: [String: AnyClass]) throws -> Any? {
        let unarchiver = try NSKeyedUnarchiver(forReadingFrom: data)
        unarchiver.requiresSecureCoding = false
        for (name, cls): (String, AnyClass) in classNames { unarchiver.setClass(cls, forClassName: name) }
        let root = unarchiver.decodeObject(forKey: NSKeyedArchiveRootObjectKey)
        unarchiver.finishDecoding()
        return root
    }

    /// `PropertyListSerialization` write.
    public static func serialize(_ plist: Any, format: PropertyListSerialization.PropertyListFormat) throws -> Data {
        try PropertyListSerialization.data(fromPropertyList: plist, format: format, options: 0)
    }

    /// `PropertyListSerialization` read.
    public static func deserialize(_ data: Data) throws -> Any {
        try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
    }

    /// `PropertyListEncoder` in binary format.
    public static func plistEncoder() -> PropertyListEncoder {
        let encoder = PropertyListEncoder()
        encoder.outputFormat = .binary
        return encoder
    }
}

/// Counts of value trees, for "objects per second" of property-list workloads.
enum TreeCount {
    /// Containers and leaves, counting each dictionary key as an object (as the binary format does).
    static func of(_ value: PropertyListValue) -> Int {
        switch value {
        case .array(let elements), .set(let elements): return 1 + elements.reduce(0) { $0 + of($1) }
        case .dictionary(let dictionary):
            return 1 + dictionary.entries.reduce(0) { $0 + of($1.key) + of($1.value) }
        default: return 1
        }
    }
}

/// Converts a value tree into the Foundation objects `PropertyListSerialization` takes
/// (NSDictionary, NSArray, NSString, NSNumber, NSDate, NSData), built once outside the timings.
enum FoundationTree {
    static func make(_ value: PropertyListValue) -> NSObject {
        switch value {
        case .null: return NSNull()
        case .bool(let bool): return NSNumber(value: bool)
        case .integer(let integer):
            if let signed = integer.int64Value { return NSNumber(value: signed) }
            return NSNumber(value: integer.bitPattern)
        case .real(let real): return real.isSinglePrecision ? NSNumber(value: Float(real.value)) : NSNumber(value: real.value)
        case .date(let date): return NSDate(timeIntervalSinceReferenceDate: date.timeIntervalSinceReferenceDate)
        case .data(let data): return NSData(data: data)
        case .string(let string): return NSString(string: string.value)
        case .uid(let uid): return NSNumber(value: uid)
        case .array(let elements), .set(let elements):
            let array = NSMutableArray(capacity: elements.count)
            for element in elements { array.add(make(element)) }
            return array
        case .dictionary(let dictionary):
            let out = NSMutableDictionary(capacity: dictionary.count)
            for entry in dictionary.entries { out[make(entry.key)] = make(entry.value) }
            return out
        }
    }
}
