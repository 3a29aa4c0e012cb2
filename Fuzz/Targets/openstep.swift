import KeyedArchive

/// OpenStep text property lists: the reader must throw or return, never trap, hang or
/// over-allocate; what it accepts must survive a write and a second read unchanged.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOpenStep(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzSupport.buffer(data, size)
    guard let value = try? OpenStepPropertyListReader.read(input, limits: FuzzSupport.limits) else { return 0 }
    // GNUstep typed values (<*I1>, <*R1.5>, <*BY>, <*D...>) keep their types only when written
    // back in that style; the default style writes them as strings.
    let options = OpenStepPropertyListWriter.Options(scalarStyle: .gnustep)
    FuzzSupport.checkRoundTrip(value, "OpenStep", write: { try OpenStepPropertyListWriter.write($0, options: options) }) {
        try OpenStepPropertyListReader.read($0, limits: FuzzSupport.limits)
    }
    return 0
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzOpenStepInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> CInt {
    FuzzSupport.generateSeedsIfAsked({ value in
        // Both styles, so the seeds hold plain and GNUstep-typed scalars.
        let style: OpenStepPropertyListWriter.Options.ScalarStyle = value.isContainer ? .gnustep : .strings
        return try OpenStepPropertyListWriter.write(value, options: .init(scalarStyle: style))
    })
    return 0
}
