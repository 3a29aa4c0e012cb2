/// A `Codable` model saved to and loaded from a keyed-archive file with no hand-written coding
/// (the MFDynamicStorage model, in Swift).
///
/// ```swift
/// struct Profile: Codable, ArchiveStorable { var name: String; var slider: Float }
/// try profile.write(to: url)                 // atomic: temp file, fsync, rename, fsync dir
/// let restored = try Profile(contentsOf: url)
/// ```
///
/// Writes are atomic: a reader (or a crash at any instant) sees the old file or the new one,
/// never a mix. The archive is an ordinary NSKeyedArchiver file (see Docs/CodableBridge.md).
/// File-system failures throw ``FileAccessError``.
public protocol ArchiveStorable: Codable {}

extension ArchiveStorable {
    /// Archives the model and replaces the file at `url` atomically.
    public func write(to url: URL, encoder: KeyedArchiveEncoder = KeyedArchiveEncoder()) throws {
        let data = try encoder.encode(self)
        try AtomicFile.write(data, to: url.path)
    }

    /// Loads a model archived with ``write(to:encoder:)`` (or any keyed archive of it).
    public init(contentsOf url: URL, decoder: KeyedArchiveDecoder = KeyedArchiveDecoder()) throws {
        let data = try AtomicFile.read(url.path, limit: decoder.limits.maximumDataLength)
        self = try decoder.decode(Self.self, from: data)
    }
}
