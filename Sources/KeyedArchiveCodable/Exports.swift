// The Codable bridge (issue 4): Codable values in and out of NSKeyedArchiver-format archives.
// See Docs/CodableBridge.md for the representation.
@_exported import KeyedArchiveGraph
