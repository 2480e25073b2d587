#!/bin/sh
# Builds the libFuzzer targets (the `fuzz` preset: clang 14, ASan + UBSan) and fuzzes each of
# them for a share of the time; see docs/diagnostics.md, "Fuzzing".
#   fuzz/run.sh [SECONDS] [TARGET...]    SECONDS of wall-clock time in all (default 60),
#                                        TARGETs among parse flatten dae pipeline (default all)
# Two targets run at a time (FUZZ_JOBS=1 for one), each for SECONDS * FUZZ_JOBS / #targets.
# The corpus each target grows stays in build/fuzz/corpus/<target>/ for the next run; the seeds
# (examples, stdlib, tests/diagnostics, fuzz/seeds, fuzz/regressions) are copied to
# build/fuzz/seeds/.
# Anything found (crash-*, leak-*, timeout-*, oom-* files) lands in build/fuzz/crashes/<target>/
# and makes the script fail; the log of each target is build/fuzz/logs/<target>.log.
# Extra libFuzzer flags: FUZZ_FLAGS="-only_ascii=1 ...".
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-parse flatten dae pipeline}
jobs=${FUZZ_JOBS:-2}
case "$jobs" in 1|2) ;; *) echo "fuzz/run.sh: FUZZ_JOBS must be 1 or 2" >&2; exit 2 ;; esac

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz

out=build/fuzz
rm -rf "$out/seeds"
mkdir -p "$out/seeds" "$out/logs"
for f in examples/*.mbs examples/*/*.mbs stdlib/*.mbs tests/diagnostics/*.mbs fuzz/seeds/*.mbs fuzz/regressions/*/*; do
  [ -f "$f" ] && cp "$f" "$out/seeds/$(echo "$f" | tr / _)"
done

n=$(echo $targets | wc -w)
share=$((seconds * jobs / n))
[ "$share" -lt 1 ] && share=1
echo "fuzz: $targets for ${share} s each, $jobs at a time"

status=0
run_one() {
  t=$1
  mkdir -p "$out/corpus/$t" "$out/crashes/$t"
  # -timeout: no input may take longer (10 s under the sanitizers); -rss_limit_mb also limits
  # single allocations; -max_len: larger than every seed but
  # tests/diagnostics/fail_expression_too_long.mbs (which libFuzzer truncates)
  # shellcheck disable=SC2086
  "$out/fuzz/fuzz_$t" "$out/corpus/$t" "$out/seeds" -dict=fuzz/mbs.dict \
    -max_total_time="$share" -timeout=10 -rss_limit_mb=2048 -max_len=20000 \
    -artifact_prefix="$out/crashes/$t/" -print_final_stats=1 ${FUZZ_FLAGS:-} \
    >"$out/logs/$t.log" 2>&1
}
report() {
  t=$1
  code=$2
  if [ "$code" -ne 0 ]; then
    status=1
    echo "fuzz: $t FAILED (exit $code); the end of $out/logs/$t.log:"
    tail -n 40 "$out/logs/$t.log"
    ls "$out/crashes/$t"
  else
    echo "fuzz: $t ok, $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out/logs/$t.log" |
      grep -o '[0-9]*$') inputs, corpus $(ls "$out/corpus/$t" | wc -l) files"
  fi
}

set -- $targets
while [ $# -gt 0 ]; do
  a=$1
  shift
  if [ "$jobs" -eq 2 ] && [ $# -gt 0 ]; then
    b=$1
    shift
    code_a=0
    code_b=0
    run_one "$a" &
    pid_a=$!
    run_one "$b" &
    pid_b=$!
    wait "$pid_a" || code_a=$?
    wait "$pid_b" || code_b=$?
    report "$a" "$code_a"
    report "$b" "$code_b"
  else
    code_a=0
    run_one "$a" || code_a=$?
    report "$a" "$code_a"
  fi
done
if [ "$status" -ne 0 ]; then
  echo "fuzz: findings in $out/crashes/ (docs/diagnostics.md, \"Fuzzing\", says what to do)"
  exit 1
fi
echo "fuzz: nothing found"
