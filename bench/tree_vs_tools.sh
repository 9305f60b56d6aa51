#!/bin/sh
# Times "ldsearch tree" against ldd, the loader's own listing (ld.so --list)
# and lddtree (pax-utils) on the same programs, in one run, and prints the
# ratios.  Uses hyperfine.
#   bench/tree_vs_tools.sh [PROGRAM...]      (default: python3 gdb)
set -eu
cd "$(dirname "$0")/.."
LDSEARCH=${LDSEARCH:-$PWD/build/tools/ldsearch/ldsearch}
RTLD=/lib64/ld-linux-x86-64.so.2
command -v hyperfine >/dev/null || { echo "bench: hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
command -v lddtree >/dev/null || { echo "bench: lddtree is missing (apt-get install pax-utils python3-pyelftools)" >&2; exit 1; }
# lddtree is a Python script that needs Debian's python3-pyelftools: run it
# with Debian's python3 even if another python3 comes first in PATH.
LDDTREE="/usr/bin/python3 $(command -v lddtree)"
[ -x "$LDSEARCH" ] || { echo "bench: build ldsearch first (scripts/setup.sh)" >&2; exit 1; }
[ $# -gt 0 ] || set -- /usr/bin/python3 /usr/bin/gdb
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$LDSEARCH" /bin/true >/dev/null  # warm the loader-configuration cache

. bench/hyperfine_lib.sh

printf '%-18s %10s %10s %10s %10s %9s %9s %12s\n' program tree ld.so-list ldd lddtree list/tree ldd/tree lddtree/tree
for prog in "$@"; do
    [ -x "$prog" ] || { echo "bench: skipping $prog (not installed)" >&2; continue; }
    hyperfine -N --warmup 10 --runs 100 --export-json "$tmp/r.json" \
        "$LDSEARCH tree --color=never $prog" "$RTLD --list $prog" "ldd $prog" "$LDDTREE $prog" >/dev/null 2>&1
    read -r a b c d <<MEANS
$(hyperfine_means "$tmp/r.json" 4)
MEANS
    printf '%-18s %8sms %8sms %8sms %8sms %8sx %8sx %11sx\n' "$prog" "$a" "$b" "$c" "$d" \
        "$(ratio "$b" "$a" 1)" "$(ratio "$c" "$a" 1)" "$(ratio "$d" "$a" 1)"
done
