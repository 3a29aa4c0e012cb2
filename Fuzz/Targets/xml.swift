import KeyedArchive

/// XML property lists: the reader must throw or return, never trap, hang or over-allocate;
/// what it accepts must survive a write and a second read unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzXML(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzSupport.buffer(data, size)
    guard let value = try? XMLPropertyListReader.read(input, limits: FuzzSupport.limits) else { return 0 }
    FuzzSupport.checkRoundTrip(value, "XML", write: { try XMLPropertyListWriter.write($0) }) {
        try XMLPropertyListReader.read($0, limits: FuzzSupport.limits)
    }
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzXMLInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    var options = RandomPropertyList.Options()
    options.fractionalDates = false
    options.uid = false
    FuzzSupport.generateSeedsIfAsked({ try XMLPropertyListWriter.write($0) }, options: options)
    return 0
}
