#!/bin/sh
# ldsearch's command-line conventions: help, version, exit codes, stderr.
set -u
LDSEARCH=$1 PROJECT_VERSION=${2:-} PC_DIR=${3:-}
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
# One version, written once in meson's project(): the tool and pkg-config agree with it.
if [ -n "$PROJECT_VERSION" ]; then
    [ "$(cat "$tmp/out")" = "ldsearch (ldshim) $PROJECT_VERSION" ] || { fail=$((fail+1)); echo "FAIL version text: $(cat "$tmp/out")"; }
    pc=$(PKG_CONFIG_PATH=$PC_DIR pkg-config --modversion ldshim-uninstalled 2>&1)
    [ "$pc" = "$PROJECT_VERSION" ] || { fail=$((fail+1)); echo "FAIL pkg-config version: $pc"; }
fi
check no_program 2 "$LDSEARCH"
check bad_option 2 "$LDSEARCH" --frobnicate /bin/true
check missing_file 3 "$LDSEARCH" /nonexistent/prog
grep -q 'No such file or directory' "$tmp/err" || { fail=$((fail+1)); echo "FAIL missing_file message"; }
printf 'not an elf\n' > "$tmp/script"; chmod +x "$tmp/script"
check not_elf 3 "$LDSEARCH" "$tmp/script"
head -c 40 /bin/true > "$tmp/trunc"; chmod +x "$tmp/trunc"
check truncated_elf 3 "$LDSEARCH" "$tmp/trunc"
# CC32: a compiler of 32-bit programs (the build's, from meson's test setup).
# shellcheck disable=SC2086  # a command with its flags
if [ -n "${CC32-cc -m32}" ] && ${CC32-cc -m32} -nostdlib -o "$tmp/prog32" -x c - >/dev/null 2>&1 <<'C'
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
# --from orders: OBJECT has its own RUNPATH, so a search from PROGRAM
# would miss what a search from OBJECT finds.  --from goes before the
# --dlopen it applies to; one no later --dlopen follows is a usage error
# (never a silent search from PROGRAM); why takes --from anywhere.
mkdir -p "$tmp/from/lib/plug"
# shellcheck disable=SC2016 # $ORIGIN is the loader's
if echo 'int plug;' | ${CC:-cc} -shared -fPIC -x c -o "$tmp/from/lib/plug/libplug.so" - &&
    echo 'int a;' | ${CC:-cc} -shared -fPIC -x c -o "$tmp/from/lib/liba.so" -Wl,--enable-new-dtags,-rpath,'$ORIGIN/plug' - &&
    echo 'int main(void) { return 0; }' | ${CC:-cc} -x c -o "$tmp/from/prog" - -L"$tmp/from/lib" -Wl,--no-as-needed -la \
        -Wl,--enable-new-dtags,-rpath,'$ORIGIN/lib'; then
    check from_before_dlopen 0 "$LDSEARCH" --from liba.so --dlopen libplug.so "$tmp/from/prog"
    if ! grep -q "^  trying file=$tmp/from/lib/plug/libplug.so$" "$tmp/out" || ! tail -1 "$tmp/out" | grep -q "/lib/plug/libplug.so$"; then
        fail=$((fail+1)); echo "FAIL from_before_dlopen: not found through liba.so's RUNPATH"; cat "$tmp/out"
    fi
    check from_after_dlopen 2 "$LDSEARCH" --dlopen libplug.so --from liba.so "$tmp/from/prog"
    grep -q -- '--from liba.so applies to the --dlopen options after it, and none follows; put it first: ldsearch --from liba.so --dlopen NAME PROGRAM' "$tmp/err" ||
        { fail=$((fail+1)); echo "FAIL from_after_dlopen message"; cat "$tmp/err"; }
    [ ! -s "$tmp/out" ] || { fail=$((fail+1)); echo "FAIL from_after_dlopen printed a search"; cat "$tmp/out"; }
    check from_alone 2 "$LDSEARCH" --from liba.so "$tmp/from/prog"
    check from_trailing_second 2 "$LDSEARCH" --from liba.so --dlopen libplug.so --from "$tmp/from/prog" "$tmp/from/prog"
    check from_dlopen_from_dlopen 0 "$LDSEARCH" --from liba.so --dlopen libplug.so --from "$tmp/from/prog" --dlopen libz.so.1 "$tmp/from/prog"
    check why_from_after_name 0 "$LDSEARCH" why libplug.so --from liba.so "$tmp/from/prog"
    grep -q "^verdict: libplug.so: .*$tmp/from/lib/plug/libplug.so" "$tmp/out" || { fail=$((fail+1)); echo "FAIL why_from_after_name verdict"; cat "$tmp/out"; }
    check why_from_before_name 0 "$LDSEARCH" why --from liba.so libplug.so "$tmp/from/prog"
    check why_without_from 1 "$LDSEARCH" why libplug.so "$tmp/from/prog"
else
    fail=$((fail+1)); echo "FAIL from orders: cannot build the fixture with ${CC:-cc}"
fi
check env_option 2 "$LDSEARCH" --env PATH=/x /bin/true
check path_lookup 0 "$LDSEARCH" true
# The modes and their exit statuses: tree, why, --root, --hwcaps, --diff, --replay.
check tree_mode 0 "$LDSEARCH" tree /bin/true
grep -q 'libc.so.6 => .*\[ld.so.cache\]' "$tmp/out" || { fail=$((fail+1)); echo "FAIL tree output"; }
check tree_json 0 "$LDSEARCH" tree --json /bin/true
check why_found 0 "$LDSEARCH" why libc.so.6 /bin/true
grep -q '^verdict: libc.so.6: ' "$tmp/out" || { fail=$((fail+1)); echo "FAIL why verdict"; }
check why_missing 1 "$LDSEARCH" why libnothere.so /bin/true
check why_no_name 2 "$LDSEARCH" why
check bad_color 2 "$LDSEARCH" tree --color=sometimes /bin/true
check root_not_dir 3 "$LDSEARCH" --root /nonexistent /bin/true
check bad_hwcaps 2 "$LDSEARCH" --hwcaps a/b /bin/true
check diff_true 0 "$LDSEARCH" --diff -- true
grep -q 'all identical$' "$tmp/out" || { fail=$((fail+1)); echo "FAIL diff summary"; }
check diff_no_command 2 "$LDSEARCH" --diff --
check replay_missing 3 "$LDSEARCH" --replay "$tmp/nothere"
# The loader-configuration cache: one file per loader and build of
# ldsearch.  A copy of the same build shares it; another build (here: the
# copy with its build ID changed, then without one, where its file names it)
# parses the loader's answer itself instead of reading the file.
mkdir "$tmp/xdg"
cp "$LDSEARCH" "$tmp/ldsearch-copy"
cache_files() { find "$tmp/xdg/ldshim" -type f -name 'loader-*' | wc -l; }
check cache_first 0 env XDG_CACHE_HOME="$tmp/xdg" "$LDSEARCH" /bin/true
cp "$tmp/out" "$tmp/first.out"
check cache_again 0 env XDG_CACHE_HOME="$tmp/xdg" "$LDSEARCH" /bin/true
check cache_copy 0 env XDG_CACHE_HOME="$tmp/xdg" "$tmp/ldsearch-copy" /bin/true
cmp -s "$tmp/out" "$tmp/first.out" || { fail=$((fail+1)); echo "FAIL cache: the copy searched differently"; }
[ "$(cache_files)" -eq 1 ] || { fail=$((fail+1)); echo "FAIL cache: $(cache_files) files after one build, want 1"; }
id=$(readelf -n "$LDSEARCH" | awk '/Build ID:/ { print $3 }')
if [ -n "$id" ]; then
    python3 -c 'import sys
p, old = sys.argv[1], bytes.fromhex(sys.argv[2])
data = open(p, "rb").read()
assert data.count(old) == 1
open(p, "wb").write(data.replace(old, bytes([old[0] ^ 1]) + old[1:]))' "$tmp/ldsearch-copy" "$id"
    check cache_other_build 0 env XDG_CACHE_HOME="$tmp/xdg" "$tmp/ldsearch-copy" /bin/true
    "${OBJCOPY:-objcopy}" --remove-section=.note.gnu.build-id "$LDSEARCH" "$tmp/ldsearch-noid"
    check cache_no_build_id 0 env XDG_CACHE_HOME="$tmp/xdg" "$tmp/ldsearch-noid" /bin/true
    cmp -s "$tmp/out" "$tmp/first.out" || { fail=$((fail+1)); echo "FAIL cache: the build without an ID searched differently"; }
    [ "$(cache_files)" -eq 3 ] || { fail=$((fail+1)); echo "FAIL cache: $(cache_files) files after three builds, want 3"; }
fi
# The man page renders without warnings; the completion loads.
src=$(dirname "$0")/../tools/ldsearch
if command -v groff >/dev/null 2>&1; then
    man=$(dirname "$LDSEARCH")/ldsearch.1
    check man_page 0 sh -c "groff -man -Tutf8 -ww -z '$man' 2>&1 | (! grep .)"
    hooks_man=$(dirname "$LDSEARCH")/../ldshim-hooks/ldshim-hooks.1
    check hooks_man_page 0 sh -c "groff -man -Tutf8 -ww -z '$hooks_man' 2>&1 | (! grep .)"
    if [ -n "$PROJECT_VERSION" ]; then
        grep -q "ldshim $PROJECT_VERSION" "$man" || { fail=$((fail+1)); echo "FAIL man page version"; }
    fi
fi
check completion 0 bash -c ". /usr/share/bash-completion/bash_completion 2>/dev/null; . '$src/ldsearch.bash' && complete -p ldsearch"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
