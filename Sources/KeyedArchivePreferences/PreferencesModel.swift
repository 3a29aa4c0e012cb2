/// The MFDynamicDefaults model in Swift: a class whose properties are preferences.
///
/// Each `@Preference` property maps to the key made by capitalising the first letter of its
/// name (`autoPlayVoiceOver` → `AutoPlayVoiceOver`), unless the property names its key. Its
/// initial value is the fallback when nothing is stored or registered. A `@ReadOnlyPreference`
/// property has no setter.
///
/// ```swift
/// final class Settings: PreferencesModel, @unchecked Sendable {
///     @Preference var autoPlayVoiceOver = false
///     @Preference("UIFontSize") var fontSize = 12.0
///     @Preference(warnsWithoutRegisteredDefault: false) var lastOpened: Date? = nil
///     @ReadOnlyPreference var serverURL = "https://example.com"
/// }
/// let settings = Settings(preferences: try Preferences(domain: "com.example.app"))
/// try settings.registerDefaults(fromFile: "Defaults.plist")  // warns about properties it lacks
/// settings.fontSize = 14
/// ```
///
/// `@unchecked Sendable`: an open class cannot be checked. Its own state is the store (itself
/// `Sendable`) and the property wrappers, which read and write through it; a subclass restates
/// `@unchecked Sendable`, and any stored `var` of its own is its to protect.
open class PreferencesModel: @unchecked Sendable {
    /// The store the properties read and write.
    public let preferences: Preferences
    /// Where the missing-defaults warning goes; the store's warning handler by default.
    public var warningHandler: @Sendable (String) -> Void {
        get { warningHandlerStorage.withLock { $0 } }
        set { warningHandlerStorage.withLock { $0 = newValue } }
    }
    private let warningHandlerStorage: Protected<@Sendable (String) -> Void>

    /// Binds every preference property of the subclass to `preferences`.
    public init(preferences: Preferences) {
        self.preferences = preferences
        self.warningHandlerStorage = Protected(preferences.configuration.warningHandler)
        // Stored properties of subclasses are initialised before this runs, so the mirror sees them.
        var mirror: Mirror? = Mirror(reflecting: self)
        while let current = mirror {
            for child in current.children {
                guard let binding = child.value as? any PreferenceBinding, let label = child.label else { continue }
                binding.bind(store: preferences, propertyName: label.hasPrefix("_") ? String(label.dropFirst()) : label)
            }
            mirror = current.superclassMirror
        }
    }

    /// The properties' keys, in declaration order.
    public var preferenceKeys: [String] { bindings.map(\.key) }

    /// Registers the dictionary in a property-list file as defaults, and warns (through
    /// ``warningHandler``) about properties without a registered default, unless they opted out.
    /// Returns the keys of those properties.
    @discardableResult
    public func registerDefaults(fromFile path: String) throws -> [String] {
        try preferences.register(defaultsFromFile: path)
        let registered = preferences.registeredDefaults
        let missing = bindings.filter { $0.warnsWithoutRegisteredDefault && registered[$0.key] == nil }.map(\.key)
        if !missing.isEmpty {
            warningHandler("no registered default for \(missing.joined(separator: ", ")) (from \(path))")
        }
        return missing
    }

    private var bindings: [(key: String, warnsWithoutRegisteredDefault: Bool)] {
        var result: [(String, Bool)] = []
        var mirror: Mirror? = Mirror(reflecting: self)
        while let current = mirror {
            for child in current.children {
                if let binding = child.value as? any PreferenceBinding, let key = binding.boundKey {
                    result.append((key, binding.warnsWithoutRegisteredDefault))
                }
            }
            mirror = current.superclassMirror
        }
        return result
    }
}

/// What ``PreferencesModel`` needs from a property wrapper.
protocol PreferenceBinding {
    func bind(store: Preferences, propertyName: String)
    var boundKey: String? { get }
    var warnsWithoutRegisteredDefault: Bool { get }
}

/// The shared, lockable part of a wrapper: Mirror hands out copies of the wrapper struct, so the
/// binding lives in a reference every copy shares.
final class PreferenceBox: Sendable {
    struct Binding {
        var store: Preferences?
        var key: String?
    }

    let explicitKey: String?
    let binding = Protected(Binding())

    init(explicitKey: String?) { self.explicitKey = explicitKey }

    func bind(store: Preferences, propertyName: String) {
        let key = explicitKey ?? (propertyName.prefix(1).uppercased() + propertyName.dropFirst())
        binding.withLock { $0 = Binding(store: store, key: key) }
    }

    /// The stored value converted to `Value`, or `fallback` when unbound, missing or unconvertible.
    func read<Value: PreferenceValue>(fallback: Value) -> Value {
        let binding = binding.withLock { $0 }
        guard let store = binding.store, let key = binding.key else { return fallback }
        return store.object(forKey: key).flatMap(Value.init(preferenceValue:)) ?? fallback
    }

    /// Stores a value (`nil` removes the key); nothing happens while unbound.
    func write(_ value: PropertyListValue?) {
        let binding = binding.withLock { $0 }
        guard let store = binding.store, let key = binding.key else { return }
        store.set(value, forKey: key)
    }
}

/// A read-write preference property of a ``PreferencesModel``.
@propertyWrapper
public struct Preference<Value: PreferenceValue>: PreferenceBinding, Sendable {
    private let box: PreferenceBox
    private let fallback: Value
    let warnsWithoutRegisteredDefault: Bool

    /// A preference whose key is the capitalised property name, or `key` when given.
    public init(wrappedValue: Value, _ key: String? = nil, warnsWithoutRegisteredDefault: Bool = true) {
        box = PreferenceBox(explicitKey: key)
        fallback = wrappedValue
        self.warnsWithoutRegisteredDefault = warnsWithoutRegisteredDefault
    }

    /// The stored value (converted), or the initial value when missing. Setting `nil` (for
    /// optional types) removes the key.
    public var wrappedValue: Value {
        get { box.read(fallback: fallback) }
        nonmutating set { box.write(newValue.preferenceValue) }
    }

    /// The property's typed key (name and fallback), e.g. for observation: `settings.$fontSize`.
    public var projectedValue: PreferenceKey<Value> {
        PreferenceKey(box.binding.withLock { $0.key } ?? box.explicitKey ?? "", default: fallback)
    }

    func bind(store: Preferences, propertyName: String) { box.bind(store: store, propertyName: propertyName) }
    var boundKey: String? { box.binding.withLock { $0.key } }
}

/// A read-only preference property: readable through the search list, never written.
@propertyWrapper
public struct ReadOnlyPreference<Value: PreferenceValue>: PreferenceBinding, Sendable {
    private let box: PreferenceBox
    private let fallback: Value
    let warnsWithoutRegisteredDefault: Bool

    /// A read-only preference whose key is the capitalised property name, or `key` when given.
    public init(wrappedValue: Value, _ key: String? = nil, warnsWithoutRegisteredDefault: Bool = true) {
        box = PreferenceBox(explicitKey: key)
        fallback = wrappedValue
        self.warnsWithoutRegisteredDefault = warnsWithoutRegisteredDefault
    }

    /// The stored value (converted), or the initial value when missing.
    public var wrappedValue: Value { box.read(fallback: fallback) }

    func bind(store: Preferences, propertyName: String) { box.bind(store: store, propertyName: propertyName) }
    var boundKey: String? { box.binding.withLock { $0.key } }
}
