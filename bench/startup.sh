#!/bin/sh
# Time from process start until a model's kernels are ready: the wall time of `mbsc MODEL [ARGS]`
# (compile, the start-value check, then exit), measured from outside the process over N runs;
# prints min and median in four cases:
#   no cache      a first compilation (--no-cache)
#   empty cache   a first compilation that fills an empty cache (issue 14's "cold")
#   object cache  the kernels' object files cached, every pass before code generation run
#                 (the model cache entries are deleted before each run)
#   model cache   the whole model cached (compiler/driver/ModelCache.h): no pass runs
#   bench/startup.sh [build/release/mbsc] [N] [MODEL [ARGS...]]   (default: examples/pendulum.mbs)
set -eu
cd "$(dirname "$0")/.."
mbsc=${1:-build/release/mbsc}
n=${2:-30}
shift 2 2>/dev/null || shift $#
[ $# -eq 0 ] && set -- examples/pendulum.mbs
cache=$(mktemp -d)
times=$(mktemp)
trap 'rm -rf "$cache" "$times"' EXIT
measure() {
  label=$1
  shift
  MBS_CACHE_DIR=$cache "$mbsc" "$@" >/dev/null 2>&1
  i=0
  : > "$times"
  while [ $i -lt $n ]; do
    [ "$label" = "object cache" ] && rm -f "$cache"/*.model
    [ "$label" = "empty cache" ] && rm -rf "${cache:?}"/*
    t0=$(date +%s%N)
    MBS_CACHE_DIR=$cache "$mbsc" "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000 )) >> "$times"
    i=$((i + 1))
  done
  sort -n "$times" | awk -v how="$label" -v what="$*" '{a[NR]=$1} END {printf "mbsc %s (%s): min %.1f ms, median %.1f ms over %d runs\n", what, how, a[1]/1000, a[int((NR+1)/2)]/1000, NR}'
}
measure "no cache" --no-cache "$@"
measure "empty cache" "$@"
measure "object cache" "$@"
measure "model cache" "$@"
