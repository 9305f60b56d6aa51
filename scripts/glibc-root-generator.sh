#!/bin/sh
# The random-tree generator (tests/differential/generator_test.cc) against
# the loader of each glibc root that scripts/glibc-roots.sh built: the trees
# are built here against the root's glibc (the roots hold no compiler), run
# chrooted, and compared with `ldsearch --root`; the runtime resolver's runs
# use the release tarball's libldshim (scripts/release.sh, built in the
# bullseye root, GLIBC_2.28 at most) unpacked into the root's /opt.
#   scripts/glibc-root-generator.sh [--seeds N] [--seed S] [NAME...]
# NAME: rhel8 rhel9 2.28 2.34 2.35 2.39 (default: every one built); the
# seeds default to 200 trees from a random base seed (printed).  Without a
# tarball the resolver's runs are left out, and the line says so.
# Needs root and ./build (scripts/setup.sh).  Exit: 0 all identical, 1 a
# difference or an error, 77 (skipped) when no root is built or not root.
set -eu
cd "$(dirname "$0")/.."
# shellcheck source=scripts/generator-options.sh
. scripts/generator-options.sh
generator_options "$@"
shift "$generator_shift"
[ "$#" -gt 0 ] || set -- rhel8 rhel9 2.28 2.34 2.35 2.39
[ "$(id -u)" -eq 0 ] || { echo "glibc-root-generator: SKIPPED: chroot(2) needs root"; exit 77; }
[ -n "$seed" ] || seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
roots=${LDSHIM_GLIBC_ROOTS_DIR:-/var/cache/ldshim/glibc-roots}
release=${LDSHIM_RELEASE_DIR:-/var/tmp/ldshim-release}
present=""
for name in "$@"; do
    if [ -f "$roots/$name/etc/ldshim-glibc-root" ]; then
        present="$present $name"
    else
        echo "glibc-root-generator: $name: SKIPPED: no root at $roots/$name (scripts/glibc-roots.sh $name builds it)"
    fi
done
[ -n "$present" ] || exit 77
ninja -C build tests/generator_tests tools/ldsearch/ldsearch >/dev/null

# The tarball, made or reused (release.sh keys it on its inputs).
tarball=""
if out=$(./scripts/release.sh "$release" 2>&1); then
    tarball=$(printf '%s\n' "$out" | tail -n 1)
else
    echo "glibc-root-generator: no release tarball (scripts/release.sh: $(printf '%s\n' "$out" | tail -n 1)); the resolver is left out"
fi

status=0
for name in $present; do
    root=$roots/$name
    lib=""
    if [ -n "$tarball" ]; then
        rm -rf "$root/opt/ldshim-gen"
        mkdir -p "$root/opt/ldshim-gen"
        tar -C "$root/opt/ldshim-gen" --strip-components=1 -xJf "$tarball"
        lib=/opt/ldshim-gen/lib/libldshim.so.0
    fi
    echo "== glibc-root-generator: $name ($(sed -n "s/^glibc: //p" "$root/etc/ldshim-glibc-root"))"
    LDSHIM_GEN_SYSROOT=$root LDSHIM_GEN_SYSROOT_LIB=$lib LDSHIM_GEN_SEEDS=$seeds LDSHIM_GEN_SEED=$seed \
        build/tests/generator_tests || status=1
done
exit "$status"
