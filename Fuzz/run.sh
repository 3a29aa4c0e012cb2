#!/usr/bin/env bash
# Builds and runs one fuzz target: Fuzz/run.sh TARGET SECONDS [extra libFuzzer flags...]
#   TARGET   binary | xml | openstep | unarchiver | codable-sample | codable-recursive
#   SANITIZERS=fuzzer,undefined Fuzz/run.sh ...   to use another sanitizer set (default fuzzer,address)
#
# Work files live in Fuzz/.build/work/TARGET/ (not committed): corpus/ (grows across runs),
# seeds/ (rebuilt each run from ../shared/corpus and the round-trip generator), artifacts/
# (crash-*, timeout-*, oom-*, leak-* inputs), last.log and history.tsv (one line per run).
# Prints executions, coverage and any finding; exits 1 when libFuzzer reported one.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
target="${1:?usage: run.sh TARGET SECONDS [libFuzzer flags]}"
seconds="${2:?usage: run.sh TARGET SECONDS [libFuzzer flags]}"
shift 2
sanitizers="${SANITIZERS:-fuzzer,address}"
shared="${SHARED_CORPUS:-$root/../shared/corpus}"

binary="$("$here/build.sh" "$target" "$sanitizers" | tail -1)" || { echo "build failed" >&2; exit 2; }
work="$here/.build/work/$target"
mkdir -p "$work/corpus" "$work/artifacts"
rm -rf "$work/seeds" "$work/convert"
mkdir -p "$work/seeds" "$work/convert"

# Seeds from the shared corpus (copied, never committed) and files to re-encode in the
# target's format, so every target starts from real-world structure.
copy() { [[ -d $shared ]] && for pattern in "$@"; do cp $shared/$pattern "$work/seeds/" 2>/dev/null; done; true; }
convert() { [[ -d $shared ]] && for pattern in "$@"; do cp $shared/$pattern "$work/convert/" 2>/dev/null; done; true; }
case "$target" in
    binary) copy 'bplist/*' 'keyed/*.bplist' 'malformed/*.bplist' 'malformed/*.bin'; convert 'xml/*' ; dict=binary ;;
    xml) copy 'xml/*' 'keyed/*.xml' 'malformed/*.xml'; convert 'bplist/*'; dict=xml ;;
    openstep) convert 'xml/*' 'bplist/*'; dict=openstep ;;
    unarchiver|codable-*) copy 'keyed/*' 'malformed/*'; dict=archive ;;
    *) echo "unknown target $target" >&2; exit 2 ;;
esac
[[ -d $shared ]] || echo "note: $shared not found; seeding from the generator only" >&2
KA_FUZZ_SEEDS="$work/seeds" KA_FUZZ_CONVERT="$work/convert" "$binary" 2>&1 | tail -1

echo "fuzzing $target for $seconds s (-sanitize=$sanitizers)"
# The Swift runtime's backtracer would race ASan's report on a crash.
# Run inside the work folder: with -jobs=N libFuzzer writes each worker's log to ./fuzz-N.log,
# and those logs (which hold the statistics) are appended to last.log below.
rm -f "$work"/fuzz-*.log
(cd "$work" && SWIFT_BACKTRACE=enable=no "$binary" "$work/corpus" "$work/seeds" \
    -dict="$here/Dictionaries/$dict.dict" -max_total_time="$seconds" -max_len="${MAX_LEN:-32768}" \
    -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" "$@") >"$work/last.log" 2>&1
status=$?
for log in "$work"/fuzz-*.log; do [[ -f $log ]] && cat "$log" >>"$work/last.log"; done

executions=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/last.log" | grep -o '[0-9]*$' | tail -1)
last=$(grep -E '^#[0-9]+' "$work/last.log" | tail -1)
cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+')
ft=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+')
corpus=$(grep -oE 'corp: [0-9]+/[0-9a-zA-Z]+' <<<"$last")
echo "target:      $target"
echo "executions:  ${executions:-?}"
echo "coverage:    cov ${cov:-?}, ft ${ft:-?}, $corpus"
echo "exit status: $status"
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$target" "$sanitizers" "$seconds" \
    "${executions:-?}" "${cov:-?}" "${ft:-?}" "$status" >>"$work/history.tsv"
awk -F'\t' '$5 ~ /^[0-9]+$/ { runs++; execs += $5 } END { printf "all runs:    %d runs, %d executions (history.tsv)\n", runs, execs }' "$work/history.tsv"
if grep -qE '^==[0-9]+==ERROR|^SUMMARY|FUZZ INVARIANT|Fatal error|deadly signal|ERROR: libFuzzer' "$work/last.log"; then
    echo "FINDING:"
    grep -E -A30 '^==[0-9]+==ERROR|FUZZ INVARIANT|Fatal error|ERROR: libFuzzer' "$work/last.log" | head -60
    ls -la "$work/artifacts"
    exit 1
fi
echo "no findings ($work/last.log)"
exit 0
