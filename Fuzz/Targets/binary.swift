import KeyedArchive

/// Binary property lists: the reader must throw or return, never trap, hang or over-allocate;
/// what it accepts must survive a write and a second read unchanged. The streaming binary-to-XML
/// converter must agree with reading then writing XML: the same bytes, or both refusing. Cut in
/// two for a second thread, the reader and the converter must each agree with themselves exactly.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzBinary(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let input = FuzzSupport.buffer(data, size)
    let read = Result { try BinaryPropertyListReader.read(input, limits: FuzzSupport.limits, secondThreadObjectCount: .max, split: .never) }
    // The offset-table pass and the tree both forced onto two threads: the same value (storage
    // hints included), or the same error; a read that succeeds with a split used the second
    // thread's members.
    let readHandoffs = Protected<[Bool]>([])
    var readPolicy = SplitPolicy.always
    readPolicy.onHandoff = { taken in readHandoffs.withLock { $0.append(taken) } }
    let splitRead = Result {
        try BinaryPropertyListReader.read(input, limits: FuzzSupport.limits, secondThreadObjectCount: 2, split: readPolicy)
    }
    switch (read, splitRead) {
    case (.success(let a), .success(let b)):
        if a != b { FuzzSupport.fail("the two-thread read gave another value") }
        if (try? PropertyList.encode(a, format: .binary)) != (try? PropertyList.encode(b, format: .binary)) {
            FuzzSupport.fail("the two-thread read gave other storage hints")
        }
        if readHandoffs.withLock({ $0.contains(false) }) { FuzzSupport.fail("the second thread's members were not used") }
    case (.failure(let a), .failure(let b)):
        if "\(a)" != "\(b)" { FuzzSupport.fail("the two-thread read failed differently: \(b) vs \(a)") }
    default:
        FuzzSupport.fail("two-thread read \(splitRead) vs one thread \(read)")
    }
    let twoStep = read.flatMap { value in Result { try PropertyList.encode(value, format: .xml) } }
    // convert detects the format; only input it takes for binary is comparable here.
    let isBinary = PropertyList.detectFormat(input) == .binary
    let streamed = Result { try PropertyList.convert(Data(input), to: .xml, limits: FuzzSupport.limits) }
    // Cut in two wherever possible, the second half on another thread: the same bytes, or
    // the same error in every detail.
    if isBinary {
        let handoffs = Protected<[Bool]>([])
        var policy = SplitPolicy.always
        policy.onHandoff = { taken in handoffs.withLock { $0.append(taken) } }
        let split = Result { try PropertyList.convert(Data(input), to: .xml, limits: FuzzSupport.limits, splitting: policy) }
        switch (streamed, split) {
        case (.success(let a), .success(let b)):
            if a != b { FuzzSupport.fail("split XML differs from the one-thread XML") }
            // A file that converts gives the second thread nothing to fail on: its text is used.
            if handoffs.withLock({ $0.contains(false) }) { FuzzSupport.fail("the second thread's text was not used") }
        case (.failure(let a), .failure(let b)):
            if "\(a)" != "\(b)" { FuzzSupport.fail("split conversion failed differently: \(b) vs \(a)") }
        default:
            FuzzSupport.fail("split conversion \(split) vs one thread \(streamed)")
        }
        // Into a sink, text passed on in 64-byte chunks, with no output limit and with one that
        // cuts the document in half: the one-thread bytes, or the one-thread error; and when it
        // fails, the sink has had a beginning of the document, each byte once.
        let half = (try? streamed.get().count).map { $0 / 2 } ?? Int.max
        for limit in half == Int.max ? [Int.max] : [Int.max, half] {
            var passedOn = Data()
            let viaSink = Result {
                try PropertyList.convert(
                    Data(input), to: .xml, limits: FuzzSupport.limits, maximumOutputLength: limit, splitting: .always
                ) { passedOn.append(contentsOf: $0) }
            }
            // The one-thread conversion into a sink in chunks of the same size.
            var oneThreadPassedOn = Data()
            let oneThread = Result {
                try PropertyList.convert(
                    Data(input), to: .xml, limits: FuzzSupport.limits, maximumOutputLength: limit,
                    splitting: SplitPolicy(minimumInputLength: .max, minimumMembers: .max, chunkLength: 64)
                ) { oneThreadPassedOn.append(contentsOf: $0) }
            }.map { oneThreadPassedOn }
            switch (oneThread, viaSink) {
            case (.success(let a), .success):
                if a != passedOn { FuzzSupport.fail("split XML into a sink differs from the one-thread XML (limit \(limit))") }
            case (.failure(let a), .failure(let b)):
                if "\(a)" != "\(b)" { FuzzSupport.fail("split conversion into a sink failed differently: \(b) vs \(a)") }
                if case .success(let whole) = streamed, !whole.starts(with: passedOn) {
                    FuzzSupport.fail("the sink got bytes out of order or twice (limit \(limit))")
                }
                // Both sinks saw a beginning of the same text (chunk boundaries may differ).
                if !passedOn.starts(with: oneThreadPassedOn) && !oneThreadPassedOn.starts(with: passedOn) {
                    FuzzSupport.fail("the split sink and the one-thread sink saw different text (limit \(limit))")
                }
            default:
                FuzzSupport.fail("split conversion into a sink \(viaSink) vs one thread \(oneThread) (limit \(limit))")
            }
        }
    }
    switch isBinary ? (twoStep, streamed) : (twoStep, twoStep) {
    case (.success(let a), .success(let b)):
        if a != b { FuzzSupport.fail("streamed XML differs from the two-step XML") }
    case (.failure, .failure):
        break
    case (.success, .failure(let error)):
        FuzzSupport.fail("the streaming converter refused what reading then writing accepts: \(error)")
    case (.failure(let error), .success):
        FuzzSupport.fail("the streaming converter accepted what reading then writing refuses: \(error)")
    }
    guard case .success(let value) = read else { return 0 }
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
