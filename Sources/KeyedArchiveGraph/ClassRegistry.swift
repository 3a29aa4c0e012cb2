/// The process-wide class-name mappings (`NSKeyedArchiver.setClassName(_:for:)` and
/// `NSKeyedUnarchiver.setClass(_:forClassName:)` on the class), guarded by a lock.
package final class ClassRegistry: Sendable {
    package static let shared = ClassRegistry()

    private struct Mappings {
        var namesForEncoding: [ObjectIdentifier: String] = [:]
        var typesForDecoding: [String: any KeyedArchiving.Type] = [:]
    }

    private let mappings = Protected(Mappings())

    private init() {}

    package func setClassName(_ name: String?, for type: any KeyedArchiving.Type) {
        mappings.withLock { $0.namesForEncoding[ObjectIdentifier(type)] = name }
    }
    package func className(for type: any KeyedArchiving.Type) -> String? {
        mappings.withLock { $0.namesForEncoding[ObjectIdentifier(type)] }
    }
    package func setClass(_ type: (any KeyedArchiving.Type)?, forClassName name: String) {
        mappings.withLock { $0.typesForDecoding[name] = type }
    }
    package func type(forClassName name: String) -> (any KeyedArchiving.Type)? {
        mappings.withLock { $0.typesForDecoding[name] }
    }
}
