#!/bin/sh
# libldshim.so exports exactly the functions that include/ldshim.h declares:
# none missing (a header promise the library does not keep) and none extra;
# and its dynamic symbols, each with its version node, are exactly those of
# the golden file (tests/c_api/exports.golden: "NODE symbol" per line,
# sorted in the C locale), so that adding, removing or re-versioning an
# export fails until the golden file is updated with it (docs/abi.md).
# A symbol defined in a non-default version (name@NODE, not name@@NODE) is
# written "NODE symbol (non-default)", one without a version "- symbol".
# The private node LDSHIM_PRIVATE (libldshim_preload.so's one import,
# lib/preload_ops.h) is in the golden file and nowhere in the header.
#   exports_test.sh LIBLDSHIM LDSHIM_H EXPORTS_GOLDEN
set -eu
[ $# -eq 3 ] || { echo "usage: $0 LIBLDSHIM LDSHIM_H EXPORTS_GOLDEN" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -oE '\bldshim_[a-z_0-9]+[[:space:]]*\(' "$2" | sed 's/[[:space:]]*($//' | sort -u > "$tmp/declared"
nm -D --defined-only "$1" | awk '$2 != "A" && $3 !~ /@LDSHIM_PRIVATE$/ {print $3}' | sed 's/@.*//' | sort -u > "$tmp/exported"
pass=0 fail=0
if [ -s "$tmp/declared" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL no function found in $2"; fi
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
if [ -z "$missing" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL declared but not exported:"; echo "$missing"; fi
if [ -z "$extra" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL exported but not declared:"; echo "$extra"; fi
# Every export carries a version node (LDSHIM_0, or a later LDSHIM_0.N, or
# LDSHIM_PRIVATE).
unversioned=$(nm -D --defined-only "$1" | awk '$2 == "T" && $3 !~ /@(LDSHIM_0(\.[0-9]+)*|LDSHIM_PRIVATE)$/ {print $3}')
if [ -z "$unversioned" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL without a version: $unversioned"; fi
# The golden list, node and all.
nm -D --defined-only "$1" | awk '$2 != "A" {
    name = $3
    if (index(name, "@@")) { split(name, p, "@@"); print p[2] " " p[1] }
    else if (index(name, "@")) { split(name, p, "@"); print p[2] " " p[1] " (non-default)" }
    else print "- " name
}' | LC_ALL=C sort -u > "$tmp/versioned"
if ! LC_ALL=C sort -c "$3" 2>/dev/null; then
    fail=$((fail + 1)); echo "FAIL $3 is not sorted (LC_ALL=C sort)"
elif diff -u "$3" "$tmp/versioned" > "$tmp/golden.diff"; then
    pass=$((pass + 1))
else
    fail=$((fail + 1))
    echo "FAIL the exports differ from $3 (- golden, + built):"
    cat "$tmp/golden.diff"
    echo "An export changed: if that is intended, follow docs/abi.md and update $3,"
    echo "lib/ldshim.map and debian/libldshim0.symbols together."
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
