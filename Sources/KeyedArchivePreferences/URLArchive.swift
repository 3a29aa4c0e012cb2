/// The `NSURL` keyed archive Apple's `-[NSUserDefaults setURL:forKey:]` stores for URLs that
/// are not file URLs: `{NS.base: UID (0 = none), NS.relative: UID → string}` under `$top.root`.
///
/// Written and read here directly on property-list values (the archive has one fixed shape), so
/// the store does not need the whole object-graph layer for it.
enum URLArchive {
    static func encode(_ url: URL) throws -> Data {
        let classDictionary: PropertyListValue = ["$classname": "NSURL", "$classes": ["NSURL", "NSObject"]]
        let object: PropertyListValue = ["NS.base": .uid(0), "NS.relative": .uid(2), "$class": .uid(3)]
        let archive: PropertyListValue = [
            "$version": 100_000, "$archiver": "NSKeyedArchiver", "$top": ["root": .uid(1)],
            "$objects": ["$null", object, .string(PropertyListString(url.absoluteString)), classDictionary],
        ]
        return try PropertyList.encode(archive, format: .binary)
    }

    static func decode(_ data: Data) -> URL? {
        guard let archive = try? PropertyList.decode(data, limits: DecodingLimits(maximumDepth: 16, maximumObjectCount: 4096)),
            let objects = archive["$objects"]?.arrayValue, let root = archive["$top"]?["root"]?.uidValue
        else { return nil }
        return url(at: root, in: objects, depth: 0)
    }

    /// Resolves an NSURL object; a base URL is itself an NSURL object (bounded nesting).
    private static func url(at index: UInt32, in objects: [PropertyListValue], depth: Int) -> URL? {
        guard depth < 8, Int(index) < objects.count, let object = objects[Int(index)].dictionaryValue,
            let relativeIndex = object["NS.relative"]?.uidValue, Int(relativeIndex) < objects.count
        else { return nil }
        let relativeObject = objects[Int(relativeIndex)]
        // NS.relative is a string, or (NSMutableString) an object holding NS.string.
        guard let relative = relativeObject.stringValue ?? relativeObject["NS.string"]?.stringValue else { return nil }
        var base: URL?
        if let baseIndex = object["NS.base"]?.uidValue, baseIndex != 0 {
            guard let resolved = url(at: baseIndex, in: objects, depth: depth + 1) else { return nil }
            base = resolved
        }
        return URL(string: relative, relativeTo: base)
    }
}
