#!/bin/sh
# Builds Debian's UCX with the patch series in contrib/ucx/ applied, libucm
# only, into a private prefix, and prints that prefix (its lib/ holds the
# patched libucm.so.0; Debian's libucs/libucp load it when that directory
# comes first in LD_LIBRARY_PATH).
#
#   scripts/ucx-patched.sh            build if needed; last line of stdout: the prefix
#   scripts/ucx-patched.sh --check    only say whether a build for these patches is cached
#
# The source comes from Debian's archive with `apt-get source`, through a
# deb-src list, a lists directory and a package cache of the script's own:
# the system's apt configuration and lists are left as they are.  The
# version is the one of the installed libucx0 (else bookworm's), so the
# patched libucm matches the libucs beside it.  Everything lives under
# LDSHIM_UCX_CACHE (default /var/cache/ldshim/ucx-patched as root,
# ${XDG_CACHE_HOME:-~/.cache}/ldshim/ucx-patched otherwise), in a directory
# named by a hash of the patches, the version and the build recipe: a
# second run with the same hash does nothing.
#
# Environment: LDSHIM_UCX_CACHE (see above), LDSHIM_UCX_DEB_SRC (the deb-src
# line; default bookworm main on deb.debian.org), LDSHIM_UCX_VERSION (the
# Debian source version to build), LDSHIM_UCX_JOBS (make -j; default nproc),
# LDSHIM_UCX_OFFLINE=1 (reach no archive: with the tools missing or the
# source not fetched yet, say SKIPPED; the tests run it so, under the
# loopback guard, and scripts/test.sh builds it beforehand).
# Exit status: 0 built or cached; 77 cannot be built here (no source, no
# tools and not root to install them), with the reason on stderr; 1 a step
# failed (its log is named on stderr).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
patches_dir=$top/contrib/ucx
recipe="autogen; configure --enable-mt --disable-logging --disable-numa --without-java --without-go \
--without-cuda --without-rocm --without-verbs --without-rdmacm --without-knem --without-xpmem --without-ugni; \
make -C src/ucm; make -C src/ucm install (recipe 1)"

# shellcheck source=scripts/ucx-steps.sh
. "$top/scripts/ucx-steps.sh"

check_only=""
case "${1:-}" in
    --check) check_only=1 ;;
    "") ;;
    *)
        say "usage: $0 [--check]"
        exit 2
        ;;
esac

cache=$(ucx_cache "${LDSHIM_UCX_CACHE:-}" ucx-patched)

set -- "$patches_dir"/*.patch
[ -f "$1" ] || skip "no patches in $patches_dir"

version=${LDSHIM_UCX_VERSION:-$(dpkg-query -W -f='${source:Version}' "libucx0:$(dpkg --print-architecture)" 2>/dev/null || true)}
key=$({
    echo "$version"
    echo "$recipe"
    cat "$@"
} | sha256sum | cut -c1-16)
dir=$cache/$key
prefix=$dir/prefix

if [ -f "$dir/done" ] && [ -e "$prefix/lib/libucm.so.0" ]; then
    say "cached: $prefix (UCX ${version:-?}, patches $key)"
    echo "$prefix"
    exit 0
fi
if [ -n "$check_only" ]; then
    say "not built yet: $dir"
    exit 1
fi

mkdir -p "$cache" 2>/dev/null || skip "cannot create $cache"
[ -w "$cache" ] || skip "cannot write $cache (a build needs the user who made it, or root)"
# One builder at a time (tests may call this concurrently); the others wait
# and then find the result cached.
exec 9>"$cache/lock"
flock 9
if [ -f "$dir/done" ] && [ -e "$prefix/lib/libucm.so.0" ]; then
    say "cached: $prefix (built by a concurrent run)"
    echo "$prefix"
    exit 0
fi

# The tools: autogen.sh needs autoconf, automake and libtool; dpkg-source
# (dpkg-dev) unpacks; gcc and make build.
need=""
for tool in autoconf:autoconf automake:automake libtoolize:libtool dpkg-source:dpkg-dev gcc:gcc make:make \
    patch:patch xz:xz-utils flock:util-linux apt-get:apt; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || need="$need ${tool#*:}"
done
offline() { # WHAT: the archive is not to be reached
    [ -z "${LDSHIM_UCX_OFFLINE:-}" ] ||
        skip "$1, and LDSHIM_UCX_OFFLINE is set: run scripts/ucx-patched.sh first (scripts/test.sh does)"
}
if [ -n "$need" ]; then
    [ "$(id -u)" -eq 0 ] || skip "missing tools:$need (run as root to install them)"
    offline "missing tools:$need"
    say "installing$need"
    # shellcheck disable=SC2086 # a list of packages
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >"$cache/apt-install.log" 2>&1 ||
        {
            # The system's lists may be missing (a minimal image): refresh them once.
            apt-get update -qq >>"$cache/apt-install.log" 2>&1 &&
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need \
                    >>"$cache/apt-install.log" 2>&1
        } || skip "could not install$need (see $cache/apt-install.log)"
fi

start=$(date +%s)
rm -rf "$dir"
mkdir -p "$dir"
log=$dir/build.log

# The source: a private deb-src list, lists directory and cache.
apt_dir=$cache/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
echo "${LDSHIM_UCX_DEB_SRC:-deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] \
http://deb.debian.org/debian bookworm main}" >"$apt_dir/sources.list"
apt_private() {
    apt-get -q -o Dir::Etc::sourcelist="$apt_dir/sources.list" -o Dir::Etc::sourceparts=- \
        -o Dir::State::Lists="$apt_dir/lists" -o Dir::Cache="$apt_dir/cache" -o APT::Sandbox::User=root "$@"
}
src_dir=$cache/source
say "fetching the source of ucx ${version:-(bookworm)} (cached in $src_dir)"
mkdir -p "$src_dir"
dsc=$(find "$src_dir" -maxdepth 1 -name "ucx_${version:-*}.dsc" 2>/dev/null | head -1)
if [ -z "$dsc" ]; then
    offline "the source of ucx ${version:-(bookworm)} is not fetched yet"
    apt_private update >>"$log" 2>&1 || skip "apt-get update of the private deb-src list failed (see $log)"
    (cd "$src_dir" && apt_private source --download-only "ucx${version:+=$version}") >>"$log" 2>&1 ||
        skip "apt-get source ucx${version:+=$version} failed: no source available (see $log)"
    dsc=$(find "$src_dir" -maxdepth 1 -name "ucx_${version:-*}.dsc" | head -1)
    [ -n "$dsc" ] || skip "apt-get source ucx brought no .dsc (see $log)"
fi
[ -n "$version" ] || version=$(basename "$dsc" .dsc | sed 's/^ucx_//')

# Unpack (dpkg-source applies Debian's own patches), then ours.
tree=$dir/ucx
step "unpacking $(basename "$dsc")" dpkg-source -x "$dsc" "$tree"
for p in "$@"; do
    step "applying $(basename "$p")" patch -d "$tree" -p1 --batch --forward -i "$p"
done

jobs=${LDSHIM_UCX_JOBS:-$(nproc)}
cd "$tree"
step "autogen.sh" ./autogen.sh
step "configure" ./configure --prefix="$prefix" --enable-mt --disable-logging --disable-numa --without-java \
    --without-go --without-cuda --without-rocm --without-verbs --without-rdmacm --without-knem --without-xpmem \
    --without-ugni
step "make -C src/ucm" make -C src/ucm -j "$jobs"
step "make -C src/ucm install" make -C src/ucm install
cd "$dir"
rm -rf "$tree"
echo "UCX $version, patches: $(for p in "$@"; do basename "$p"; done | tr '\n' ' ')" >"$dir/done"
say "built in $(($(date +%s) - start)) s: $prefix (UCX $version, patches $key)"
echo "$prefix"
