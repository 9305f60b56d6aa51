#!/bin/sh
# ldsearch --root against the emulated arm64 loader of each arm64 root there
# is (scripts/arm64-root.sh makes them: bookworm, glibc 2.36 with legacy
# subdirectories; trixie, 2.41 without; scripts/arm64-root-ldsearch.sh
# compares): every dynamic program of the root and a cross-compiled
# legacy-subdirectory tree, under qemu's default CPU, under cortex-a72 (no
# LSE atomics, so no atomics/ subdirectory) and the default again, sharing
# one cache of the loader's answers, whose key must tell the CPUs apart.
# Skipped (77) without any root.  A third of each root's programs, a
# different third each day and the same under each CPU (155 s instead of
# 512 here); LDSHIM_ARM64_PROGRAMS_EVERY=1 compares them all.
#   arm64_root_test.sh LDSEARCH [NAME...]      default: bookworm trixie
set -eu
export LDSHIM_ARM64_PROGRAMS_EVERY="${LDSHIM_ARM64_PROGRAMS_EVERY:-3}"
ldsearch=$1
shift
[ "$#" -gt 0 ] || set -- bookworm trixie
cd "$(dirname "$0")/../.."
dir=${LDSHIM_ARM64_ROOTS_DIR:-/var/cache/ldshim/arm64-roots}
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
status=0 ran=0
for name in "$@"; do
    if [ ! -x "$dir/$name/usr/bin/env" ] || [ ! -e "$dir/$name.done" ]; then
        echo "arm64: no $name root ($dir/$name)"
        continue
    fi
    for cpu in "" cortex-a72 ""; do
        rc=0
        QEMU_CPU=$cpu LDSHIM_ARM64_CACHE=$cache LDSEARCH=$ldsearch ./scripts/arm64-root-ldsearch.sh "$name" || rc=$?
        [ "$rc" -eq 77 ] && exit 77
        [ "$rc" -eq 0 ] || status=1
        ran=1
    done
done
if [ "$ran" -eq 0 ]; then
    echo "SKIPPED: no arm64 root (scripts/arm64-root.sh)"
    exit 77
fi
# Grace's 64 KiB-page kernels: qemu-user's QEMU_PAGESIZE=65536 makes the
# loader fail candidates from the cache that a 4 KiB run maps (docs/testing.md).
echo "SKIPPED: 64 KiB pages: qemu-user 7.2 does not emulate them faithfully (a 64 KiB kernel is needed)"
exit "$status"
