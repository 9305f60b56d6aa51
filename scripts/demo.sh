#!/bin/sh
# The main job, as a story for someone who has never heard of the bug:
#   1. a Julia-shaped program loads its library;
#   2. the same program with CUDA-aware Open MPI + UCX cannot find it;
#   3. why: the loader searched as if UCX's libucm had asked (LD_DEBUG=files),
#      shown with ldsearch from both callers;
#   4. the repair: LD_PRELOAD=libldshim_preload.so loads the right file again;
#   5. the same on fifteen layouts of the report, on the real MPI stack;
#   6. the same bug and repair with AddressSanitizer, not UCX, in front;
#   7. ldsearch checked against the real loader with --diff.
# Every step checks what it shows; any wrong result names the step and the
# script exits 1.  Sets up and builds first: scripts/setup.sh --demo installs
# only what the demo needs and builds only the product and the one test
# program it runs, in ./build-demo (scripts/test.sh installs and builds the
# rest, in ./build).
set -eu
cd "$(dirname "$0")/.."
root=$PWD
. ./scripts/build-cache.sh
echo "Setting up and building (scripts/setup.sh --demo) ..." >&2
setup_start=$(date +%s)
setup_log=$(mktemp /tmp/ldshim-demo-setup.XXXXXX)
if ! ./scripts/setup.sh --demo >"$setup_log"; then
    tail -30 "$setup_log" >&2
    echo "demo: setting up or building failed (scripts/setup.sh --demo; its output: $setup_log)" >&2
    exit 1
fi
rm -f "$setup_log"
echo "Set up and built in $(($(date +%s) - setup_start)) s" >&2
build=$root/build-demo
LDSEARCH=$build/tools/ldsearch/ldsearch
PRELOAD=$build/preload/libldshim_preload.so
work=$(mktemp -d /tmp/ldshim-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
failed=""

step() { printf '\n\033[1m== Step %s\033[0m\n' "$*" | sed "$nocolor"; current=$1; }
fail() { echo "FAIL (step $current): $*"; failed="$failed $current"; }
# Paths of the scratch tree read as "prefix/...".
show() { sed "s|$work/prefix|prefix|g"; }
nocolor='s/\x1b\[[0-9;]*m//g'
[ -t 1 ] && [ -z "${NO_COLOR:-}" ] && nocolor='s/^$//'

# The report's program: bin/julia (RPATH $ORIGIN/../lib) needs libjulia.so.1
# (RPATH $ORIGIN:$ORIGIN/julia), which first initialises MPI and then dlopens
# libopenlibm.so -- a library that lives only in lib/julia/.
"$root/tests/repro/fixtures/julia_tree.sh" "$work/prefix"
cd "$work/prefix"
# Open MPI with the UCX pml, ucm patching dlopen in every GOT (reloc mode), and
# UCX's own RPATH workaround off, as in the report; all of it on loopback.
set -a
. "$root/scripts/mpi-loopback.env"
set +a
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_tls=any \
    OMPI_MCA_pml_ucx_devices=any OMPI_MCA_opal_common_ucx_opal_mem_hooks=0 UCX_MEM_MMAP_HOOK_MODE=reloc \
    UCX_MEM_MALLOC_RELOC=n UCX_MEM_DLOPEN_PROCESS_RPATH=n
run_julia() { # MODE [ENV...] -> the program's one line of result
    mode=$1; shift
    timeout 60 env "$@" bin/julia libopenlibm.so "$mode" 2>/dev/null | tail -1
}
expected="RESULT $work/prefix/bin/../lib/julia/libopenlibm.so id=1"

step 1 "A Julia-shaped program: libjulia.so.1 dlopens libopenlibm.so from its RPATH"
echo "   bin/julia      RPATH \$ORIGIN/../lib"
echo "   lib/libjulia.so.1   RPATH \$ORIGIN:\$ORIGIN/julia   calls dlopen(\"libopenlibm.so\")"
echo "   lib/julia/libopenlibm.so"
echo "\$ bin/julia libopenlibm.so nompi"
out=$(run_julia nompi); echo "   $out" | show
[ "$out" = "$expected" ] || fail "the program without MPI did not load lib/julia/libopenlibm.so"

step 2 "The same program after MPI_Init with Open MPI + UCX: the library is not found"
echo "\$ bin/julia libopenlibm.so mpi        (UCX's ucm now sits in front of dlopen)"
out=$(run_julia mpi); echo "   $out" | show
case $out in
    "ERROR libopenlibm.so: cannot open shared object file"*) ;;
    *) fail "expected the reported failure under UCX, got: $out" ;;
esac

step 3 "Why: glibc searched as if libucm.so.0 had called dlopen"
echo "glibc picks the search path from the caller, found by return address.  ucm's hook"
echo "calls the real dlopen, so the loader's own log names libucm as the caller:"
rm -f "$work"/files.*
timeout 60 env LD_DEBUG=files LD_DEBUG_OUTPUT="$work/files" bin/julia libopenlibm.so mpi >/dev/null 2>&1 || true
blame=$(grep -h 'file=libopenlibm.so' "$work"/files.* 2>/dev/null | sed 's/^ *[0-9]*:[[:space:]]*//' | head -1)
echo "   LD_DEBUG=files: $blame"
case $blame in *"dynamically loaded by "*libucm.so.0*) ;; *) fail "LD_DEBUG=files did not attribute the dlopen to libucm" ;; esac
searched() { # each list a search went through, without the glibc-hwcaps and hwcap subdirectories
    sed -n '/^find library=libopenlibm.so/,$p' | sed -n 's/^ search \(path\|cache\)=//p' | while IFS= read -r line; do
        label=$(printf '%s\n' "$line" | sed -n 's/.*[[:space:]](\(.*\))$/\1/p')
        dirs=$(printf '%s\n' "${line%%[[:space:]](*}" | sed 's/[[:space:]]*$//' | tr ':' '\n' |
            grep -v -e '/glibc-hwcaps/' -e '/tls' -e '/x86_64$' -e '/x86_64/x86_64' | paste -sd: - | show)
        [ -n "$label" ] || label="the loader's cache"
        printf '   %-58s %s\n' "$dirs" "$label"
    done
}
echo "ldsearch replays the two searches.  From libucm.so.0 (what glibc did):"
"$LDSEARCH" --dlopen libucm.so.0 --from libucm.so.0 --dlopen libopenlibm.so bin/julia > "$work/ucm.txt" 2>&1 || true
searched < "$work/ucm.txt"
grep -q 'lib/julia' "$work/ucm.txt" && fail "the search from libucm should not reach lib/julia"
echo "From libjulia.so.1, the real caller: its RPATH adds lib/julia (glibc labels a list with the"
echo "object that first named its directories, hence \"bin/julia\"):"
"$LDSEARCH" --from libjulia.so.1 --dlopen libopenlibm.so bin/julia > "$work/jl.txt" 2>&1 || fail "ldsearch from libjulia failed"
searched < "$work/jl.txt"
echo "   => $(tail -1 "$work/jl.txt" | show)"
[ "$(tail -1 "$work/jl.txt")" = "$work/prefix/bin/../lib/julia/libopenlibm.so" ] || fail "ldsearch from libjulia did not find lib/julia/libopenlibm.so"

step 4 "The repair: ldshim resolves the name as the real caller, then opens that file"
echo "\$ LD_PRELOAD=libldshim_preload.so bin/julia libopenlibm.so mpi"
out=$(run_julia mpi LD_PRELOAD="$PRELOAD"); echo "   $out" | show
[ "$out" = "$expected" ] || fail "with ldshim the program should load lib/julia/libopenlibm.so"
echo "\$ LDSHIM_DEBUG=1 ...                   (what ldshim saw)"
timeout 60 env LD_PRELOAD="$PRELOAD" LDSHIM_DEBUG=1 bin/julia libopenlibm.so mpi 2>&1 >/dev/null |
    grep 'dlopen("libopenlibm' | head -1 | show | sed 's/^/   /'

step 5 "Fifteen Julia-shaped layouts of the report, on the real Open MPI + UCX stack"
echo "PASS = the same file as glibc without UCX (or the same error); ldshim runs also under mpirun and without MPI."
cd "$root"
if "$build/tests/mpi_repro_tests" > "$work/cases.txt" 2>&1; then :; else fail "the layout table has a case where ldshim differs from glibc"; fi
sed -n 's/^\[ CASE     \] //p' "$work/cases.txt" | sed 's|/bin/\.\./|prefix/bin/../|'
[ "$(grep -c '^\[ CASE ' "$work/cases.txt")" -ge 15 ] || fail "fewer than fifteen layouts ran"
grep '^\[ CASE ' "$work/cases.txt" | grep -q 'ldshim: FAIL\|mpirun: FAIL\|no-MPI: FAIL' && fail "ldshim FAIL in the table"

step 6 "Not only UCX: a program built with -fsanitize=address, whose library has RUNPATH \$ORIGIN/plug"
echo "ASan's runtime intercepts dlopen and calls the real one from its own library, so glibc"
echo "searches from libasan and never sees the library's RUNPATH.  ldshim sits in front of every"
echo "dlopen slot and hands ASan the path it found; ASan still sees the call."
"$root/tests/interposers/fixtures/plug_tree.sh" "$work/asan" -fsanitize=address
cd "$work/asan"
libasan=$(readlink -f "$(gcc -print-file-name=libasan.so)")
echo "\$ ./prog"
out=$(ASAN_OPTIONS=detect_leaks=0 ./prog 2>&1 | tail -1); echo "   $out"
case $out in "ERROR libplug.so: cannot open shared object file"*) ;; *) fail "expected the sanitizer bug, got: $out" ;; esac
echo "\$ LD_PRELOAD=libasan.so:libldshim_preload.so ./prog      (ASan wants its runtime first)"
out=$(ASAN_OPTIONS=detect_leaks=0 LD_PRELOAD="$libasan:$PRELOAD" ./prog 2>&1 | tail -1); echo "   $out"
[ "$out" = "loaded lib/plug/libplug.so" ] || fail "ldshim did not repair the ASan case"
echo "\$ LDSHIM_DEBUG=1 ..."
ASAN_OPTIONS=detect_leaks=0 LDSHIM_DEBUG=1 LD_PRELOAD="$libasan:$PRELOAD" ./prog 2>&1 |
    grep 'dlopen("libplug.so")' | head -1 | sed "s|$work/asan/||g; s/^/   /"
cd "$root"

step 7 "ldsearch against the real loader: every search of real programs, line for line"
for cmd in "/usr/bin/python3 -c 'import ssl, sqlite3, ctypes'" "$work/prefix/bin/julia libopenlibm.so nompi"; do
    echo "\$ ldsearch --diff -- $cmd" | show
    # shellcheck disable=SC2086
    if eval "\"\$LDSEARCH\" --diff -- $cmd" > "$work/diff.txt" 2>&1; then
        tail -1 "$work/diff.txt" | sed 's/^/   /'
    else
        head -20 "$work/diff.txt" | show | sed 's/^/   /'; fail "ldsearch --diff found a difference: $cmd"
    fi
done

echo
if [ -n "$failed" ]; then
    echo "demo: FAILED in step(s)$failed"
    exit 1
fi
echo "demo: every step as expected -- the failure reproduced, explained, and repaired; ldsearch identical to the loader"
