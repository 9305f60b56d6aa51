#!/bin/sh
# The dlopen interposers of tests/interposers/real_tools_test.cc on aarch64,
# under qemu-user: gcc's AddressSanitizer and ThreadSanitizer runtimes from
# Debian's arm64 cross packages (libasan8-arm64-cross, libtsan2-arm64-cross),
# linked into the program and its library, or preloaded into a plain
# program; and clang 14's (libclang-rt-14-dev:arm64, with clang
# --target=aarch64-linux-gnu), linked into the program or preloaded, where
# they are installed.  The case is the bug's smallest: lib/libhost.so (RUNPATH
# $ORIGIN/plug) dlopens "libplug.so", which lives only in lib/plug/
# (tests/interposers/fixtures/plug_tree.sh builds it).  Each
# row proves the bug first (without ldshim the load fails: glibc searched
# from the runtime's library), then that ldshim repairs it with the preload
# before the runtime in LD_PRELOAD ("first") and after it ("last"), and that
# the runtime is still mapped.  Prints one table row per interposer, as in
# docs/interposers.md; exit 1 if a cell differs from that, 77 without the
# cross compiler, the preload or qemu-user in binfmt_misc.  LeakSanitizer
# cannot run under qemu-user (it needs ptrace): detect_leaks=0.
#   tests/arm64/interposers_test.sh BUILD_ARM64|ARM64_INSTALL_TREE
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/arm64/preload_test_setup.sh
. "$here/preload_test_setup.sh"
runtimes=/usr/aarch64-linux-gnu/lib
export ASAN_OPTIONS=detect_leaks=0 LD_LIBRARY_PATH=$runtimes

plug_tree=$here/../interposers/fixtures/plug_tree.sh
build() { # DIR CC FLAGS: the case (plug_tree.sh), its library and program built by CC with FLAGS
    # shellcheck disable=SC2086 # FLAGS: none or one word
    CC=$2 sh "$plug_tree" "$1" $3
}
# One cell: "fails", "repaired", or what went wrong, followed by "(expected
# ...)" when it is not EXPECTED.  TOOL: a name the runtime's file has, which
# must stay mapped.  The environment's values hold no space (LD_PRELOAD
# lists with ':').
cell() { # DIR TOOL EXPECTED [VAR=VALUE...]
    dir=$1 tool=$2 expected=$3
    shift 3
    out=$(env PLUG_TREE_MAPPED=1 "$@" "$dir/prog" 2>&1) || true
    if [ -n "$tool" ] && ! echo "$out" | grep -q "^MAPPED .*$tool"; then
        got="$tool not mapped"
    elif echo "$out" | grep -q "^loaded "; then
        got=repaired
    elif echo "$out" | grep -q "^ERROR libplug.so: cannot open shared object file"; then
        got=fails
    else
        got="unexpected: $(echo "$out" | head -n 2 | tr '\n' ' ')"
    fi
    [ "$got" = "$expected" ] || got="$got (expected $expected)"
    printf '%s' "$got"
}
version() { dpkg-query -W -f='${Package} ${Version}' "$1" 2>/dev/null || echo "$1 ?"; }
status=0
asan=$runtimes/libasan.so.8
tsan=$runtimes/libtsan.so.2
for f in "$asan" "$tsan"; do
    [ -f "$f" ] || { echo "SKIPPED: no $f (apt-get install libasan8-arm64-cross libtsan2-arm64-cross)"; exit 77; }
done
gcc=aarch64-linux-gnu-gcc
build asan "$gcc" -fsanitize=address
build tsan "$gcc" -fsanitize=thread
build plain "$gcc" ""
row() { # LABEL PACKAGE DIR TOOL WITHOUT-ENV FIRST-ENV LAST-ENV (each: words VAR=VALUE; LAST-ENV
    #       "in-program": the runtime is linked into the program, there is no "after it")
    last="(runtime is in the program)"
    # shellcheck disable=SC2086 # one word per variable
    [ "$7" = in-program ] || last=$(cell "$3" "$4" repaired $7)
    # shellcheck disable=SC2086
    line=$(printf '| %s (aarch64, qemu-user) | %s | %s | %s | %s | |' "$1" "$(version "$2")" \
        "$(cell "$3" "$4" fails $5)" "$(cell "$3" "$4" repaired $6)" "$last")
    echo "$line"
    case $line in *"(expected "*) status=1 ;; esac
}
no_order=ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
# shellcheck disable=SC2016 # the labels' backquotes are Markdown
{
    row 'gcc `-fsanitize=address` (program and library)' libasan8-arm64-cross asan libasan "" \
        "$no_order LD_PRELOAD=$preload" "LD_PRELOAD=$asan:$preload"
    row 'gcc `-fsanitize=thread`' libtsan2-arm64-cross tsan libtsan "" "LD_PRELOAD=$preload" "LD_PRELOAD=$tsan:$preload"
    row '`libasan.so` (gcc) preloaded into a plain program' libasan8-arm64-cross plain libasan \
        "$no_order LD_PRELOAD=$asan" "$no_order LD_PRELOAD=$preload:$asan" "LD_PRELOAD=$asan:$preload"
    row '`libtsan.so` (gcc) preloaded' libtsan2-arm64-cross plain libtsan \
        "LD_PRELOAD=$tsan" "LD_PRELOAD=$preload:$tsan" "LD_PRELOAD=$tsan:$preload"
}
# clang: its runtimes are linked into the program (nothing to keep mapped).
clang_rt=/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.asan-aarch64.so
if command -v clang-14 >/dev/null && [ -f "$clang_rt" ]; then
    clang="clang-14 --target=aarch64-linux-gnu -fuse-ld=lld"
    build casan "$clang" -fsanitize=address
    build ctsan "$clang" -fsanitize=thread
    # shellcheck disable=SC2016
    {
        row 'clang `-fsanitize=address` (runtime linked into the program)' libclang-rt-14-dev:arm64 casan "" "" \
            "$no_order LD_PRELOAD=$preload" in-program
        row 'clang `-fsanitize=thread`' libclang-rt-14-dev:arm64 ctsan "" "" "LD_PRELOAD=$preload" in-program
        row '`libclang_rt.asan` preloaded' libclang-rt-14-dev:arm64 plain asan-aarch64 "$no_order LD_PRELOAD=$clang_rt" \
            "$no_order LD_PRELOAD=$preload:$clang_rt" "$no_order LD_PRELOAD=$clang_rt:$preload"
    }
else
    echo "clang rows: SKIPPED: no clang-14 or no $clang_rt (apt-get install clang-14 libclang-rt-14-dev:arm64)"
fi
exit "$status"
