// The object-graph layer: keyed archiver and unarchiver. See issue 3.
@_exported import KeyedArchivePropertyList
