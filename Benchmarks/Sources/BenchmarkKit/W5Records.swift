import Foundation
import KeyedArchive

/// W5's ten-field record: strings, ints, doubles, a bool, a nested struct and a small array.
public struct Customer: Codable, Equatable, Sendable {
    /// The nested struct.
    public struct Address: Codable, Equatable, Sendable {
        public var street: String
        public var city: String
        public var postcode: Int
    }

    public var id: Int
    public var name: String
    public var email: String
    public var age: Int
    public var balance: Double
    public var rating: Double
    public var isActive: Bool
    public var address: Address
    public var tags: [String]
    public var visits: Int

    /// `count` deterministic records.
    public static func make(seed: UInt64, count: Int) -> [Customer] {
        var random = BenchRandom(seed: seed, stream: 7)
        return (0..<count).map { index in
            let name = random.word(5 + random.below(10))
            return Customer(
                id: index, name: name, email: name.replacingOccurrences(of: " ", with: ".") + "@example.com",
                age: 18 + random.below(80), balance: Double(random.below(100_000_000)) / 100,
                rating: Double(random.below(50)) / 10, isActive: random.below(3) != 0,
                address: Address(street: "\(random.below(999)) \(random.word(8)) Street", city: random.word(7), postcode: 10_000 + random.below(89_999)),
                tags: (0..<(1 + random.below(3))).map { _ in random.word(4) }, visits: random.below(100_000))
        }
    }
}

extension Workload {
    /// W5: Codable records through the Codable bridge, PropertyListEncoder/Decoder and JSON.
    public static let w5 = Workload(
        id: "W5", title: "Codable records",
        stresses: "the Codable bridge's container machinery: keyed containers, nested structs, small arrays, many short strings"
    ) { context in
        recordOperations(seed: context.seed, count: context.scale.w5Records, peerCount: context.scale.w5Records, workload: "W5")
    }

    static func recordOperations(seed: UInt64, count: Int, peerCount: Int, workload: String, jsonToo: Bool = true, peerSkip: String? = nil) -> [BenchmarkOperation] {
        let records = Customer.make(seed: seed, count: count)
        // Above 2^24 objects (the default limit) from about 770,000 records on; see OurSide.
        let limits = count > 500_000
            ? DecodingLimits(maximumObjectCount: 1 << 26, maximumExpandedNodeCount: 1 << 27) : DecodingLimits.default
        let peerRecords = peerCount == count || peerSkip != nil ? records : Customer.make(seed: seed, count: peerCount)
        let peerNote = peerCount == count ? nil : "peer at N=\(Format.count(peerCount))"
        let ours = Box<Data>(), plist = Box<Data>(), json = Box<Data>()
        var encode = [
            Implementation("KeyedArchive", ours: true, units: count, validate: {
                try OurSide.unarchive([Customer].self, from: OurSide.archive(records), limits: limits) == records ? nil : "round trip differs"
            }) {
                let data = try OurSide.archive(records)
                ours.value = data
                return data.count
            },
            Implementation("PropertyListEncoder", units: peerCount, note: peerNote, skip: peerSkip) {
                let data = try Peer.plistEncoder().encode(peerRecords)
                plist.value = data
                return data.count
            },
        ]
        var decode = [
            Implementation("KeyedArchive", ours: true, units: count, prepare: {
                if ours.value == nil { ours.value = try OurSide.archive(records) }
            }) {
                try OurSide.unarchive([Customer].self, from: ours.value ?? Data(), limits: limits).count
            },
            Implementation("PropertyListDecoder", units: peerCount, note: peerNote, skip: peerSkip, prepare: {
                if plist.value == nil { plist.value = try Peer.plistEncoder().encode(peerRecords) }
            }) {
                try PropertyListDecoder().decode([Customer].self, from: plist.value ?? Data()).count
            },
        ]
        if jsonToo {
            encode.append(Implementation(
                "Codable floor", units: count, note: "reference: a null Encoder (every Codable call, nothing written)"
            ) {
                guard try CodableFloor.NullEncoder.count(records) > 0 else { throw CocoaError(.coderInvalidValue) }
                return 0
            })
            decode.append(Implementation(
                "Codable floor", units: count, note: "reference: a Decoder that reads nothing and returns constants"
            ) {
                try CodableFloor.ConstantDecoder.make([Customer].self, topLevelCount: count, elementsPerArray: 2).count
            })
            encode.append(Implementation("JSONEncoder", units: peerCount, note: join(peerNote, "reference"), run: {
                let data = try JSONEncoder().encode(peerRecords)
                json.value = data
                return data.count
            }))
            decode.append(Implementation("JSONDecoder", units: peerCount, note: join(peerNote, "reference"), prepare: {
                if json.value == nil { json.value = try JSONEncoder().encode(peerRecords) }
            }) {
                try JSONDecoder().decode([Customer].self, from: json.value ?? Data()).count
            })
        }
        return [BenchmarkOperation(workload, "encode", check: .bytes, encode), BenchmarkOperation(workload, "decode", check: .objects, decode)]
    }
}

func join(_ first: String?, _ second: String) -> String { Runner.join(first, second) }
