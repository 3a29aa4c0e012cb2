# Generates the hand-built regression inputs in this folder (run from Tests/Fixtures).
# Inputs found by the fuzzers are copied here as they are and listed in expectations.tsv.
import struct
def bplist(objects, refsize=2, offsize=2):
    out = bytearray(b"bplist00"); offs = []
    for o in objects: offs.append(len(out)); out += o
    table = len(out)
    for o in offs: out += o.to_bytes(offsize, "big")
    out += bytes(6) + bytes([offsize, refsize]) + struct.pack(">QQQ", len(objects), 0, table)
    return bytes(out)
def count(marker, n):
    return bytes([marker | 0xF, 0x11]) + struct.pack(">H", n) if n >= 15 else bytes([marker | n])
# 128 x 128 x 128 references to one 1,000-byte data value: 2,097,152 uses (2 GB) from 1.8 KB,
# under the 33,554,432-value limit.
fan = 128
objs = [count(0xA0, fan) + struct.pack(">H", i + 1) * fan for i in range(3)]
objs.append(count(0x40, 1000) + b"x" * 1000)
open("binary/expansion-bytes-bomb.bplist", "wb").write(bplist(objs))
# 1,000 offset-table entries all pointing at the one-byte object `true`.
out = bytearray(b"bplist00\x09"); table = len(out)
out += b"\x08" * 1000
out += bytes(6) + bytes([1, 2]) + struct.pack(">QQQ", 1000, 0, table)
open("binary/shared-offsets.bplist", "wb").write(out)

# A keyed archive (XML) whose root NSArray holds 128 references to an NSArray holding 128
# references to ... a 10,000-character NSString: 128^3 uses, 20 GB once resolved.
s = "y" * 10000
objects = ['<string>$null</string>']
def uid(n): return f'<dict><key>CF$UID</key><integer>{n}</integer></dict>'
# 1,2,3: arrays; 4: string; 5: class
for i in range(3):
    objects.append('<dict><key>$class</key>' + uid(5) + '<key>NS.objects</key><array>' + uid(i + 2) * 128 + '</array></dict>')
objects.append(f'<string>{s}</string>')
objects.append('<dict><key>$classname</key><string>NSArray</string><key>$classes</key><array><string>NSArray</string><string>NSObject</string></array></dict>')
xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><dict><key>$archiver</key><string>NSKeyedArchiver</string>'
       '<key>$version</key><integer>100000</integer><key>$top</key><dict><key>root</key>' + uid(1) + '</dict>'
       '<key>$objects</key><array>' + ''.join(objects) + '</array></dict></plist>\n')
open("unarchiver/expansion-bytes-bomb.xml", "w").write(xml)

# For the Codable decoder ([[String]]): a root NSArray of 256 references to an NSArray of 256
# references to one 20,000-character string: 1.3 GB of strings once expanded, from 22 KB.
import plistlib
arrays = {"$classname": "NSArray", "$classes": ["NSArray", "NSObject"]}
archive = {
    "$archiver": "NSKeyedArchiver", "$version": 100000, "$top": {"root": plistlib.UID(1)},
    "$objects": ["$null",
                 {"$class": plistlib.UID(4), "NS.objects": [plistlib.UID(2)] * 256},
                 {"$class": plistlib.UID(4), "NS.objects": [plistlib.UID(3)] * 256},
                 "q" * 20000, arrays],
}
import os
os.makedirs("codable", exist_ok=True)
open("codable/shared-strings-bomb.bplist", "wb").write(plistlib.dumps(archive, fmt=plistlib.FMT_BINARY, sort_keys=False))
