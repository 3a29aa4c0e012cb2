import KeyedArchive

/// OpenStep text property lists: the reader must throw or return, never trap, hang or
/// over-allocate; what it accepts must survive a write and a second read unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOpenStep(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzSupport.buffer(data, size)
    guard let value = try? OpenStepPropertyListReader.read(input, limits: FuzzSupport.limits) else { return 0 }
    FuzzSupport.checkRoundTrip(value, "OpenStep", write: { try OpenStepPropertyListWriter.write($0) }) {
        try OpenStepPropertyListReader.read($0, limits: FuzzSupport.limits)
    }
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzOpenStepInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    // The writer turns what OpenStep cannot hold (numbers, booleans, dates) into strings.
    FuzzSupport.generateSeedsIfAsked({ try OpenStepPropertyListWriter.write($0) })
    return 0
}
