#!/bin/sh
# The release tarball, made and checked (scripts/test.sh runs this):
#   1. scripts/release.sh OUTDIR           built in the bullseye root (glibc
#                                          2.31), or reused when its inputs
#                                          are unchanged
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

status=0
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
    tarball="$tarball $arm64"
elif [ "$rc" -ne 77 ]; then
    echo "release-test: FAIL: scripts/release.sh --arch aarch64 exited $rc"
    status=1
fi
[ "$status" -eq 0 ] && echo "release-test: PASS: $tarball" || echo "release-test: FAIL (above)"
exit $status
