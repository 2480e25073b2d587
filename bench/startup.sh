#!/bin/sh
# Time from process start until the pendulum's kernels are ready: the wall time of
# `mbsc examples/pendulum.mbs` (read, parse, flatten, DAE, kernels, LLVM JIT, the start-value
# check, then exit), measured from outside the process, over N runs; prints min and median,
# once without the object cache (a first compilation) and once with it (a model compiled again).
#   bench/startup.sh [build/release/mbsc] [N]
set -eu
cd "$(dirname "$0")/.."
mbsc=${1:-build/release/mbsc}
n=${2:-30}
measure() {
  label=$1
  shift
  "$mbsc" examples/pendulum.mbs "$@" >/dev/null 2>&1
  i=0
  : > /tmp/mbs_startup_times
  while [ $i -lt $n ]; do
    t0=$(date +%s%N)
    "$mbsc" examples/pendulum.mbs "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000 )) >> /tmp/mbs_startup_times
    i=$((i + 1))
  done
  sort -n /tmp/mbs_startup_times | awk -v how="$label" '{a[NR]=$1} END {printf "mbsc examples/pendulum.mbs %s: min %.1f ms, median %.1f ms over %d runs\n", how, a[1]/1000, a[int((NR+1)/2)]/1000, NR}'
}
measure "(no object cache)" --no-cache
measure "(object cache)"
