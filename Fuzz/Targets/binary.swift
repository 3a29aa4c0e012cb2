import KeyedArchive

/// Binary property lists: the reader must throw or return, never trap, hang or over-allocate;
/// what it accepts must survive a write and a second read unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBinary(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzSupport.buffer(data, size)
    guard let value = try? BinaryPropertyListReader.read(input, limits: FuzzSupport.limits) else { return 0 }
    FuzzSupport.checkRoundTrip(value, "binary", write: { try BinaryPropertyListWriter.write($0) }) {
        try BinaryPropertyListReader.read($0, limits: FuzzSupport.limits)
    }
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzBinaryInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    var options = RandomPropertyList.Options()
    options.null = true
    options.set = true
    FuzzSupport.generateSeedsIfAsked({ try BinaryPropertyListWriter.write($0) }, options: options)
    return 0
}
