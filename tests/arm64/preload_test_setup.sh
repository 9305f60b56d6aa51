# Sourced by the arm64 preload tests (entries_test.sh, resolver_test.sh):
# takes an aarch64 build directory, or an installed tree (lib/ holds the
# preload: the unpacked aarch64 release tarball), from $1, sets `build` and
# `preload`,
# exits 77 (SKIPPED) without the cross compiler, the preload or qemu-user in
# binfmt_misc, and leaves the caller in a fresh temporary directory that is
# removed on exit.
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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
