#!/bin/sh
# An installed mbs runs on its own (issue 37, docs/install.md): installs the build into a
# temporary prefix (`prefix`) or builds the Debian package and unpacks it (`deb`), checks that no
# installed file names the source or build tree, then, with both trees out of reach (a private
# mount namespace lays an empty tmpfs over them; as root), runs every example, a study file and an
# FMU export from the installed files, and runs the exported FMU with the project's importer.
#
#   tests/install/check.sh prefix|deb BUILD_DIR SOURCE_DIR FMU_IMPORTER
set -eu
mode=$1
build=$(cd "$2" && pwd -P)
src=$(cd "$3" && pwd -P)
importer=$4
work=$(mktemp -d /tmp/mbs-install-check.XXXXXX)
trap 'rm -rf "$work"' EXIT INT TERM
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

case $mode in
  prefix)
    cmake --install "$build" --prefix "$work/root/opt/mbs" >"$work/install.log" ||
      fail "cmake --install: $(cat "$work/install.log")"
    prefix=$work/root/opt/mbs
    ;;
  deb)
    (cd "$build" && cpack -G DEB -B "$work/pkg") >"$work/cpack.log" 2>&1 ||
      fail "cpack -G DEB: $(cat "$work/cpack.log")"
    version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
    deb=$work/pkg/mbs_${version}_amd64.deb
    [ -f "$deb" ] || fail "cpack wrote no $deb: $(ls "$work/pkg")"
    dpkg-deb --info "$deb" >"$work/info"
    for field in "Package: mbs" "Version: $version" "Architecture: amd64"; do
      grep -q "^ $field\$" "$work/info" || fail "the package's control file lacks '$field'"
    done
    depends=$(dpkg-deb --field "$deb" Depends)
    # the shared libraries mbsc links, as Debian packages (dpkg-shlibdeps)
    for lib in libc6 libstdc++6 libllvm16 libzip4 libnlopt; do
      echo "$depends" | grep -q "$lib" || fail "Depends lacks $lib: $depends"
    done
    # the Python module, when the package has it, needs the interpreter it was built for, and numpy
    if dpkg-deb --contents "$deb" | grep -q 'dist-packages/mbs/_mbs'; then
      for pkg in "python3 (>= " "python3 (<< " python3-numpy; do
        echo "$depends" | grep -qF "$pkg" || fail "Depends lacks '$pkg' for the Python module: $depends"
      done
    fi
    # each dependency is a package this machine has (so apt can satisfy it on Debian 12)
    n=0
    for pkg in $(echo "$depends" | tr ',' '\n' | sed 's/^ *//; s/[ (].*//'); do
      n=$((n + 1))
      dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
        fail "the dependency $pkg is not an installed package"
    done
    [ "$n" -ge 5 ] || fail "only $n dependencies read from: $depends"
    if [ "$(id -u)" = 0 ]; then
      # dpkg's own check of the dependencies, without installing anything
      dpkg --no-act --install "$deb" >"$work/dpkg.log" 2>&1 || fail "dpkg: $(cat "$work/dpkg.log")"
    fi
    dpkg-deb --extract "$deb" "$work/root"
    prefix=$work/root/usr
    ;;
  *)
    echo "usage: tests/install/check.sh prefix|deb BUILD_DIR SOURCE_DIR FMU_IMPORTER" >&2
    exit 2
    ;;
esac

for f in bin/mbsc lib/mbs/mbs_fmu_runtime.o share/mbs/stdlib/Mechanics.mbs share/man/man1/mbsc.1 \
  share/bash-completion/completions/mbsc share/doc/mbs/README.md share/doc/mbs/examples/pendulum.mbs; do
  [ -f "$prefix/$f" ] || fail "the install lacks $f"
done
if [ -f "$build/python/mbs/__init__.py" ]; then
  for f in __init__.py _errors.py _mbs.pyi py.typed; do
    [ -f "$prefix/lib/python3/dist-packages/mbs/$f" ] || fail "the install lacks the Python module's $f"
  done
fi
# No installed file names the source or the build tree (the build tree may lie inside the source).
strings -a "$prefix/bin/mbsc" | grep -F -e "$src" -e "$build" >"$work/paths" &&
  fail "bin/mbsc names the trees: $(head -3 "$work/paths")"
grep -r -l -F -e "$src" -e "$build" "$prefix" >"$work/paths" &&
  fail "installed files name the trees: $(cat "$work/paths")"
cp "$importer" "$work/fmu_importer"

# ---- what runs with the trees hidden
cat >"$work/inner.sh" <<'EOF'
set -eu
prefix=$1 work=$2 src=$3 hidden=$4
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
if [ "$hidden" = yes ] && [ -n "$(ls -A "$src" 2>/dev/null)" ]; then fail "the source tree is visible"; fi
unset MBS_HOME MBS_PATH
export HOME="$work/home" MBS_CACHE_DIR="$work/cache"
mkdir -p "$HOME" && cd "$work"
mbsc=$prefix/bin/mbsc
"$mbsc" --version >/dev/null || fail "mbsc --version"
"$mbsc" --help | grep -q -e "--simulate" || fail "mbsc --help"
cp -r "$prefix/share/doc/mbs/examples" ex
n=0
for f in $(find ex -name '*.mbs' | sort); do
  case $f in
    */hybrid_manipulator.mbs) what="--inverse-dynamics" ;;
    *) what="--simulate" ;;
  esac
  "$mbsc" "$f" $what --t-end 0.05 --step 1e-3 -q --output out.csv >log 2>&1 ||
    fail "$f: $(cat log)"
  [ "$(wc -l <out.csv)" -ge 10 ] || fail "$f wrote $(wc -l <out.csv) rows"
  n=$((n + 1))
done
"$mbsc" ex/mass_spring_damper.mbs --study ex/studies/msd_variation.study -j 1 -q \
  --output study.csv >log 2>&1 || fail "the study file: $(cat log)"
[ "$(grep -c . study.csv)" -eq 13 ] || fail "the study wrote $(grep -c . study.csv) lines, not 13"
# an FMU from the installed runtime, run by an importer against --simulate
"$mbsc" ex/fmu/pendulum.mbs --fmu p.fmu -q >log 2>&1 || fail "--fmu: $(cat log)"
mkdir fmu && (cd fmu && unzip -q ../p.fmu)
token=$(xmllint --xpath 'string(/fmiModelDescription/@guid)' fmu/modelDescription.xml)
vr=$(xmllint --xpath 'string(//ScalarVariable[@name="phi"]/@valueReference)' \
  fmu/modelDescription.xml)
[ -n "$token" ] && [ -n "$vr" ] || fail "no guid or no phi in the model description"
"$work/fmu_importer" fmu/binaries/linux64/*.so 2 cs "$token" 1 0.001 imp.csv --vr "$vr" --no-rows \
  >log 2>&1 || fail "the importer: $(cat log)"
"$mbsc" ex/fmu/pendulum.mbs --simulate --t-end 1 -q --output ref.csv >log 2>&1 ||
  fail "--simulate: $(cat log)"
col=$(head -1 ref.csv | tr ',' '\n' | grep -n -x phi | cut -d: -f1)
phi_fmu=$(tail -1 imp.csv | cut -d, -f2)
phi_ref=$(tail -1 ref.csv | cut -d, -f"$col")
awk -v a="$phi_fmu" -v b="$phi_ref" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-9) }' ||
  fail "phi(1) from the FMU $phi_fmu, from --simulate $phi_ref"
# the Python module, when built (python/, docs/python.md): from the installed files only
py=$prefix/lib/python3/dist-packages
python=""
if [ -d "$py/mbs" ] && [ -x /usr/bin/python3 ]; then
  python=", import mbs"
  PYTHONPATH=$py /usr/bin/python3 -c "import mbs; r = mbs.load('ex/mass_spring_damper.mbs').simulate(t_end=0.05, step=1e-3); assert len(r) == 51, len(r); print(mbs.__version__)" \
    >log 2>&1 || fail "import mbs: $(cat log)"
  [ "$(cat log)" = "$("$mbsc" --version | cut -d' ' -f2)" ] || fail "mbs.__version__: $(cat log)"
fi
# without its standard library, mbsc says where it looked
MBS_HOME="$work/nowhere" "$mbsc" ex/mechanics/pendulum.mbs >log 2>&1 &&
  fail "ran without a standard library"
grep -q "MBS_HOME is $work/nowhere" log || fail "no word of MBS_HOME: $(cat log)"
# the man page renders, the completion loads
if command -v man >/dev/null; then
  MANWIDTH=100 man -l "$prefix/share/man/man1/mbsc.1" 2>&1 | grep -q -e "--inverse-dynamics" ||
    fail "the man page"
fi
bash -c ". '$prefix/share/bash-completion/completions/mbsc' && complete -p mbsc" >/dev/null ||
  fail "the bash completion"
echo "ran $n examples, a study, an FMU export and its import$python"
EOF

hide=""
if [ "$(id -u)" = 0 ] && unshare --mount true 2>/dev/null; then
  hide=yes
fi
if [ -n "$hide" ]; then
  # shellcheck disable=SC2016
  unshare --mount sh -c 'mount --make-rprivate / && mount -t tmpfs -o size=1m none "$3" &&
    { case "$4" in "$3"/*) ;; *) mount -t tmpfs -o size=1m none "$4" ;; esac; } &&
    exec sh "$2/inner.sh" "$1" "$2" "$3" yes' sh "$prefix" "$work" "$src" "$build"
else
  echo "note: not root or no unshare: the source and build trees stay visible"
  sh "$work/inner.sh" "$prefix" "$work" "$src" no
fi
echo "install check ($mode): passed"
