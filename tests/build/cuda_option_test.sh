#!/bin/sh
# -Dcuda: enabled without the CUDA Toolkit's headers stops configuring with a
# clear message; disabled never looks (no hooks, even where the headers
# are); enabled with the headers builds the hooks in.  Configures the
# project (no build) in scratch directories.
#   cuda_option_test.sh SOURCE_DIR MESON
set -u
src=$1 meson=${2:-}
if [ -z "$meson" ] || [ ! -x "$meson" ]; then
    echo "SKIPPED: no meson command to configure with"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
configure() { # DIR OPTIONS...: meson setup, its output in DIR.log
    d=$tmp/$1; shift
    "$meson" setup "$d" "$src" -Dtests=false -Dbench=false "$@" >"$d.log" 2>&1
}
hooks_built() { grep -q 'LDSHIM_HAVE_CUDA_HEADERS=1' "$tmp/$1/build.ninja"; }
ok() { pass=$((pass+1)); }
no() { fail=$((fail+1)); echo "FAIL $*"; }

if configure enabled-missing -Dcuda=enabled -Dcudatoolkit_include=/nonexistent; then
    no "-Dcuda=enabled without headers configured"
elif grep -q -- '-Dcuda=enabled, but there are no CUDA Toolkit headers (cuda.h, cuda_runtime_api.h) in /nonexistent' \
    "$tmp/enabled-missing.log"; then ok; else no "-Dcuda=enabled without headers: no clear message"; cat "$tmp/enabled-missing.log"; fi

if configure auto-missing -Dcudatoolkit_include=/nonexistent && ! hooks_built auto-missing; then ok
else no "-Dcuda=auto without headers"; fi

headers=/usr/local/cuda/include
if [ -f "$headers/cuda.h" ] && [ -f "$headers/cuda_runtime_api.h" ]; then
    if configure disabled -Dcuda=disabled -Dcudatoolkit_include=$headers && ! hooks_built disabled &&
        ! grep -q 'CUDA headers' "$tmp/disabled.log"; then ok; else no "-Dcuda=disabled looked, or built the hooks"; fi
    if configure enabled -Dcuda=enabled -Dcudatoolkit_include=$headers && hooks_built enabled; then ok
    else no "-Dcuda=enabled with headers"; cat "$tmp/enabled.log"; fi
else
    echo "SKIPPED: the enabled and disabled cases with headers need the CUDA Toolkit's at $headers"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
