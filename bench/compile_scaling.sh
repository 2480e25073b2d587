#!/bin/sh
# Compile time and symbolic work against model size (docs/performance.md, "Compile time against
# model size"): for each n, a chain of first-order equations der(x[i]) = x[i-1] - x[i] compiled
# without the cache; prints each pass's time and expression nodes (mbsc -v) and the peak memory.
#   bench/compile_scaling.sh [build/release/mbsc] [N ...]      (default: 1000 10000 100000)
set -eu
cd "$(dirname "$0")/.."
mbsc=${1:-build/release/mbsc}
shift 2>/dev/null || true
[ $# -eq 0 ] && set -- 1000 10000 100000
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in "$@"; do
  cat > "$tmp/chain.mbs" <<MODEL
model OdeChain
  parameter Integer n = $n;
  Real x[n](each start = 1);
equation
  der(x[1]) = -x[1];
  for i in 2:n loop
    der(x[i]) = x[i-1] - x[i];
  end for;
end OdeChain;
MODEL
  echo "n = $n"
  /usr/bin/time -f "  peak memory %M KB, wall %e s" "$mbsc" "$tmp/chain.mbs" --no-cache -v 2>&1 |
    grep -E "pass|peak" | sed 's/^mbsc: /  /'
done
