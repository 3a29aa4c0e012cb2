import Foundation
import KeyedArchive

/// Hand-built archives shared by the limit tests of several layers.
public enum ArchiveFixtures {
    /// The integer fields of an archived object's dictionary by user key (`$$x` read as `$x`,
    /// `$class` left out), and the user keys stored more than once.
    public static func integerFields(of dictionary: PropertyListDictionary) -> (fields: [String: Int], repeated: [String]) {
        var fields: [String: Int] = [:]
        var repeated: [String] = []
        for (key, value) in dictionary.entries {
            guard let name = key.stringValue, name != "$class" else { continue }
            let user = name.hasPrefix("$$") ? String(name.dropFirst()) : name
            if fields[user] != nil { repeated.append(user) }
            fields[user] = value.intValue
        }
        return (fields, repeated)
    }

    /// A keyed archive whose root NSArray holds `fan` references to one NSArray, which holds
    /// `fan` references to one `leaf` stored in `$objects`: `fan * fan` uses of the leaf from
    /// three stored objects (shared references that expand when resolved).
    public static func sharedArrays(fan: Int, leaf: PropertyListValue) throws -> Data {
        let table = ArchiveObjectTable()
        let root = table.reserveUID(), inner = table.reserveUID(), leafUID = table.reserveUID()
        let arrayClass = table.classUID(chain: ["NSArray", "NSObject"])
        func array(_ element: UInt32) -> PropertyListValue {
            .dictionary(PropertyListDictionary([
                ("$class", .uid(arrayClass)), ("NS.objects", .array([PropertyListValue](repeating: .uid(element), count: fan))),
            ]))
        }
        table.setObject(array(inner), at: root)
        table.setObject(array(leafUID), at: inner)
        table.setObject(leaf, at: leafUID)
        return try table.encodedData(top: PropertyListDictionary([("root", .uid(root))]))
    }
}
