#!/bin/sh
# FMU export (docs/performance.md, "FMU export"):
#   export time   wall time of `mbsc MODEL --fmu FILE` over N runs (min and median), without the
#                 cache (--no-cache: compile, link, archive) and with it (the model cache skips
#                 the compiler; the kernels for x86-64 are cached like any others)
#   throughput    co-simulation steps per second of the exported FMU in the project's importer
#                 (tests/tools/fmu_importer.c: FMI 2.0 doStep with the communication step equal to
#                 the solver step and GetReal of the FMU's outputs at every step; rows written
#                 only at the start and the end) against `mbsc --simulate --output-every 0` of the
#                 same model (its run time: the solver's steps, the first and the last row)
#   bench/fmu.sh [BUILD_DIR] [N]      (default build/release, 10); needs unzip
set -eu
cd "$(dirname "$0")/.."
build=${1:-build/release}
n=${2:-10}
mbsc=$build/mbsc
importer=$build/tests/fmu_importer
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MBS_CACHE_DIR=$tmp/cache

export_time() {
  label=$1
  shift
  "$mbsc" "$@" --fmu "$tmp/x.fmu" >/dev/null 2>&1
  i=0
  : > "$tmp/times"
  while [ $i -lt $n ]; do
    t0=$(date +%s%N)
    "$mbsc" "$@" --fmu "$tmp/x.fmu" >/dev/null 2>&1
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000 )) >> "$tmp/times"
    i=$((i + 1))
  done
  sort -n "$tmp/times" | awk -v how="$label" -v what="$*" '{a[NR]=$1} END {printf "export %s (%s): min %.1f ms, median %.1f ms over %d runs\n", what, how, a[1]/1000, a[int((NR+1)/2)]/1000, NR}'
}

for model in examples/fmu/pendulum.mbs examples/fmu/hanging_chain.mbs examples/fmu/four_bar.mbs \
             examples/fmu/slider_crank.mbs; do
  [ -f "$model" ] || continue
  export_time "no cache" "$model" --no-cache
  export_time "cached" "$model"
done
export_time "no cache" examples/fmu/pendulum.mbs --fmu-type both --fmi-version 3 --no-cache

throughput() {
  model=$1 t_end=$2 h=$3
  rm -rf "$tmp/u"
  "$mbsc" "$model" --fmu "$tmp/t.fmu" --t-end "$t_end" --step "$h" >/dev/null 2>&1
  unzip -q -o "$tmp/t.fmu" -d "$tmp/u"
  so=$(ls "$tmp"/u/binaries/linux64/*.so)
  token=$(grep -o 'guid="[^"]*"' "$tmp/u/modelDescription.xml" | head -1 | cut -d'"' -f2)
  vrs=$(grep 'causality="output"' "$tmp/u/modelDescription.xml" |
        grep -o 'valueReference="[0-9]*"' | cut -d'"' -f2 | sed 's/^/--vr /' | tr '\n' ' ')
  best_fmu=999999
  best_mbsc=999999
  i=0
  while [ $i -lt 3 ]; do
    # shellcheck disable=SC2086
    f=$("$importer" "$so" 2 cs "$token" "$t_end" "$h" "$tmp/o.csv" $vrs --time --no-rows 2>/dev/null |
        awk '/^loop/ {printf "%d", $5 * 1e6}')
    m=$("$mbsc" "$model" --simulate --t-end "$t_end" --step "$h" --output "$tmp/r.csv" --output-every 0 -v 2>&1 |
        awk '/run .* ms/ {for (k = 1; k <= NF; ++k) if ($k == "run") {printf "%d", $(k+1) * 1000}}')
    [ "$f" -lt "$best_fmu" ] && best_fmu=$f
    [ "$m" -lt "$best_mbsc" ] && best_mbsc=$m
    i=$((i + 1))
  done
  steps=$(awk -v t="$t_end" -v h="$h" 'BEGIN {printf "%d", t / h + 0.5}')
  awk -v what="$model" -v s="$steps" -v f="$best_fmu" -v m="$best_mbsc" 'BEGIN {
    printf "throughput %s, %d steps: FMU %.0f steps/s (%.1f ms), mbsc --simulate %.0f steps/s (%.1f ms), FMU/mbsc %.2f\n",
      what, s, s / (f / 1e6), f / 1e3, s / (m / 1e6), m / 1e3, m / f }'
}
throughput examples/fmu/pendulum.mbs 200 1e-3
throughput examples/fmu/hanging_chain.mbs 50 1e-3
throughput examples/fmu/four_bar.mbs 50 1e-3
[ -f examples/fmu/slider_crank.mbs ] && throughput examples/fmu/slider_crank.mbs 50 1e-3
exit 0
