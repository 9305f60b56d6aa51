#!/bin/sh
# Times ldsearch against the loader's own listing (ld.so --list) and ldd on
# the same programs, in one run, and prints the ratios of the medians (on a
# shared machine one slow run moves a mean, not a median).  Uses hyperfine.
#   bench/ldsearch_vs_loader.sh [PROGRAM...]      (default: gdb python3 ls)
#   LDSEARCH=/path/to/ldsearch bench/ldsearch_vs_loader.sh   (another build)
set -eu
cd "$(dirname "$0")/.."
LDSEARCH=${LDSEARCH:-$PWD/build/tools/ldsearch/ldsearch}
RTLD=/lib64/ld-linux-x86-64.so.2
command -v hyperfine >/dev/null || { echo "bench: hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
[ -x "$LDSEARCH" ] || { echo "bench: build ldsearch first (scripts/setup.sh)" >&2; exit 1; }
[ $# -gt 0 ] || set -- /usr/bin/gdb /usr/bin/python3 /bin/ls
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$LDSEARCH" /bin/true >/dev/null  # warm the loader-configuration cache

. bench/hyperfine_lib.sh
# medians FILE N: the medians of commands 0..N-1 in milliseconds.
medians() {
    python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['results']; print(' '.join('%.3f' % (x['median']*1000) for x in r[:int(sys.argv[2])]))" "$1" "$2"
}

printf '%-22s %10s %10s %12s %10s %14s %12s\n' program ldsearch ld.so-list ldsearch-cold ldd "list/ldsearch" "ldd/ldsearch"
for prog in "$@"; do
    [ -x "$prog" ] || { echo "bench: skipping $prog (not installed)" >&2; continue; }
    hyperfine -N --warmup 20 --runs 200 --export-json "$tmp/r.json" \
        "$LDSEARCH $prog" "$RTLD --list $prog" "$LDSEARCH --no-config-cache $prog" "ldd $prog" >/dev/null 2>&1
    read -r a b c d <<MEANS
$(medians "$tmp/r.json" 4)
MEANS
    printf '%-22s %8sms %8sms %10sms %8sms %13sx %11sx\n' "$prog" "$a" "$b" "$c" "$d" "$(ratio "$b" "$a")" "$(ratio "$d" "$a")"
done
