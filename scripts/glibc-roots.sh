#!/bin/sh
# Roots for the glibc versions Debian does not ship (2.28, 2.34, 2.35, 2.39,
# and RHEL 8's and RHEL 9's patched 2.28 and 2.34), built from the sources
# in $LDSHIM_GLIBC_SRC (default ../shared/glibc beside the checkout, see its
# README.md) in the
# upstream x86-64 layout: --prefix=/usr, so ld.so and the shared libraries in
# /lib64, the link-time files in /usr/lib64, ldconfig in /sbin.
#
# Each root holds glibc as `make install DESTDIR=` leaves it, less locales,
# gconv modules, info pages and the static libraries (the *_nonshared.a ones
# stay: libc.so's linker script names them), with debug sections stripped
# (symbol tables kept); its headers and crt files stay, so that a C fixture
# links against it with the host gcc (see smoke_check below).  Added: a
# static busybox from Debian's archive as /bin/busybox with its applet links
# in /bin (so /bin/sh), an /etc/ld.so.conf that includes
# /etc/ld.so.conf.d/*.conf (empty), the /etc/ld.so.cache the root's own
# /sbin/ldconfig wrote in a chroot, an empty /proc and /tmp, and
# /etc/ldshim-glibc-root (what it is: name, version, key, patches).
#
# RHEL roots: the upstream tag with the spec's Patch files applied in the
# order of the spec's Patch lines (patch -p1, no fuzz, as rpm's %autosetup
# on RHEL).  A patch that does not apply is skipped only when every file it
# touches is a test, documentation or a generated file; otherwise the root
# fails.  The log says which were skipped and why.
#
# Cache: $LDSHIM_GLIBC_ROOTS_DIR (default /var/cache/ldshim/glibc-roots)
# holds NAME-KEY.tar.xz and the root unpacked as NAME (NAME/.key says which
# KEY), and NAME.log (build, install, smoke check).  KEY hashes the sources'
# SHA256 (SHA256SUMS) and this script's recipe version; a root with the
# current KEY is reused.  A NAME-KEY.tar.xz with the current KEY in
# $LDSHIM_GLIBC_PREBUILT (default ../shared/glibc-roots beside the checkout,
# checked against its SHA256SUMS) is taken instead of a build.  Builds run one at a time (a lock), at nice 19 with
# make -j2, under $LDSHIM_GLIBC_BUILD_DIR (default /var/tmp/ldshim-glibc);
# an interrupted build resumes after its last finished step.
#
# Needs root (chroot, mount namespaces); exits 77 (skipped) otherwise.
#   scripts/glibc-roots.sh [--budget SECONDS] [NAME...]
# NAME: rhel8 rhel9 2.28 2.34 2.35 2.39 (default: all, in that order).
# Exit: 0 all built or cached, 1 any failed, 77 none failed but some skipped.
set -eu

usage() {
    cat <<'EOF'
usage: scripts/glibc-roots.sh [--budget SECONDS] [NAME...]
Build (or reuse from the cache) glibc roots in the upstream lib64 layout.
NAME: rhel8 rhel9 2.28 2.34 2.35 2.39 (default: all, rhel8 first).
  --budget SECONDS  skip a root whose build would not fit in what is left of
                    SECONDS (estimates measured on a loaded 2-core machine);
                    cached roots always count as fitting
  --help            this text
Cache: LDSHIM_GLIBC_ROOTS_DIR (default /var/cache/ldshim/glibc-roots): NAME
(the root), NAME-KEY.tar.xz, NAME.log.  Sources: LDSHIM_GLIBC_SRC (default
../shared/glibc beside the checkout); a cut-short tarball is completed from
the glibc git mirror LDSHIM_GLIBC_GIT names (none by default).  Roots built
already: LDSHIM_GLIBC_PREBUILT (default ../shared/glibc-roots beside the
checkout), NAME-KEY.tar.xz taken when KEY matches.  Builds:
LDSHIM_GLIBC_BUILD_DIR (default /var/tmp/ldshim-glibc).  Needs root.
Exit: 0 every root built or cached, 1 one failed, 77 none failed but some
were skipped (or not root).
EOF
}

# Bump recipe when what is built changes (sources, patching, configure and
# make flags), root_recipe when what is done with the installed tree changes
# (trim, additions, smoke check).  The build directory is keyed on the first,
# the cached root on both.
recipe=1
root_recipe=1
# Inputs come from the checkout and ../shared beside it (as CI lays them
# out), never from another absolute path.
top=$(cd "$(dirname "$0")/.." && pwd)
src=${LDSHIM_GLIBC_SRC:-$top/../shared/glibc}
prebuilt=${LDSHIM_GLIBC_PREBUILT:-$top/../shared/glibc-roots}
cache=${LDSHIM_GLIBC_ROOTS_DIR:-/var/cache/ldshim/glibc-roots}
work=${LDSHIM_GLIBC_BUILD_DIR:-/var/tmp/ldshim-glibc}
mirror=${LDSHIM_GLIBC_GIT:-}
budget=""
while [ "$#" -gt 0 ]; do
    case $1 in
    --budget)
        [ "$#" -ge 2 ] || { echo "glibc-roots: --budget needs a number of seconds" >&2; exit 2; }
        budget=$2
        case $budget in '' | *[!0-9]*) echo "glibc-roots: --budget: not a number of seconds: $budget" >&2; exit 2 ;; esac
        shift 2
        ;;
    --budget=*)
        budget=${1#--budget=}
        case $budget in '' | *[!0-9]*) echo "glibc-roots: --budget: not a number of seconds: $budget" >&2; exit 2 ;; esac
        shift
        ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) echo "glibc-roots: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
    esac
done
[ "$#" -gt 0 ] || set -- rhel8 rhel9 2.28 2.34 2.35 2.39
for n in "$@"; do
    case $n in
    rhel8 | rhel9 | 2.28 | 2.34 | 2.35 | 2.39) ;;
    *) echo "glibc-roots: unknown root '$n' (one of rhel8 rhel9 2.28 2.34 2.35 2.39)" >&2; exit 2 ;;
    esac
done
if [ "$(id -u)" -ne 0 ]; then
    echo "glibc-roots: SKIPPED: chroot and mount namespaces need root"
    exit 77
fi
[ -r "$src/SHA256SUMS" ] || { echo "glibc-roots: no glibc sources at $src (SHA256SUMS missing)" >&2; exit 1; }
mkdir -p "$cache" "$work"
# What glibc's configure and this script need beyond the build-essential set.
need=""
for t in gawk:gawk bison:bison xz:xz-utils flock:util-linux unshare:util-linux git:git patch:patch; do
    command -v "${t%%:*}" >/dev/null 2>&1 || need="$need ${t#*:}"
done
if [ -n "$need" ]; then
    echo "glibc-roots: installing$need"
    # shellcheck disable=SC2086 # one word per package
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null ||
        { echo "glibc-roots: could not install$need" >&2; exit 1; }
fi

# NAME -> upstream version, RHEL tarball, estimated build minutes: the
# longer of the sources' README.md measurements and this script's own, on a
# loaded 2-core machine (rhel8 27 min, rhel9 29, 2.35 26; 2.39 scaled).
version_of() { case $1 in rhel8) echo 2.28 ;; rhel9) echo 2.34 ;; *) echo "$1" ;; esac; }
rhel_of() { case $1 in rhel8) echo rhel8-glibc-el8 ;; rhel9) echo rhel9-glibc-el9 ;; *) echo "" ;; esac; }
minutes_of() {
    case $1 in
    rhel8) echo 35 ;; rhel9) echo 45 ;; 2.28) echo 46 ;; 2.34) echo 38 ;; 2.35) echo 26 ;; 2.39) echo 35 ;;
    esac
}
sum_of() {
    s=$(awk -v f="$1" '$2 == f { print $1 }' "$src/SHA256SUMS")
    [ -n "$s" ] || { echo "glibc-roots: $1 is not in $src/SHA256SUMS" >&2; return 1; }
    echo "$s"
}
key_of() {
    { build_key_of "$1"; echo "root recipe $root_recipe"; } | sha256sum | cut -c1-12
}
build_key_of() {
    v=$(version_of "$1")
    r=$(rhel_of "$1")
    # A cut-short tarball is completed from the mirror: its tag's commit too.
    { sum_of "glibc-$v.tar.xz"; [ -z "$r" ] || sum_of "$r.tar.xz"; echo "recipe $recipe"
      tarball_whole "$v" || { [ -z "$mirror" ] || GIT_DIR=$mirror git rev-parse -q --verify "refs/tags/glibc-$v^{commit}"; } || true; } |
        sha256sum | cut -c1-12
}

log() { echo "$*" >>"$logf"; }
# Run a command with its output in the log, nice 19.
logged() { nice -n 19 "$@" >>"$logf" 2>&1; }

# A file a failed patch may be skipped for: a test, documentation, or a
# file generated from others (absent from a git-archive tree, or one that
# the build regenerates).  Nothing under elf/, the loader, is: a patch
# there must apply.  Run in the tree.
skippable_file() {
    case $1 in
    elf/*) return 1 ;;
    esac
    [ -e "$1" ] || return 0
    case $1 in
    */tst-* | */test-* | */tests/* | tests/* | */testdata/* | *.texi | manual/* | NEWS | ChangeLog* | \
        po/* | */*.po | */libm-test-ulps | */*-ulps | localedata/* | benchtests/* | INSTALL | README) return 0 ;;
    esac
    return 1
}

# The files one patch touches (new side; the old one for deletions).
patch_files() {
    awk '/^--- / { old = $2 } /^\+\+\+ / { f = $2; if (f == "/dev/null") f = old; sub(/^[ab]\//, "", f); sub(/\t.*/, "", f); print f }' "$1" |
        sort -u
}

# Apply the RHEL spec's patches to the tree in the current directory.
apply_rhel_patches() {
    rdir=$1
    spec=$rdir/SPECS/glibc.spec
    [ -r "$spec" ] || { log "no spec at $spec"; return 1; }
    awk '/^Patch[0-9]+:/ { print $2 }' "$spec" >"$work/$name.series"
    total=$(wc -l <"$work/$name.series")
    applied=0
    skipped=0
    : >"$work/$name.skipped"
    while read -r p; do
        f=$rdir/SOURCES/$p
        [ -r "$f" ] || { log "patch $p: missing from SOURCES"; return 1; }
        if patch -p1 --fuzz=0 --no-backup-if-mismatch -t -N --dry-run -i "$f" >"$work/$name.patch-out" 2>&1; then
            patch -p1 --fuzz=0 --no-backup-if-mismatch -s -t -N -i "$f" >>"$logf" 2>&1 ||
                { log "patch $p: failed after a clean dry run"; return 1; }
            applied=$((applied + 1))
            log "patch $p: applied"
            continue
        fi
        blocking=""
        for t in $(patch_files "$f"); do
            skippable_file "$t" || blocking="$blocking $t"
        done
        if [ -n "$blocking" ]; then
            log "patch $p: DOES NOT APPLY and touches source files:$blocking"
            cat "$work/$name.patch-out" >>"$logf"
            return 1
        fi
        skipped=$((skipped + 1))
        why=$(grep -m1 -i 'fail\|missing\|can.t find' "$work/$name.patch-out" || true)
        echo "$p: only tests/docs/generated files; $why" >>"$work/$name.skipped"
        log "patch $p: SKIPPED (touches only tests, docs or generated files: $(patch_files "$f" | tr '\n' ' '); $why)"
    done <"$work/$name.series"
    log "RHEL patches: $total in the spec, $applied applied, $skipped skipped"
    echo "$total $applied $skipped" >"$work/$name.patch-counts"
}

# Whether $src/glibc-V.tar.xz holds a whole tree (a truncated archive stops
# part-way, before sysdeps/).  The answer is kept per tarball checksum.
tarball_whole() {
    ts=$(sum_of "glibc-$1.tar.xz") || return 1
    [ ! -e "$work/tarball-whole.$ts" ] || return 0
    [ ! -e "$work/tarball-cut.$ts" ] || return 1
    if xz -dc "$src/glibc-$1.tar.xz" | tar -t 2>/dev/null | grep -q '^[^/]*/sysdeps/'; then
        touch "$work/tarball-whole.$ts"
        return 0
    fi
    touch "$work/tarball-cut.$ts"
    return 1
}

# Git commands on the mirror that write nothing into it: objects go to a
# directory of the build's own, the index is the build's own.
mgit() {
    GIT_DIR=$mirror GIT_OBJECT_DIRECTORY=$bdir/git-objects GIT_ALTERNATE_OBJECT_DIRECTORIES=$mirror/objects \
        GIT_INDEX_FILE=$bdir/git-index git "$@"
}

# The tree of tag glibc-V into $2/glibc-V: from the tarball where it is
# whole; otherwise from the git mirror, after checking that the tarball is
# the first bytes of `git archive` of the tag (the same tree, cut short).
# Blobs the mirror lacks (test data, a locale source: see the log) are left
# out of the tree.
source_tree() {
    if tarball_whole "$1"; then
        log "== extract glibc-$1.tar.xz"
        logged tar -C "$2" -xJf "$src/glibc-$1.tar.xz" || return 1
        if [ ! -d "$2/glibc-$1" ]; then
            top=$(tar -tJf "$src/glibc-$1.tar.xz" | head -n 1 | cut -d/ -f1)
            mv "$2/$top" "$2/glibc-$1"
        fi
        return 0
    fi
    if [ -z "$mirror" ] || ! GIT_DIR=$mirror git rev-parse -q --verify "refs/tags/glibc-$1^{commit}" >/dev/null 2>&1; then
        log "glibc-$1.tar.xz is cut short (no sysdeps/) and there is no git mirror with tag glibc-$1${mirror:+ at $mirror} (LDSHIM_GLIBC_GIT names one)"
        return 1
    fi
    n=$(xz -dc "$src/glibc-$1.tar.xz" | wc -c)
    a=$(xz -dc "$src/glibc-$1.tar.xz" | sha256sum)
    b=$(GIT_DIR=$mirror git archive --format=tar --prefix="glibc-$1/" "glibc-$1" 2>/dev/null | head -c "$n" | sha256sum)
    if [ "$a" != "$b" ]; then
        log "glibc-$1.tar.xz is cut short and is not the start of git archive of glibc-$1 in $mirror: refusing the mirror"
        return 1
    fi
    log "== glibc-$1.tar.xz is cut short after $n bytes (no sysdeps/); they equal the start of git archive of tag glibc-$1 ($(GIT_DIR=$mirror git rev-parse "glibc-$1^{commit}")) in $mirror, so the tree comes from there"
    rm -rf "$2/git-objects" "$2/git-index"
    mkdir -p "$2/git-objects"
    mgit read-tree "glibc-$1" || return 1
    mgit ls-files -s | awk '{ print $2 }' | mgit cat-file --batch-check | awk '$2 == "missing" { print $1 }' >"$2/missing-blobs"
    mgit ls-files -s | awk 'NR == FNR { m[$1] = 1; next } ($2 in m) { print $4 }' "$2/missing-blobs" - >"$2/missing-files"
    while read -r f; do
        case $f in
        math/auto-libm-test-out-* | localedata/locales/* | */tst-* | */test-* | */tests/* | manual/*) ;;
        *) log "the mirror lacks $f, which the build may need"; return 1 ;;
        esac
        mgit update-index --force-remove "$f" || return 1
        log "left out (blob absent from the mirror; test data or locale source, unused by make/make install): $f"
    done <"$2/missing-files"
    t=$(mgit write-tree) || return 1
    mgit archive --prefix="glibc-$1/" "$t" | tar -C "$2" -x || return 1
    rm -rf "$2/git-objects" "$2/git-index"
}

# Extract, patch, configure, build, install into $stage.  Each finished step
# leaves a stamp in $bdir, so a rerun resumes after it.
build_root() {
    v=$(version_of "$name")
    r=$(rhel_of "$name")
    bdir=$work/$name-$bkey
    tree=$bdir/glibc-$v
    if [ ! -e "$bdir/patched.stamp" ]; then
        rm -rf "$bdir"
        mkdir -p "$bdir"
        source_tree "$v" "$bdir" || return 1
        if [ -n "$r" ]; then
            log "== RHEL patches from $r.tar.xz"
            mkdir -p "$bdir/rhel"
            logged tar -C "$bdir/rhel" -xJf "$src/$r.tar.xz"
            rdir=$(dirname "$(dirname "$(find "$bdir/rhel" -path '*/SPECS/glibc.spec' | head -n 1)")")
            (cd "$tree" && apply_rhel_patches "$rdir") || return 1
        fi
        touch "$bdir/patched.stamp"
    fi
    # 2.34 and 2.35 build a C++ test helper that would link against the
    # host's newer libstdc++; no installed file needs C++.
    set -- CXX=
    if [ ! -e "$bdir/configured.stamp" ]; then
        rm -rf "$bdir/build"
        mkdir -p "$bdir/build"
        log "== configure"
        (cd "$bdir/build" && env -u LIBRARY_PATH CFLAGS="-O2 -pipe" nice -n 19 "$tree/configure" \
            --prefix=/usr --disable-werror --enable-kernel=3.2 --without-selinux --without-gd \
            >>"$logf" 2>&1) || { log "configure failed"; return 1; }
        touch "$bdir/configured.stamp"
    fi
    if [ ! -e "$bdir/built.stamp" ]; then
        log "== make -j2 (started $(date -u +%H:%M:%S))"
        (cd "$bdir/build" && env -u LIBRARY_PATH nice -n 19 make -j2 "$@" >>"$logf" 2>&1) ||
            { log "make failed"; return 1; }
        touch "$bdir/built.stamp"
    fi
    log "== make install DESTDIR=$stage (started $(date -u +%H:%M:%S))"
    rm -rf "$stage"
    mkdir -p "$stage"
    (cd "$bdir/build" && env -u LIBRARY_PATH nice -n 19 make install DESTDIR="$stage" "$@" >>"$logf" 2>&1) ||
        { log "make install failed"; return 1; }
    [ -e "$stage/lib64/ld-linux-x86-64.so.2" ] || { log "no /lib64/ld-linux-x86-64.so.2 installed"; return 1; }
}

# A static busybox from Debian's archive (once, kept in the cache).
busybox_bin() {
    bb=$cache/busybox-static/bin/busybox
    if [ ! -x "$bb" ]; then
        rm -rf "$cache/busybox-static.tmp"
        mkdir -p "$cache/busybox-static.tmp"
        (cd "$cache/busybox-static.tmp" && apt-get download busybox-static >>"$logf" 2>&1) ||
            { log "apt-get download busybox-static failed"; return 1; }
        dpkg-deb -x "$cache"/busybox-static.tmp/busybox-static_*.deb "$cache/busybox-static.tmp/x"
        mkdir -p "$cache/busybox-static/bin"
        cp "$cache/busybox-static.tmp/x/bin/busybox" "$bb"
        basename "$cache"/busybox-static.tmp/busybox-static_*.deb .deb | sed 's/%3a/:/' >"$cache/busybox-static/version"
        rm -rf "$cache/busybox-static.tmp"
    fi
    echo "$bb"
}

# Trim the installed tree and make it a root.
finish_root() {
    log "== trim, busybox, ld.so.conf, ldconfig"
    rm -rf "$stage/usr/share/locale" "$stage/usr/share/i18n" "$stage/usr/share/info" \
        "$stage/usr/lib/locale" "$stage/usr/lib64/gconv" "$stage/var/db"
    find "$stage" -name '*.a' ! -name '*_nonshared.a' -exec rm -f {} +
    # Debug sections only: symbol tables stay (ldshim's tests read them).
    for sub in lib64 usr/lib64 sbin usr/bin usr/sbin usr/libexec; do
        [ ! -d "$stage/$sub" ] || find "$stage/$sub" -type f \( -name '*.so*' -o -perm -u+x \) -print
    done | while read -r f; do
        [ "$(head -c 4 "$f" | od -An -tx1 | tr -d ' ')" != 7f454c46 ] || strip --strip-debug "$f" 2>>"$logf" || true
    done
    bb=$(busybox_bin) || return 1
    mkdir -p "$stage/bin" "$stage/proc" "$stage/tmp" "$stage/etc/ld.so.conf.d"
    chmod 1777 "$stage/tmp"
    cp "$bb" "$stage/bin/busybox"
    chroot "$stage" /bin/busybox --install -s /bin >>"$logf" 2>&1 || { log "busybox --install failed"; return 1; }
    echo 'include /etc/ld.so.conf.d/*.conf' >"$stage/etc/ld.so.conf"
    chroot "$stage" /sbin/ldconfig >>"$logf" 2>&1 || { log "ldconfig in the chroot failed"; return 1; }
    [ -s "$stage/etc/ld.so.cache" ] || { log "ldconfig wrote no /etc/ld.so.cache"; return 1; }
    {
        echo "name: $name"
        echo "glibc: $(version_of "$name") (upstream tag glibc-$(version_of "$name"))"
        [ -z "$(rhel_of "$name")" ] || echo "rhel: $(rhel_of "$name").tar.xz, patches (total applied skipped): $(cat "$work/$name.patch-counts")"
        echo "key: $key (build key $bkey, recipe $recipe, root recipe $root_recipe)"
        echo "configure: --prefix=/usr --disable-werror --enable-kernel=3.2 --without-selinux --without-gd, CFLAGS -O2 -pipe"
        echo "busybox: $(cat "$cache/busybox-static/version")"
        echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) by scripts/glibc-roots.sh"
    } >"$stage/etc/ldshim-glibc-root"
    [ ! -s "$work/$name.skipped" ] || cp "$work/$name.skipped" "$stage/etc/ldshim-glibc-root.skipped-patches"
}

# Run a command inside ROOT with /proc mounted, in a private mount namespace.
in_root() {
    r=$1
    shift
    # shellcheck disable=SC2016 # the inner shell's arguments
    unshare -m sh -c 'mount --make-rprivate / && mount -t proc proc "$1/proc" && shift && exec chroot "$@"' \
        sh "$r" "$r" "$@"
}

# A program built against the root's glibc (host gcc, the root's headers,
# crt files and libraries) whose RPATH $ORIGIN/lib finds the library it
# dlopens, and which then dlopens a name nowhere, so that the loader walks
# the cache and the system directories.  Run in the root under LD_DEBUG=libs.
smoke_check() {
    r=$1
    d=$r/tmp/ldshim-smoke
    rm -rf "$d"
    mkdir -p "$d/lib"
    cat >"$d/lib.c" <<'EOF'
int smoke_value(void) { return 42; }
EOF
    cat >"$d/main.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(void)
{
    void *h = dlopen("libldshim-smoke.so", RTLD_NOW);
    if (!h) { printf("smoke: FAIL: %s\n", dlerror()); return 1; }
    int (*f)(void) = (int (*)(void))dlsym(h, "smoke_value");
    if (!f || f() != 42) { printf("smoke: FAIL: smoke_value\n"); return 1; }
    if (dlopen("libldshim-nowhere.so.9", RTLD_NOW)) { printf("smoke: FAIL: found a library that does not exist\n"); return 1; }
    printf("smoke: ok: dlopen through RPATH $ORIGIN/lib, value %d\n", f());
    return 0;
}
EOF
    # --sysroot: the root's headers, and the absolute paths in its libc.so
    # linker script taken inside the root; -B and -L: its crt files and
    # libraries (gcc's own multiarch search would miss /usr/lib64).
    set -- --sysroot="$r" -B "$r/usr/lib64/" -L "$r/usr/lib64" -L "$r/lib64" \
        -Wl,-rpath-link,"$r/lib64" -Wl,--dynamic-linker=/lib64/ld-linux-x86-64.so.2
    libdl=""
    [ ! -e "$r/usr/lib64/libdl.so" ] || libdl=-ldl
    # shellcheck disable=SC2016 # $ORIGIN is for the loader
    if ! env -u LIBRARY_PATH gcc "$@" -O2 -shared -fPIC -o "$d/lib/libldshim-smoke.so" "$d/lib.c" >>"$logf" 2>&1 ||
        ! env -u LIBRARY_PATH gcc "$@" -O2 -o "$d/smoke" "$d/main.c" -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/lib' $libdl \
            >>"$logf" 2>&1; then
        log "smoke: compiling against the root failed"
        return 1
    fi
    readelf -d "$d/smoke" | grep -E 'NEEDED|RPATH|RUNPATH' >>"$logf"
    in_root "$r" /bin/busybox env LD_DEBUG=libs /tmp/ldshim-smoke/smoke >"$d/out" 2>&1 || true
    cat "$d/out" >>"$logf"
    ok=1
    grep -q '^smoke: ok' "$d/out" || { log "smoke: the program did not succeed"; ok=0; }
    grep -q 'search path=.*/tmp/ldshim-smoke/lib.*(RPATH from file /tmp/ldshim-smoke/smoke)' "$d/out" ||
        { log "smoke: no search line for the RPATH \$ORIGIN/lib"; ok=0; }
    grep -q 'trying file=/tmp/ldshim-smoke/lib/libldshim-smoke.so' "$d/out" ||
        { log "smoke: libldshim-smoke.so not tried in \$ORIGIN/lib"; ok=0; }
    grep -q 'search path=.*/lib64.*:/usr/lib64.*(system search path)' "$d/out" ||
        { log "smoke: no system search path line with /lib64 and /usr/lib64"; ok=0; }
    grep -q 'search cache=/etc/ld.so.cache' "$d/out" || { log "smoke: the cache was not searched"; ok=0; }
    {
        grep -m1 '^smoke: ' "$d/out"
        grep -m1 'search path=.*(RPATH from file' "$d/out"
        grep -m1 'search cache=' "$d/out"
        grep -m1 'search path=.*(system search path)' "$d/out"
    } | sed "s/^/smoke: $name: /" >"$work/$name.smoke"
    log "== ld.so --help (chroot)"
    in_root "$r" /lib64/ld-linux-x86-64.so.2 --help >"$d/help" 2>&1 || true
    in_root "$r" /lib64/ld-linux-x86-64.so.2 --version >"$d/version" 2>&1 || true
    cat "$d/help" "$d/version" >>"$logf"
    case $name in
    rhel8)
        grep -q 'glibc-hwcaps' "$d/help" || { log "smoke: RHEL 8 ld.so --help does not mention glibc-hwcaps"; ok=0; }
        grep -q '2\.28' "$d/help" "$d/version" || { log "smoke: RHEL 8 ld.so does not say 2.28"; ok=0; }
        ;;
    esac
    echo "smoke: $name: ld.so --version: $(head -n 1 "$d/version")" >>"$work/$name.smoke"
    rm -rf "$d"
    [ "$ok" = 1 ]
}

# One root: cached, built or skipped.  Prints one line.
make_root() {
    name=$1
    t0=$(date +%s)
    key=$(key_of "$name")
    bkey=$(build_key_of "$name")
    root=$cache/$name
    tarball=$cache/$name-$key.tar.xz
    if [ -d "$root" ] && [ "$(cat "$cache/$name.key" 2>/dev/null)" = "$key" ]; then
        echo "glibc-roots: $name: cached in $root (key $key), $(($(date +%s) - t0)) s"
        return 0
    fi
    if [ -e "$tarball" ]; then
        rm -rf "$root" "$root.tmp" "$cache/$name.key"
        mkdir -p "$root.tmp"
        if ! tar -C "$root.tmp" -xJf "$tarball" || ! mv "$root.tmp/$name" "$root"; then
            rm -rf "$root.tmp" "$root"
            echo "glibc-roots: $name: FAILED: cannot unpack $tarball" >&2
            return 1
        fi
        rmdir "$root.tmp"
        echo "$key" >"$cache/$name.key"
        echo "glibc-roots: $name: cached, unpacked from $tarball in $(($(date +%s) - t0)) s"
        return 0
    fi
    # A root built already with this KEY (../shared/glibc-roots): into the
    # cache as if built here, after its checksum.
    if [ -f "$prebuilt/$name-$key.tar.xz" ]; then
        want=$(awk -v f="$name-$key.tar.xz" '$2 == f { print $1 }' "$prebuilt/SHA256SUMS" 2>/dev/null)
        got=$(sha256sum <"$prebuilt/$name-$key.tar.xz" | cut -d' ' -f1)
        if [ -n "$want" ] && [ "$want" = "$got" ]; then
            if ! cp "$prebuilt/$name-$key.tar.xz" "$tarball.tmp" || ! mv "$tarball.tmp" "$tarball"; then
                echo "glibc-roots: $name: FAILED: cannot copy $prebuilt/$name-$key.tar.xz to $cache" >&2
                return 1
            fi
            for old in "$cache/$name"-*.tar.xz; do
                [ "$old" = "$tarball" ] || rm -f "$old"
            done
            echo "glibc-roots: $name: prebuilt in $prebuilt (key $key)"
            make_root "$name"
            return
        fi
        echo "glibc-roots: $name: $prebuilt/$name-$key.tar.xz does not match its SHA256SUMS there; building instead" >&2
    fi
    est=$(minutes_of "$name")
    if [ -n "$budget" ] && [ $((est * 60)) -gt $((budget - ($(date +%s) - start_all))) ]; then
        echo "SKIPPED: $name: building would take ~$est min, over the budget"
        return 77
    fi
    # One build at a time, whoever asks: the machine has two cores.  Another
    # run may have built this root meanwhile.
    if [ "$locked" = 0 ]; then
        if ! flock -n 9; then
            echo "glibc-roots: another glibc-roots.sh is building; waiting for it"
            flock 9
        fi
        locked=1
        make_root "$name"
        return
    fi
    logf=$cache/$name.log
    echo "glibc-roots: $name: building (~$est min; log $logf)"
    t0=$(date +%s)
    # A new build starts a new log; a resumed one adds to it.
    [ -e "$work/$name-$bkey/patched.stamp" ] || : >"$logf"
    echo "glibc-roots: $name key $key (build key $bkey), started $(date -u +%Y-%m-%dT%H:%M:%SZ)" >>"$logf"
    stage=$work/$name-$key.root
    if ! build_root || ! finish_root || ! smoke_check "$stage"; then
        tail -n 25 "$logf" >&2
        echo "glibc-roots: $name: FAILED after $(($(date +%s) - t0)) s (log $logf; build dir $work/$name-$bkey)"
        return 1
    fi
    cat "$work/$name.smoke"
    cat "$work/$name.smoke" >>"$logf"
    rm -rf "$root" "$cache/$name.pack" "$cache/$name.key"
    mkdir -p "$cache/$name.pack"
    mv "$stage" "$cache/$name.pack/$name"
    if ! nice -n 19 tar -C "$cache/$name.pack" -cJf "$tarball.tmp" "$name"; then
        echo "glibc-roots: $name: FAILED: cannot write $tarball"
        return 1
    fi
    mv "$tarball.tmp" "$tarball"
    for old in "$cache/$name"-*.tar.xz; do
        [ "$old" = "$tarball" ] || rm -f "$old"
    done
    mv "$cache/$name.pack/$name" "$root"
    rmdir "$cache/$name.pack"
    echo "$key" >"$cache/$name.key"
    rm -rf "$work/$name-$bkey"
    log "done in $(($(date +%s) - t0)) s"
    echo "glibc-roots: $name: built in $(($(($(date +%s) - t0)) / 60)) min, $(du -sh "$root" | cut -f1) in $root, $(du -h "$tarball" | cut -f1) as $tarball"
}

start_all=$(date +%s)
status=0
skipped=0
locked=0
exec 9>"$cache/.lock"
for n in "$@"; do
    rc=0
    make_root "$n" || rc=$?
    case $rc in
    0) ;;
    77) skipped=1 ;;
    *) status=1 ;;
    esac
done
[ "$status" -ne 0 ] || [ "$skipped" -eq 0 ] || status=77
exit $status
