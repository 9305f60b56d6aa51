#!/bin/sh
# The release tarball, made and checked (scripts/test.sh runs this):
#   1. scripts/release.sh OUTDIR           the source tarball (meson dist),
#                                          and from it unpacked the binary
#                                          one, built in the bullseye root
#                                          (glibc 2.31), or reused when its
#                                          inputs are unchanged
#      the source tarball                  unpacks to ldshim-VERSION/ alone,
#                                          its meson.build states VERSION
#                                          (the binary tarballs' too), and
#                                          it holds every file committed at
#                                          HEAD but the recipes of
#                                          contrib/spack, contrib/easybuild
#      OUTDIR/SHA256SUMS                   `sha256sum -c` passes, and it
#                                          lists the source tarball and each
#                                          binary one (after step 5 too)
#   2. scripts/release-symbols.sh TARBALL  glibc alone, GLIBC_2.28 at most
#   3. scripts/release-relocation.sh TARBALL
#                                          unpacked and used as nobody, here
#                                          and in every Debian and glibc root
#                                          present
#   4. tests/docs/modules_test.sh lmod|environment-modules --tarball TARBALL
#                                          its module files, with Debian's
#                                          Lmod and Environment Modules
#                                          (scripts/environment-modules.sh
#                                          unpacks the latter where needed):
#                                          the tarball unpacked and moved as
#                                          nobody, `module load ldshim` puts
#                                          the moved tree's paths first,
#                                          unload restores the environment;
#                                          SKIPPED where a module system is
#                                          missing
#   5. scripts/release.sh --arch aarch64, release-symbols.sh on it, and
#      tests/arm64/release_test.sh: the aarch64 twin, cross-built in the
#      same root, used in the arm64 roots under qemu-user (SKIPPED without
#      the cross tools: scripts/cross-aarch64.sh, which scripts/test.sh
#      runs first)
# Exits 0 when all pass, 1 when one fails, 77 (skipped) when no tarball can
# be built here (not root, or no bullseye root: scripts/roots.sh).
#   scripts/release-test.sh [--help] [OUTDIR]   default OUTDIR /var/tmp/ldshim-release
set -eu
case ${1:-} in
    --help | -h) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "release-test: unknown option $1 (see --help)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
out=${1:-/var/tmp/ldshim-release}
log=$(mktemp "${TMPDIR:-/tmp}/ldshim-release-test.XXXXXX")
trap 'rm -f "$log"' EXIT

rc=0
./scripts/release.sh "$out" >"$log" 2>&1 || rc=$?
cat "$log"
[ "$rc" -ne 77 ] || exit 77
[ "$rc" -eq 0 ] || { echo "release-test: FAIL: scripts/release.sh exited $rc"; exit 1; }
tarball=$(tail -n 1 "$log")
source=$(sed -n 's/^release: source tarball //p' "$log" | tail -n 1)

status=0
check_sums() { # TARBALL...: SHA256SUMS holds each and checks
    (cd "$(dirname "$source")" && sha256sum --quiet -c SHA256SUMS) || { echo "release-test: FAIL: SHA256SUMS does not check"; return 1; }
    for t in "$source" "$@"; do
        grep -q "  $(basename "$t")\$" "$(dirname "$source")/SHA256SUMS" ||
            { echo "release-test: FAIL: SHA256SUMS does not list $(basename "$t")"; return 1; }
    done
    echo "release-test: SHA256SUMS: $(wc -l <"$(dirname "$source")/SHA256SUMS") tarballs, all check"
}
check_source() {
    [ -f "$source" ] || { echo "release-test: FAIL: scripts/release.sh named no source tarball"; return 1; }
    name=$(basename "$source" .tar.xz)
    version=${name#ldshim-}
    case $(basename "$tarball") in "$name-"*) ;; *) echo "release-test: FAIL: $tarball is not of $name"; return 1 ;; esac
    d=$(mktemp -d "${TMPDIR:-/tmp}/ldshim-release-source.XXXXXX")
    rc=0
    tar -xJf "$source" -C "$d" || rc=1
    if [ "$rc" -ne 0 ] || [ "$(ls -A "$d")" != "$name" ]; then
        echo "release-test: FAIL: $source does not unpack to $name/ alone: $(ls -A "$d")"
        rc=1
    fi
    v=$(meson introspect --projectinfo "$d/$name/meson.build" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])') || v=""
    [ "$rc" -ne 0 ] || [ "$v" = "$version" ] || { echo "release-test: FAIL: $name's meson.build states version '$v'"; rc=1; }
    (cd "$d/$name" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$d/has"
    git ls-tree -r --name-only HEAD | grep -v -e '^contrib/spack/' -e '^contrib/easybuild/' | LC_ALL=C sort >"$d/want"
    if ! diff -u "$d/want" "$d/has" >"$d/diff"; then
        echo "release-test: FAIL: $name.tar.xz does not hold HEAD's committed files (- missing, + extra):"
        sed -n '3,40p' "$d/diff"
        rc=1
    fi
    [ "$rc" -ne 0 ] || echo "release-test: source tarball $name.tar.xz: unpacks to $name/, version $version, HEAD's $(wc -l <"$d/want") files (less the recipes)"
    rm -rf "$d"
    return "$rc"
}
check_source || status=1
check_sums "$tarball" || status=1
./scripts/release-symbols.sh "$tarball" || status=1
./scripts/release-relocation.sh "$tarball" || status=1
./scripts/environment-modules.sh >/dev/null || true # says why not on stderr; the test then says SKIPPED
for m in lmod environment-modules; do
    rc=0
    ./tests/docs/modules_test.sh "$m" --tarball "$tarball" || rc=$?
    [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || status=1
done

# The aarch64 twin: built, its imports checked, used in the arm64 roots.
rc=0
./scripts/release.sh --arch aarch64 "$out" >"$log" 2>&1 || rc=$?
cat "$log"
if [ "$rc" -eq 0 ]; then
    arm64=$(tail -n 1 "$log")
    ./scripts/release-symbols.sh "$arm64" || status=1
    rc=0
    ./tests/arm64/release_test.sh "$arm64" || rc=$?
    [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || status=1
    check_sums "$tarball" "$arm64" || status=1
    tarball="$tarball $arm64"
elif [ "$rc" -ne 77 ]; then
    echo "release-test: FAIL: scripts/release.sh --arch aarch64 exited $rc"
    status=1
fi
[ "$status" -eq 0 ] && echo "release-test: PASS: $tarball" || echo "release-test: FAIL (above)"
exit $status
