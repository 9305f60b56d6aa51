#!/bin/sh
# The source tarball, OUTDIR/ldshim-VERSION.tar.xz: `meson dist` of this
# checkout (its committed files; meson.build's dist script leaves the
# recipes of contrib/spack and contrib/easybuild out, as they state this
# tarball's sha256), repacked so that one commit always gives the same
# bytes: names sorted, owner root, modes without group or other write,
# every time that of the last commit changing its contents, xz -6 in
# one thread.  The recipes' sha256 is
# that of this file (tests/recipes/recipes_check.sh checks it).
# --no-tests: meson dist's own test build is left out (scripts/release.sh
# builds the product from the tarball, tests/recipes/recipes_check.sh the
# product and its tests).  Uncommitted changes are left out, with a warning.
#   scripts/dist.sh [--help] OUTDIR
# Prints the tarball's path as its last line.  Needs git, meson, tar, xz.
set -eu
case ${1:-} in
    --help | -h) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "dist: unknown option $1 (see --help)" >&2; exit 2 ;;
esac
[ "$#" -eq 1 ] || { echo "dist: one OUTDIR (see --help)" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
fail() { echo "dist: FAIL: $*" >&2; exit 1; }
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || fail "meson dist needs a git checkout: $PWD is none"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    echo "dist: WARNING: uncommitted changes are not in the source tarball" >&2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ldshim-dist.XXXXXX")
trap 'rm -rf "$work"' EXIT
meson setup "$work/build" -Dtests=false -Dbench=false -Dcuda=disabled >"$work/log" 2>&1 ||
    { tail -n 40 "$work/log" >&2; fail "meson setup failed"; }
version=$(meson introspect --projectinfo "$work/build" | python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
[ -n "$version" ] || fail "meson introspect names no project version"
name=ldshim-$version
subprojects=""
[ ! -d subprojects ] || subprojects=--include-subprojects
# shellcheck disable=SC2086 # empty or one word
meson dist -C "$work/build" --formats xztar --no-tests --allow-dirty $subprojects >>"$work/log" 2>&1 ||
    { tail -n 40 "$work/log" >&2; fail "meson dist failed"; }
mkdir "$work/unpacked"
tar -xJf "$work/build/meson-dist/$name.tar.xz" -C "$work/unpacked"
[ -f "$work/unpacked/$name/meson.build" ] || fail "meson dist's tarball has no $name/meson.build"
# The time of the last commit that changed what the tarball holds: the
# commit that writes its sha256 into the recipes does not change it.
epoch=$(git log -1 --format=%ct -- . ':!contrib/spack' ':!contrib/easybuild')
tar --sort=name --format=gnu --owner=0 --group=0 --numeric-owner --mode='u+rwX,go+rX,go-w' --mtime="@$epoch" \
    -C "$work/unpacked" -cf - "$name" | xz -T 1 -6 >"$work/$name.tar.xz"
# Replaced only when it differs: an unchanged one keeps its time.
cmp -s "$work/$name.tar.xz" "$out/$name.tar.xz" || mv "$work/$name.tar.xz" "$out/$name.tar.xz"
echo "$out/$name.tar.xz"
