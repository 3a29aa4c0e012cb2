// The object-graph layer: NSKeyedArchiver-compatible archives (see Docs/KeyedArchiveFormat.md).
@_exported import KeyedArchivePropertyList
