#!/bin/sh
# Debian's own releases as roots, for the tests of other glibc versions
# (tests/roots): bullseye (glibc 2.31, whose ld.so has no --help), trixie
# (glibc 2.41) and forky (glibc 2.43), each made once by
# debootstrap (minbase, plus the root's own compiler and what ldshim's build
# and tests need from it: scripts/root-resolver.sh) from apt's configured
# mirror, and kept in $LDSHIM_ROOTS_DIR (default /var/cache/ldshim/roots).
# The suites are fetched in parallel; a root that exists is reused.  Needs
# root (debootstrap); exits 77 (skipped) otherwise.
#   scripts/roots.sh [SUITE...]        default: bullseye trixie forky
set -eu
cd "$(dirname "$0")/.."
dir=${LDSHIM_ROOTS_DIR:-/var/cache/ldshim/roots}
[ "$#" -gt 0 ] || set -- bullseye trixie forky
if [ "$(id -u)" -ne 0 ]; then
    echo "roots: SKIPPED: debootstrap needs root"
    exit 77
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi
mkdir -p "$dir"

packages=gcc,g++,libc6-dev,patchelf,ninja-build,pkg-config,python3,python3-jsonschema,nlohmann-json3-dev,libgtest-dev,libgmock-dev,libelf-dev,zlib1g-dev

# What is mounted under a directory, deepest first, unmounted: a debootstrap
# that failed can leave the half root's /proc mounted, which rm cannot remove.
unmount_under() {
    awk -v p="$1/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m"
    done
}

# One suite into DIR/SUITE, through DIR/SUITE.tmp so that an interrupted run
# never leaves half a root where a test would take it for a whole one.  A
# cached root made with another package list gets the missing ones.  One run
# at a time makes a suite (a second waits for the first's root).
make_root() {
    suite=$1
    exec 9>"$dir/$suite.lock"
    flock 9
    if [ -x "$dir/$suite/usr/bin/env" ]; then
        if [ "$(cat "$dir/$suite.packages" 2>/dev/null)" != "$packages" ]; then
            # shellcheck disable=SC2046 # one word per package
            chroot "$dir/$suite" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                $(echo "$packages" | tr , ' ') >"$dir/$suite.log" 2>&1 ||
                { tail -n 20 "$dir/$suite.log" >&2; echo "roots: $suite: apt-get failed" >&2; return 1; }
            echo "$packages" >"$dir/$suite.packages"
        fi
        echo "roots: $suite: cached in $dir/$suite"
        return 0
    fi
    mirror=$(./scripts/debian-mirror.sh "$suite") || return 1
    unmount_under "$dir/$suite.tmp"
    rm -rf "$dir/$suite.tmp"
    start=$(date +%s)
    # A release newer than this debootstrap (forky on Debian 12) has no
    # script of its own; every Debian release since buster uses sid's.
    script=/usr/share/debootstrap/scripts/$suite
    [ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
    if ! debootstrap --variant=minbase --include="$packages" "$suite" "$dir/$suite.tmp" "$mirror" "$script" \
        >"$dir/$suite.log" 2>&1; then
        tail -n 20 "$dir/$suite.log" >&2
        unmount_under "$dir/$suite.tmp"
        echo "roots: $suite: debootstrap failed (log: $dir/$suite.log)" >&2
        return 1
    fi
    mv "$dir/$suite.tmp" "$dir/$suite"
    echo "$packages" >"$dir/$suite.packages"
    echo "roots: $suite: made from $mirror in $(($(date +%s) - start)) s"
}

pids=""
for s in "$@"; do
    make_root "$s" &
    pids="$pids $!"
done
status=0
for p in $pids; do wait "$p" || status=1; done
exit $status
