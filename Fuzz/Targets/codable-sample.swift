import KeyedArchive
import KeyedArchiveSample

/// The Codable decoder on the sample model: it must throw or return, never trap, hang or
/// over-allocate; what it decodes must survive an encode and a second decode unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCodableSample(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = Data(FuzzSupport.buffer(data, size))
    guard let sample = try? KeyedUnarchiver.unarchivedObject(ofType: ArchivingData.self, from: input, limits: FuzzSupport.limits)
    else { return 0 }
    let again: ArchivingData
    do {
        again = try KeyedUnarchiver.unarchivedObject(
            ofType: ArchivingData.self, from: try KeyedArchiveEncoder().encode(sample), limits: FuzzSupport.limits)
    } catch {
        FuzzSupport.fail("re-encoding a decoded ArchivingData failed: \(error)")
    }
    // NaN sliders are not equal to themselves; compare their bits.
    var left = sample, right = again
    if left.theSlider.bitPattern == right.theSlider.bitPattern { left.theSlider = 0; right.theSlider = 0 }
    guard left == right else { FuzzSupport.fail("ArchivingData round trip changed the value:\n\(sample)\n->\n\(again)") }
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzCodableSampleInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    var options = RandomPropertyList.Options()
    options.maximumDepth = 1
    FuzzSupport.generateSeedsIfAsked({ value in
        // The value's hash picks the fields, so seeds differ; small images keep inputs short.
        var random = SeededGenerator(seed: UInt64(truncatingIfNeeded: "\(value)".utf8.count))
        func text() -> String { String((0..<Int.random(in: 0...12, using: &random)).map { _ in "aé😀 x".randomElement(using: &random) ?? "a" }) }
        let sample = ArchivingData(
            image: Data((0..<Int.random(in: 0...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }),
            name: text(), gender: text(), vocation: text(), page: text(),
            theSlider: Float.random(in: 0...1, using: &random), isSwitchOn: random.chance(0.5))
        let format: PropertyListFormat = random.chance(0.3) ? .xml : .binary
        let binary = try KeyedArchiveEncoder().encode(sample)
        return [UInt8](format == .binary ? binary : try PropertyList.encode(try PropertyList.decode(binary), format: .xml))
    }, options: options)
    return 0
}
