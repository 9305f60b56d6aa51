#!/bin/sh
# libldshim and its preload reached through symbolic links, as `ln -s`,
# package views and module trees lay them out.  The real install is lib/ as
# meson installs it (libldshim.so.0, libldshim_preload.so, ldshim/probe/);
# the report in miniature (tests/package/repair.c: a library with RPATH
# $ORIGIN/sub dlopens libplug.so through a ucm-like GOT-patching interposer)
# must be repaired through each arrangement, two ways: the preload, and the
# patched libucm's route (UCM_LIKE_LDSHIM=1: libldshim.so.0 loaded by name
# from LD_LIBRARY_PATH, ldshim_dlopen_try asked first).
#   one_linked_library  libldshim.so.0 alone linked into a directory on
#                       LD_LIBRARY_PATH (the preload's own libldshim comes
#                       from there too: LD_LIBRARY_PATH before its RUNPATH)
#   view_of_two_links   the preload and libldshim.so.0 linked into a view;
#                       libldshim.so.0 is a link to the link above
#   tree_of_links       the install copied as links file by file (cp -rs):
#                       the probe files are links too
#   copy_without_probe  a copy of libldshim.so.0 alone: declined, and the
#                       reason says what was looked for, where, and the fix
#   links_test.sh LIBDIR PRELOAD REPAIR_C
set -u
unset LD_LIBRARY_PATH LD_PRELOAD # meson test's point at the build tree
libdir=$1 preload=$2 src=$3
CC=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

real=$tmp/real/lib
mkdir -p "$real"
if ! cp -a "$libdir"/libldshim.so* "$libdir/ldshim" "$preload" "$real/"; then
    echo "FAIL cannot lay out the install from $libdir"
    exit 1
fi
c=$tmp/case
mkdir -p "$c/bin" "$c/lib/sub"
# shellcheck disable=SC2016 # $ORIGIN is the loader's
if ! { $CC -O0 -fPIC -shared -DPART_PLUG -o "$c/lib/sub/libplug.so" "$src" &&
    $CC -O0 -fPIC -shared -DPART_HOST -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/sub' -o "$c/lib/libhost.so" "$src" -ldl &&
    $CC -O0 -fPIC -shared -DPART_UCM -Wl,-soname,libucm.so.0 -o "$c/lib/libucm.so.0" "$src" -ldl &&
    $CC -O0 -DPART_PROG -o "$c/bin/prog" "$src" -L"$c/lib" -lhost -Wl,--no-as-needed -l:libucm.so.0 \
        -Wl,-rpath,'$ORIGIN/../lib' -ldl; }; then
    echo "FAIL cannot build the case with $CC"
    exit 1
fi
want="prog: loaded $c/bin/../lib/sub/libplug.so, plug_answer() = 42"
if out=$("$c/bin/prog" 2>&1); then
    echo "FAIL the ucm-like interposer does not break the search without ldshim: $out"
    exit 1
fi

# repaired SCENARIO ROUTE [VAR=VALUE...]: prog finds libplug.so through
# libhost's RPATH, and LDSHIM_DEBUG=1 shows the search from libhost.
repaired() {
    name="$1 ($2)"
    shift 2
    rc=0
    out=$(env "$@" LDSHIM_DEBUG=1 "$c/bin/prog" 2>"$tmp/err") || rc=$?
    if [ "$rc" -ne 0 ] || [ "$(echo "$out" | tail -n 1)" != "$want" ]; then
        bad "$name: not repaired: $(echo "$out" | tail -n 1)"
        sed 's/^/  /' "$tmp/err"
        return
    fi
    if ! grep -F "ldshim: dlopen(\"libplug.so\") from $c/bin/../lib/libhost.so" "$tmp/err" | grep -q 'found via RPATH'; then
        bad "$name: LDSHIM_DEBUG=1 does not show the search from libhost via RPATH"
        sed 's/^/  /' "$tmp/err"
        return
    fi
    pass=$((pass + 1))
    echo "PASS $name: $(echo "$out" | tail -n 1)"
}
# loaded_from NAME LIBLDSHIM VAR=VALUE...: the preload's libldshim.so.0 is
# the file named (startup trace).
loaded_from() {
    name=$1 lib=$2
    shift 2
    if env "$@" LD_TRACE_LOADED_OBJECTS=1 "$c/bin/prog" | grep -qF "libldshim.so.0 => $lib ("; then
        pass=$((pass + 1))
        echo "PASS $name: libldshim.so.0 => $lib"
    else
        bad "$name: libldshim.so.0 is not $lib: $(env "$@" LD_TRACE_LOADED_OBJECTS=1 "$c/bin/prog" | grep libldshim)"
    fi
}

one=$tmp/one
mkdir -p "$one"
ln -s "$real/libldshim.so.0" "$one/libldshim.so.0"
loaded_from "one_linked_library (preload)" "$one/libldshim.so.0" LD_PRELOAD="$real/libldshim_preload.so" LD_LIBRARY_PATH="$one"
repaired one_linked_library preload LD_PRELOAD="$real/libldshim_preload.so" LD_LIBRARY_PATH="$one"
repaired one_linked_library "patched libucm" UCM_LIKE_LDSHIM=1 LD_LIBRARY_PATH="$one"

view=$tmp/view/lib
mkdir -p "$view"
ln -s "$real/libldshim_preload.so" "$view/libldshim_preload.so"
ln -s "$one/libldshim.so.0" "$view/libldshim.so.0"
loaded_from "view_of_two_links (preload)" "$view/../lib/libldshim.so.0" LD_PRELOAD="$view/libldshim_preload.so"
repaired view_of_two_links preload LD_PRELOAD="$view/libldshim_preload.so"
repaired view_of_two_links "patched libucm" UCM_LIKE_LDSHIM=1 LD_LIBRARY_PATH="$view"

cp -rs "$tmp/real" "$tmp/tree"
tree=$tmp/tree/lib
[ -L "$tree/ldshim/probe/libldshim-probe.so" ] || bad "tree_of_links: cp -rs did not make the probe a link"
loaded_from "tree_of_links (preload)" "$tree/../lib/libldshim.so.0" LD_PRELOAD="$tree/libldshim_preload.so"
repaired tree_of_links preload LD_PRELOAD="$tree/libldshim_preload.so"
repaired tree_of_links "patched libucm" UCM_LIKE_LDSHIM=1 LD_LIBRARY_PATH="$tree"

copy=$tmp/copy
mkdir -p "$copy"
cp -L "$real/libldshim.so.0" "$copy/libldshim.so.0"
if out=$(UCM_LIKE_LDSHIM=1 LD_LIBRARY_PATH="$copy" LDSHIM_DEBUG=1 "$c/bin/prog" 2>"$tmp/err"); then
    bad "copy_without_probe: repaired without the probe: $out"
elif grep -qF "the loader probe cannot be found: no ldshim/probe/libldshim-probe.so beside $copy/libldshim.so.0 (looked in $copy/ldshim/probe); keep LIBDIR/ldshim/probe beside libldshim.so.0" "$tmp/err"; then
    pass=$((pass + 1))
    echo "PASS copy_without_probe: $(grep -m 1 'probe cannot be found' "$tmp/err" | sed 's/^ *//')"
else
    bad "copy_without_probe: the decline does not say what was looked for and where"
    sed 's/^/  /' "$tmp/err"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
