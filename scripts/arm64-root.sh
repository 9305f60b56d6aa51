#!/bin/sh
# An arm64 Debian root for the aarch64 checks: debootstrap
# --foreign (minbase) on this host, then the second stage inside the root
# through qemu-user (binfmt_misc).  Kept in $LDSHIM_ARM64_ROOTS_DIR (default
# /var/cache/ldshim/arm64-roots); a finished root is reused.  Prints the
# root's path on stdout (progress goes to stderr).  Needs root.
#   scripts/arm64-root.sh [bookworm|trixie]     default: bookworm
set -eu
cd "$(dirname "$0")/.."
suite=${1:-bookworm}
dir=${LDSHIM_ARM64_ROOTS_DIR:-/var/cache/ldshim/arm64-roots}
if [ "$(id -u)" -ne 0 ]; then
    echo "arm64-root: needs root (debootstrap, chroot, binfmt_misc)" >&2
    exit 77
fi

# qemu-user for arm64 programs, registered with the kernel so that chroot
# (and the host's exec) runs them.
need=""
command -v qemu-aarch64-static >/dev/null 2>&1 || need="$need qemu-user-static"
command -v update-binfmts >/dev/null 2>&1 || need="$need binfmt-support"
command -v debootstrap >/dev/null 2>&1 || need="$need debootstrap"
if [ -n "$need" ]; then
    # shellcheck disable=SC2086 # one word per package
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >&2
fi
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64 >&2

root=$dir/$suite
if [ -e "$root.done" ] && [ -x "$root/usr/bin/env" ]; then
    echo "$root"
    exit 0
fi
mkdir -p "$dir"
log=$dir/$suite.log
# A root is moved into place only once debootstrap finished; what follows
# it (libc6-dev, the checks) is redone until it has passed once.
if [ ! -x "$root/usr/bin/env" ]; then
    mirror=$(./scripts/debian-mirror.sh "$suite")
    script=/usr/share/debootstrap/scripts/$suite
    [ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid
    # Through $root.tmp so that an interrupted run never leaves half a root.
    rm -rf "$root.tmp"
    start=$(date +%s)
    if ! debootstrap --arch=arm64 --foreign --variant=minbase "$suite" "$root.tmp" "$mirror" "$script" >"$log" 2>&1 ||
        ! chroot "$root.tmp" /debootstrap/debootstrap --second-stage >>"$log" 2>&1; then
        tail -n 20 "$log" >&2
        echo "arm64-root: $suite: debootstrap failed (log: $log)" >&2
        exit 1
    fi
    rm -rf "$root"
    mv "$root.tmp" "$root"
    echo "arm64-root: $suite: made from $mirror in $(($(date +%s) - start)) s" >&2
fi
# libc6-dev: the root is also the sysroot of the cross-compiled test trees
# (aarch64-linux-gnu-gcc --sysroot ROOT).
if [ ! -e "$root/usr/lib/aarch64-linux-gnu/crt1.o" ]; then
    chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libc6-dev \
        >>"$log" 2>&1 || { tail -n 20 "$log" >&2; echo "arm64-root: $suite: apt-get failed" >&2; exit 1; }
fi
chroot "$root" /bin/true
chroot "$root" env LD_DEBUG=libs /bin/true 2>&1 | grep -q 'find library=libc.so.6' ||
    { echo "arm64-root: $suite: LD_DEBUG=libs prints no search" >&2; exit 1; }
touch "$root.done"
echo "$root"
