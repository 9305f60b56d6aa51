#!/bin/sh
# System calls per dlopen+dlclose of a library in the third RPATH directory:
# glibc's dlopen against ldshim_dlopen_from, counted by strace over N rounds
# (after a warm-up round) and divided by N.
set -eu
cd "$(dirname "$0")/.."
BENCH=${BENCH:-build/bench/resolver_bench}
N=${1:-500}
command -v strace >/dev/null || { echo "resolver_syscalls: strace is missing (apt-get install strace)" >&2; exit 1; }
count() { # MODE ROUNDS -> total syscalls
    strace -f -c -o /tmp/ldshim-strace.$$ "$BENCH" --loop="$1" "$2" >/dev/null
    awk '$NF == "total" {print $(NF-2)}' /tmp/ldshim-strace.$$
    rm -f /tmp/ldshim-strace.$$
}
for mode in glibc ldshim; do
    base=$(count $mode 0)
    full=$(count $mode "$N")
    python3 -c "print('%-7s %.1f system calls per dlopen+dlclose' % ('$mode', ($full - $base) / $N))"
done
