#!/bin/sh
# The random-tree generator (tests/differential/generator_test.cc) against
# the emulated loaders of the arm64 roots (scripts/arm64-root.sh): each tree
# is cross-compiled here with aarch64-linux-gnu-gcc against the root, run in
# it chrooted under qemu-user (binfmt_misc), and compared with `ldsearch
# --root`; the runtime resolver's runs use build-arm64's libldshim
# (scripts/cross-aarch64.sh), copied into the root's /opt/ldshim-gen by
# scripts/arm64-lib.sh.
# Each root under qemu's default CPU and under QEMU_CPU=cortex-a72 (no LSE
# atomics: no atomics/ subdirectory), the same seeds for both.
#   scripts/arm64-generator.sh [--seeds N] [--seed S] [SUITE...]
# SUITE: bookworm trixie (default: both, each one made).  The seeds default
# to 200 trees per root and CPU from a random base seed (printed).
# Needs root, ./build (scripts/setup.sh) and ./build-arm64.  Exit: 0 all
# identical, 1 a difference or an error, 77 (skipped) when no root, no
# cross build or no binfmt_misc entry for qemu-aarch64.
set -eu
cd "$(dirname "$0")/.."
# shellcheck source=scripts/generator-options.sh
. scripts/generator-options.sh
generator_options "$@"
shift "$generator_shift"
[ "$#" -gt 0 ] || set -- bookworm trixie
skip() {
    echo "arm64-generator: SKIPPED: $*"
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "chroot(2) needs root"
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || skip "no binfmt_misc entry for qemu-aarch64 (scripts/arm64-root.sh)"
command -v aarch64-linux-gnu-gcc >/dev/null || skip "no aarch64-linux-gnu-gcc (scripts/cross-aarch64.sh installs it)"
[ -f build-arm64/build.ninja ] || skip "no cross build in build-arm64 (scripts/cross-aarch64.sh)"
[ -n "$seed" ] || seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
roots=${LDSHIM_ARM64_ROOTS_DIR:-/var/cache/ldshim/arm64-roots}
present=""
for name in "$@"; do
    if [ -f "$roots/$name.done" ] && [ -x "$roots/$name/usr/bin/env" ]; then
        present="$present $name"
    else
        echo "arm64-generator: $name: SKIPPED: no root at $roots/$name (scripts/arm64-root.sh $name makes it)"
    fi
done
[ -n "$present" ] || exit 77
ninja -C build tests/generator_tests tools/ldsearch/ldsearch >/dev/null
ninja -C build-arm64 >/dev/null

status=0
for name in $present; do
    root=$roots/$name
    rm -rf "$root/opt/ldshim-gen"
    scripts/arm64-lib.sh build-arm64 "$root/opt/ldshim-gen/lib"
    for cpu in default cortex-a72; do
        echo "== arm64-generator: $name, CPU $cpu ($(chroot "$root" /usr/bin/ldd --version | head -n 1))"
        if [ "$cpu" = default ]; then unset QEMU_CPU; else export QEMU_CPU=$cpu; fi
        LDSHIM_GEN_SYSROOT=$root LDSHIM_GEN_SYSROOT_LIB=/opt/ldshim-gen/lib/libldshim.so.0 \
            LDSHIM_GEN_SEEDS=$seeds LDSHIM_GEN_SEED=$seed build/tests/generator_tests || status=1
    done
    unset QEMU_CPU
    rm -rf "$root/opt/ldshim-gen"
done
exit "$status"
