#!/bin/sh
# libldshim.so exports exactly the functions that include/ldshim.h declares:
# none missing (a header promise the library does not keep) and none extra.
#   exports_test.sh LIBLDSHIM LDSHIM_H
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -oE '\bldshim_[a-z_0-9]+[[:space:]]*\(' "$2" | sed 's/[[:space:]]*($//' | sort -u > "$tmp/declared"
nm -D --defined-only "$1" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u > "$tmp/exported"
pass=0 fail=0
if [ -s "$tmp/declared" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL no function found in $2"; fi
missing=$(comm -23 "$tmp/declared" "$tmp/exported")
extra=$(comm -13 "$tmp/declared" "$tmp/exported")
if [ -z "$missing" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL declared but not exported:"; echo "$missing"; fi
if [ -z "$extra" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL exported but not declared:"; echo "$extra"; fi
# Every export carries the version node.
unversioned=$(nm -D --defined-only "$1" | awk '$2 == "T" && $3 !~ /@LDSHIM_0$/ {print $3}')
if [ -z "$unversioned" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL without a version: $unversioned"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
