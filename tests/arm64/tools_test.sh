#!/bin/sh
# The tool wrappers of tests/interposers/real_tools_test.cc on aarch64:
# Debian's arm64 heaptrack (profiler), uftrace (tracer, on a -pg program)
# and fakechroot (path translator), each wrapping the case with ldshim's
# preload already in LD_PRELOAD, as a user with ldshim in their environment
# starts them.  The case: lib/libhost.so (RUNPATH $ORIGIN/plug) dlopens
# "libplug.so", which lives only in lib/plug/ (tests/interposers/fixtures/
# plug_tree.sh, cross-compiled against the root).  Each row proves the bug
# (without ldshim the load fails) and the repair, run in the copy of the
# bookworm arm64 root that scripts/arm64-repro.sh makes (it installs the
# three tools there), chrooted under qemu-user.  Prints table rows as in
# docs/interposers.md; exit 1 if a cell is not as expected, 77 without the
# root, the cross compiler or qemu-user in binfmt_misc.
#   tests/arm64/tools_test.sh BUILD_ARM64|ARM64_INSTALL_TREE
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=tests/arm64/preload_test_setup.sh
. "$(dirname "$0")/preload_test_setup.sh"
[ "$(id -u)" -eq 0 ] || { echo "SKIPPED: chroot(2) needs root"; exit 77; }
rc=0
"$top/scripts/arm64-repro.sh" --root-only || rc=$?
[ "$rc" -ne 77 ] || { echo "SKIPPED: no arm64 root with the tools (scripts/arm64-repro.sh --root-only)"; exit 77; }
[ "$rc" -eq 0 ] || { echo "FAIL: scripts/arm64-repro.sh --root-only exited $rc"; exit 1; }
root=${LDSHIM_ARM64_ROOTS_DIR:-/var/cache/ldshim/arm64-roots}/bookworm-mpi

# The case, cross-compiled against the root, and ldshim's libraries as
# installed in the root's /opt.
case=$root/opt/ldshim-tools-case
rm -rf "$case" "$root/opt/ldshim-tools"
trap 'rm -rf "$tmp" "$case" "$root/opt/ldshim-tools"' EXIT
"$top/scripts/arm64-lib.sh" "$build" "$root/opt/ldshim-tools"
in_root_preload=/opt/ldshim-tools/libldshim_preload.so
ml=$root/usr/lib/aarch64-linux-gnu
CC="aarch64-linux-gnu-gcc --sysroot=$root -B$ml/ -L$ml -L$root/lib/aarch64-linux-gnu -O0" \
    sh "$top/tests/interposers/fixtures/plug_tree.sh" "$case"
CC="aarch64-linux-gnu-gcc --sysroot=$root -B$ml/ -L$ml -L$root/lib/aarch64-linux-gnu -O0" \
    sh "$top/tests/interposers/fixtures/plug_tree.sh" "$case/pg" -pg

# One cell: COMMAND run in the case's directory in the root, "fails" or
# "repaired" by what the program printed, "(expected ...)" appended when it
# is not EXPECTED.
cell() { # EXPECTED COMMAND
    out=$("$top/scripts/root-tree.sh" --in "$root" sh -c "cd /opt/ldshim-tools-case && $2" 2>&1) || true
    if echo "$out" | grep -q "^loaded "; then
        got=repaired
    elif echo "$out" | grep -q "^ERROR libplug.so: cannot open shared object file"; then
        got=fails
    else
        got="unexpected: $(echo "$out" | tail -n 2 | tr '\n' ' ')"
    fi
    [ "$got" = "$1" ] || got="$got (expected $1)"
    printf '%s' "$got"
}
status=0
row() { # LABEL PACKAGE COMMAND
    # shellcheck disable=SC2016 # dpkg-query's ${Version}
    version=$(chroot "$root" dpkg-query -W -f='${Version}' "$2" 2>/dev/null || echo "?")
    line=$(printf '| %s (aarch64, qemu-user) | %s %s | %s | | | %s |' "$1" "$2" "$version" \
        "$(cell fails "$3")" "$(cell repaired "LD_PRELOAD=$in_root_preload $3")")
    echo "$line"
    case $line in *"(expected "*) status=1 ;; esac
}
row "heaptrack (profiler)" heaptrack "heaptrack ./prog"
# shellcheck disable=SC2016 # the label's backquotes are Markdown
row '`uftrace record` (tracer, `-pg` program)' uftrace "uftrace record -d /tmp/uftrace.data pg/prog"
row "fakechroot (path translator)" fakechroot "fakechroot ./prog"
exit "$status"
