#!/bin/sh
# The runtime on another glibc: libldshim, the preload and the in-process
# suites built inside a Debian root (scripts/roots.sh) by the root's own
# compiler, against its own glibc, headers and GoogleTest, and run there.
# Default: bullseye (glibc 2.31, where dlopen lives in libdl and there is no
# _dl_find_object).  The build driver is this machine's meson, run by the
# root's python3: the root's own meson is older than the project needs.
# The default suites are those that need nothing from the host: the
# interposers suite drives this machine's tools (clang, heaptrack, valgrind).
# Needs root (chroot, a private mount namespace); exits 77 (skipped) otherwise.
#   scripts/root-resolver.sh [SUITE [MESON-TEST-SUITE...]]
set -eu
cd "$(dirname "$0")/.."
suite=${1:-bullseye}
[ "$#" -gt 0 ] && shift
[ "$#" -gt 0 ] || set -- resolver c-api hooks memtype
root=${LDSHIM_ROOTS_DIR:-/var/cache/ldshim/roots}/$suite
./scripts/root-tree.sh --check "$root" root-resolver || exit $?

# This working tree (uncommitted changes included), and the host's meson.
./scripts/root-tree.sh "$root" ldshim

# The generator tests the ldsearch the release tarball ships: the static
# one linked here (one linked on glibc before 2.34 crashes at start with a
# DST in its own LD_LIBRARY_PATH, which the generator's --diff runs have).
if [ -x build/tools/ldsearch/ldsearch ] && file -L build/tools/ldsearch/ldsearch | grep -q 'statically linked'; then
    cp build/tools/ldsearch/ldsearch "$root/tmp/ldshim-host-ldsearch"
    export LDSHIM_GEN_LDSEARCH=/tmp/ldshim-host-ldsearch
fi

# Configure once (the build directory stays in the root), build, run the
# suites with a /proc of their own.
echo "root-resolver: $suite: $(chroot "$root" g++ --version | head -n 1), glibc $(chroot "$root" ldd --version | head -n 1 | sed 's/.* //')"
suites=""
for s in "$@"; do suites="$suites --suite $s"; done
# shellcheck disable=SC2016 # expanded inside the chroot's shell
script='set -e
cd /tmp/ldshim-src
[ -f /tmp/ldshim-build/build.ninja ] ||
    /tmp/ldshim-meson/meson setup /tmp/ldshim-build -Dwerror=true -Dbench=false -Dcuda=disabled >/dev/null
/tmp/ldshim-meson/meson test -C /tmp/ldshim-build --print-errorlogs --num-processes 2 '"$suites"
./scripts/root-tree.sh --in "$root" sh -c "$script"
