#!/bin/sh
# ldsearch's whole run against the loader's own listing, in one run: for each
# PROGRAM, `ldsearch PROGRAM`, an empty static C program and `ld.so --list
# PROGRAM`, interleaved, so that each line also shows the best ratio any
# static glibc program could reach; then the floors (a static program of one
# exit system call, the empty one, and each side printing its version).
# Prints medians and ratios (bench/spawn_wall.cc); bench/start_floor.sh says
# where the empty program's time goes.
# The binaries run as fresh `cp` copies: how a binary's pages came into the
# page cache moves its start by up to 90 us (docs/performance.md), and a
# copy puts every binary in the same state.
#   bench/ldsearch_startup.sh [PROGRAM...]     (default: /bin/ls python3 gdb)
#   BUILD=build-release bench/ldsearch_startup.sh   RUNS=800 ...
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-400}
LDSEARCH=$PWD/$BUILD/tools/ldsearch/ldsearch
WALL=$PWD/$BUILD/bench/spawn_wall
RTLD=/lib64/ld-linux-x86-64.so.2
for f in "$LDSEARCH" "$WALL"; do
    [ -x "$f" ] || { echo "bench: $f is missing (build with -Dbench=true)" >&2; exit 1; }
done
[ $# -gt 0 ] || set -- /bin/ls /usr/bin/python3 /usr/bin/gdb
"$LDSEARCH" /bin/true >/dev/null  # warm the loader-configuration cache
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'int main(void) { return 0; }\n' > "$tmp/empty.c"
cc -O2 -static "$tmp/empty.c" -o "$tmp/empty.out"
cp "$tmp/empty.out" "$tmp/empty-static"
printf 'void _start(void) { __asm__ volatile("syscall" :: "a"(231), "D"(0)); __builtin_unreachable(); }\n' > "$tmp/exit.c"
cc -O2 -static -nostdlib "$tmp/exit.c" -o "$tmp/exit.out"
cp "$tmp/exit.out" "$tmp/exit-only"
cp "$LDSEARCH" "$tmp/ldsearch"
LDSEARCH=$tmp/ldsearch
echo "floors (baseline: ld.so --version)"
"$WALL" "$RUNS" "$tmp/exit-only" "$tmp/empty-static" "$LDSEARCH --version" "$RTLD --version"
for prog in "$@"; do
    [ -x "$prog" ] || { echo "bench: skipping $prog (not installed)" >&2; continue; }
    echo "$prog (baseline: ld.so --list)"
    "$WALL" "$RUNS" "$LDSEARCH $prog" "$tmp/empty-static" "$RTLD --list $prog"
done
