// The preferences store. See issue 5.
@_exported import KeyedArchiveCodable
