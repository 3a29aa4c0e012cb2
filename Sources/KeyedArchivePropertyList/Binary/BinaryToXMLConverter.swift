/// Writing a binary property list as XML straight from its bytes, without building the value
/// tree: the binary reader's checks, the XML writer's layout.
///
/// The output is byte for byte what ``XMLPropertyListWriter`` writes for the value
/// ``BinaryPropertyListReader`` reads, and every input one of them rejects is rejected here too,
/// with the same kinds of error (when a file has several problems, the first one met may differ,
/// because the tree path reads everything before it writes anything). Memory is the input, one
/// byte per object and the output; time is about half of reading then writing (see
/// `Docs/Performance.md`).
extension BinaryPropertyListDecoder {
    /// A container being written: where its references are and which member is next.
    private struct XMLFrame {
        var object: Int
        var isDictionary: Bool
        var refsStart: Int
        /// Members (entries for a dictionary).
        var count: Int
        var next = 0
        /// Where a dictionary's keys start in ``KeyStacks/keys``, and its writing order in
        /// ``KeyStacks/orders`` (-1 when the stored order is already sorted).
        var keysStart = 0
        var wideKeysStart = 0
        var orderStart = -1

        /// The stored position of the `member`-th entry in writing order.
        @inline(__always)
        func position(_ member: Int, _ stacks: KeyStacks) -> Int {
            orderStart < 0 ? member : stacks.orders[orderStart &+ member]
        }
    }

    /// The keys and key orders of all open dictionaries, one stack each (a dictionary pushes
    /// when it opens and pops when it closes), so that no arrays are made per dictionary.
    private struct KeyStacks {
        var keys: [FileKey] = []
        /// UTF-16 keys, decoded (ASCII keys stay bytes in the input).
        var wideKeys: [String] = []
        var orders: [Int] = []
        /// Scratch for sorting.
        var prefixes: [UInt64] = []
    }

    /// A dictionary key: `count` ASCII bytes at `start` in the input, or (`start` negative) the
    /// `count`-th of the decoded UTF-16 keys in ``KeyStacks/wideKeys``.
    private struct FileKey {
        var start: Int
        var count: Int
    }

    /// Passes the UTF-8 bytes of `key` to `body`.
    @inline(__always)
    private func withUTF8<Result>(
        _ key: FileKey, _ wideKeys: [String], _ body: (UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        if key.start >= 0 {
            return body(UnsafeRawBufferPointer(rebasing: bytes[key.start..<(key.start &+ key.count)]).bindMemory(to: UInt8.self))
        }
        var text = wideKeys[key.count]
        return text.withUTF8(body)
    }

    /// True when writing the objects out one use at a time provably stays within the expansion
    /// limits, so the walk never has to stop part way at a limit the tree reader would have
    /// applied at once: no container is referenced twice (so at most one value is written per
    /// reference, plus the root), and the strings and data that are shared cannot add up past
    /// ``DecodingLimits/maximumExpandedByteCount`` even if every reference used the longest.
    /// Otherwise (expansion bombs and other hand-made files) the tree reader, which sizes each
    /// shared container once, is the right tool.
    func canWriteXMLWithinLimits() -> Bool {
        guard let references = countedReferences, references < limits.maximumExpandedNodeCount else { return false }
        var longestShared = 0
        for index in marks.indices where marks[index] == Self.sharedCount {
            let offset = offset(of: index)
            let marker = bytes[offset]
            switch marker & 0xF0 {
            case 0xA0, 0xC0, 0xD0:
                return false
            case 0x40, 0x50, 0x60:
                guard let (count, _) = try? readCount(marker: marker, at: offset, object: index) else { return false }
                // A UTF-16 unit becomes at most three UTF-8 bytes.
                let (length, overflow) = count.multipliedReportingOverflow(by: marker & 0xF0 == 0x60 ? 3 : 1)
                guard !overflow else { return false }
                longestShared = max(longestShared, length)
            default:
                break
            }
        }
        // Unshared strings and data are written once: at most 1.5 times the input's bytes.
        let (shared, overflow) = references.multipliedReportingOverflow(by: longestShared)
        let unshared = bytes.count > Int.max / 2 ? Int.max : 2 * bytes.count
        return !overflow && shared <= limits.maximumExpandedByteCount - min(limits.maximumExpandedByteCount, unshared)
    }

    /// Writes the whole property list as an XML document.
    ///
    /// `maximumDepth` is the XML writer's depth limit (``PropertyList/encode(_:format:maximumOutputLength:)``
    /// passes the default one); the reader's own limits come from the decoder's ``DecodingLimits``.
    ///
    /// With a `sink`, the text goes there in chunks of about 1 MiB and the result is empty.
    mutating func writeXML(
        maximumDepth: Int, budget: OutputBudget, sink: ((UnsafeRawBufferPointer) throws -> Void)? = nil
    ) throws -> Data {
        // XML is about 1.8 times a binary file's size (W3: 88.0 MB from 50.3 MB); a little more
        // keeps the usual file from growing the buffer at all.
        let (expected, overflow) = bytes.count.multipliedReportingOverflow(by: 2)
        let text = XMLText(budget: budget, sink: sink, expectedLength: overflow ? Int.max : expected)
        var frames: [XMLFrame] = []
        var stacks = KeyStacks()
        // Shared references are written out at every use, so the totals of values and of string
        // and data bytes are bounded as the tree reader bounds them.
        var values = 0
        var stringBytes = 0
        let referenceWidth = trailer.objectRefSize
        do {
            try writeObject(
                trailer.topObject, text: text, frames: &frames, stacks: &stacks, values: &values, stringBytes: &stringBytes,
                maximumDepth: maximumDepth)
            while let last = frames.indices.last {
                try text.checkBudget()
                let next = frames[last].next
                guard next < frames[last].count else {
                    let frame = frames.removeLast()
                    marks[frame.object] &= ~Self.onStack
                    if frame.isDictionary {
                        stacks.keys.removeLast(stacks.keys.count &- frame.keysStart)
                        stacks.wideKeys.removeLast(stacks.wideKeys.count &- frame.wideKeysStart)
                        if frame.orderStart >= 0 { stacks.orders.removeLast(stacks.orders.count &- frame.orderStart) }
                    }
                    text.close(frame.isDictionary ? "</dict>\n" : "</array>\n", indent: frames.count)
                    continue
                }
                frames[last].next = next &+ 1
                let slot: Int
                if frames[last].isDictionary {
                    let position = frames[last].position(next, stacks)
                    withUTF8(stacks.keys[frames[last].keysStart &+ position], stacks.wideKeys) {
                        text.writeKey(utf8: UnsafeRawBufferPointer($0), indent: frames.count)
                    }
                    slot = frames[last].count &+ position
                } else {
                    slot = next
                }
                let child = try reference(at: frames[last].refsStart &+ slot &* referenceWidth, in: frames[last].object)
                try writeObject(
                    child, text: text, frames: &frames, stacks: &stacks, values: &values, stringBytes: &stringBytes,
                    maximumDepth: maximumDepth)
            }
        } catch var error as PropertyListError {
            if error.keyPath == nil { error.keyPath = keyPath(frames, stacks) }
            throw error
        }
        return try text.finish()
    }

    /// Writes a scalar completely, or opens a container: writes its tag and pushes a frame
    /// (reading and sorting a dictionary's keys first).
    private mutating func writeObject(
        _ index: Int, text: XMLText, frames: inout [XMLFrame], stacks: inout KeyStacks, values: inout Int, stringBytes: inout Int,
        maximumDepth: Int
    ) throws {
        let offset = offset(of: index)
        try count(values: &values, at: offset, object: index)
        let marker = bytes[offset]
        let indent = frames.count
        switch marker & 0xF0 {
        case 0xA0, 0xD0:
            try requireDepth(below: frames.count, at: offset, object: index)
            guard frames.count < maximumDepth else { throw XMLText.failure("nesting deeper than \(maximumDepth)") }
            if marks[index] & Self.onStack != 0 {
                throw PropertyListError(.referenceCycle, "a container contains itself", byteOffset: offset, objectIndex: index)
            }
            let (count, start, _) = try containerSpan(marker: marker, at: offset, object: index)
            var frame = XMLFrame(object: index, isDictionary: marker & 0xF0 == 0xD0, refsStart: start, count: count)
            if frame.isDictionary {
                frame.keysStart = stacks.keys.count
                frame.wideKeysStart = stacks.wideKeys.count
                for member in 0..<count {
                    let key = try reference(at: start &+ member &* trailer.objectRefSize, in: index)
                    try readKey(key, in: index, into: &stacks, values: &values, stringBytes: &stringBytes)
                }
                let first = frame.keysStart, orderStart = stacks.orders.count
                let keys = stacks.keys, wideKeys = stacks.wideKeys
                if appendKeyOrder(
                    count: count,
                    prefix: { withUTF8(keys[first &+ $0], wideKeys, utf16SortPrefix(utf8:)) },
                    tieBreak: { a, b in
                        withUTF8(keys[first &+ a], wideKeys) { left in withUTF8(keys[first &+ b], wideKeys) { utf16Precedes(left, $0) } }
                    },
                    to: &stacks.orders, scratch: &stacks.prefixes)
                {
                    frame.orderStart = orderStart
                }
                guard text.openDictionary(isEmpty: count == 0, indent: indent) else { return }
            } else {
                guard text.openArray(isEmpty: count == 0, indent: indent) else { return }
            }
            marks[index] |= Self.onStack
            frames.append(frame)
        case 0xC0:
            throw XMLText.failure("sets have no XML form (CoreFoundation refuses them too)")
        case 0x40:
            let data = try dataBytes(marker: marker, at: offset, object: index)
            try count(stringBytes: &stringBytes, data.count, at: offset, object: index)
            text.writeData(data, indent: indent)
        case 0x50:
            let string = try asciiStringBytes(marker: marker, at: offset, object: index)
            try count(stringBytes: &stringBytes, string.count, at: offset, object: index)
            text.writeString(utf8: string, indent: indent)
        default:
            let value = try decodeScalar(marker: marker, at: offset, object: index)
            if case .string(let string) = value {
                try count(stringBytes: &stringBytes, string.value.utf8.count, at: offset, object: index)
            }
            try text.writeScalar(value, indent: indent)
        }
    }

    /// Pushes the dictionary key that is object `index` onto `stacks`: a string, or an error
    /// saying why not (other primitives are valid binary keys but have no XML form).
    private func readKey(_ index: Int, in dictionary: Int, into stacks: inout KeyStacks, values: inout Int, stringBytes: inout Int) throws {
        let offset = offset(of: index)
        try count(values: &values, at: offset, object: index)
        let marker = bytes[offset]
        switch marker & 0xF0 {
        case 0x50:
            let key = try asciiStringBytes(marker: marker, at: offset, object: index)
            try count(stringBytes: &stringBytes, key.count, at: offset, object: index)
            // The slice lies inside `bytes`, whose base address exists as the slice is in it.
            let start = key.baseAddress.map { $0 - (bytes.baseAddress ?? $0) } ?? 0
            stacks.keys.append(FileKey(start: start, count: key.count))
        case 0x60:
            guard case .string(let key) = try decodeScalar(marker: marker, at: offset, object: index) else { return }
            try count(stringBytes: &stringBytes, key.value.utf8.count, at: offset, object: index)
            stacks.keys.append(FileKey(start: -1, count: stacks.wideKeys.count))
            stacks.wideKeys.append(key.value)
        case 0x10, 0x20, 0x30, 0x40:
            let key = try decodeScalar(marker: marker, at: offset, object: index)
            throw XMLText.failure("XML dictionary keys must be strings, not \(key.typeName)")
        default:
            try checkKey(index, container: dictionary)
        }
    }

    @inline(__always)
    private func count(values: inout Int, at offset: Int, object: Int) throws {
        values &+= 1
        guard values <= limits.maximumExpandedNodeCount else { throw expansionError(bytes: false, at: offset, object: object) }
    }

    @inline(__always)
    private func count(stringBytes: inout Int, _ length: Int, at offset: Int, object: Int) throws {
        let (sum, overflow) = stringBytes.addingReportingOverflow(length)
        guard !overflow, sum <= limits.maximumExpandedByteCount else { throw expansionError(bytes: true, at: offset, object: object) }
        stringBytes = sum
    }

    /// The key path of the member being written, e.g. `root.records[3].name`.
    private func keyPath(_ frames: [XMLFrame], _ stacks: KeyStacks) -> String {
        var path = "root"
        for frame in frames where frame.next > 0 {
            if frame.isDictionary {
                let key = stacks.keys[frame.keysStart + frame.position(frame.next - 1, stacks)]
                path += "." + withUTF8(key, stacks.wideKeys) { String(decoding: $0, as: UTF8.self) }
            } else {
                path += "[\(frame.next - 1)]"
            }
        }
        return path
    }
}
