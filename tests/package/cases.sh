#!/bin/sh
# An installed or unpacked ldshim used as a user would, on whatever glibc
# runs this: scripts/package-test.sh (the Debian packages, installed in a
# bookworm root) and scripts/release-relocation.sh (the release tarball,
# unpacked as a normal user on this machine and in each Debian root) share
# these cases.  Each prints what it sees and exits 1 with a line starting
# "FAIL:" on the first wrong result.
#   cases.sh consumer [CC-ARGS...]   consumer.c, strict C99, built with
#                 `pkg-config --cflags --libs ldshim` (and CC-ARGS), then run
#   cases.sh ldsearch LDSEARCH VERSION [PROGRAM]
#                 --version says VERSION; `LDSEARCH PROGRAM` (default /bin/ls)
#                 prints the search lines this system's loader prints under
#                 LD_DEBUG=libs
#   cases.sh repair PRELOAD DIR
#                 the Julia + UCX report in miniature (repair.c), built in DIR:
#                 a ucm-like GOT-patching dlopen interposer, then a preloaded
#                 dlsym(RTLD_NEXT) wrapper, each makes the search fail (both
#                 asserted), and AddressSanitizer's runtime in front where
#                 CC has one and the case runs where it is built;
#                 LD_PRELOAD=PRELOAD (after them) repairs each
#                 (LDSHIM_DEBUG=1's lines are printed, indented)
#   cases.sh hooks TOOL PRELOAD
#                 ldshim-hooks (TOOL) as unpacked, and through a link to it
#                 from another directory, defaults to PRELOAD (found from
#                 its own place), runs a program that calls dlopen and
#                 dlsym with that preload first in LD_PRELOAD, passes its
#                 exit status on and prints the hooks' log with the
#                 program's dlsym slot patched and nothing failed
# Needs cc; consumer also pkg-config.  Scratch files go to the current
# directory (consumer, ldsearch) or DIR (repair).
# For a system without a compiler (scripts/glibc-roots.sh's roots), the
# caller sets CC (compiler and its flags for that system's glibc; default
# cc), LIBDL (default -ldl; empty where that glibc has no libdl.so to link)
# and RUN (a command prefix that runs a program on that system, where the
# same paths name the same files; default none: here).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
PATH=$PATH:/usr/sbin:/sbin # ldconfig
CC=${CC:-cc} LIBDL=${LIBDL--ldl} RUN=${RUN:-}
fail() { echo "FAIL: $*"; exit 1; }
case=${1:-}
[ "$#" -gt 0 ] && shift

case $case in
consumer)
    flags=$(pkg-config --cflags --libs ldshim) || fail "pkg-config does not know ldshim"
    echo "cc -std=c99 -pedantic-errors consumer.c $flags $*"
    # -ldl: consumer.c calls dlopen itself (libdl before glibc 2.34).
    # shellcheck disable=SC2086 # pkg-config's words, CC's and RUN's
    $CC -std=c99 -pedantic-errors -Wall -Wextra -Werror -o consumer "$here/consumer.c" $flags "$@" $LIBDL ||
        fail "the C99 consumer does not build against the header and library pkg-config names"
    # shellcheck disable=SC2086
    $RUN "$PWD/consumer" || fail "the C99 consumer failed"
    ;;

ldsearch)
    [ "$#" -eq 2 ] || [ "$#" -eq 3 ] || fail "usage: cases.sh ldsearch LDSEARCH VERSION [PROGRAM]"
    ldsearch=$1 version=$2 program=${3:-/bin/ls}
    # shellcheck disable=SC2086 # RUN's words
    v=$($RUN "$ldsearch" --version) || fail "$ldsearch --version failed"
    [ "$v" = "ldsearch (ldshim) $version" ] || fail "ldsearch --version says '$v'"
    echo "$v"
    # shellcheck disable=SC2086
    $RUN "$ldsearch" "$program" >ldsearch.out || fail "ldsearch $program failed"
    cat ldsearch.out
    # The emulation must print what this system's loader prints.
    # shellcheck disable=SC2086
    $RUN env LD_DEBUG=libs LD_TRACE_LOADED_OBJECTS=1 "$program" 2>&1 | sed 's/^ *[0-9]*:\t//' |
        grep -E '^(find library=| search path=|  trying file=| search cache=|    \()' >loader.out || true
    [ -s loader.out ] || fail "no LD_DEBUG=libs output from the loader"
    diff -u loader.out ldsearch.out || fail "ldsearch $program differs from the loader's LD_DEBUG=libs"
    echo "ldsearch $program: identical to LD_DEBUG=libs"
    ;;

repair)
    [ "$#" -eq 2 ] || fail "usage: cases.sh repair PRELOAD DIR"
    preload=$1 c=$2
    # shellcheck disable=SC2086 # RUN's words: the file is where the case runs
    $RUN test -f "$preload" || fail "no preload library $preload"
    # A system library of the same name would change what the case means
    # (a libucm.so.0 of the system's UCX is harmless: prog's RPATH comes
    # first, which is checked below).
    for n in libplug.so libhost.so; do
        # shellcheck disable=SC2086 # RUN's words
        if $RUN ldconfig -p | grep -q "^[[:space:]]*$n "; then fail "this system already has a $n"; fi
    done
    # -O0: no dlopen call may become a tail call (see repair.c).
    mkdir -p "$c/bin" "$c/lib/sub"
    s=$here/repair.c
    # shellcheck disable=SC2086 # CC's, LIBDL's and (below) RUN's words
    {
        $CC -O0 -fPIC -shared -DPART_PLUG -o "$c/lib/sub/libplug.so" "$s"
        # shellcheck disable=SC2016 # $ORIGIN is the loader's
        $CC -O0 -fPIC -shared -DPART_HOST -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/sub' -o "$c/lib/libhost.so" "$s" $LIBDL
        $CC -O0 -fPIC -shared -DPART_UCM -Wl,-soname,libucm.so.0 -o "$c/lib/libucm.so.0" "$s" $LIBDL
        # libucm is linked for its side effect only: keep it with --no-as-needed.
        # shellcheck disable=SC2016
        $CC -O0 -DPART_PROG -o "$c/bin/prog" "$s" -L"$c/lib" -lhost -Wl,--no-as-needed -l:libucm.so.0 \
            -Wl,-rpath,'$ORIGIN/../lib' $LIBDL
        $CC -O0 -fPIC -shared -DPART_WRAP -o "$c/lib/libwrap.so" "$s" $LIBDL
    }
    want="prog: loaded $c/bin/../lib/sub/libplug.so, plug_answer() = 42"
    # shellcheck disable=SC2086
    $RUN env LD_TRACE_LOADED_OBJECTS=1 "$c/bin/prog" | grep -qF "libucm.so.0 => $c/bin/../lib/libucm.so.0 " ||
        fail "prog does not load the case's libucm.so.0: $($RUN env LD_TRACE_LOADED_OBJECTS=1 "$c/bin/prog" | grep libucm)"

    # shellcheck disable=SC2086
    out=$($RUN env UCM_LIKE_OFF=1 "$c/bin/prog") || fail "without the interposer glibc does not find libplug.so: $out"
    echo "glibc alone:         $out"
    [ "$out" = "$want" ] || fail "unexpected glibc result: $out"

    # shellcheck disable=SC2086
    if out=$($RUN "$c/bin/prog"); then fail "the ucm-like interposer does not reproduce the bug: $out"; fi
    echo "ucm-like:            $(echo "$out" | tail -n 1)"
    echo "$out" | grep -q "cannot open shared object file" || fail "unexpected failure through the interposer: $out"

    rc=0
    # shellcheck disable=SC2086
    out=$($RUN env LD_PRELOAD="$preload" LDSHIM_DEBUG=1 "$c/bin/prog" 2>"$c/debug.err") || rc=$?
    echo "ucm-like + ldshim:   $(echo "$out" | tail -n 1)"
    sed 's/^/  /' "$c/debug.err"
    [ "$rc" -eq 0 ] || fail "with LD_PRELOAD=$preload libplug.so is still not found"
    echo "$out" | tail -n 1 | grep -qxF "$want" || fail "the preload loaded something else: $out"
    # The interposer still sees the call, now with the path found from libhost.
    echo "$out" | grep -qxF "ucm-like: ucm_dlopen(\"$c/bin/../lib/sub/libplug.so\")" ||
        fail "libucm's ucm_dlopen was bypassed or got another path: $out"
    grep -F "ldshim: dlopen(\"libplug.so\") from $c/bin/../lib/libhost.so" "$c/debug.err" | grep -q "found via RPATH" ||
        fail "LDSHIM_DEBUG does not show the search from libhost via RPATH"

    # The second interposer: a dlsym(RTLD_NEXT) wrapper in front, ldshim after it.
    # shellcheck disable=SC2086
    if out=$($RUN env UCM_LIKE_OFF=1 LD_PRELOAD="$c/lib/libwrap.so" "$c/bin/prog"); then
        fail "the RTLD_NEXT wrapper does not reproduce the bug: $out"
    fi
    echo "RTLD_NEXT wrapper:   $(echo "$out" | tail -n 1)"
    rc=0
    # shellcheck disable=SC2086
    out=$($RUN env UCM_LIKE_OFF=1 LD_PRELOAD="$c/lib/libwrap.so $preload" "$c/bin/prog") || rc=$?
    echo "wrapper + ldshim:    $(echo "$out" | tail -n 1)"
    if [ "$rc" -ne 0 ] || [ "$(echo "$out" | tail -n 1)" != "$want" ]; then
        fail "behind the RTLD_NEXT wrapper libplug.so is still not found: $out"
    fi
    cases="ucm-like GOT patcher, RTLD_NEXT wrapper" n=2

    # The third, where this system's compiler has one and the case runs
    # where it was built: AddressSanitizer's runtime preloaded in front (its
    # dlopen interceptor calls glibc from libasan), ldshim after it.
    asan=""
    if [ -z "${RUN:-}" ]; then asan=$($CC -print-file-name=libasan.so 2>/dev/null || true); fi
    case $asan in
    /*)
        asan=$(readlink -f "$asan")
        if out=$(ASAN_OPTIONS=detect_leaks=0 UCM_LIKE_OFF=1 LD_PRELOAD="$asan" "$c/bin/prog" 2>&1); then
            fail "the ASan runtime in front does not reproduce the bug: $out"
        fi
        echo "ASan runtime:        $(echo "$out" | tail -n 1)"
        rc=0
        out=$(ASAN_OPTIONS=detect_leaks=0 UCM_LIKE_OFF=1 LD_PRELOAD="$asan $preload" "$c/bin/prog" 2>&1) || rc=$?
        echo "ASan + ldshim:       $(echo "$out" | tail -n 1)"
        if [ "$rc" -ne 0 ] || [ "$(echo "$out" | tail -n 1)" != "$want" ]; then
            fail "behind the ASan runtime libplug.so is still not found: $out"
        fi
        cases="$cases, ASan runtime" n=3
        ;;
    esac
    echo "repair: $n of $n interposers repaired ($cases)"
    ;;

hooks)
    [ "$#" -eq 2 ] || fail "usage: cases.sh hooks TOOL PRELOAD"
    tool=$1 preload=$2
    # shellcheck disable=SC2086 # RUN's words
    $RUN test -f "$preload" || fail "no preload library $preload"
    mkdir -p hooks-link
    ln -sf "$tool" hooks-link/ldshim-hooks
    for t in "$tool" "$PWD/hooks-link/ldshim-hooks"; do
        # shellcheck disable=SC2086
        help=$($RUN "$t" --help) || fail "$t --help failed"
        echo "$help" | grep -qF "(default: $preload," ||
            fail "$t does not default to $preload: $(echo "$help" | grep -F 'default:')"
        echo "$t --help: default $preload"
    done
    printf '%s\n' '#include <dlfcn.h>' \
        'int main(void) {' \
        '    void* h = dlopen("libc.so.6", RTLD_NOW);' \
        '    return h && dlsym(h, "puts") ? 3 : 1;' '}' >hooks-prog.c
    # shellcheck disable=SC2086 # CC's and LIBDL's words
    $CC -O0 -o hooks-prog hooks-prog.c $LIBDL || fail "cannot build hooks-prog"
    rc=0
    # shellcheck disable=SC2086
    out=$($RUN "$PWD/hooks-link/ldshim-hooks" -- "$PWD/hooks-prog" 2>&1) || rc=$?
    echo "$out" | sed 's/^/  /'
    if echo "$out" | grep -q '^ldshim: LDSHIM_CUDA_HOOKS: '; then
        echo "hooks: this build has no CUDA hooks (no CUDA headers where it was built): the log is not checked"
        exit 0
    fi
    [ "$rc" -eq 3 ] || fail "ldshim-hooks did not pass the program's exit status 3 on (exit $rc)"
    echo "$out" | grep -Eq '^patched +<main program> +dlsym ' || fail "the program's dlsym slot is not patched in the log"
    echo "$out" | grep -Eq '^[0-9]+ operations: [0-9]+ patched, [0-9]+ chained, 0 failed$' || fail "no log summary, or a write failed"
    echo "hooks: ldshim-hooks through a link ran hooks-prog with $preload"
    ;;

*)
    sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
    [ "$case" = --help ] && exit 0
    exit 2
    ;;
esac
