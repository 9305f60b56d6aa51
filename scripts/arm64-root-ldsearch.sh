#!/bin/sh
# ldsearch against the arm64 loader, emulated: for every dynamic
# program in an arm64 root's /usr/bin and /usr/sbin, the search lines the
# root's own loader prints inside the root under qemu-user (chroot,
# binfmt_misc; LD_TRACE_LOADED_OBJECTS=1, so nothing runs), against
# `ldsearch --root ROOT` run on this host.  Then a cross-compiled tree whose
# RPATH directory has tls/, aarch64/ and atomics/ subdirectories (and
# libraries of another machine and class to skip), so the legacy
# subdirectories and open_verify's skips are exercised; that program also
# runs for real.  Each check once plainly and once with LD_LIBRARY_PATH and
# the DSTs, under the CPU that QEMU_CPU names (qemu's default when unset):
# both sides see it.
# Prints "N of M programs identical" and each difference's first line;
# exits 1 when any differs, 77 when there is no root or no ldsearch.
#   scripts/arm64-root-ldsearch.sh [NAME|DIR]     default: bookworm
# Environment: LDSEARCH (the program), else BUILD (build directory with
# tools/ldsearch/ldsearch, default ./build), LDSHIM_ARM64_ROOTS_DIR (scripts/arm64-root.sh's), QEMU_CPU,
# LDSHIM_ARM64_CACHE (ldsearch's XDG_CACHE_HOME; default: a fresh one),
# LDSHIM_ARM64_PROGRAMS_EVERY=N (a share: the programs whose index is the
# day's number modulo N, so the same ones under each CPU of one day; default
# 1, every program).
set -eu
cd "$(dirname "$0")/.."
name=${1:-bookworm}
case $name in
    */*) root=$name ;;
    *) root=${LDSHIM_ARM64_ROOTS_DIR:-/var/cache/ldshim/arm64-roots}/$name ;;
esac
ldsearch=${LDSEARCH:-$(pwd)/${BUILD:-build}/tools/ldsearch/ldsearch}
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: running the root's loader in it needs chroot(2), root only"
    exit 77
fi
if [ ! -x "$root/usr/bin/env" ] || [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
    echo "SKIPPED: no arm64 root (scripts/arm64-root.sh)"
    exit 77
fi
[ -x "$ldsearch" ] || { echo "SKIPPED: no $ldsearch (set BUILD)"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"; rm -rf "$root/tmp/ldshim-arm64-tree"' EXIT
# An empty QEMU_CPU names no CPU (qemu refuses it): the default instead.
[ -n "${QEMU_CPU:-}" ] || unset QEMU_CPU
cpu_env=${QEMU_CPU:+QEMU_CPU=$QEMU_CPU}
# ldsearch's cache of the loader's answers: one for the run, or one that
# runs under other CPUs share (its key must tell them apart).
cache=${LDSHIM_ARM64_CACHE:-$work/cache}
# The lines of a search, without the loader's "PID:\t" prefix.
search_lines() {
    sed 's/^ *[0-9]*:\t//' "$1" |
        grep -E '^(find library=| search path=|  trying file=| search cache=|    \(|  refusing to load file=)' || true
}

# A set-id program started with another real id is AT_SECURE, and its
# loader then prints nothing: both sides start with the file's ids.
identity_of() {
    mode=$(stat -c %A "$1")
    case $mode in
        ???s*) [ "$(stat -c %u "$1")" = 0 ] || { echo "setpriv --reuid=$(stat -c %u "$1") --clear-groups"; return; } ;;
    esac
    case $mode in
        ??????s*) [ "$(stat -c %g "$1")" = 0 ] || echo "setpriv --regid=$(stat -c %g "$1") --clear-groups" ;;
    esac
}

# One program (path inside the root) under one extra environment ("" or
# LD_LIBRARY_PATH=...): 0 when both sides print the same search lines.
compare() {
    prog=$1 extra=$2
    id=$(identity_of "$root$prog")
    # shellcheck disable=SC2086 # words on purpose
    $id timeout 10 chroot "$root" /usr/bin/env -i $cpu_env $extra LD_TRACE_LOADED_OBJECTS=1 LD_DEBUG=libs \
        "$prog" >/dev/null 2>"$work/real.raw" </dev/null || true
    # shellcheck disable=SC2086
    $id env -i $cpu_env $extra PATH=/usr/bin:/bin XDG_CACHE_HOME="$cache" "$ldsearch" --root "$root" --keep-going "$prog" \
        >"$work/mine" 2>&1 || true
    search_lines "$work/real.raw" >"$work/real"
    if [ -s "$work/real" ] && cmp -s "$work/real" "$work/mine"; then return 0; fi
    echo "DIFFERENT: $prog${extra:+ ($extra)}${cpu_env:+ ($cpu_env)}:"
    diff "$work/real" "$work/mine" | sed -n '1,4p'
    return 1
}

# The root's dynamic arm64 programs: regular executable files whose program
# headers name an interpreter.
programs() {
    for dir in /usr/bin /usr/sbin; do
        for f in "$root$dir"/*; do
            if [ ! -f "$f" ] || [ -L "$f" ] || [ ! -x "$f" ]; then continue; fi
            readelf -h "$f" 2>/dev/null | grep -q 'Machine:.*AArch64' || continue
            readelf -l "$f" 2>/dev/null | grep -q 'Requesting program interpreter' || continue
            echo "${f#"$root"}"
        done
    done
}

# shellcheck disable=SC2016 # the loader expands the DSTs
library_path='LD_LIBRARY_PATH=/opt/none:/usr/lib/$PLATFORM:/usr/$LIB/none:/'
# A program is identical when both of its runs are.
both() {
    ok=0
    compare "$1" "" || ok=1
    compare "$1" "$library_path" || ok=1
    return $ok
}
every=${LDSHIM_ARM64_PROGRAMS_EVERY:-1}
case $every in '' | *[!0-9]* | 0) echo "LDSHIM_ARM64_PROGRAMS_EVERY: not a positive number: $every" >&2; exit 2 ;; esac
offset=$(($(date +%s) / 86400 % every))
total=0 same=0 index=0
for prog in $(programs); do
    index=$((index + 1))
    [ $(((index - 1) % every)) -eq "$offset" ] || continue
    total=$((total + 1))
    if both "$prog"; then same=$((same + 1)); fi
done
[ "$every" -eq 1 ] ||
    echo "share: $total of the $index programs, those whose index is $offset modulo $every (LDSHIM_ARM64_PROGRAMS_EVERY)"

tree_same=0 tree_total=1
if ./scripts/arm64-tree.sh "$root" /tmp/ldshim-arm64-tree >"$work/tree.log" 2>&1; then
    if both /tmp/ldshim-arm64-tree/bin/app; then tree_same=1; fi
    # And it runs where the search finds every library (not from glibc
    # 2.37 on: libt.so is only in tls/).
    # shellcheck disable=SC2086
    ran=$(chroot "$root" /usr/bin/env -i $cpu_env /tmp/ldshim-arm64-tree/bin/app 2>&1) || ran="failed: $ran"
    echo "tree program ran: $ran"
else
    tail -n 20 "$work/tree.log"
    echo "DIFFERENT: the cross-compiled tree could not be built"
fi
cpu=${QEMU_CPU:-qemu default}
echo "$same of $total programs identical ($(basename "$root"), CPU $cpu; each plainly and with LD_LIBRARY_PATH)"
echo "$tree_same of $tree_total tree programs identical ($(basename "$root"), CPU $cpu; each plainly and with LD_LIBRARY_PATH)"
[ "$same" -eq "$total" ] && [ "$tree_same" -eq "$tree_total" ] && [ "$total" -gt 0 ]
