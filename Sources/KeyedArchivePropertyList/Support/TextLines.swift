extension UnsafeRawBufferPointer {
    /// The 1-based line of a byte offset in text, counting CR, LF and CRLF as one line break each
    /// as CoreFoundation does. Linear in `offset`: the text readers call it only to build errors.
    func lineNumber(at offset: Int) -> Int {
        var line = 1
        var index = 0
        let end = Swift.min(offset, count)
        while index < end {
            let byte = self[index]
            if byte == 0x0A {
                line += 1
            } else if byte == 0x0D {
                line += 1
                if index + 1 < end, self[index + 1] == 0x0A { index += 1 }
            }
            index += 1
        }
        return line
    }
}
