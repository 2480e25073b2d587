#!/bin/sh
# Compile time and gen-alpha steps per second of the N-link chain (examples/mechanics/chain.mbs)
# against N (docs/performance.md, "The N-link chain against N"): for each N, a compile without
# the cache (mbsc -v: the passes and the whole compile) and a run of STEPS steps at h = 1e-3 with
# the output off (mbsc -v: the run time), then the log-log slopes between consecutive N.
#   bench/chain_scaling.sh [build/release/mbsc] [STEPS] [N ...]   (default: 2000; 10 100 1000)
set -eu
cd "$(dirname "$0")/.."
mbsc=${1:-build/release/mbsc}
steps=${2:-2000}
shift 2 2>/dev/null || shift $#
[ $# -eq 0 ] && set -- 10 100 1000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t_end=$(awk "BEGIN { print $steps * 1e-3 }")
echo "N,compile_ms,run_ms,steps_per_s"
for n in "$@"; do
  "$mbsc" examples/mechanics/chain.mbs --set N="$n" --no-cache -v --simulate --t-end "$t_end" \
    --step 1e-3 --output-every 0 --output "$tmp/out.csv" -q 2> "$tmp/log" || { cat "$tmp/log"; exit 1; }
  # "mbsc: compile 435.4 ms, run 114.5 ms; ..."
  line=$(grep "^mbsc: compile [0-9]" "$tmp/log")
  c=$(echo "$line" | sed 's/.*compile \([0-9.]*\) ms.*/\1/')
  r=$(echo "$line" | sed 's/.*run \([0-9.]*\) ms.*/\1/')
  echo "$n,$c,$r,$(awk "BEGIN { printf \"%.0f\", $steps / ($r / 1000) }")"
done | tee "$tmp/table"
awk -F, 'NR > 1 { printf "slope %s -> %s: compile %.2f, time per step %.2f\n", n0, $1,
                  log($2 / c0) / log($1 / n0), log($3 / r0) / log($1 / n0) }
         { n0 = $1; c0 = $2; r0 = $3 }' "$tmp/table"
