#!/bin/sh
# Times `ldsearch check` against ldd on the same files, one run each
# (hyperfine), prints the ratio, and compares the missing libraries both
# report: the set of "FILE: NAME" pairs must be the same.
#   bench/check_vs_ldd.sh [DIR...]   (default: /usr/bin /usr/lib/x86_64-linux-gnu)
set -eu
cd "$(dirname "$0")/.."
LDSEARCH=${LDSEARCH:-$PWD/build/tools/ldsearch/ldsearch}
command -v hyperfine >/dev/null || { echo "bench: hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
[ -x "$LDSEARCH" ] || { echo "bench: build ldsearch first (scripts/setup.sh)" >&2; exit 1; }
[ $# -gt 0 ] || set -- /usr/bin /usr/lib/x86_64-linux-gnu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$LDSEARCH" /bin/true >/dev/null  # warm the loader-configuration cache

. bench/hyperfine_lib.sh

# The same files for both: ldsearch check walks the directories (regular
# files, symbolic links not followed), as find -type f does.
check_cmd="$LDSEARCH check $*"
ldd_cmd="find $* -type f -exec ldd {} +"
hyperfine -N --runs 1 --export-json "$tmp/r.json" -i "$check_cmd" "sh -c '$ldd_cmd'" >/dev/null 2>&1
read -r a b <<MEANS
$(hyperfine_means "$tmp/r.json" 2)
MEANS
printf '%-16s %12s\n' "ldsearch check" "${a}ms"
printf '%-16s %12s\n' "find + ldd" "${b}ms"
printf '%-16s %11sx\n' "ldd/check" "$(ratio "$b" "$a" 1)"

# The missing libraries each reports, as "FILE: NAME" lines.
"$LDSEARCH" check --json "$@" >"$tmp/check.json" || true
python3 - "$tmp/check.json" >"$tmp/check.missing" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for f in doc["files"]:
    for p in f["problems"]:
        if p["kind"] == "missing":
            print(f"{f['path']}: {p['name']}")
PY
sort -u -o "$tmp/check.missing" "$tmp/check.missing"
# shellcheck disable=SC2086
find "$@" -type f -exec ldd {} + 2>/dev/null |
    awk '/^[^\t].*:$/ { file = substr($0, 1, length($0) - 1); next }
         / => not found$/ { sub(/^[ \t]+/, ""); sub(/ => not found$/, ""); print file ": " $0 }' |
    sort -u >"$tmp/ldd.missing"
printf 'missing libraries: ldsearch check %s, ldd %s\n' "$(wc -l <"$tmp/check.missing")" "$(wc -l <"$tmp/ldd.missing")"
if cmp -s "$tmp/check.missing" "$tmp/ldd.missing"; then
    echo "same set of missing libraries"
else
    echo "the sets differ:"
    diff "$tmp/ldd.missing" "$tmp/check.missing" | sed 's/^/  /' | head -40
    exit 1
fi
