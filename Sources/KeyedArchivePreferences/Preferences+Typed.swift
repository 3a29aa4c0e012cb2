// Typed getters and setters with Apple's conversions (see ``PreferenceConversions``).

extension Preferences {
    /// The value as a boolean: `false` when missing or not convertible.
    public func bool(forKey key: String) -> Bool { PreferenceConversions.bool(object(forKey: key)) }
    /// The value as an integer: `0` when missing or not convertible.
    public func integer(forKey key: String) -> Int { PreferenceConversions.integer(object(forKey: key)) }
    /// The value as a double: `0` when missing or not convertible.
    public func double(forKey key: String) -> Double { PreferenceConversions.double(object(forKey: key)) }
    /// The value as a float: `0` when missing or not convertible.
    public func float(forKey key: String) -> Float { Float(PreferenceConversions.double(object(forKey: key))) }
    /// The value as a string (numbers give their text), or `nil`.
    public func string(forKey key: String) -> String? { PreferenceConversions.string(object(forKey: key)) }
    /// The value if it is data, else `nil`.
    public func data(forKey key: String) -> Data? { object(forKey: key)?.dataValue }
    /// The value if it is a date, else `nil`.
    public func date(forKey key: String) -> Date? { object(forKey: key)?.dateValue }
    /// The value as a URL (a stored path gives a file URL), or `nil`.
    public func url(forKey key: String) -> URL? { PreferenceConversions.url(object(forKey: key)) }
    /// The value if it is an array, else `nil`.
    public func array(forKey key: String) -> [PropertyListValue]? { object(forKey: key)?.arrayValue }
    /// The value if it is an array of strings only, else `nil`.
    public func stringArray(forKey key: String) -> [String]? {
        guard let array = array(forKey: key) else { return nil }
        let strings = array.compactMap(\.stringValue)
        return strings.count == array.count ? strings : nil
    }
    /// The value if it is a dictionary with string keys, else `nil`.
    public func dictionary(forKey key: String) -> [String: PropertyListValue]? {
        PreferenceConversions.dictionary(object(forKey: key))
    }

    /// Stores a boolean.
    public func set(_ value: Bool, forKey key: String) { set(.bool(value), forKey: key) }
    /// Stores an integer.
    public func set(_ value: Int, forKey key: String) { set(.integer(PropertyListInteger(value)), forKey: key) }
    /// Stores a double (an 8-byte real).
    public func set(_ value: Double, forKey key: String) { set(.real(PropertyListReal(value)), forKey: key) }
    /// Stores a float (a 4-byte real, as Apple stores `Float`).
    public func set(_ value: Float, forKey key: String) { set(.real(PropertyListReal(value)), forKey: key) }
    /// Stores a string; `nil` removes the key.
    public func set(_ value: String?, forKey key: String) { set(value.map { PropertyListValue.string(PropertyListString($0)) }, forKey: key) }
    /// Stores data; `nil` removes the key.
    public func set(_ value: Data?, forKey key: String) { set(value.map(PropertyListValue.data), forKey: key) }
    /// Stores a date; `nil` removes the key.
    public func set(_ value: Date?, forKey key: String) { set(value.map(PropertyListValue.date), forKey: key) }
    /// Stores a URL as Apple does: a file URL as its path (the home directory abbreviated to
    /// `~`), any other URL as an `NSURL` keyed archive; `nil` removes the key.
    public func set(_ url: URL?, forKey key: String) {
        guard let url else { return removeObject(forKey: key) }
        if url.isFileURL {
            set(.string(PropertyListString(PreferenceConversions.abbreviatingTilde(url.standardizedFileURL.path))), forKey: key)
        } else if let archive = try? URLArchive.encode(url) {
            set(.data(archive), forKey: key)
        } else {
            configuration.warningHandler("cannot archive URL \(url.absoluteString) for key \(key)")
        }
    }

    /// Reads and writes a typed key: the stored value converted to the key's type, or the key's
    /// default when missing or not convertible.
    public subscript<Value>(key: PreferenceKey<Value>) -> Value {
        get { object(forKey: key.name).flatMap(Value.init(preferenceValue:)) ?? key.defaultValue }
        set { set(newValue.preferenceValue, forKey: key.name) }
    }

    /// Removes a typed key's stored value, so it reads as its default again.
    public func reset<Value>(_ key: PreferenceKey<Value>) {
        removeObject(forKey: key.name)
    }
}
