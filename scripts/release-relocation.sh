#!/bin/sh
# The release tarball (scripts/release.sh) unpacked and used by a normal user
# (nobody) in a fresh directory, nowhere near where it was built, on this
# machine and inside each Debian root of scripts/roots.sh (bullseye: glibc
# 2.31, trixie: 2.41, forky: 2.43; chroot with /proc in a private mount
# namespace), with that system's own compiler and tools, and inside each
# root of scripts/glibc-roots.sh (upstream and RHEL builds of glibc 2.28 to
# 2.39; no compiler there: the cases are built here against the root's glibc
# and run there as nobody, the directory mounted at the same path in both)
# (tests/package/cases.sh, shared with scripts/package-test.sh):
#   consumer   a C99 program built with `pkg-config --cflags --libs ldshim`,
#              PKG_CONFIG_PATH at the unpacked lib/pkgconfig, and run
#   ldsearch   bin/ldsearch --version, and `ldsearch /bin/ls` (the consumer
#              in a glibc root, whose /bin is busybox) identical to that
#              system's loader under LD_DEBUG=libs
#   repair     the ucm-like dlopen interposer: fails without ldshim (asserted),
#              loads the right library with LD_PRELOAD=DIR/lib/libldshim_preload.so
#   hooks      bin/ldshim-hooks, run as unpacked and through a link, finds
#              DIR/lib/libldshim_preload.so from its own place and logs the
#              hooks' writes in a program built there
# Prints each place's output, then one line per place: "repaired" or "not
# repaired (reason, from LDSHIM_DEBUG=1)", with the other two results.
# Exits 1 if any place has a failure, 0 otherwise.  Without root only this
# machine is checked (as the calling user): the roots need chroot.
#   scripts/release-relocation.sh TARBALL [PLACE...]
#     PLACE: host, or the name of a root (default: host, every root present
#     under $LDSHIM_ROOTS_DIR (default /var/cache/ldshim/roots), then under
#     $LDSHIM_GLIBC_ROOTS_DIR (default /var/cache/ldshim/glibc-roots))
set -eu
usage() { sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
uid=65534 # nobody, here and in the Debian roots

# ---- Inside a place, as the user: --inside DIR VERSION PKGNAME ------------
# DIR holds src/ (the cases and their sources) and unpacked/PKGNAME.
if [ "${1:-}" = --inside ]; then
    dir=$2 version=$3 pkg=$2/unpacked/$4
    cases=$dir/src/tests/package/cases.sh
    mkdir -p "$dir/work"
    cd "$dir/work"
    # A glibc root: the caller names its glibc, and CC builds for it (cases.sh).
    glibc=${GLIBC_LABEL:-$(getconf GNU_LIBC_VERSION 2>/dev/null || echo 'glibc ?')}
    if [ -n "${RUN:-}" ]; then
        # shellcheck disable=SC2086 # RUN's words
        user="uid $($RUN id -u) in the root, built here by $(id -un)"
    else
        user=$(id -un 2>/dev/null || id -u)
    fi
    echo "== $glibc, $(${CC:-cc} --version | head -n 1), as $user"
    # run NAME CASE ARGS...: the case's output, then "RESULT NAME: ok", or
    # its failure lines as "RESULT NAME: FAILED (...)" and status 1.
    run() {
        name=$1
        shift
        echo "== $name"
        rc=0
        sh "$cases" "$@" >"case-$name.txt" 2>&1 || rc=$?
        cat "case-$name.txt"
        [ "$rc" -ne 0 ] || { echo "RESULT $name: ok"; return 0; }
        echo "RESULT $name: FAILED ($(sed -n 's/^consumer: FAILED: //p; s/^FAIL: //p' "case-$name.txt" | paste -sd';' - | sed 's/;/; /g'))"
        return 1
    }
    export PKG_CONFIG_PATH="$pkg/lib/pkgconfig"
    echo "pkg-config --variable=prefix ldshim: $(pkg-config --variable=prefix ldshim)"
    run consumer consumer -Wl,-rpath,"$(pkg-config --variable=libdir ldshim)" || true
    run ldsearch ldsearch "$pkg/bin/ldsearch" "$version" ${LDSEARCH_PROGRAM:+"$LDSEARCH_PROGRAM"} || true
    run hooks hooks "$pkg/bin/ldshim-hooks" "$pkg/lib/libldshim_preload.so" || true
    # The repair's line says "repaired", or why not: what LDSHIM_DEBUG=1
    # answered for libplug.so and the reason on its next line (without such
    # a line, the case's FAIL line).
    if run repair repair "$pkg/lib/libldshim_preload.so" "$dir/case" >run-repair.txt; then
        sed 's/^RESULT repair: ok$/RESULT repair: repaired/' run-repair.txt
    else
        grep -v '^RESULT ' run-repair.txt
        answer=$(grep -m 1 '^  ldshim: dlopen("libplug.so")' case-repair.txt |
            sed 's/.*\(unresolved (passed on)\|not found\|found via .*\|already loaded .*\)$/\1/' || true)
        detail=$(grep -A 1 -m 1 '^  ldshim: dlopen("libplug.so")' case-repair.txt | sed -n '2s/^  ldshim: *//p' || true)
        if [ -n "$answer" ]; then
            echo "RESULT repair: not repaired (LDSHIM_DEBUG=1: $answer${detail:+: $detail})"
        else
            echo "RESULT repair: not repaired ($(grep -m 1 '^FAIL: ' case-repair.txt | sed 's/^FAIL: //'); no LDSHIM_DEBUG=1 line for libplug.so)"
        fi
    fi
    exit 0
fi

case ${1:-} in
    --help | -h) usage; exit 0 ;;
    "" | -*) echo "release-relocation: usage: $0 TARBALL [PLACE...] (see --help)" >&2; exit 2 ;;
esac
tarball=$(cd "$(dirname "$1")" && pwd)/${1##*/}
shift
[ -f "$tarball" ] || { echo "release-relocation: no tarball $tarball" >&2; exit 2; }
cd "$(dirname "$0")/.."
PATH=$PATH:/usr/sbin:/sbin # runuser, chroot
pkgname=${tarball##*/}
pkgname=${pkgname%.tar.xz}
version=$(echo "$pkgname" | sed 's/^ldshim-\([^-]*\)-.*/\1/')
roots=${LDSHIM_ROOTS_DIR:-/var/cache/ldshim/roots}
glibc_roots=${LDSHIM_GLIBC_ROOTS_DIR:-/var/cache/ldshim/glibc-roots}
is_debian_root() { [ -x "$roots/$1/usr/bin/gcc" ] && [ -x "$roots/$1/usr/bin/pkg-config" ]; }
is_glibc_root() { [ -f "$glibc_roots/$1/etc/ldshim-glibc-root" ] && [ -x "$glibc_roots/$1/bin/busybox" ]; }
if [ "$#" -eq 0 ]; then
    # Oldest glibc first: scripts/roots.sh's suites, then any other root.
    set -- host
    for r in bullseye trixie forky $(cd "$roots" 2>/dev/null && ls) $(cd "$glibc_roots" 2>/dev/null && ls); do
        case " $* " in *" $r "*) continue ;; esac
        if is_debian_root "$r" || is_glibc_root "$r"; then set -- "$@" "$r"; fi
    done
fi
is_root=0
[ "$(id -u)" -ne 0 ] || is_root=1

# A place's directory: the cases and their sources, owned by the user.
populate() { # DIR
    mkdir -p "$1/src/tests/package" "$1/src/tests/resolver/fixtures" "$1/src/scripts" "$1/unpacked"
    cp tests/package/cases.sh tests/package/consumer.c tests/package/repair.c "$1/src/tests/package/"
    cp tests/resolver/fixtures/got_patch.h "$1/src/tests/resolver/fixtures/"
    cp scripts/release-relocation.sh "$1/src/scripts/"
    chmod -R a+rX "$1"
    [ "$is_root" -eq 0 ] || chown -R "$uid:$uid" "$1"
}

results=""
status=0
cleanup=""
trap 'for d in $cleanup; do rm -rf "$d"; done' EXIT
for place in "$@"; do
    log=$(mktemp "${TMPDIR:-/tmp}/ldshim-release-relocation.log.XXXXXX")
    cleanup="$cleanup $log"
    if [ "$place" = host ]; then
        d=$(mktemp -d /tmp/ldshim-release-reloc.XXXXXX)
        cleanup="$cleanup $d"
        populate "$d"
        if [ "$is_root" -eq 1 ]; then
            as_user() { runuser -u nobody -- env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME="$d" LC_ALL=C "$@"; }
        else
            as_user() { env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME="$d" LC_ALL=C "$@"; }
        fi
        # The user unpacks; the tarball is read for it (its directory may be closed to nobody).
        as_user tar -xJf - -C "$d/unpacked" <"$tarball" >"$log" 2>&1 &&
            as_user sh "$d/src/scripts/release-relocation.sh" --inside "$d" "$version" "$pkgname" >>"$log" 2>&1 ||
            echo "RESULT place: FAILED (exit $?)" >>"$log"
    elif [ "$is_root" -ne 1 ]; then
        results="$results
  $place: SKIPPED (chroot needs root)"
        continue
    elif is_debian_root "$place" || is_glibc_root "$place"; then
        root=$roots/$place
        is_debian_root "$place" || root=$glibc_roots/$place
        d=$(mktemp -d "$root/tmp/ldshim-release-reloc.XXXXXX")
        cleanup="$cleanup $d"
        populate "$d"
        in=/tmp/${d##*/}
        path=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin
        # The root's own tar unpacks (as the user; xz from here: a minbase root has none).
        xz -dc "$tarball" | chroot --userspec="$uid:$uid" "$root" tar -xf - -C "$in/unpacked" >"$log" 2>&1 ||
            echo "RESULT place: FAILED (unpacking: exit $?)" >>"$log"
        if is_debian_root "$place"; then
            ./scripts/root-tree.sh --in "$root" --userspec="$uid:$uid" env -i PATH="$path" HOME="$in" LC_ALL=C \
                sh "$in/src/scripts/release-relocation.sh" --inside "$in" "$version" "$pkgname" >>"$log" 2>&1 ||
                echo "RESULT place: FAILED (exit $?)" >>"$log"
        else
            # Built here by root against the root's glibc (glibc-roots.sh's
            # smoke check does the same), run there as the user; the place's
            # directory is mounted at $in here too, so both see one path.
            mkdir -p "$root/dev" "$in" # mount points
            cleanup="$cleanup $in"
            libdl=""
            [ ! -e "$root/usr/lib64/libdl.so" ] || libdl=-ldl
            cc="gcc --sysroot=$root -B $root/usr/lib64/ -L $root/usr/lib64 -L $root/lib64 -Wl,-rpath-link,$root/lib64"
            cc="$cc -Wl,--dynamic-linker=/lib64/ld-linux-x86-64.so.2"
            run="$PWD/scripts/root-tree.sh --in $root --userspec=$uid:$uid /bin/busybox env -i PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=$in LC_ALL=C"
            label="glibc $(sed -n 's/^glibc: \([^ ]*\).*/\1/p' "$root/etc/ldshim-glibc-root") ($place root)"
            # shellcheck disable=SC2016 # expanded by the inner shell
            unshare -m sh -c 'mount --bind "$1$2" "$2" && shift 2 && exec "$@"' sh "$root" "$in" \
                env -i PATH="$path" HOME="$in" LC_ALL=C CC="$cc" LIBDL="$libdl" RUN="$run" GLIBC_LABEL="$label" \
                LDSEARCH_PROGRAM="$in/work/consumer" \
                sh "$in/src/scripts/release-relocation.sh" --inside "$in" "$version" "$pkgname" >>"$log" 2>&1 ||
                echo "RESULT place: FAILED (exit $?)" >>"$log"
        fi
    else
        results="$results
  $place: FAILED (no root of that name in $roots or $glibc_roots)"
        status=1
        continue
    fi
    echo "==== $place"
    sed 's/^/  /' "$log"
    glibc=$(sed -n 's/^== glibc \([0-9.]*\).*/\1/p' "$log" | head -n 1)
    repair=$(sed -n 's/^RESULT repair: //p' "$log")
    others=$(sed -n 's/^RESULT \(ldsearch\|consumer\|hooks\|place\): /\1 /p' "$log" | paste -sd, - | sed 's/,/, /g')
    line="$place (glibc ${glibc:-?}): ${repair:-repair did not run}; $others"
    results="$results
  $line"
    case $line in *FAILED* | *"not repaired"* | *"did not run"*) status=1 ;; esac
done

echo "== relocation check of $pkgname:$results"
exit $status
