import Foundation

/// Where the objects of a `bplist00` file sit, read straight from its trailer and offset table
/// (independently of the library's reader): for tests of the writer's layout.
public struct BinaryObjectLayout {
    /// Each object's byte offset and marker byte, by object index.
    public var objects: [(offset: Int, marker: UInt8)]

    /// Reads the layout of `bytes`; `nil` unless the trailer and every offset are in bounds.
    public init?(_ bytes: Data) {
        let data = [UInt8](bytes)
        guard data.count >= 40 else { return nil }
        func bigEndian(_ start: Int, _ width: Int) -> Int? {
            guard start >= 0, width <= 8, start + width <= data.count else { return nil }
            var value = 0
            for byte in data[start..<(start + width)] { value = value << 8 | Int(byte) }
            return value
        }
        let trailer = data.count - 32
        let offsetSize = Int(data[trailer + 6])
        guard let count = bigEndian(trailer + 8, 8), let table = bigEndian(trailer + 24, 8),
              offsetSize >= 1, count >= 0, count <= data.count
        else { return nil }
        var objects: [(offset: Int, marker: UInt8)] = []
        for index in 0..<count {
            guard let offset = bigEndian(table + index * offsetSize, offsetSize), offset >= 8, offset < table else { return nil }
            objects.append((offset, data[offset]))
        }
        self.objects = objects
    }

    /// Whether the object at `index` is an integer (marker 0x1n).
    public func isInteger(_ index: Int) -> Bool { objects[index].marker >> 4 == 0x1 }

    /// Whether the object at `index` is a string, ASCII or UTF-16 (marker 0x5n or 0x6n).
    public func isString(_ index: Int) -> Bool { objects[index].marker >> 4 == 0x5 || objects[index].marker >> 4 == 0x6 }
}
