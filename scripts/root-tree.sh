#!/bin/sh
# Copies this working tree (tracked and new, not ignored, files: uncommitted
# changes included; file times kept, so that a build directory left in the
# root rebuilds only what changed) and this machine's meson into a Debian
# root (scripts/roots.sh), for a build there by the root's own compiler:
#   ROOT/tmp/NAME-src          the source
#   ROOT/tmp/NAME-meson/meson  this machine's meson, run by the root's python3
#                              (the roots' own meson is older than the
#                              project needs)
# With --source DIR the source is every file of DIR instead (an unpacked
# source tarball: scripts/release.sh builds from its meson dist tarball).
# Used by scripts/root-resolver.sh (NAME ldshim) and scripts/release.sh.
# With --check it copies nothing: it says whether a build in ROOT can run
# here (root, for chroot; a compiler in ROOT), and if not prints
# "LABEL: SKIPPED: why" and exits 77.
# With --in it runs COMMAND chrooted into ROOT, with /proc and /dev mounted
# there in a private mount namespace (gone when COMMAND ends).
#   scripts/root-tree.sh [--source DIR] ROOT NAME
#   scripts/root-tree.sh --check ROOT LABEL
#   scripts/root-tree.sh --in ROOT [--userspec=USER:GROUP] COMMAND [ARG...]
set -eu
if [ "${1:-}" = --in ] && [ "$#" -ge 3 ]; then
    root=$2
    shift 2
    # shellcheck disable=SC2016 # expanded by the inner shell
    exec unshare -m sh -c 'mount -t proc proc "$1/proc" && mount --rbind /dev "$1/dev" && r=$1 && shift &&
        case ${1:-} in --userspec=*) u=$1; shift; exec chroot "$u" "$r" "$@" ;; *) exec chroot "$r" "$@" ;; esac' \
        sh "$root" "$@"
fi
if [ "${1:-}" = --check ] && [ "$#" -eq 3 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "$3: SKIPPED: chroot needs root"
        exit 77
    fi
    if [ ! -x "$2/usr/bin/g++" ]; then
        echo "$3: SKIPPED: no root with a compiler at $2 (scripts/roots.sh makes it)"
        exit 77
    fi
    exit 0
fi
source_dir=""
if [ "${1:-}" = --source ] && [ "$#" -ge 2 ]; then
    source_dir=$(cd "$2" && pwd) || exit 2
    shift 2
fi
if [ "${1:-}" = --help ] || [ "$#" -ne 2 ]; then
    sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
    [ "${1:-}" = --help ] && exit 0
    exit 2
fi
root=$1 name=$2
cd "$(dirname "$0")/.."
[ -d "$root/tmp" ] || { echo "root-tree: $root is not a root (no $root/tmp)" >&2; exit 1; }
case $name in */* | "" | .*) echo "root-tree: NAME must be a plain name, not '$name'" >&2; exit 2 ;; esac

src=$root/tmp/$name-src meson=$root/tmp/$name-meson
rm -rf "$src.new" "$meson"
mkdir -p "$src.new" "$meson"
if [ -n "$source_dir" ]; then
    tar -C "$source_dir" -cf - . | tar -xf - -C "$src.new"
else
    git ls-files -z -co --exclude-standard | tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$src.new"
fi
# A file whose content changed since the last copy gets the time of now:
# its own time can be older than the objects the last build made from the
# copy before (an edit made while that build ran), and ninja would keep them.
if [ -d "$src" ]; then
    (cd "$src.new" && find . -type f) | while IFS= read -r f; do
        cmp -s "$src.new/$f" "$src/$f" || touch "$src.new/$f"
    done
fi
rm -rf "$src"
mv "$src.new" "$src"
mesonbuild=$(/usr/bin/python3 -c 'import mesonbuild, os; print(os.path.dirname(mesonbuild.__file__))')
cp -r "$mesonbuild" "$meson/"
cat >"$meson/meson" <<PY
#!/usr/bin/python3
import asyncio, sys
sys.path.insert(0, '/tmp/$name-meson')
# This meson (1.0) asks asyncio for the current loop, which Python 3.14
# (forky) no longer makes on demand.
asyncio.set_event_loop(asyncio.new_event_loop())
from mesonbuild import mesonmain
sys.exit(mesonmain.main())
PY
chmod +x "$meson/meson"
