# Sourced by the arm64 preload tests (entries_test.sh, resolver_test.sh):
# takes an aarch64 build directory, or an installed tree (lib/ holds the
# preload: the unpacked aarch64 release tarball), from $1, sets `build` and
# `preload`,
# exits 77 (SKIPPED) without the cross compiler, the preload or qemu-user in
# binfmt_misc, and leaves the caller in a fresh temporary directory that is
# removed on exit.  With ARM64_ROOT (an arm64 root: scripts/arm64-root.sh)
# the directory is inside the root, ldshim's libraries are copied there, and
# `run CMD...` runs CMD in it chrooted, under that root's loader and libc;
# `itmp` is the directory as the programs see it.  Without it `run` runs
# CMD here (this machine's multiarch arm64 glibc).
# shellcheck shell=sh
build=$(cd "${1:?usage: $0 BUILD_ARM64}" && pwd)
preload=$build/preload/libldshim_preload.so
[ -f "$preload" ] || [ ! -f "$build/lib/libldshim_preload.so" ] || preload=$build/lib/libldshim_preload.so
command -v aarch64-linux-gnu-gcc >/dev/null || { echo "SKIPPED: no aarch64-linux-gnu-gcc"; exit 77; }
[ -f "$preload" ] || { echo "SKIPPED: $preload not built"; exit 77; }
if [ "$(head -1 /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null)" != enabled ]; then
    echo "SKIPPED: qemu-aarch64 is not registered in binfmt_misc (scripts/arm64-root.sh does it)"
    exit 77
fi
if [ -n "${ARM64_ROOT:-}" ]; then
    [ -x "$ARM64_ROOT/bin/sh" ] || { echo "SKIPPED: no arm64 root at $ARM64_ROOT"; exit 77; }
    tmp=$(mktemp -d "$ARM64_ROOT/tmp/ldshim-test.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    itmp=${tmp#"$ARM64_ROOT"}
    "$(dirname "$0")/../../scripts/arm64-lib.sh" "$build" "$tmp/ldshim"
    preload=$itmp/ldshim/libldshim_preload.so
    # With a /proc, as a system has one, in a mount namespace of the run's own.
    # shellcheck disable=SC2016  # the inner shells expand them
    run() {
        unshare -m /bin/sh -c 'mount --bind /proc "$0/proc" && exec chroot "$0" /bin/sh -c '\''cd "$0" && exec "$@"'\'' "$@"' \
            "$ARM64_ROOT" "$itmp" "$@"
    }
else
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    itmp=$tmp
    run() { "$@"; }
fi
cd "$tmp" || exit 1
