// `import KeyedArchive` gives every layer: property lists, keyed archives, the Codable bridge and
// the preferences store.
@_exported import KeyedArchivePropertyList
@_exported import KeyedArchiveGraph
@_exported import KeyedArchiveCodable
@_exported import KeyedArchivePreferences
