/// The most bytes a text writer may produce before it stops with an error.
///
/// Shared references make output size independent of input size: a few kilobytes of binary
/// plist whose arrays share sub-arrays can describe hundreds of megabytes of XML, JSON or
/// OpenStep text (every copy of a shared value is written out, with indentation that grows with
/// depth). Tools that convert untrusted input pass a budget proportional to the input; library
/// callers writing their own values usually need none (the default is no limit).
package struct OutputBudget: Sendable {
    /// The limit in bytes.
    package let limit: Int

    package init(_ limit: Int) { self.limit = limit }

    /// True when `count` bytes stay within the limit.
    @inline(__always)
    package func allows(_ count: Int) -> Bool { count <= limit }

    /// Throws once `count` bytes have gone past the limit. Writers call it once per value, so the
    /// overshoot is at most one value's own text.
    @inline(__always)
    package func check(_ count: Int, keyPath: String? = nil) throws {
        if !allows(count) {
            throw PropertyListError(
                .lengthLimitExceeded, "output would be longer than \(limit) bytes (shared references expand when written out)",
                keyPath: keyPath)
        }
    }
}
