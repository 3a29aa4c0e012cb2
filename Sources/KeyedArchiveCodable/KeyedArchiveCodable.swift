// The Codable bridge. See issue 4.
@_exported import KeyedArchiveGraph
