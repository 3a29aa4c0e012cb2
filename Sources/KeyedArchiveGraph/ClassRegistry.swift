#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The process-wide class-name mappings (`NSKeyedArchiver.setClassName(_:for:)` and
/// `NSKeyedUnarchiver.setClass(_:forClassName:)` on the class), guarded by a lock.
package final class ClassRegistry: @unchecked Sendable {
    package static let shared = ClassRegistry()
    private var mutex = pthread_mutex_t()
    private var namesForEncoding: [ObjectIdentifier: String] = [:]
    private var typesForDecoding: [String: any KeyedArchiving.Type] = [:]

    private init() { pthread_mutex_init(&mutex, nil) }

    private func locked<R>(_ body: () -> R) -> R {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body()
    }

    package func setClassName(_ name: String?, for type: any KeyedArchiving.Type) {
        locked { namesForEncoding[ObjectIdentifier(type)] = name }
    }
    package func className(for type: any KeyedArchiving.Type) -> String? {
        locked { namesForEncoding[ObjectIdentifier(type)] }
    }
    package func setClass(_ type: (any KeyedArchiving.Type)?, forClassName name: String) {
        locked { typesForDecoding[name] = type }
    }
    package func type(forClassName name: String) -> (any KeyedArchiving.Type)? {
        locked { typesForDecoding[name] }
    }
}
