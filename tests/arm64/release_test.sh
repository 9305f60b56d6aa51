#!/bin/sh
# The aarch64 release tarball (scripts/release.sh --arch aarch64) in use:
#  1. in each arm64 root made (scripts/arm64-root.sh: bookworm, glibc 2.36;
#     trixie, 2.41), unpacked by nobody and moved to another directory, its
#     static ldsearch under qemu-user: --version, and --diff of a shell that
#     runs ls twice, the second time with LD_LIBRARY_PATH naming the
#     system directory through $ORIGIN and $LIB: every search identical to
#     the root's loader;
#  2. the unpacked tree's preload in tests/arm64/entries_test.sh and
#     tests/arm64/resolver_test.sh: with this host's arm64 glibc (through
#     binfmt_misc), and chrooted in the trixie root (glibc 2.41).
# One line per check; exit 0 all pass, 1 one fails, 77 (skipped) without
# root, an arm64 root or qemu-user in binfmt_misc.
#   tests/arm64/release_test.sh TARBALL
set -eu
tarball=${1:?usage: $0 TARBALL}
case $tarball in /*) ;; *) tarball=$PWD/$tarball ;; esac
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
roots=${LDSHIM_ARM64_ROOTS_DIR:-/var/cache/ldshim/arm64-roots}
[ "$(id -u)" -eq 0 ] || { echo "SKIPPED: chroot(2) needs root"; exit 77; }
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || { echo "SKIPPED: qemu-aarch64 is not in binfmt_misc"; exit 77; }
pkg=$(basename "$tarball" .tar.xz)
status=0
ran=0
for suite in bookworm trixie; do
    root=$roots/$suite
    [ -f "$roots/$suite.done" ] || { echo "SKIPPED: $suite: no root (scripts/arm64-root.sh $suite)"; continue; }
    ran=$((ran + 1))
    dir=$root/tmp/ldshim-release-test
    rm -rf "$dir"
    mkdir -p "$dir"
    chown nobody "$dir"
    xz -dc "$tarball" >"$dir/$pkg.tar" # a minbase root has no xz
    # shellcheck disable=SC2016 # expanded by the shell in the root
    out=$("$top/scripts/root-tree.sh" --in "$root" --userspec=nobody:nogroup sh -c '
        cd /tmp/ldshim-release-test && tar -xf "$1.tar" && mv "$1" moved && cd moved &&
        bin/ldsearch --version | head -n 1 &&
        bin/ldsearch --diff -- /bin/sh -c "ls / >/dev/null; LD_LIBRARY_PATH=/\$LIB:\$ORIGIN/../lib ls / >/dev/null" \
            2>&1 | tail -n 1' sh "$pkg" 2>&1) || true
    case $out in
        "ldsearch (ldshim) "*"
"*" searches in 3 processes: all identical")
            echo "ok: $suite ($(chroot "$root" /usr/bin/ldd --version | head -n 1 | sed 's/.* //')): $(echo "$out" | tr '\n' ';' | sed 's/;$//; s/;/; /')" ;;
        *)
            echo "FAIL: $suite: $out"
            status=1 ;;
    esac
    rm -rf "$dir"
done
[ "$ran" -gt 0 ] || exit 77

tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
tar -C "$tree" -xJf "$tarball"
for where in host trixie; do
  for t in entries_test.sh resolver_test.sh; do
    root=""
    if [ $where = trixie ]; then
        [ -f "$roots/trixie.done" ] || { echo "SKIPPED: $t in trixie: no root"; continue; }
        root=$roots/trixie
    fi
    if res=$(ARM64_ROOT=$root "$here/$t" "$tree/$pkg" 2>&1); then
        echo "ok: $t with the tarball's preload ($where): $(echo "$res" | grep -c '^ok') checks"
    elif [ $? -eq 77 ]; then
        echo "$t ($where): $(echo "$res" | tail -n 1)"
    else
        echo "FAIL: $t with the tarball's preload ($where):"
        echo "$res" | grep -v '^ok' | sed 's/^/  /'
        status=1
    fi
  done
done
exit "$status"
