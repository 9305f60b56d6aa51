#!/bin/sh
# ldsearch --diff and ldsearch check on aarch64, through
# qemu-user (binfmt_misc) and the host's multiarch arm64 loader:
#  1. a cross-compiled tree (RPATH and RUNPATH programs, a library with a
#     RUNPATH of its own that dlopens, dlopen by name, by path, of a missing
#     name, dlclose and again, LD_LIBRARY_PATH set by a shell in between)
#     run under `ldsearch --diff`: every search identical, nothing skipped,
#     every environment recorded (the aarch64 audit module);
#  2. `ldsearch check` on that tree: both programs and the libraries checked
#     (not skipped as another machine), and the libraries it calls missing
#     are those the emulated loader lists as "not found";
#  3. with an arm64 root (scripts/arm64-root.sh; root only, for chroot):
#     `ldsearch check --root ROOT /usr/bin` checks every dynamic arm64
#     program there, and calls missing what the root's loader does;
#  4. and a static ldsearch --diff inside that root (chroot) compares a
#     shell's arm64 processes with every environment recorded.
# Exits 77 (skipped) without the cross compiler, the binfmt_misc entry or
# the multiarch loader.
#   diff_check_test.sh LDSEARCH [ROOT]     default ROOT: bookworm's
set -eu
ldsearch=$1
root=${2:-${LDSHIM_ARM64_ROOTS_DIR:-/var/cache/ldshim/arm64-roots}/bookworm}
cc=aarch64-linux-gnu-gcc
if ! command -v "$cc" >/dev/null 2>&1 || [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] ||
    [ ! -e /lib/ld-linux-aarch64.so.1 ]; then
    echo "SKIPPED: needs $cc, qemu-user in binfmt_misc and libc6:arm64"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME="$work/cache"
status=0
fail() {
    echo "FAIL: $*"
    status=1
}

# The tree.  libdep (in a/, by the RPATH) dlopens libplug2.so through its own
# RUNPATH ($ORIGIN/../c); the programs dlopen libplug.so (in b/), libm by
# name, a path, and a name nothing has.
mkdir -p "$work/t/a" "$work/t/b" "$work/t/c" "$work/t/bin"
cat >"$work/lib.c" <<'C'
int plug(void) { return 1; }
C
cat >"$work/dep.c" <<'C'
#include <dlfcn.h>
int dep(void) { void *h = dlopen("libplug2.so", RTLD_NOW); return h != 0; }
C
cat >"$work/main.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int dep(void);
int main(int argc, char **argv) {
    void *p = dlopen("libplug.so", RTLD_NOW);
    void *m = dlopen("libm.so.6", RTLD_NOW);
    void *x = dlopen("libnothere.so", RTLD_LAZY);
    if (p) dlclose(p);
    p = dlopen("libplug.so", RTLD_NOW);
    void *q = argc > 1 ? dlopen(argv[1], RTLD_NOW) : 0;
    printf("dep %d plug %d libm %d missing %d path %d\n", dep(), p != 0, m != 0, x != 0, q != 0);
    return 0;
}
C
# shellcheck disable=SC2016 # $ORIGIN is the loader's
{
    $cc -shared -fPIC -o "$work/t/b/libplug.so" "$work/lib.c" &&
        $cc -shared -fPIC -o "$work/t/c/libplug2.so" "$work/lib.c" &&
        $cc -shared -fPIC -o "$work/t/a/libdep.so" -Wl,-soname,libdep.so "$work/dep.c" \
            -Wl,--enable-new-dtags,-rpath,'$ORIGIN/../c' &&
        $cc -o "$work/t/bin/app-rpath" "$work/main.c" -L"$work/t/a" -ldep \
            -Wl,--disable-new-dtags,-rpath,'$ORIGIN/../a:$ORIGIN/../b' &&
        $cc -o "$work/t/bin/app-runpath" "$work/main.c" -L"$work/t/a" -ldep \
            -Wl,--enable-new-dtags,-rpath,'$ORIGIN/../a:$ORIGIN/../b'
} >"$work/cc.log" 2>&1 || {
    cat "$work/cc.log"
    echo "FAIL: the tree could not be cross-compiled"
    exit 1
}

# 1. --diff: a shell runs both programs, the second with LD_LIBRARY_PATH.
t=$work/t
"$ldsearch" --diff --json -- /bin/sh -c \
    "'$t/bin/app-rpath' '$t/c/libplug2.so' >&2 && LD_LIBRARY_PATH=$t/c:/nonexistent '$t/bin/app-runpath' >&2" \
    >"$work/diff.json" 2>"$work/diff.err" || fail "--diff exited $?: $(cat "$work/diff.err")"
python3 - "$work/diff.json" <<'PY' || status=1
import json, sys
d = json.load(open(sys.argv[1]))
print(f"--diff: {d['compared']} searches in {d['processes']} processes, {d['different']} different, "
      f"{len(d['skipped'])} skipped, {len(d['notes'])} notes")
ok = d["different"] == 0 and not d["skipped"] and not d["notes"] and d["compared"] >= 12
if not ok:
    print("FAIL: --diff:", json.dumps(d, indent=1)[:3000])
sys.exit(0 if ok else 1)
PY
"$ldsearch" --diff -- "$t/bin/app-runpath" >"$work/diff.txt" 2>&1 || fail "--diff (text): $(cat "$work/diff.txt")"
grep -q 'all identical$' "$work/diff.txt" || fail "--diff (text): $(cat "$work/diff.txt")"
grep -q 'ERROR: ld.so' "$work/diff.txt" && fail "the audit module was refused: $(cat "$work/diff.txt")"
tail -n 1 "$work/diff.txt"

# The libraries a check calls missing, as sorted "FILE NAME" lines.
check_missing() {
    python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for f in d["files"]:
    for p in f["problems"]:
        if p["kind"] == "missing":
            print(f["path"], p["name"])
' "$1" | sort
}
# What the emulated loader lists as not found for PROGRAM ($1), run by the
# rest of the arguments (a chroot prefix, or none).
loader_missing() {
    prog=$1
    shift
    "$@" /usr/bin/env -i LD_TRACE_LOADED_OBJECTS=1 "$prog" 2>/dev/null </dev/null |
        sed -n 's/^[[:space:]]*\([^ ]*\) => not found.*/\1/p' | sed "s|^|$prog |" || true
}

# 2. check on the tree, then with libdep gone.
"$ldsearch" check --json "$t" >"$work/check.json" 2>"$work/check.err" || true
python3 - "$work/check.json" <<'PY' || status=1
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print("check (tree):", s["text"])
ok = s["programs"] == 2 and s["libraries"] == 3 and s["foreign"] == 0 and s["problems"] == 0
if not ok:
    print("FAIL: check on the cross-compiled tree")
sys.exit(0 if ok else 1)
PY
mv "$t/a/libdep.so" "$work/libdep.so"
"$ldsearch" check --json "$t/bin" >"$work/check2.json" 2>/dev/null || true
check_missing "$work/check2.json" >"$work/mine"
for p in "$t/bin/app-rpath" "$t/bin/app-runpath"; do loader_missing "$p"; done | sort >"$work/real"
if [ -s "$work/real" ] && cmp -s "$work/real" "$work/mine"; then
    echo "check (libdep removed): missing as the emulated loader says: $(wc -l <"$work/real") entries"
else
    fail "check (libdep removed): loader vs ldsearch: $(diff "$work/real" "$work/mine" || true)"
fi

# 3. An arm64 root's /usr/bin, checked inside it.
if [ "$(id -u)" -ne 0 ] || [ ! -x "$root/usr/bin/env" ]; then
    echo "arm64 root part skipped (no root at $root, or not run as root)"
    exit "$status"
fi
"$ldsearch" check --json --root "$root" /usr/bin >"$work/root.json" 2>"$work/root.err" || true
# The root's dynamic arm64 programs: regular executable files whose program
# headers name an interpreter (as scripts/arm64-root-ldsearch.sh finds them).
for f in "$root"/usr/bin/*; do
    if [ ! -f "$f" ] || [ -L "$f" ] || [ ! -x "$f" ]; then continue; fi
    readelf -h "$f" 2>/dev/null | grep -q 'Machine:.*AArch64' || continue
    readelf -l "$f" 2>/dev/null | grep -q 'Requesting program interpreter' || continue
    echo "${f#"$root"}"
done >"$work/programs"
expected=$(wc -l <"$work/programs")
while read -r prog; do loader_missing "$prog" timeout 10 chroot "$root"; done <"$work/programs" | sort >"$work/real"
check_missing "$work/root.json" >"$work/mine"
python3 - "$work/root.json" "$expected" <<'PY' || status=1
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print("check (--root):", s["text"])
ok = s["programs"] == int(sys.argv[2]) and s["foreign"] == 0 and s["programs"] > 0
if not ok:
    print(f"FAIL: check --root: {s['programs']} programs checked, {sys.argv[2]} dynamic arm64 programs")
sys.exit(0 if ok else 1)
PY
if cmp -s "$work/real" "$work/mine"; then
    echo "check (--root): missing as the root's loader says: $(wc -l <"$work/real") entries"
else
    fail "check --root: loader vs ldsearch: $(diff "$work/real" "$work/mine" || true)"
fi

# 4. --diff inside the root: a static (x86-64) ldsearch runs there as is, the
# root's programs through qemu; /proc, which the audit module reads, is
# mounted in a mount namespace of its own.
if readelf -l "$ldsearch" | grep -q 'program interpreter' || ! command -v unshare >/dev/null 2>&1; then
    echo "--diff in the root skipped (ldsearch is not static, or no unshare)"
    exit "$status"
fi
inside=/tmp/ldsearch-arm64-diff-check.$$
trap 'rm -rf "$work"; rm -f "$root$inside"' EXIT
cp "$ldsearch" "$root$inside"
# shellcheck disable=SC2016 # expanded inside the root
unshare -m sh -c 'mount -t proc proc "$1/proc" && chroot "$1" "$2" --diff --json -- /bin/sh -c \
    "ls / >/dev/null; LD_LIBRARY_PATH=/opt:/usr/lib/aarch64-linux-gnu date >/dev/null"' \
    sh "$root" "$inside" >"$work/root-diff.json" 2>"$work/root-diff.err" || fail "--diff in the root: $(cat "$work/root-diff.err")"
python3 - "$work/root-diff.json" <<'PY' || status=1
import json, sys
d = json.load(open(sys.argv[1]))
print(f"--diff (in the root): {d['compared']} searches in {d['processes']} processes, {d['different']} different, "
      f"{len(d['skipped'])} skipped, {len(d['notes'])} notes")
ok = d["different"] == 0 and not d["skipped"] and not d["notes"] and d["processes"] == 3
if not ok:
    print("FAIL: --diff in the root:", json.dumps(d, indent=1)[:3000])
sys.exit(0 if ok else 1)
PY
exit "$status"
