#!/bin/sh
# ldsearch's command-line conventions: help, version, exit codes, stderr.
set -u
LDSEARCH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() { # NAME EXPECTED_STATUS COMMAND...
    name=$1 want=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
    if [ "$got" -eq "$want" ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $name: exit $got, want $want"; cat "$tmp/err"; fi
}
check help 0 "$LDSEARCH" --help
grep -q '^Usage: ldsearch' "$tmp/out" || { fail=$((fail+1)); echo "FAIL help text"; }
check version 0 "$LDSEARCH" --version
check no_program 2 "$LDSEARCH"
check bad_option 2 "$LDSEARCH" --frobnicate /bin/true
check missing_file 3 "$LDSEARCH" /nonexistent/prog
grep -q 'No such file or directory' "$tmp/err" || { fail=$((fail+1)); echo "FAIL missing_file message"; }
printf 'not an elf\n' > "$tmp/script"; chmod +x "$tmp/script"
check not_elf 3 "$LDSEARCH" "$tmp/script"
head -c 40 /bin/true > "$tmp/trunc"; chmod +x "$tmp/trunc"
check truncated_elf 3 "$LDSEARCH" "$tmp/trunc"
if cc -m32 -nostdlib -o "$tmp/prog32" -x c - >/dev/null 2>&1 <<'C'
void _start(void) {}
C
then check wrong_arch 3 "$LDSEARCH" "$tmp/prog32"; fi
mkdir "$tmp/dir"
check directory 3 "$LDSEARCH" "$tmp/dir"
check real_program 0 "$LDSEARCH" /bin/true
grep -q '^find library=libc.so.6 \[0\]; searching$' "$tmp/out" || { fail=$((fail+1)); echo "FAIL real_program output"; }
check from_unknown 2 "$LDSEARCH" --from libnope.so --dlopen libz.so.1 /bin/true
check dlopen_missing 1 "$LDSEARCH" --dlopen libnothere.so /bin/true
grep -q '^libnothere.so: cannot open shared object file: No such file or directory$' "$tmp/err" || { fail=$((fail+1)); echo "FAIL dlopen_missing message"; }
check dlopen_found 0 "$LDSEARCH" --dlopen libz.so.1 /bin/true
tail -1 "$tmp/out" | grep -q 'libz.so.1$' || { fail=$((fail+1)); echo "FAIL dlopen_found result"; }
check env_option 2 "$LDSEARCH" --env PATH=/x /bin/true
check path_lookup 0 "$LDSEARCH" true
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
