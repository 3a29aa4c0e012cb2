import Foundation

/// Linear-time checks for the limit tests of several layers.
public enum LinearTime {
    /// How much longer handling the input built for `8n` takes than the one built for `n`: about
    /// 8 when linear, 64 when quadratic. Both sizes are timed alternately in the same call and
    /// the fastest of nine runs of each is kept, so machine speed and passing load cancel out; a
    /// ratio of 30 or more is measured again (up to three times) before it is returned, since a
    /// passing load can still skew one measurement while a quadratic reader stays near 64.
    public static func ratio(n: Int, _ make: (Int) throws -> Data, _ read: (Data) throws -> Void) throws -> Double {
        let small = try make(n), large = try make(8 * n)
        func time(_ input: Data) throws -> Double {
            let start = DispatchTime.now().uptimeNanoseconds
            try read(input)
            return Double(DispatchTime.now().uptimeNanoseconds - start)
        }
        try read(small)  // warm up
        var ratio = Double.infinity
        for _ in 0..<3 where ratio >= 30 {
            var bestSmall = Double.infinity, bestLarge = Double.infinity
            for _ in 0..<9 {
                bestSmall = min(bestSmall, try time(small))
                bestLarge = min(bestLarge, try time(large))
            }
            ratio = min(ratio, bestLarge / max(bestSmall, 1))
        }
        return ratio
    }
}
