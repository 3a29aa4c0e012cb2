import KeyedArchivePropertyList

/// The Foundation classes this layer maps to Swift values, by archived class name.
package enum FoundationClassNames {
    /// Class names whose objects decode as a built-in kind, including the mutable variants.
    package static let kinds: [String: KeyedArchiveClass.Kind] = [
        "NSString": .string, "NSMutableString": .string,
        "NSData": .data, "NSMutableData": .data,
        "NSDate": .date,
        "NSNumber": .number,
        "NSArray": .array, "NSMutableArray": .array,
        "NSDictionary": .dictionary, "NSMutableDictionary": .dictionary,
        "NSSet": .set, "NSMutableSet": .set,
        "NSOrderedSet": .orderedSet, "NSMutableOrderedSet": .orderedSet,
        "NSNull": .null,
        "NSURL": .url,
        "NSUUID": .uuid,
    ]

    /// Public subclasses of mapped classes whose encoding differs from their superclass's, so
    /// falling back along `$classes` would misread them (NSCountedSet stores `NS.objectN` /
    /// `NS.countN`, not `NS.objects`). The walk stops at them: they decode as ArchivedObject.
    package static let stopNames: Set<String> = ["NSCountedSet", "NSDecimalNumber"]

    /// The class chains this archiver writes for built-in kinds.
    package static let arrayChain = ["NSArray", "NSObject"]
    package static let dictionaryChain = ["NSDictionary", "NSObject"]
    package static let setChain = ["NSSet", "NSObject"]
    package static let orderedSetChain = ["NSOrderedSet", "NSObject"]
    package static let dateChain = ["NSDate", "NSObject"]
    package static let nullChain = ["NSNull", "NSObject"]
    package static let urlChain = ["NSURL", "NSObject"]
    package static let uuidChain = ["NSUUID", "NSObject"]

    // Field keys.
    package static let objectsKey = "NS.objects"
    package static let keysKey = "NS.keys"
    /// ``objectsKey`` as a value, made once (see ``ArchiveKeys/classReferenceValue``).
    package static let objectsKeyValue = PropertyListValue(objectsKey)
    /// ``keysKey`` as a value, made once.
    package static let keysKeyValue = PropertyListValue(keysKey)
    package static let stringKey = "NS.string"
    package static let bytesKey = "NS.bytes"
    package static let dataKey = "NS.data"
    package static let timeKey = "NS.time"
    package static let baseKey = "NS.base"
    package static let relativeKey = "NS.relative"
    package static let uuidBytesKey = "NS.uuidbytes"
    package static let objectPrefix = "NS.object."
    package static let keyPrefix = "NS.key."
}
