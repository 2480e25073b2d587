#!/bin/sh
# Installs the Debian packages listed in tools/deps.txt that are not installed yet:
#   tools/install-deps.sh [all]    every package
#   tools/install-deps.sh example  those above the "---- test" line (building and running mbsc)
# Safe to run again: when everything is present it does nothing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
which=${1:-all}
case "$which" in
  all) list=$(grep -v '^#' "$here/deps.txt" | grep -v '^$') ;;
  example) list=$(sed '/^# ---- test/,$d' "$here/deps.txt" | grep -v '^#' | grep -v '^$') ;;
  *) echo "usage: tools/install-deps.sh [all|example]" >&2; exit 2 ;;
esac
missing=""
for pkg in $list; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $pkg"
  fi
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing$missing"
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
