#!/usr/bin/env bash
# Builds one libFuzzer target: Fuzz/build.sh TARGET [SANITIZERS]
#   TARGET      binary | xml | openstep | unarchiver | codable-sample | codable-recursive
#   SANITIZERS  the -sanitize= list, default "fuzzer,address" (also tried: "fuzzer,undefined")
# Prints the path of the built executable on its last line.
#
# SwiftPM is not used: a Fuzz/ package depending on ".." would share its identity with the
# repository folder when that folder is called "fuzz", and SwiftPM renames executables' main.
# Instead each library module is compiled once per sanitizer set with plain swiftc (whole
# module, -O, coverage-instrumented) into Fuzz/.build/<sanitizers>/, and rebuilt only when one
# of its sources is newer than its object file.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
target="${1:?usage: build.sh TARGET [SANITIZERS]}"
sanitizers="${2:-fuzzer,address}"
swiftc="${SWIFTC:-swiftc}"
out="$here/.build/${sanitizers//,/-}"
mkdir -p "$out"

# The C shims are a header only (inline functions): their module map is found through -I.
flags=(-O -g -parse-as-library -swift-version 6 -sanitize="$sanitizers" -package-name keyedarchive -I "$out"
       -I "$root/Sources/CKeyedArchiveShims/include"
       -Xcc -Wno-unused-command-line-argument)

# Modules in dependency order; every target links them all (the seed generator needs the
# umbrella module, and unused code costs nothing at run time).
modules=(KeyedArchivePropertyList KeyedArchiveGraph KeyedArchiveCodable KeyedArchivePreferences KeyedArchive KeyedArchiveSample)
objects=()
stale=0
# The C shims' header is compiled into every module that imports it (KeyedArchivePropertyList,
# KeyedArchiveGraph, KeyedArchiveCodable): a change to it rebuilds them all.
if [[ -f "$out/KeyedArchivePropertyList.o" && -n "$(find "$root/Sources/CKeyedArchiveShims" -newer "$out/KeyedArchivePropertyList.o" | head -1)" ]]; then stale=1; fi
for module in "${modules[@]}"; do
    mapfile -t sources < <(find "$root/Sources/$module" -name '*.swift' | sort)
    object="$out/$module.o"
    if [[ $stale == 1 || ! -f $object || ! -f "$out/$module.swiftmodule" ]] || [[ -n "$(find "$root/Sources/$module" -name '*.swift' -newer "$object" | head -1)" ]]; then
        stale=1  # later modules depend on this one's interface
        echo "compiling $module (${#sources[@]} files, -sanitize=$sanitizers)" >&2
        "$swiftc" "${flags[@]}" -module-name "$module" -wmo -c -emit-module \
            -emit-module-path "$out/$module.swiftmodule" "${sources[@]}" -o "$object" 2> >(grep -v 'warning: Cannot export local symbol' >&2)
    fi
    objects+=("$object")
done

# The seed generator reuses the tests' random property lists.
support=("$root/Tests/TestSupport/SeededGenerator.swift" "$root/Tests/TestSupport/RandomPropertyList.swift")
entry="$here/Targets/$target.swift"
[[ -f $entry ]] || { echo "no such target: $entry" >&2; exit 2; }
binary="$out/fuzz-$target"
echo "linking $binary" >&2
"$swiftc" "${flags[@]}" -module-name "Fuzz_${target//-/_}" "$entry" "$here"/Common/*.swift "${support[@]}" "${objects[@]}" \
    -o "$binary" 2> >(grep -v 'warning: Cannot export local symbol' >&2)
echo "$binary"
