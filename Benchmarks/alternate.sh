#!/usr/bin/env bash
# A/B (or A/B/C...) comparison of harness builds in alternating `--profile` rounds.
#
#   Benchmarks/alternate.sh [--rounds N] [--default-heap] PROFILE BINARY_A BINARY_B [BINARY...]
#
# Each round runs every binary once, in the order given, as `BINARY --profile PROFILE` (see the
# harness's --help; e.g. "W2:acyclic archive:4:KeyedArchive Codable"), and records the time per
# run each implementation's loop reports. Alternating rounds make the machine's drift hit every
# build alike (Docs/Performance.md, "Measurement lessons"); use 10 rounds or more, 20-30 for a
# step of a few percent. Then, per binary and implementation: the rounds, and the fastest, first
# quartile, median and slowest time per run, in milliseconds; with two binaries, the ratio of
# the medians (second / first) and in how many rounds the second was faster.
#
# By default glibc keeps freed memory in the process (trim threshold 256 MiB, mapping threshold
# 32 MiB), as the A/B figures in Docs/ since session 50 were taken ("raised thresholds"), so that
# the host's handling of returned pages does not decide the comparison; --default-heap leaves
# glibc's defaults (what a fresh process of a user sees).
#
# Binaries are copies of Benchmarks/.build/release/KeyedArchiveBenchmarks built from each side
# (from empty build directories: see "Measurement lessons"). They run from this directory, so
# that the generated inputs in Benchmarks/.cache are shared.
set -euo pipefail

rounds=10
tunables="glibc.malloc.trim_threshold=268435456:glibc.malloc.mmap_threshold=33554432"
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="${2:?--rounds needs a count}"; shift 2 ;;
    --default-heap) tunables=""; shift ;;
    --) shift; break ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 2 ] || ! [[ "$rounds" =~ ^[1-9][0-9]*$ ]]; then
  sed -n '2,4p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
profile="$1"; shift
binaries=()
for binary in "$@"; do
  [ -f "$binary" ] && [ -x "$binary" ] || { echo "not an executable: $binary" >&2; exit 2; }
  binaries+=("$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")")
done

cd "$(dirname "$0")"
if [ -n "$tunables" ]; then environment=(env "GLIBC_TUNABLES=$tunables"); else environment=(env -u GLIBC_TUNABLES); fi
times="$(mktemp)"
trap 'rm -f "$times"' EXIT
for round in $(seq 1 "$rounds"); do
  for index in "${!binaries[@]}"; do
    output="$("${environment[@]}" "${binaries[$index]}" --profile "$profile" 2>&1)" || { echo "$output" >&2; exit 1; }
    # "<implementation>: <runs> runs, <seconds> seconds each", one line per implementation.
    lines="$(printf '%s\n' "$output" | sed -n 's/^\(.*\): [0-9][0-9]* runs, \([0-9.e+-]*\) seconds each$/\1\t\2/p')"
    [ -n "$lines" ] || { echo "no timing in the output of ${binaries[$index]}:" >&2; echo "$output" >&2; exit 1; }
    printf '%s\n' "$lines" | awk -F '\t' -v b="$index" -v r="$round" '{ printf "%s\t%s\t%s\t%.6f\n", b, $1, r, $2 * 1000 }' >> "$times"
  done
done

awk -F '\t' -v count="${#binaries[@]}" -v names="$(printf '%s\n' "${binaries[@]}" | tr '\n' '\t')" '
  function sortv(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
  function median(a, n) { return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  BEGIN { split(names, path, "\t") }
  {
    key = $1 "\t" $2
    if (!(key in n)) { keys[++nkeys] = key }
    n[key]++; v[key, n[key]] = $4; at[$1, $2, $3] = $4; impls[$2] = 1
  }
  END {
    for (k = 1; k <= nkeys; k++) {
      key = keys[k]; m = n[key]
      for (i = 1; i <= m; i++) s[i] = v[key, i]
      sortv(s, m)
      split(key, part, "\t")
      med[key] = median(s, m)
      printf "%s  %s  rounds %d  min %.4g  q1 %.4g  median %.4g  max %.4g ms\n", path[part[1] + 1], part[2], m, s[1], s[int((m + 3) / 4)], med[key], s[m]
    }
    if (count == 2) {
      for (impl in impls) {
        a = "0\t" impl; b = "1\t" impl
        if (!(a in med) || !(b in med) || med[a] == 0) continue
        faster = 0; rounds = 0
        for (r = 1; (0, impl, r) in at; r++) if ((1, impl, r) in at) { rounds++; if (at[1, impl, r] < at[0, impl, r]) faster++ }
        printf "%s: second / first median %.3f, second faster in %d of %d rounds\n", impl, med[b] / med[a], faster, rounds
      }
    }
  }' "$times"
