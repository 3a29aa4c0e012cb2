import Foundation
import KeyedArchive

/// One record of the W3 document: every property-list type, every integer width.
public struct MixedRecord: Codable, Equatable, Sendable {
    /// Nested dictionary.
    public struct Nested: Codable, Equatable, Sendable {
        public var x: Int
        public var y: Double
        public var label: String
        public var when: Date
    }

    public var name: String
    public var title: String
    public var small: Int
    public var medium: Int
    public var large: Int
    public var negative: Int
    public var huge: UInt64
    public var score: Double
    public var ratio: Float
    public var created: Date
    public var blob: Data
    public var flag: Bool
    public var tags: [String]
    public var nested: Nested

    static func make(_ random: inout BenchRandom, index: Int) -> MixedRecord {
        MixedRecord(
            name: "record-\(index)-" + random.word(4 + random.below(20)),
            title: random.unicodeWord(2 + random.below(8)),
            small: random.below(256),
            medium: 256 + random.below(65_536 - 256),
            large: 65_536 + Int(random.next() % (UInt64(UInt32.max) - 65_536)),
            negative: -1 - Int(random.next() >> 2),
            // Above Int64.max: a 16-byte integer in the binary format.
            huge: UInt64(Int64.max) + 1 + random.next() % UInt64(Int64.max),
            score: Double(bitPattern: random.next() >> 2) .truncatingRemainder(dividingBy: 1e12),
            ratio: Float(random.below(1_000_000)) / 1024,
            created: Date(timeIntervalSinceReferenceDate: Double(random.below(2_000_000_000)) - 1e9 + 0.5),
            blob: random.bytes(8 + random.below(56)),
            flag: random.below(2) == 0,
            tags: (0..<random.below(5)).map { _ in random.word(3 + random.below(6)) },
            nested: Nested(
                x: random.below(1_000), y: Double(random.below(1 << 30)) / 7, label: random.word(6),
                when: Date(timeIntervalSinceReferenceDate: Double(random.below(1_000_000_000)))))
    }

    var value: PropertyListValue {
        .dictionary(PropertyListDictionary(stringKeys: [
            ("name", PropertyListValue(name)), ("title", PropertyListValue(title)),
            ("small", PropertyListValue(small)), ("medium", PropertyListValue(medium)),
            ("large", PropertyListValue(large)), ("negative", PropertyListValue(negative)),
            ("huge", PropertyListValue(huge)), ("score", PropertyListValue(score)),
            ("ratio", PropertyListValue(ratio)), ("created", PropertyListValue(created)),
            ("blob", PropertyListValue(blob)), ("flag", PropertyListValue(flag)),
            ("tags", .array(tags.map { PropertyListValue($0) })),
            ("nested", .dictionary(PropertyListDictionary(stringKeys: [
                ("x", PropertyListValue(nested.x)), ("y", PropertyListValue(nested.y)),
                ("label", PropertyListValue(nested.label)), ("when", PropertyListValue(nested.when)),
            ]))),
        ]))
    }
}

/// The W3 document: a root dictionary holding the records.
public struct MixedDocument: Codable, Equatable, Sendable {
    public var version: Int
    public var title: String
    public var records: [MixedRecord]

    /// The deterministic document of `records` records.
    public static func make(seed: UInt64, records: Int) -> MixedDocument {
        var random = BenchRandom(seed: seed, stream: 4)
        return MixedDocument(
            version: 1, title: "KeyedArchive W3 mixed plist — ünïcödé 日本 😀",
            records: (0..<records).map { MixedRecord.make(&random, index: $0) })
    }

    /// The document as a property-list value.
    public var value: PropertyListValue {
        .dictionary(PropertyListDictionary(stringKeys: [
            ("version", PropertyListValue(version)), ("title", PropertyListValue(title)),
            ("records", .array(records.map(\.value))),
        ]))
    }
}

/// The W3 inputs: the value tree, its Foundation twin and the files Foundation wrote from it.
struct MixedInputs {
    let document: MixedDocument
    let tree: PropertyListValue
    let foundation: NSObject
    let binary: Data
    let xml: Data
    let objects: Int

    /// Builds (or reads from the cache) the inputs for `records` records. The files are written
    /// by `PropertyListSerialization`, never by our writer, so our reader reads a peer's bytes.
    init(context: Context, records: Int, xmlToo: Bool = true) throws {
        document = MixedDocument.make(seed: context.seed, records: records)
        tree = document.value
        foundation = FoundationTree.make(tree)
        objects = TreeCount.of(tree)
        let stem = "w3-\(String(context.seed, radix: 16))-\(records)-v1"
        let foundation = self.foundation
        binary = try context.cached(stem + ".bplist") {
            context.log("  generating \(stem).bplist with PropertyListSerialization ...")
            return try Peer.serialize(foundation, format: .binary)
        }
        xml = xmlToo ? try context.cached(stem + ".xml") {
            context.log("  generating \(stem).xml with PropertyListSerialization ...")
            return try Peer.serialize(foundation, format: .xml)
        } : Data()
    }
}

/// "records" count of a Foundation or our tree's root, as a decoder check value.
func recordCount(_ foundation: Any) -> Int {
    ((foundation as? NSDictionary)?["records"] as? NSArray)?.count ?? -1
}

func recordCount(_ value: PropertyListValue) -> Int {
    value["records"]?.arrayValue?.count ?? -1
}

extension Workload {
    /// W3: a ~50 MB binary plist of mixed types.
    public static let w3 = Workload(
        id: "W3", title: "mixed property list",
        stresses: "the binary and XML codecs on many small objects of every type: offset tables, integer widths, UTF-16 strings, base64, dates"
    ) { context in
        let inputs = try MixedInputs(context: context, records: context.scale.w3Records)
        return mixedOperations(inputs, workload: "W3", full: true)
    }

    static func mixedOperations(_ inputs: MixedInputs, workload: String, full: Bool, peerSkip: String? = nil) -> [BenchmarkOperation] {
        let objects = inputs.objects
        let binary = inputs.binary, xml = inputs.xml, tree = inputs.tree, foundation = inputs.foundation
        let document = inputs.document
        let validateRead: () throws -> String? = {
            try OurSide.decode(binary) == tree ? nil : "our decoded value differs from the generated tree"
        }
        var operations = [
            BenchmarkOperation(workload, "read binary", check: .objects, [
                Implementation("KeyedArchive", ours: true, units: objects, bytes: binary.count, validate: validateRead) {
                    recordCount(try OurSide.decode(binary))
                },
                Implementation("PropertyListSerialization", units: objects, bytes: binary.count, skip: peerSkip) {
                    recordCount(try Peer.deserialize(binary))
                },
                Implementation("PropertyListDecoder", units: objects, bytes: binary.count, note: "typed, into Codable structs", skip: peerSkip) {
                    try PropertyListDecoder().decode(MixedDocument.self, from: binary).records.count
                },
            ])
        ]
        guard full else { return operations }
        let validateWrite: () throws -> String? = {
            try OurSide.decode(OurSide.encode(tree, format: .binary)) == tree ? nil : "our binary output does not read back equal"
        }
        operations += [
            BenchmarkOperation(workload, "write binary", check: .bytes, [
                Implementation("KeyedArchive", ours: true, units: objects, bytes: binary.count, validate: validateWrite) {
                    try OurSide.encode(tree, format: .binary).count
                },
                Implementation("PropertyListSerialization", units: objects, bytes: binary.count) {
                    try Peer.serialize(foundation, format: .binary).count
                },
                Implementation("PropertyListEncoder", units: objects, bytes: binary.count, note: "typed, from Codable structs") {
                    try Peer.plistEncoder().encode(document).count
                },
            ]),
            BenchmarkOperation(workload, "binary->XML", check: .bytes, [
                Implementation("KeyedArchive", ours: true, units: objects, bytes: binary.count, note: "PropertyList.convert: streamed, no tree") {
                    try OurSide.convert(binary, to: .xml).count
                },
                Implementation("PropertyListSerialization", units: objects, bytes: binary.count) {
                    try Peer.serialize(Peer.deserialize(binary), format: .xml).count
                },
            ]),
            BenchmarkOperation(workload, "XML->binary", check: .bytes, [
                Implementation("KeyedArchive", ours: true, units: objects, bytes: xml.count) {
                    try OurSide.encode(OurSide.decode(xml), format: .binary).count
                },
                Implementation("PropertyListSerialization", units: objects, bytes: xml.count) {
                    try Peer.serialize(Peer.deserialize(xml), format: .binary).count
                },
            ]),
        ]
        return operations
    }
}

/// The W3 files on disk, for whole-process measurements of other tools.
public enum W3Files {
    /// Writes (or finds in the cache) the W3 binary and XML files of `context`'s scale.
    public static func make(context: Context) throws -> (binary: URL, xml: URL, objects: Int) {
        let inputs = try MixedInputs(context: context, records: context.scale.w3Records)
        let directory = context.cacheDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("karchive-bench")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let stem = "w3-\(String(context.seed, radix: 16))-\(context.scale.w3Records)-v1"
        let binary = directory.appendingPathComponent(stem + ".bplist"), xml = directory.appendingPathComponent(stem + ".xml")
        if !FileManager.default.fileExists(atPath: binary.path) { try inputs.binary.write(to: binary) }
        if !FileManager.default.fileExists(atPath: xml.path) { try inputs.xml.write(to: xml) }
        return (binary, xml, inputs.objects)
    }
}
