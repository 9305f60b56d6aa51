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
if [ "$(id -u)" -ne 0 ]; then
    echo "root-resolver: SKIPPED: chroot needs root"
    exit 77
fi
if [ ! -x "$root/usr/bin/g++" ]; then
    echo "root-resolver: SKIPPED: no $suite root with a compiler at $root (scripts/roots.sh makes it)"
    exit 77
fi

# This working tree (uncommitted changes included), and the host's meson.
src=$root/tmp/ldshim-src
rm -rf "$src" "$root/tmp/ldshim-meson"
mkdir -p "$src" "$root/tmp/ldshim-meson"
git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$src"
mesonbuild=$(/usr/bin/python3 -c 'import mesonbuild, os; print(os.path.dirname(mesonbuild.__file__))')
cp -r "$mesonbuild" "$root/tmp/ldshim-meson/"
cat >"$root/tmp/ldshim-meson/meson" <<'PY'
#!/usr/bin/python3
import sys
sys.path.insert(0, '/tmp/ldshim-meson')
from mesonbuild import mesonmain
sys.exit(mesonmain.main())
PY
chmod +x "$root/tmp/ldshim-meson/meson"

# Configure once (the build directory stays in the root), build, run the
# suites with a /proc of their own.
echo "root-resolver: $suite: $(chroot "$root" g++ --version | head -n 1), glibc $(chroot "$root" ldd --version | head -n 1 | sed 's/.* //')"
suites=""
for s in "$@"; do suites="$suites --suite $s"; done
# shellcheck disable=SC2016 # expanded inside the chroot's shell
script='set -e
cd /tmp/ldshim-src
[ -f /tmp/ldshim-build/build.ninja ] ||
    /tmp/ldshim-meson/meson setup /tmp/ldshim-build -Dwerror=true -Dbench=false -Dcudatoolkit_include=/nonexistent >/dev/null
/tmp/ldshim-meson/meson test -C /tmp/ldshim-build --print-errorlogs --num-processes 2 '"$suites"
unshare -m sh -c 'mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" && chroot "$1" sh -c "$2"' sh "$root" "$script"
