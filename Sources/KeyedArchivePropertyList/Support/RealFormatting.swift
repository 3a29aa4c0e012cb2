#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#elseif canImport(ucrt)
import ucrt
#endif

/// Formats a finite, non-zero double as C's `printf("%.17g")` writes it into a stack buffer (a
/// locale's decimal separator replaced by '.') and passes the bytes to `body`. Below 2^64 in
/// magnitude the text comes from ``formatG17Fast(_:into:)``; larger values go to the C library.
func withG17<Result>(_ value: Double, _ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
    if let fast = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 48, { buffer -> Result? in
        guard let length = formatG17Fast(value, into: buffer) else { return nil }
        return body(UnsafeBufferPointer(rebasing: buffer[..<length]))
    }) {
        return fast
    }
    return withUnsafeTemporaryAllocation(of: CChar.self, capacity: 48) { buffer in
        #if canImport(Glibc)
        // glibc's gcvt is sprintf("%.*g") without building a va_list per call.
        var written: Int32 = 0
        if let start = buffer.baseAddress {
            start[0] = 0
            _ = gcvt(value, 17, start)
            written = Int32(truncatingIfNeeded: strlen(start))
        }
        #else
        let written = withVaList([value]) { vsnprintf(buffer.baseAddress, buffer.count, "%.17g", $0) }
        #endif
        guard written > 0 else { return Array(String(value).utf8).withUnsafeBufferPointer(body) }
        let raw = UnsafeMutableRawBufferPointer(buffer)
        var length = 0
        var replacedSeparator = false
        for index in 0..<min(Int(written), buffer.count - 1) {
            let byte = raw[index]
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "e"), UInt8(ascii: "."):
                raw[length] = byte
                length += 1
                replacedSeparator = false
            default:
                // A locale's decimal separator (possibly several bytes): write '.' once.
                if !replacedSeparator {
                    raw[length] = UInt8(ascii: ".")
                    length += 1
                }
                replacedSeparator = true
            }
        }
        return body(UnsafeBufferPointer(start: raw.baseAddress?.assumingMemoryBound(to: UInt8.self), count: length))
    }
}

/// `%.17g` for every double below 2^64 in magnitude (nearly every real in real files). The 17
/// significant digits are the exact decimal value of the double rounded half to even, as
/// glibc's printf rounds: with 64x64-bit products from 0.001 up, with a multi-word product
/// below (``smallMagnitudeDigits(_:)``). The text is laid out as `%g` lays it out (trailing
/// zeros dropped, exponent form below 10^-4 and from 10^17). Returns nil from 2^64 up, for the
/// C library to format (dividing by large powers of ten is not done here).
@inline(__always)
func formatG17Fast(_ value: Double, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int? {
    guard value.isFinite, value != 0, buffer.count >= 32 else { return nil }
    let magnitude = value.magnitude
    guard magnitude < 18_446_744_073_709_551_616.0 else { return nil }
    let significand = magnitude.significandBitPattern | (1 << 52)
    // magnitude = significand * 2^binaryExponent exactly.
    let binaryExponent = Int(magnitude.exponent) - 52
    var digits: UInt64
    var exponent: Int  // the decimal exponent of the first digit: magnitude ~ d.ddd * 10^exponent
    if magnitude < 0.001 || !magnitude.isNormal {
        guard let small = smallMagnitudeDigits(magnitude) else { return nil }
        (digits, exponent) = small
    } else if binaryExponent >= 0 {
        // An integer below 2^64.
        let integer = significand << UInt64(binaryExponent)
        var count = 1
        while count < 20 && integer >= G17.powersOfTen[count] { count += 1 }
        exponent = count - 1
        if count <= 17 {
            digits = integer * G17.powersOfTen[17 - count]
        } else {
            let divisor = G17.powersOfTen[count - 17]
            digits = integer / divisor
            let remainder = integer % divisor, half = divisor / 2
            if remainder > half || (remainder == half && digits & 1 == 1) { digits += 1 }
        }
    } else {
        // significand / 2^shift, with 1 <= shift <= 62 in this range.
        let shift = -binaryExponent
        var guess = Int((log10(magnitude)).rounded(.down))
        var attempts = 0
        while true {
            attempts += 1
            let scale = 16 - guess
            guard attempts <= 3, scale >= 0, scale <= 19, shift >= 1, shift <= 63 else { return nil }
            let (high, low) = significand.multipliedFullWidth(by: G17.powersOfTen[scale])
            // product >> shift, and the bits shifted out.
            let quotient = (high << UInt64(64 - shift)) | (low >> UInt64(shift))
            guard high >> UInt64(shift) == 0 else { guess += 1; continue }
            if quotient >= G17.powersOfTen[17] { guess += 1; continue }
            if quotient < G17.powersOfTen[16] { guess -= 1; continue }
            let mask: UInt64 = (1 << UInt64(shift)) &- 1
            let remainder = low & mask, half: UInt64 = 1 << UInt64(shift - 1)
            digits = quotient
            if remainder > half || (remainder == half && digits & 1 == 1) { digits += 1 }
            exponent = guess
            break
        }
    }
    if digits == G17.powersOfTen[17] {
        digits = G17.powersOfTen[16]
        exponent += 1
    }
    // The 17 digits, then the significant ones without trailing zeros.
    var text: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch for the digits
    return withUnsafeMutableBytes(of: &text) { scratch -> Int in
        var rest = digits
        for index in stride(from: 16, through: 0, by: -1) {
            scratch[index] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: rest % 10)
            rest /= 10
        }
        var significant = 17
        while significant > 1 && scratch[significant - 1] == UInt8(ascii: "0") { significant -= 1 }
        var length = 0
        @inline(__always) func put(_ byte: UInt8) {
            buffer[length] = byte
            length += 1
        }
        if value < 0 { put(UInt8(ascii: "-")) }
        if exponent >= -4 && exponent < 17 {
            if exponent >= 0 {
                for index in 0...exponent { put(index < significant ? scratch[index] : UInt8(ascii: "0")) }
                if significant > exponent + 1 {
                    put(UInt8(ascii: "."))
                    for index in (exponent + 1)..<significant { put(scratch[index]) }
                }
            } else {
                put(UInt8(ascii: "0"))
                put(UInt8(ascii: "."))
                for _ in 0..<(-exponent - 1) { put(UInt8(ascii: "0")) }
                for index in 0..<significant { put(scratch[index]) }
            }
        } else {
            put(scratch[0])
            if significant > 1 {
                put(UInt8(ascii: "."))
                for index in 1..<significant { put(scratch[index]) }
            }
            put(UInt8(ascii: "e"))
            put(exponent < 0 ? UInt8(ascii: "-") : UInt8(ascii: "+"))
            let power = exponent.magnitude
            if power >= 100 { put(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: power / 100)) }
            put(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: power / 10 % 10))
            put(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: power % 10))
        }
        return length
    }
}

/// The 17 digits (rounded half to even) and decimal exponent of a magnitude below 0.001,
/// subnormals included: `significand * 10^scale / 2^shift` in a multi-word integer of at most
/// 20 words (the significand's 53 bits times 10^340 at most).
private func smallMagnitudeDigits(_ magnitude: Double) -> (digits: UInt64, exponent: Int)? {
    let significand: UInt64, shift: Int
    if magnitude.isNormal {
        significand = magnitude.significandBitPattern | (1 << 52)
        shift = 52 - Int(magnitude.exponent)
    } else {
        significand = magnitude.significandBitPattern
        shift = 1074
    }
    guard significand != 0, shift > 0 else { return nil }
    var guess = Int(log10(magnitude).rounded(.down))
    return withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 24) { limbs -> (digits: UInt64, exponent: Int)? in
        for _ in 0..<3 {
            let scale = 16 - guess
            guard scale >= 0, scale <= 360 else { return nil }
            limbs[0] = significand
            var used = 1
            var remaining = scale
            while remaining > 0 {
                let step = min(remaining, 19)
                let factor = G17.powersOfTen[step]
                var carry: UInt64 = 0
                for index in 0..<used {
                    let (high, low) = limbs[index].multipliedFullWidth(by: factor)
                    let (sum, overflow) = low.addingReportingOverflow(carry)
                    limbs[index] = sum
                    carry = high &+ (overflow ? 1 : 0)
                }
                if carry != 0 {
                    guard used < limbs.count else { return nil }
                    limbs[used] = carry
                    used += 1
                }
                remaining -= step
            }
            @inline(__always) func limb(_ index: Int) -> UInt64 { index < used ? limbs[index] : 0 }
            // The quotient: the product shifted right by `shift`, if it fits in 64 bits.
            let word = shift >> 6, bit = UInt64(shift & 63)
            var quotient = limb(word) >> bit
            var above = limb(word + 1)
            if bit > 0 {
                quotient |= limb(word + 1) << (64 - bit)
                above = limb(word + 1) >> bit
            }
            var tooLarge = above != 0
            if word + 2 < used {
                for index in (word + 2)..<used where limbs[index] != 0 { tooLarge = true }
            }
            if tooLarge || quotient >= G17.powersOfTen[17] {
                guess += 1
                continue
            }
            if quotient < G17.powersOfTen[16] {
                guess -= 1
                continue
            }
            // Round half to even on the bits shifted out: the highest of them, then the rest.
            let halfIndex = shift - 1
            let halfWord = halfIndex >> 6, halfBit = UInt64(halfIndex & 63)
            let halfSet = (limb(halfWord) >> halfBit) & 1 == 1
            var belowHalf = limb(halfWord) & ((1 << halfBit) &- 1) != 0
            for index in 0..<min(halfWord, used) where limbs[index] != 0 { belowHalf = true }
            var digits = quotient
            if halfSet && (belowHalf || digits & 1 == 1) { digits += 1 }
            return (digits, guess)
        }
        return nil
    }
}

private enum G17 {
    /// 10^0 ... 10^19.
    static let powersOfTen: [UInt64] = {
        var powers: [UInt64] = [1]
        for _ in 1...19 { powers.append(powers[powers.count - 1] &* 10) }
        return powers
    }()
}
