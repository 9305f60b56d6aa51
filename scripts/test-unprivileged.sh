#!/bin/sh
# The suites as a normal user would run them: a copy of the source tree owned
# by a throwaway account, built there with --buildtype=release (so a warning
# that only -O3 shows fails the build), then `meson test`.  What needs root
# must say SKIPPED; everything else must pass.
#   scripts/test-unprivileged.sh [MESON TEST ARGS...]
# Run as root (it creates and removes the account); as a normal user it runs
# the same steps as that user.  The JUnit log is copied to
# build/meson-logs/unprivileged.junit.xml for test.sh's summary.
set -eu
cd "$(dirname "$0")/.."
PATH=$PATH:/usr/sbin:/sbin  # useradd, userdel, runuser
src=$PWD
user=ldshim-unpriv

work=$(mktemp -d /tmp/ldshim-unpriv.XXXXXX)
created=""
cleanup() {
    rm -rf "$work"
    [ -z "$created" ] || userdel "$user" 2>/dev/null || true
}
trap cleanup EXIT

if [ "$(id -u)" -eq 0 ]; then
    if ! id "$user" >/dev/null 2>&1; then
        useradd --system --no-create-home --home-dir "$work" --shell /bin/sh "$user"
        created=1
    fi
    # The patched libucm root built (scripts/ucx-patched.sh): read, never rebuilt.
    as_user() {
        runuser -u "$user" -- env HOME="$work" PATH=/usr/local/bin:/usr/bin:/bin CCACHE_DISABLE=1 \
            LDSHIM_UCX_CACHE=/var/cache/ldshim/ucx-patched "$@"
    }
else
    as_user() { "$@"; }
fi

# Tracked and new (not ignored) files: what a fresh clone plus this change holds.
mkdir "$work/src"
git ls-files -z --cached --others --exclude-standard | tar -C "$src" --null -T - -cf - | tar -C "$work/src" -xf -
[ "$(id -u)" -ne 0 ] || chown -R "$user" "$work"

echo "== unprivileged ($(as_user id -un)): release build"
as_user meson setup "$work/build" "$work/src" --buildtype=release -Dwerror=true -Dbench=false >/dev/null
as_user ninja -C "$work/build" >"$work/ninja.log" 2>&1 || { tail -40 "$work/ninja.log"; exit 1; }
echo "== unprivileged ($(as_user id -un)): meson test"
status=0
as_user meson test -C "$work/build" --print-errorlogs --num-processes 2 "$@" || status=$?
mkdir -p build/meson-logs
cp "$work/build/meson-logs/testlog.junit.xml" build/meson-logs/unprivileged.junit.xml
# Every skip names its reason; list them so a reader sees what root would add.
grep -h -e 'SKIPPED: ' -e '^\[ SKIPPED  \]' "$work/build/meson-logs/testlog.txt" | sed 's/^ */   /' | sort -u || true
exit $status
