#!/bin/sh
# The heavy top (examples/mechanics/heavy_top*.mbs) with the rotation integrated as a Lie group
# (lie_group = true: dopri5, ode23, rk4, gen-alpha) against the quaternion form (gen-alpha), to
# T_END with the output off: steps, run time, steps per second and the error at T_END against a
# reference (the Lie form with rk4 at h = 1e-5; the rk4 runs of tests/unit/
# test_mechanics_lie_group.cpp agree with an independent integration of Euler's equations): the
# largest deviation of the rotation matrix s.R and of s.w / spin (docs/performance.md, "Rotations
# as a Lie group"). Times are the best of RUNS runs (mbsc -v: the run time, compile excluded).
#   bench/heavy_top_lie.sh [build/release/mbsc] [RUNS] [T_END]   (defaults 5, 10 s)
set -eu
cd "$(dirname "$0")/.."
mbsc=${1:-build/release/mbsc}
runs=${2:-5}
t_end=${3:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lie=examples/mechanics/heavy_top_lie_group.mbs
quat=examples/mechanics/heavy_top.mbs
# the last row of a result file as name=value lines
last_row() {
  # (a quoted header name such as "s.R[1,1]" holds a comma: its parts are joined again)
  awk -F, 'NR == 1 { n = 0
                     for (i = 1; i <= NF; ++i) {
                       f = $i
                       if (f ~ /^"/) while (f !~ /"$/ && i < NF) f = f "," $(++i)
                       gsub(/"/, "", f); name[++n] = f } }
           NR > 1 { for (i = 1; i <= NF; ++i) value[i] = $i }
           END { for (i = 1; i <= n; ++i) print name[i] "=" value[i] }' "$1"
}
"$mbsc" "$lie" --simulate --t-end "$t_end" --step 1e-5 --solver rk4 --output-every 0 \
  --output "$tmp/ref.csv" -q
last_row "$tmp/ref.csv" > "$tmp/ref"
echo "form,solver,options,steps,factorizations,run_ms,steps_per_s,error"
run() {  # form model solver options...
  form=$1 model=$2 solver=$3
  shift 3
  best=
  for k in $(seq "$runs"); do
    "$mbsc" "$model" --simulate --t-end "$t_end" --solver "$solver" "$@" --output-every 0 \
      --output "$tmp/out.csv" -v -q 2> "$tmp/log" || { cat "$tmp/log"; exit 1; }
    r=$(sed -n 's/^mbsc: compile [0-9.]* ms, run \([0-9.]*\) ms.*/\1/p' "$tmp/log")
    best=$(awk "BEGIN { b = \"$best\"; print (b == \"\" || $r < b) ? $r : b }")
  done
  steps=$(sed -n 's/^  steps  *\([0-9]*\)$/\1/p' "$tmp/log")
  fact=$(sed -n 's/^  factorizations  *\([0-9]*\)$/\1/p' "$tmp/log")
  last_row "$tmp/out.csv" > "$tmp/row"
  err=$(awk -F= 'NR == FNR { ref[$1] = $2; next }
                 $1 ~ /^s\.R\[/ { d = $2 - ref[$1]; if (d < 0) d = -d; if (d > e) e = d }
                 $1 ~ /^s\.w\[/ { d = ($2 - ref[$1]) / 50; if (d < 0) d = -d; if (d > e) e = d }
                 END { printf "%.2e", e }' "$tmp/ref" "$tmp/row")
  echo "$form,$solver,$*,$steps,$fact,$best,$(awk "BEGIN { printf \"%.0f\", $steps / ($best / 1000) }"),$err"
}
run quaternion "$quat" gen-alpha --step 1e-3
run quaternion "$quat" gen-alpha --step 1e-4
run lie "$lie" gen-alpha --step 1e-3
run lie "$lie" gen-alpha --step 1e-4
run lie "$lie" rk4 --step 1e-3
run lie "$lie" rk4 --step 1e-2
run lie "$lie" dopri5 --step 1e-3 --h-max 0.1 --rtol 1e-6 --atol 1e-8
run lie "$lie" dopri5 --step 1e-3 --h-max 0.1 --rtol 1e-8 --atol 1e-10
run lie "$lie" dopri5 --step 1e-3 --h-max 0.1 --rtol 1e-10 --atol 1e-12
run lie "$lie" ode23 --step 1e-3 --h-max 0.1 --rtol 1e-6 --atol 1e-8
