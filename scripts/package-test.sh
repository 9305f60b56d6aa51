#!/bin/sh
# Builds the Debian packages (debian/) from this working tree, checks them
# with lintian, then installs them into a fresh Debian 12 root and uses them
# there as a user would: a C99 program built through pkg-config, ldsearch
# against the real loader, and libldshim_preload.so repairing a ucm-like
# dlopen interposer (tests/package/).
#
# --arch arm64: cross-built (dpkg-buildpackage -a arm64, Debian's
# g++-aarch64-linux-gnu; the build's own check runs ldsearch through
# qemu-user), installed into a copy of scripts/arm64-root.sh's bookworm
# root and used there under qemu-user; that root has no compiler, so the C99
# program and the repair case are cross-compiled here against it and run in
# it (tests/package/cases.sh's CC and RUN).
#
# Needs root (apt-get, debootstrap, chroot); exits 77 (skipped) otherwise.
# The pristine root is made once by debootstrap from apt's configured mirror
# and cached as a tarball, so later runs only unpack it.
#   LDSHIM_PKGTEST_CACHE   cache directory (default /var/cache/ldshim)
#   LDSHIM_PKGTEST_MIRROR  Debian mirror for debootstrap (default: apt's)
#   LDSHIM_PKGTEST_KEEP=1  keep the work directory for inspection
#   JOBS                   parallel build jobs (default 2)
#   DEB_BUILD_OPTIONS      passed on to the package build (nocheck, ...)
#   scripts/package-test.sh [--arch arm64]
set -eu
cross=""
case ${1:-} in
    "") ;;
    --arch)
        [ "${2:-}" = arm64 ] || { echo "package-test: --arch takes arm64" >&2; exit 2; }
        cross=arm64 ;;
    *) echo "package-test: usage: $0 [--arch arm64]" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIPPED: package test needs root (debootstrap, chroot)"
    exit 77
fi

cd "$(dirname "$0")/.."
cache=${LDSHIM_PKGTEST_CACHE:-/var/cache/ldshim}
jobs=${JOBS:-2}
suite=bookworm
# The root's contents: what the installed-package checks need, no more.
include=gcc,libc6-dev,pkg-config
arch=${cross:-$(dpkg --print-architecture)}
root_tar=$cache/$suite-$arch-minbase-$(echo "$include" | tr , -).tar

fail() {
    echo "package-test: FAIL: $*" >&2
    exit 1
}

# Wall time of each phase, printed as it ends and again in the summary.
timings=""
phase() {
    phase_name=$1
    phase_t0=$(date +%s.%N)
    echo "== $phase_name"
}
phase_done() {
    t=$(awk -v a="$phase_t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
    echo "== $phase_name: ${t}s"
    timings="$timings
  $(printf '%-34s %7ss' "$phase_name" "$t")"
}

# ---- Work directory, and the cleanup that must unmount before deleting ----
work=$(mktemp -d "${TMPDIR:-/var/tmp}/ldshim-package-test.XXXXXX")
root=$work/root
tmp_root=""
# Mount points at or under $1, deepest first.
mounts_under() {
    awk -v d="$1" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}
unmount_under() {
    for m in $(mounts_under "$1"); do
        umount "$m" 2>/dev/null || umount -l "$m" || true
    done
    [ -z "$(mounts_under "$1")" ]
}
# Never rm -rf through a live /proc: a directory with mounts left is kept.
release() {
    if unmount_under "$1"; then
        rm -rf "$1"
    else
        echo "package-test: mounts remain under $1; left in place" >&2
    fi
}
cleanup() {
    rc=$?
    trap - EXIT INT TERM
    # An interrupted debootstrap can leave its /proc and /sys mounted.
    if [ -n "$tmp_root" ] && [ -d "$tmp_root" ]; then release "$tmp_root"; fi
    if [ "${LDSHIM_PKGTEST_KEEP:-0}" = 1 ]; then
        unmount_under "$work" || true
        echo "package-test: work directory kept: $work"
    else
        release "$work"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- Host tools ------------------------------------------------------------
phase "host tools"
missing=""
tools="dpkg-dev debhelper lintian debootstrap"
[ -z "$cross" ] || tools="$tools g++-aarch64-linux-gnu qemu-user-static"
for p in $tools; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null || fail "cannot install$missing"
fi
phase_done

# ---- The source: this working tree, uncommitted changes included ----------
phase "copy source tree"
# debian/changelog must package the version meson builds.
meson_version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" meson.build | head -n 1)
deb_version=$(dpkg-parsechangelog -l debian/changelog -S Version)
upstream_version=$(echo "$deb_version" | sed 's/^[0-9]*://; s/-[^-]*$//')
[ -n "$meson_version" ] || fail "no project version found in meson.build"
[ "$upstream_version" = "$meson_version" ] ||
    fail "debian/changelog packages $deb_version but meson.build says $meson_version (add a changelog entry: dch -v $meson_version)"
mkdir "$work/ldshim"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Tracked and untracked-but-not-ignored files; a deleted tracked file is
    # only a warning (--ignore-failed-read).
    git ls-files -z -co --exclude-standard |
        tar --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$work/ldshim"
else
    tar --exclude=./.git --exclude='./build*' --exclude='./obj-*' -cf - . | tar -xf - -C "$work/ldshim"
fi
[ -x "$work/ldshim/debian/rules" ] || fail "debian/rules missing or not executable in the copied tree"
phase_done

# ---- Build dependencies, then the packages -----------------------------------
phase "build dependencies"
# A cross build also needs the host's pkg-config under its triplet's name
# (debhelper's meson cross file names it), which pkgconf:ARCH installs:
# dpkg-checkbuilddeps counts the build machine's pkg-config as enough, so
# where every other dependency is already there nothing installs it.
cross_pkg_config_missing() {
    [ -n "$cross" ] && ! command -v "$(dpkg-architecture -a"$cross" -qDEB_HOST_GNU_TYPE 2>/dev/null)-pkg-config" >/dev/null
}
# shellcheck disable=SC2086 # no word or "-a arm64"
if cross_pkg_config_missing || ! (cd "$work/ldshim" && dpkg-checkbuilddeps ${cross:+-a $cross}) 2>/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    [ -z "$cross" ] || dpkg --print-foreign-architectures | grep -qx "$cross" || dpkg --add-architecture "$cross"
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get build-dep -y -qq ${cross:+-a $cross} "$work/ldshim" >/dev/null ||
        fail "cannot install the build dependencies"
    if cross_pkg_config_missing; then
        apt-get install -y -qq "pkgconf:$cross" >/dev/null || fail "cannot install pkgconf:$cross"
    fi
fi
phase_done

phase "dpkg-buildpackage"
# shellcheck disable=SC2086
if ! (cd "$work/ldshim" && dpkg-buildpackage ${cross:+-a $cross} -us -uc -b -J"$jobs") >"$work/build.log" 2>&1; then
    tail -n 60 "$work/build.log" >&2
    fail "dpkg-buildpackage failed (log above)"
fi
grep -E '^dpkg-deb: building|dpkg-gensymbols: warning|dpkg-shlibdeps: warning|dh_missing' "$work/build.log" || true
phase_done

# ---- lintian: errors fail the test, warnings are shown --------------------
phase "lintian"
changes=$(ls "$work"/ldshim_*.changes)
lintian --fail-on none "$changes" >"$work/lintian.log" 2>&1 || fail "lintian did not run: $(cat "$work/lintian.log")"
grep -E '^[EWI]:' "$work/lintian.log" || echo "(no lintian tags)"
errors=$(grep -c '^E:' "$work/lintian.log" || true)
[ "$errors" -eq 0 ] || fail "lintian reported $errors error(s)"
phase_done

# ---- The packages ----------------------------------------------------------
echo "== packages"
printf '  %-36s %10s %14s\n' "file" "bytes" "installed KiB"
for deb in "$work"/*.deb; do
    printf '  %-36s %10s %14s\n' "$(basename "$deb")" "$(stat -c %s "$deb")" "$(dpkg-deb -f "$deb" Installed-Size)"
done
debs=""
for p in libldshim0 libldshim-dev ldshim-tools; do
    f=$work/${p}_${deb_version}_$arch.deb
    [ -f "$f" ] || fail "package $p was not built"
    debs="$debs $f"
    echo "  $p:"
    dpkg-deb -c "$f" | awk '$1 !~ /^d/ { sub(/^\./, "", $6); print "    " $6 ($7 ? " " $7 " " $8 : "") }'
done

# ---- A fresh Debian 12 root, from the cache when there is one ---------------
# debootstrap needs a mirror: the one apt is configured with (debian-mirror.sh).
mirror() {
    LDSHIM_DEBIAN_MIRROR=${LDSHIM_PKGTEST_MIRROR:-${LDSHIM_DEBIAN_MIRROR:-}} ./scripts/debian-mirror.sh "$suite"
}
make_root_tar() {
    m=$(mirror)
    [ -n "$m" ] || fail "no Debian mirror in apt's sources (set LDSHIM_PKGTEST_MIRROR)"
    echo "debootstrap --variant=minbase --include=$include $suite from $m"
    mkdir -p "$cache"
    tmp_root=$(mktemp -d "$cache/root.XXXXXX")
    if ! debootstrap --variant=minbase --include="$include" --arch="$arch" "$suite" "$tmp_root" "$m" \
        >"$work/debootstrap.log" 2>&1; then
        tail -n 30 "$work/debootstrap.log" >&2
        fail "debootstrap failed (log above)"
    fi
    # Written aside and renamed: an interrupted run never leaves half a cache.
    # The downloaded .debs are already unpacked in the root: not cached.
    tar --numeric-owner --exclude='./var/cache/apt/archives/*.deb' -C "$tmp_root" -cf "$root_tar.tmp" .
    release "$tmp_root"
    tmp_root=""
    mv "$root_tar.tmp" "$root_tar"
}
unpack_root() {
    rm -rf "$root"
    mkdir "$root"
    tar --numeric-owner -C "$root" -xf "$root_tar"
}

if [ -n "$cross" ]; then
    phase "root: a copy of the arm64 bookworm root"
    rc=0
    arm64_root=$(./scripts/arm64-root.sh bookworm) || rc=$?
    [ "$rc" -ne 77 ] || { echo "SKIPPED: no arm64 root (scripts/arm64-root.sh)"; exit 77; }
    [ "$rc" -eq 0 ] || fail "scripts/arm64-root.sh bookworm exited $rc"
    cp -a "$arm64_root" "$root"
elif [ -f "$root_tar" ]; then
    phase "root: unpack cached tarball"
    if ! unpack_root; then
        echo "the cached root does not unpack: making it again"
        rm -f "$root_tar"
        make_root_tar
        unpack_root
    fi
else
    phase "root: debootstrap (first run)"
    make_root_tar
    unpack_root
fi
[ -n "$cross" ] || [ -x "$root/usr/bin/gcc" ] || fail "the root has no gcc"
phase_done

# ---- Install and use the packages inside it ----------------------------------
phase "install and use in the chroot"
# The preload and ldsearch read /proc/self (the running program, its maps).
mount -t proc proc "$root/proc"
mkdir -p "$root/tmp/debs" "$root/tmp/ldshim/tests/package" "$root/tmp/ldshim/tests/resolver/fixtures"
# shellcheck disable=SC2086
cp $debs "$root/tmp/debs/"
cp tests/package/cases.sh tests/package/consumer.c tests/package/repair.c "$root/tmp/ldshim/tests/package/"
cp tests/resolver/fixtures/got_patch.h "$root/tmp/ldshim/tests/resolver/fixtures/"
in_root() {
    env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C \
        chroot "$root" "$@"
}
in_root sh -c 'dpkg -i /tmp/debs/*.deb' >"$work/dpkg.log" 2>&1 || {
    cat "$work/dpkg.log" >&2
    fail "dpkg -i of the packages failed in the chroot"
}
# shellcheck disable=SC2016 # dpkg-query expands ${Package}
in_root dpkg-query -W -f '  installed ${Package} ${Version}\n' libldshim0 libldshim-dev ldshim-tools

cat >"$root/tmp/ldshim/inside.sh" <<'EOF'
# Runs inside the chroot, with the three packages installed.  $1: the version.
set -eu
version=$1
preload=$(dpkg -L libldshim0 | grep '/libldshim_preload\.so$')
fail() { echo "package-test: FAIL (in chroot): $*" >&2; exit 1; }
cd /tmp/ldshim
compiler=$(command -v gcc || true)

# The cases shared with the release tarball's check (tests/package/cases.sh).
if [ -n "$compiler" ]; then
    echo "-- a C99 program through pkg-config"
    sh tests/package/cases.sh consumer || fail "the C99 consumer through pkg-config (above)"
fi

echo "-- ldsearch"
sh tests/package/cases.sh ldsearch ldsearch "$version" || fail "ldsearch (above)"
[ -s /usr/share/man/man1/ldsearch.1.gz ] && zcat /usr/share/man/man1/ldsearch.1.gz | grep -q '^\.TH LDSEARCH' ||
    fail "man page /usr/share/man/man1/ldsearch.1.gz missing or not a man page"
bash -c '. /usr/share/bash-completion/completions/ldsearch && complete -p ldsearch' ||
    fail "the bash completion does not register for ldsearch"

echo "-- ldshim-hooks"
v=$(ldshim-hooks --version)
[ "$v" = "ldshim-hooks $version" ] || fail "ldshim-hooks --version says '$v'"
ldshim-hooks --help | grep -qF "default: $preload," || fail "ldshim-hooks does not default to $preload"
[ -f "$preload" ] || fail "$preload is not installed"
echo "$v, preload $preload"

if [ -n "$compiler" ]; then
    echo "-- the preload repairs a ucm-like interposer"
    sh tests/package/cases.sh repair "$preload" /tmp/ldshim/case || fail "the preload's repair (above)"
fi
EOF
in_root sh /tmp/ldshim/inside.sh "$meson_version" || fail "the installed packages failed a check (output above)"
if [ -n "$cross" ]; then
    # The root has no compiler: the two cases that build are cross-compiled
    # here against it and run in it, in a directory mounted at one path in
    # both.
    preload=$(in_root dpkg -L libldshim0 | grep '/libldshim_preload\.so$')
    multiarch=aarch64-linux-gnu
    cc="$multiarch-gcc --sysroot=$root -B $root/usr/lib/$multiarch/ -L $root/usr/lib/$multiarch -L $root/lib/$multiarch"
    cc="$cc -Wl,-rpath-link,$root/lib/$multiarch"
    d=/tmp/ldshim-package-test-$cross.$$
    mkdir -p "$root$d" "$d"
    # shellcheck disable=SC2016 # expanded by the inner shells
    unshare -m sh -c 'mount --bind "$1$2" "$2" && shift 2 && exec "$@"' sh "$root" "$d" \
        env CC="$cc" LIBDL="" RUN="chroot $root" PKG_CONFIG_SYSROOT_DIR="$root" \
        PKG_CONFIG_LIBDIR="$root/usr/lib/$multiarch/pkgconfig:$root/usr/share/pkgconfig" \
        sh -c 'cd "$1" && echo "-- a C99 program through pkg-config (cross-compiled here)" &&
            sh "$2/cases.sh" consumer && echo "-- the preload repairs a ucm-like interposer (cross-compiled here)" &&
            sh "$2/cases.sh" repair "$3" "$1/case"' sh "$d" "$PWD/tests/package" "$preload" ||
        { rmdir "$d"; fail "a cross-compiled case failed in the arm64 root (output above)"; }
    rmdir "$d"
fi
phase_done

echo "== timings$timings"
echo "package-test: PASS"
