import KeyedArchive
print("karchive: not implemented yet")
