#!/bin/sh
# ldsearch's whole run against the loader's own listing, in one run: for each
# PROGRAM, `ldsearch PROGRAM` and `ld.so --list PROGRAM`, interleaved, with
# the floors of both (a run that only prints its version) and an empty static
# C program.  Prints medians and ratios (bench/spawn_wall.cc).
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
cp "$LDSEARCH" "$tmp/ldsearch"
LDSEARCH=$tmp/ldsearch
echo "floors (baseline: ld.so --version)"
"$WALL" "$RUNS" "$tmp/empty-static" "$LDSEARCH --version" "$RTLD --version"
for prog in "$@"; do
    [ -x "$prog" ] || { echo "bench: skipping $prog (not installed)" >&2; continue; }
    echo "$prog (baseline: ld.so --list)"
    "$WALL" "$RUNS" "$LDSEARCH $prog" "$RTLD --list $prog"
done
