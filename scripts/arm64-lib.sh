#!/bin/sh
# Copies ldshim's aarch64 libraries, laid out as installed, into DEST:
# libldshim.so.0, libldshim_preload.so (RUNPATH $ORIGIN finds the first) and
# the loader probes libldshim opens from $ORIGIN/ldshim/probe (without them
# it cannot model the loader and passes every call on to glibc).  SOURCE is
# an aarch64 build directory (scripts/cross-aarch64.sh; installed with meson
# into a scratch directory first) or an installed tree whose lib/ holds them
# (the unpacked aarch64 release tarball).  The arm64 scripts and tests that
# put ldshim into a root (arm64-repro.sh, arm64-generator.sh,
# tests/arm64/tools_test.sh) use it.
#   scripts/arm64-lib.sh SOURCE DEST
set -eu
[ "$#" -eq 2 ] || { echo "usage: $0 BUILD_ARM64|TREE DEST" >&2; exit 2; }
src=$1 dest=$2
if [ -f "$src/build.ninja" ]; then
    stage=$(mktemp -d)
    trap 'rm -rf "$stage"' EXIT
    meson install -C "$src" --destdir "$stage" --no-rebuild --quiet >/dev/null
    lib=$(find "$stage" -name libldshim.so.0 | head -n 1)
    lib=${lib%/*}
else
    lib=$src/lib
fi
for f in libldshim.so.0 libldshim_preload.so ldshim/probe/libldshim-probe.so; do
    [ -e "$lib/$f" ] || { echo "arm64-lib: no $f in $src" >&2; exit 1; }
done
mkdir -p "$dest"
cp -a "$lib/." "$dest/"
