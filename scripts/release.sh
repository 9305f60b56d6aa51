#!/bin/sh
# The release: the source tarball, and from it the relocatable binary
# tarball of one architecture, with the checksums of both:
#   OUTDIR/ldshim-VERSION.tar.xz          `meson dist` of this checkout
#                                         (scripts/dist.sh: its committed
#                                         files, uncommitted changes left
#                                         out with a warning); the sources
#                                         of the product, its tests and docs
#   OUTDIR/SHA256SUMS                     sha256sum of every ldshim-VERSION
#                                         tarball in OUTDIR (`sha256sum -c`)
# The binary tarball is built from the source tarball, unpacked (not from
# this checkout), so that every release proves its source tarball builds.
# The binary tarball, one per architecture, for every glibc from
# 2.28 on (RHEL 8, Ubuntu 20.04, SLES 15 SP4, Debian 11 and later):
#   OUTDIR/ldshim-VERSION-ARCH.tar.xz     (VERSION: meson.build's project())
#     ldshim-VERSION-ARCH/lib/libldshim.so.0 (.so.VERSION, .so)  the C API
#                         lib/libldshim_preload.so   LD_PRELOAD; RUNPATH $ORIGIN
#                         lib/pkgconfig/ldshim.pc    prefix=${pcfiledir}/../..
#                         bin/ldsearch               static, linked here against
#                                                    glibc 2.34+ (bullseye's 2.31
#                                                    static start crashes on a DST in
#                                                    LD_LIBRARY_PATH: bug 23462)
#                         include/ldshim.h, ldshim_version.h
#                         bin/ldshim-hooks           the CUDA hooks' log; finds
#                                                    ../lib/libldshim_preload.so
#                                                    from its own place
#                         share/man/man1/ldsearch.1, ldshim-hooks.1
#                         lib/ldshim/...             what libldshim loads from
#                                                    next to itself (the loader
#                                                    probe), if the build has it
#                         share/modulefiles/ldshim/VERSION.lua, VERSION
#                                                    Lmod and Environment Modules
#                                                    (-Dmodulefiles=relocatable:
#                                                    they find the prefix from
#                                                    their own place at load time)
#                         share/doc/ldshim/README.md, copyright (the MIT licence)
# Nothing in it names an install prefix: unpack it anywhere.  bin/ldshim-hooks
# finds lib/libldshim_preload.so from its own place.  The bash completion is
# left out (the Debian packages and `meson install` carry it).
# Built inside the oldest Debian root (bullseye: glibc 2.31, gcc 10;
# scripts/roots.sh) by its own compiler, buildtype=release, without tests;
# libstdc++ and libgcc are linked statically into every binary by
# meson.build itself, so the tarball needs glibc alone.  What it imports is
# checked by scripts/release-symbols.sh, its use on each glibc by
# scripts/release-relocation.sh, its module files by tests/docs/modules_test.sh
# --tarball (scripts/release-test.sh runs them all).
# The build directory stays in the root (/tmp/ldshim-release-build): a later
# run rebuilds what changed; a tarball whose inputs (the sources it is built
# from, the root's compiler, the CUDA headers) are unchanged is not rebuilt
# at all (OUTDIR/NAME.tar.xz.inputs holds their hash).
# The CUDA hooks are built in when this machine has the CUDA Toolkit's
# headers (-Dcudatoolkit_include of the project, default
# /usr/local/cuda/include; LDSHIM_RELEASE_CUDA=DIR or =none to choose).
# --arch aarch64 makes the aarch64 twin (ldshim-VERSION-aarch64-linux-gnu):
# cross-built in the same root by bullseye's g++-aarch64-linux-gnu (gcc 10,
# glibc 2.31 for arm64; installed into the root on first use) with
# scripts/cross/aarch64-linux-gnu.ini, its static ldsearch cross-linked here
# against arm64's glibc (scripts/cross-aarch64.sh installs the tools).
# Needs root (chroot); exits 77 (skipped) without it or without the root.
#   scripts/release.sh [--help] [--arch aarch64] [OUTDIR]    default OUTDIR /var/tmp/ldshim-release
#   LDSHIM_ROOTS_DIR        where the roots are (default /var/cache/ldshim/roots)
#   LDSHIM_RELEASE_REBUILD=1  build even when the inputs are unchanged
# The source tarball (scripts/dist.sh) is made again on every run: one
# commit gives the same bytes.  The source is unpacked to /var/tmp/ldshim-release-src, where
# files unchanged since the last run keep their times.
# Needs meson and git here.  The output names the source tarball on a line
# "release: source tarball PATH"; its last line is the binary tarball's path.
set -eu
target=""
while [ "$#" -gt 0 ]; do
    case $1 in
        --help | -h) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --arch)
            [ "${2:-}" = aarch64 ] || { echo "release: --arch takes aarch64 (see --help)" >&2; exit 2; }
            target=$2
            shift 2
            ;;
        -*) echo "release: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ "$#" -le 1 ] || { echo "release: one OUTDIR at most (see --help)" >&2; exit 2; }
cd "$(dirname "$0")/.."
out=${1:-/var/tmp/ldshim-release}
suite=bullseye
root=${LDSHIM_ROOTS_DIR:-/var/cache/ldshim/roots}/$suite
name=ldshim-release

fail() { echo "release: FAIL: $*" >&2; exit 1; }
./scripts/root-tree.sh --check "$root" release || exit $?
work=$(mktemp -d /var/tmp/ldshim-release-pack.XXXXXX)
trap 'rm -rf "$work"' EXIT

# ---- The source tarball: meson dist ----------------------------------------
# scripts/dist.sh: meson dist of this checkout's committed tree, the same
# bytes for the same commit; --no-tests: the build below from the unpacked
# tarball is its test (and tests/recipes/recipes_check.sh builds and tests
# it as Spack and EasyBuild do).
./scripts/dist.sh "$out" >"$work/dist.out" || fail "scripts/dist.sh failed (above)"
source=$(tail -n 1 "$work/dist.out")
srcname=$(basename "$source" .tar.xz)
version=${srcname#ldshim-}
echo "release: source tarball $source"
mkdir "$work/unpacked"
tar -xJf "$source" -C "$work/unpacked"
new=$work/unpacked/$srcname
[ -f "$new/meson.build" ] || fail "$source has no $srcname/meson.build"
# Unpacked where the builds read it; a file unchanged since the last run
# keeps its time there, a changed one gets the time of now (the tarball's
# times are the commit's, which can be older than the objects built from
# the last one), so that the build directories kept from then rebuild what
# changed, and only that.
src=/var/tmp/ldshim-release-src
(cd "$new" && find . -type f) | while IFS= read -r f; do
    if cmp -s "$new/$f" "$src/$f"; then touch -r "$src/$f" "$new/$f"; else touch "$new/$f"; fi
done
rm -rf "$src"
mv "$new" "$src"

# SHA256SUMS: every ldshim-VERSION tarball in OUTDIR (the source and each
# architecture's), rewritten whenever this run leaves.
checksums() {
    (cd "$out" && for f in "$srcname.tar.xz" "$srcname"-*.tar.xz; do [ ! -f "$f" ] || sha256sum "$f"; done) >"$out/SHA256SUMS.tmp"
    mv "$out/SHA256SUMS.tmp" "$out/SHA256SUMS"
    echo "release: $out/SHA256SUMS:"
    sed 's/^/  /' "$out/SHA256SUMS"
}
# The compilers: the root's own, or its cross compiler and this machine's
# for the static ldsearch (cross_file, tool prefix, build directory suffix).
cross_file="" tools="" sfx=""
if [ "$target" = aarch64 ]; then
    # cross_file: in the unpacked source
    cross_file=scripts/cross/aarch64-linux-gnu.ini tools=aarch64-linux-gnu- sfx=-aarch64
    command -v aarch64-linux-gnu-g++ >/dev/null ||
        { echo "release: SKIPPED: no aarch64-linux-gnu-g++ here (scripts/cross-aarch64.sh installs it)"; exit 77; }
    if ! chroot "$root" sh -c 'command -v aarch64-linux-gnu-g++' >/dev/null; then
        echo "release: installing g++-aarch64-linux-gnu into the $suite root"
        chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            g++-aarch64-linux-gnu >/dev/null || fail "cannot install g++-aarch64-linux-gnu into $root"
    fi
fi
arch=$(chroot "$root" "${tools}gcc" -dumpmachine)
pkgname=ldshim-$version-$arch
tarball=$out/$pkgname.tar.xz

cuda=${LDSHIM_RELEASE_CUDA:-/usr/local/cuda/include}
[ "$cuda" = none ] || [ -f "$cuda/cuda.h" ] || cuda=none

# ---- Unchanged inputs: the tarball there is this one ----------------------
# The sources of the release build, from the unpacked source tarball (the
# tests, benchmarks, documentation and packaging are not read by it;
# README.md and debian/copyright are shipped), the root's compiler and C
# library, and the CUDA headers the hooks take their signatures from.
inputs=$(
    (cd "$src" && find . -type f ! -path './tests/*' ! -path './bench/*' ! -path './docs/*' ! -path './debian/*' \
        ! -path './.ci/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum && sha256sum debian/copyright)
    chroot "$root" sh -c "${tools}g++ --version | head -n 1; ldd --version | head -n 1"
    [ -z "$tools" ] || chroot "$root" dpkg-query -W libc6-dev-arm64-cross
    "${tools}g++" --version | head -n 1 # ldsearch is built here
    [ -z "$tools" ] || dpkg-query -W libc6-dev:arm64
    getconf GNU_LIBC_VERSION
    echo "cuda $cuda"
    [ "$cuda" = none ] || cat "$cuda/cuda.h" "$cuda/cuda_runtime_api.h"
)
key=$(printf '%s\n' "$inputs" | sha256sum | cut -c1-64)
if [ "${LDSHIM_RELEASE_REBUILD:-0}" != 1 ] && [ -f "$tarball" ] &&
    [ "$(cat "$tarball.inputs" 2>/dev/null)" = "$key" ]; then
    echo "release: $pkgname.tar.xz: inputs unchanged, not rebuilt"
    checksums
    echo "$tarball"
    exit 0
fi

# ---- Build and install inside the root -------------------------------------
echo "release: building in $suite: $(chroot "$root" "${tools}g++" --version | head -n 1), glibc $(chroot "$root" ldd --version | head -n 1 | sed 's/.* //')"
./scripts/root-tree.sh --source "$src" "$root" "$name"
rm -rf "$root/tmp/$name-cuda" "$root/tmp/$name-stage$sfx" "$root/tmp/$name-qemu"
# meson's sanity check runs what the cross compiler made: with this
# machine's static qemu-user, the exe wrapper of the cross file.
if [ -n "$cross_file" ]; then
    mkdir -p "$root/tmp/$name-qemu"
    cp "$(command -v qemu-aarch64-static)" "$root/tmp/$name-qemu/" ||
        fail "no qemu-aarch64-static here (scripts/cross-aarch64.sh installs it)"
fi
if [ "$cuda" != none ]; then
    cp -a "$cuda" "$root/tmp/$name-cuda"
    cuda_option=enabled
    echo "release: with the CUDA hooks (headers from $cuda)"
else
    cuda_option=disabled
    echo "release: without the CUDA hooks (no CUDA Toolkit headers here)"
fi
# The prefix is a placeholder that no shipped file may name (the pkg-config
# file is rewritten below).
prefix=/ldshim-release-placeholder-prefix
# shellcheck disable=SC2016 # expanded inside the chroot's shell
script='set -eu
PATH=$PATH:/tmp/'$name'-qemu
cd /tmp/'$name'-src
b=/tmp/'$name'-build'$sfx'
reconfigure=""
[ -f $b/build.ninja ] && reconfigure=--reconfigure
/tmp/'$name'-meson/meson setup $reconfigure $b '${cross_file:+--cross-file=$cross_file --cross-file=scripts/cross/aarch64-cross-libc.ini}' --buildtype=release -Dwerror=false -Dtests=false -Dbench=false -Dstatic_ldsearch=true \
    -Dmodulefiles=relocatable -Dcuda='$cuda_option' -Dcudatoolkit_include=/tmp/'$name'-cuda --prefix='$prefix' --libdir=lib --bindir=bin --includedir=include \
    --datadir=share --mandir=share/man >$b.setup.log 2>&1 || { tail -n 40 $b.setup.log; exit 1; }
nice -n 10 ninja -C $b -j 2 >$b.ninja.log 2>&1 || { tail -n 60 $b.ninja.log; exit 1; }
/tmp/'$name'-meson/meson install -C $b --no-rebuild --strip --destdir /tmp/'$name'-stage'$sfx' >$b.install.log 2>&1 ||
    { tail -n 40 $b.install.log; exit 1; }'
start=$(date +%s)
./scripts/root-tree.sh --in "$root" sh -c "$script" || fail "the build in the $suite root failed (output above)"
echo "release: built in $(($(date +%s) - start)) s"

# ---- ldsearch: static, against this machine's glibc --------------------------
# A static program of glibc before 2.34 crashes in its start-up when
# LD_LIBRARY_PATH holds a DST such as $ORIGIN (bug 23462), so the shipped
# ldsearch is the static one linked here (a static program needs no glibc
# of the system it runs on), not the root's.
host_glibc=$(getconf GNU_LIBC_VERSION | sed 's/.* //')
case $host_glibc in
    2.[0-9] | 2.[0-2][0-9] | 2.3[0-3]) fail "this machine's glibc $host_glibc has bug 23462: build the release on glibc 2.34 or later" ;;
esac
hb=/var/tmp/$name-ldsearch-build$sfx
# One made from another source (a checkout, as before the source tarball)
# would regenerate against that one: start again.
info=$hb/meson-info/meson-info.json
if [ -f "$info" ] && [ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
    "$info")" != "$src" ]; then
    rm -rf "$hb"
fi
[ -f "$hb/build.ninja" ] || meson setup "$hb" "$src" ${cross_file:+--cross-file="$src/$cross_file"} --buildtype=release \
    -Dwerror=false -Dtests=false -Dbench=false \
    -Dstatic_ldsearch=true -Dcuda=disabled >"$hb.setup.log" 2>&1 ||
    { tail -n 40 "$hb.setup.log"; fail "meson setup of the static ldsearch failed"; }
nice -n 10 ninja -C "$hb" -j 2 tools/ldsearch/ldsearch >"$hb.ninja.log" 2>&1 ||
    { tail -n 40 "$hb.ninja.log"; fail "the static ldsearch did not build"; }
readelf -dW "$hb/tools/ldsearch/ldsearch" | grep -q 'There is no dynamic section' ||
    fail "$hb/tools/ldsearch/ldsearch is not static"
echo "release: ldsearch static, glibc $host_glibc"

# ---- The tarball: what meson installs, less what names the prefix --------
# Everything installed is shipped (so a file the runtime comes to need, such
# as the loader probe libldshim finds next to itself in lib/ldshim/, comes
# with it) but for this list: files with the install prefix written in.
# Nothing shipped may name the placeholder prefix (checked below).
not_shipped="share/bash-completion"
stage=$root/tmp/$name-stage$sfx$prefix
pkg=$work/$pkgname
cp -a "$stage" "$pkg"
for f in $not_shipped; do rm -rf "${pkg:?}/$f"; done
find "$pkg" -depth -type d -empty -delete
cp "$hb/tools/ldsearch/ldsearch" "$pkg/bin/ldsearch"
"${tools}strip" "$pkg/bin/ldsearch"
for f in bin/ldsearch bin/ldshim-hooks share/man/man1/ldshim-hooks.1 lib/libldshim.so lib/libldshim.so.0 "lib/libldshim.so.$version" lib/libldshim_preload.so \
    lib/pkgconfig/ldshim.pc include/ldshim.h include/ldshim_version.h share/man/man1/ldsearch.1 \
    "share/modulefiles/ldshim/$version.lua" "share/modulefiles/ldshim/$version"; do
    [ -e "$pkg/$f" ] || fail "meson did not install $f"
done
mkdir -p "$pkg/share/doc/ldshim"
cp "$src/README.md" "$pkg/share/doc/ldshim/"
cp "$src/debian/copyright" "$pkg/share/doc/ldshim/copyright"
# pkg-config: everything relative to the file's own place.
pc=$stage/lib/pkgconfig/ldshim.pc
grep -qx "prefix=$prefix" "$pc" || fail "unexpected prefix line in $pc: $(grep '^prefix=' "$pc")"
# shellcheck disable=SC2016 # ${pcfiledir} is pkg-config's
sed "s|^prefix=$prefix\$|prefix=\${pcfiledir}/../..|" "$pc" >"$pkg/lib/pkgconfig/ldshim.pc"
if grep -rlF "$prefix" "$pkg"; then fail "the files above name the build's placeholder prefix $prefix"; fi

epoch=$(git log -1 --format=%ct 2>/dev/null || date +%s)
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" -C "$work" -cf - "$pkgname" |
    xz -T 2 -6 >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
echo "$key" >"$tarball.inputs"
echo "release: $(stat -c %s "$tarball") bytes:"
tar -tvJf "$tarball" | awk '{ print "  " $1, $3, $6, $7, $8 }'
checksums
echo "$tarball"
