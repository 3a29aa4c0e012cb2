import XCTest
@testable import KeyedArchivePropertyList
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The XML writer's `%.17g` fast path against the C library's own `%.17g` (the peer CF uses).
final class RealFormattingTests: XCTestCase {
    /// The C library's `%.17g`.
    private func libc(_ value: Double) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let written = withVaList([value]) { vsnprintf(&buffer, buffer.count, "%.17g", $0) }
        XCTAssertGreaterThan(written, 0)
        return String(decoding: buffer.prefix(Int(written)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The fast path's text, or nil when it declines.
    private func fast(_ value: Double) -> String? {
        var buffer = [UInt8](repeating: 0, count: 48)
        return buffer.withUnsafeMutableBufferPointer { buffer in
            formatG17Fast(value, into: buffer).map { String(decoding: buffer[..<$0], as: UTF8.self) }
        }
    }

    private func check(_ value: Double, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        guard let ours = fast(value) else { return false }
        let expected = libc(value)
        if ours != expected {
            XCTFail("\(value.bitPattern): fast \(ours), libc \(expected)", file: file, line: line)
        }
        // The shared entry point must agree too, fast path or not.
        let viaEntry = withG17(value) { String(decoding: $0, as: UTF8.self) }
        XCTAssertEqual(viaEntry, expected, file: file, line: line)
        return true
    }

    func testRandomValuesInTheFastRange() {
        var random = SystemRandomNumberGenerator()
        var covered = 0
        for _ in 0..<200_000 {
            // Uniform in log scale over [1e-3, 2^64), both signs.
            let exponent = Double.random(in: -3...19.26, using: &random)
            var value = Double.random(in: 1..<10, using: &random) * pow(10, exponent.rounded(.down))
            if Bool.random(using: &random) { value = -value }
            if check(value) { covered += 1 }
        }
        XCTAssertGreaterThan(covered, 190_000, "the fast path should take almost every value in its range")
    }

    func testRandomBitPatterns() {
        // Everywhere: outside the fast range the fast path must decline, not guess.
        var random = SystemRandomNumberGenerator()
        for _ in 0..<100_000 {
            let value = Double(bitPattern: random.next())
            // The fast path takes every finite non-zero value below 2^64 and declines the rest.
            let taken = check(value)
            XCTAssertEqual(taken, value.isFinite && value != 0 && value.magnitude < 0x1p64, "\(value.bitPattern)")
        }
    }

    func testShortDecimalsAndIntegers() {
        // The values people type: short decimals, where the 17th digit rounds, and integers.
        var random = SystemRandomNumberGenerator()
        for _ in 0..<100_000 {
            let digits = Double(Int.random(in: 1...99_999_999, using: &random))
            let scale = pow(10, Double(Int.random(in: -2...8, using: &random)))
            _ = check(digits * scale)
            _ = check(digits / scale)
            _ = check(Double(UInt64.random(in: 0...UInt64.max, using: &random)))
        }
        for value in [0.001, 0.1, 0.5, 1, 2, 10, 100, 1e15, 1e16, 1e17, 1e18, 1e19, 0.3, 2.0 / 3, 1.0 / 7, 123456789.125] {
            _ = check(value)
            _ = check(-value)
        }
    }

    func testSmallAndSubnormalValues() {
        // Below 0.001 the digits come from a multi-word product: every decade down to the
        // smallest subnormal, its neighbours, and random values, both signs.
        var random = SystemRandomNumberGenerator()
        for power in -324 ... -3 {
            let base = pow(10.0, Double(power))
            guard base > 0 else { continue }
            for value in [base, base.nextUp, base.nextDown, base * 1.5, base * 9.999999999999999] where value > 0 {
                XCTAssertTrue(check(value) && check(-value), "\(value)")
            }
        }
        for value in [Double.leastNonzeroMagnitude, .leastNormalMagnitude, Double.leastNormalMagnitude.nextDown, 0x1p-1060, 5e-324 * 3] {
            XCTAssertTrue(check(value), "\(value)")
        }
        for _ in 0..<100_000 {
            let value = Double(bitPattern: UInt64.random(in: 0...Double(0.001).bitPattern, using: &random))
            if value > 0 { XCTAssertTrue(check(value), "\(value.bitPattern)") }
        }
    }

    func testNeighboursOfPowersOfTenAndTwo() {
        // Where the decimal exponent changes, and where rounding carries into a new digit.
        for power in -3...19 {
            let base = pow(10.0, Double(power))
            var value = base
            for _ in 0..<40 { value = value.nextDown }
            for _ in 0..<80 {
                _ = check(value)
                value = value.nextUp
            }
        }
        for power in -9...63 {
            let base = Double(sign: .plus, exponent: power, significand: 1)
            for value in [base.nextDown, base, base.nextUp] { _ = check(value) }
        }
        // 17 nines round up to a new leading digit.
        _ = check(99999999999999999.0)
        _ = check(9.9999999999999999)
        _ = check(0.0099999999999999999)
    }
}
