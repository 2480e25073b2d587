#!/bin/sh
# The compile and link times behind the build settings of docs/performance.md ("CI time"): the
# build's own command lines (compile_commands.json, link.txt) with one setting changed.
#   bench/build_times.sh [BUILD_DIR]     (default build/ci; it must have been built)
# Prints the wall time of
#   - tests/unit/test_end_to_end.cpp compiled at -O3, -O1 and -O0 (the test programs' own code),
#   - runtime/solvers/GenAlpha.cpp with ASan + UBSan at -O2 -g and at -O1 -g1 (the asan preset),
#   - test_end_to_end linked with ld.bfd, GNU gold and ld.lld.
set -eu
cd "$(dirname "$0")/.."
build=$(cd "${1:-build/ci}" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# the compile command of a source file, from compile_commands.json
command_of() {
  cat >"$out/get.cmake" <<EOF
file(READ "$build/compile_commands.json" json)
string(JSON n LENGTH "\${json}")
math(EXPR last "\${n} - 1")
foreach(i RANGE \${last})
  string(JSON f GET "\${json}" \${i} file)
  string(JSON c GET "\${json}" \${i} command)
  if(f MATCHES "/$1\$" AND NOT c MATCHES "fmu_blob")
    message("\${c}")
    break()
  endif()
endforeach()
EOF
  cmake -P "$out/get.cmake" 2>&1
}

timed() {  # LABEL COMMAND: prints LABEL and the wall time of COMMAND in seconds
  t0=$(date +%s%N)
  sh -c "$2" >/dev/null 2>&1 || { echo "$1: failed"; return; }
  echo "$1: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}

test_cmd=$(command_of tests/unit/test_end_to_end.cpp | sed "s| -o [^ ]*\.o | -o $out/t.o |")
for o in -O3 -O1 -O0; do
  (cd "$build/tests" && timed "test_end_to_end.cpp at $o" "$test_cmd $o")
done
ga_cmd=$(command_of runtime/solvers/GenAlpha.cpp | sed "s| -o [^ ]*\.o | -o $out/g.o |")
san="-fsanitize=address,undefined -fno-omit-frame-pointer"
for o in "-O2 -g" "-O1 -g1"; do
  (cd "$build" && timed "GenAlpha.cpp with ASan at $o" "$ga_cmd $san $o")
done
link=$(sed "s| -o test_end_to_end | -o $out/tee |" "$build/tests/CMakeFiles/test_end_to_end.dir/link.txt")
for ld in bfd gold "lld -B/usr/lib/llvm-16/bin"; do
  (cd "$build/tests" && timed "test_end_to_end linked with ld.${ld%% *}" "$link -fuse-ld=$ld")
done
