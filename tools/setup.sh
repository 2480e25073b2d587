#!/bin/sh
# One-step set-up for a fresh Debian 12 machine (run as root, or as a user with sudo).
#   tools/setup.sh example   install what is missing, build, simulate examples/pendulum.mbs
#   tools/setup.sh test      install what is missing, build with warnings as errors, run every
#                            test, then build and run the test suite under ASan + UBSan, then
#                            fuzz the compiler for a minute (fuzz/run.sh 60)
#   tools/setup.sh test-fast the first part of `test` only (no ASan, no fuzzing)
# Both can be run again at any time; they only redo what changed.
set -eu
cd "$(dirname "$0")/.."
what=${1:-}
case "$what" in
  example|test|test-fast) ;;
  *) echo "usage: tools/setup.sh example|test|test-fast" >&2; exit 2 ;;
esac

case "$what" in
  example) tools/install-deps.sh example ;;
  *) tools/install-deps.sh all ;;
esac

jobs=$(nproc 2>/dev/null || echo 2)
case "$what" in
  example)
    # only what a run needs: mbsc (with the FMU runtime), its man page and completion; the
    # tests and benchmarks are built by `test` (docs/install.md)
    cmake --preset release >/dev/null
    cmake --build --preset release -j "$jobs" --target mbsc mbsc_docs
    mkdir -p build/examples
    out=build/examples/pendulum.csv
    build/release/mbsc examples/pendulum.mbs --simulate --t-end 2 --step 1e-3 --output "$out"
    echo "setup: the results of examples/pendulum.mbs are in $(pwd)/$out"
    ;;
  test|test-fast)
    # each stage prints its wall time (docs/performance.md, "CI time")
    start=$(date +%s)
    stage() {
      t0=$(date +%s)
      "$@"
      echo "setup: stage '$*' took $(($(date +%s) - t0)) s ($(($(date +%s) - start)) s in all)"
    }
    cmake --preset ci >/dev/null
    stage cmake --build --preset ci -j "$jobs"
    stage ctest --preset ci -j "$jobs"
    if [ "$what" = test ]; then
      cmake --preset asan >/dev/null
      stage cmake --build --preset asan -j "$jobs"
      stage ctest --preset asan -j "$jobs"
      stage fuzz/run.sh 60
    fi
    echo "setup: all tests passed"
    ;;
esac
