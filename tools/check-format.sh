#!/bin/sh
# Fails when a C++ source file does not follow .clang-format (clang-format from Debian 12).
#   tools/check-format.sh          check
#   tools/check-format.sh --fix    reformat in place
set -eu
cd "$(dirname "$0")/.."
files=$(find compiler runtime tools tests bench fuzz python -name '*.cpp' -o -name '*.h' | sort)
if [ "${1:-}" = "--fix" ]; then
  clang-format -i $files
else
  clang-format --dry-run --Werror $files
fi
