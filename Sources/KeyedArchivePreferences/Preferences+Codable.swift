/// `Codable` values in preferences, kept as keyed archives in `Data` values: the way apps keep a
/// color or a small model in `NSUserDefaults` by archiving it into `NSData`. The archive is an
/// ordinary NSKeyedArchiver archive made by the Codable bridge, so an Objective-C app reading the
/// same domain with `NSKeyedUnarchiver` sees the same object.
extension Preferences {
    /// Archives `value` and stores the archive under `key`; `nil` removes the key.
    ///
    /// - Throws: `EncodingError` when the value cannot be archived (e.g. a class graph with a cycle).
    public func set<Value: Encodable>(archiving value: Value?, forKey key: String) throws {
        guard let value else {
            removeObject(forKey: key)
            return
        }
        set(try KeyedArchiveEncoder().encode(value), forKey: key)
    }

    /// The value archived under `key` by ``set(archiving:forKey:)``, or `nil` when the key is
    /// missing (in every domain of the search list).
    ///
    /// - Throws: `DecodingError` when the key holds something that is not an archive of `Value`.
    public func archivedValue<Value: Decodable>(_ type: Value.Type, forKey key: String) throws -> Value? {
        guard let stored = object(forKey: key) else { return nil }
        guard case .data(let archive) = stored else {
            throw DecodingError.typeMismatch(
                Data.self,
                DecodingError.Context(codingPath: [], debugDescription: "preference \"\(key)\" holds a \(stored.typeName), not an archive"))
        }
        return try KeyedArchiveDecoder().decode(type, from: archive)
    }
}
