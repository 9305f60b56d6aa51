#!/bin/sh
# The main job: sets up and builds ldshim, then shows ldsearch reproducing the
# loader's library search -- on a real program and on a Julia-shaped tree
# built here -- and diffs each against the real loader's LD_DEBUG=libs.
set -eu
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null
LDSEARCH=$PWD/build/tools/ldsearch/ldsearch
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The search lines of LD_DEBUG=libs for "$@" (run in the current directory).
real_search() {
    rm -f "$work"/dbg.*
    env LD_DEBUG=libs LD_DEBUG_OUTPUT="$work/dbg" "$@" >/dev/null 2>&1 || true
    cat "$work"/dbg.* | sed 's/^ *[0-9]*:\t//' | grep -E '^(find library=| search path=|  trying file=| search cache=)' || true
}

compare() { # TITLE REAL_FILE LDSEARCH_FILE
    if diff -u "$2" "$3" > "$work/diff"; then
        echo "== $1: $(wc -l < "$3") search lines, identical to the loader's"
    else
        echo "== $1: DIFFERENT from the loader:"; cat "$work/diff"; status=1
    fi
}
status=0

prog=/usr/bin/python3
[ -x "$prog" ] || prog=/bin/ls
echo "## ldsearch $prog"
"$LDSEARCH" "$prog" | tee "$work/mine1"
LD_TRACE_LOADED_OBJECTS=1 real_search "$prog" > "$work/real1"
compare "$prog" "$work/real1" "$work/mine1"

# A Julia-shaped tree: bin/julia (RPATH $ORIGIN/../lib) -> lib/libjulia.so.1
# (RPATH $ORIGIN:$ORIGIN/julia) which dlopens libopenlibm.so from lib/julia/.
mkdir -p "$work/prefix/bin" "$work/prefix/lib/julia"
cd "$work/prefix"
echo 'int fixture_id(void){return 1;}' > "$work/lib.c"
cc -shared -fPIC -o lib/julia/libopenlibm.so "$work/lib.c"
cat > "$work/jl.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
void *jl_load(const char *n) { void *h = dlopen(n, RTLD_NOW); __asm__ volatile("" ::: "memory"); return h; }
C
cc -shared -fPIC -o lib/libjulia.so.1 -Wl,-soname,libjulia.so.1 "$work/jl.c" -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN:$ORIGIN/julia' -ldl
cat > "$work/main.c" <<'C'
#include <stdio.h>
void *jl_load(const char *);
int main(void) { printf("libopenlibm: %s\n", jl_load("libopenlibm.so") ? "loaded" : "NOT FOUND"); return 0; }
C
cc -o bin/julia "$work/main.c" -Lbin/../lib -l:libjulia.so.1 -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib'
echo
echo "## ldsearch --from libjulia.so.1 --dlopen libopenlibm.so bin/julia"
"$LDSEARCH" --from libjulia.so.1 --dlopen libopenlibm.so bin/julia | tee "$work/mine2"
real_search bin/julia > "$work/real2"
grep -E '^(find|  trying| search)' "$work/mine2" > "$work/mine2s" || true
compare "bin/julia with dlopen(libopenlibm.so) from libjulia" "$work/real2" "$work/mine2s"

# The report itself, on the real Open MPI + UCX stack: fifteen Julia-shaped
# layouts, each without UCX, with UCX's ucm in reloc mode (defaults, and with
# its RPATH workaround off as in the report), and with libldshim_preload.so.
echo
echo "## Julia + Open MPI + UCX: which copy of libopenlibm each mode loads (PASS = the same as glibc without UCX)"
if [ -x "$OLDPWD/build/tests/mpi_repro_tests" ] || [ -x "$(dirname "$LDSEARCH")/../../tests/mpi_repro_tests" ]; then
    "$(dirname "$LDSEARCH")/../../tests/mpi_repro_tests" 2>&1 | sed -n 's/^\[ CASE     \] //p' || status=1
fi

# One failing case through ldsearch: the same tree, with ucm active glibc
# attributes the dlopen to libucm.so.0 (LD_DEBUG=files), and searches from
# there; from libjulia, the real caller, it would have found the library.
echo
echo "## The original case: what the loader did under ucm, and what ldshim does"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_tls=any \
    OMPI_MCA_pml_ucx_devices=any OMPI_MCA_opal_common_ucx_opal_mem_hooks=0 UCX_MEM_MMAP_HOOK_MODE=reloc \
    UCX_MEM_MALLOC_RELOC=n UCX_MEM_DLOPEN_PROCESS_RPATH=n
cc -shared -fPIC -DNO_MAIN -o lib/libjulia.so.1 -Wl,-soname,libjulia.so.1 "$OLDPWD/tests/repro/fixtures/julia_mpi.c" \
    -ldl -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN:$ORIGIN/julia'
cc -o bin/julia "$OLDPWD/tests/repro/fixtures/julia_mpi.c" -Lbin/../lib -l:libjulia.so.1 -ldl \
    -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib'
echo "\$ bin/julia libopenlibm.so mpi      (ucm active, UCX_MEM_DLOPEN_PROCESS_RPATH=n)"
timeout 60 env LD_DEBUG=files LD_DEBUG_OUTPUT="$work/files" bin/julia libopenlibm.so mpi 2>&1 | tail -1
grep -h 'file=libopenlibm.so' "$work"/files.* | sed 's/^ *[0-9]*:\t*/    loader: /' | head -1
echo "\$ LD_PRELOAD=libldshim_preload.so bin/julia libopenlibm.so mpi"
timeout 60 env LD_PRELOAD="$OLDPWD/build/preload/libldshim_preload.so" bin/julia libopenlibm.so mpi 2>&1 | tail -1
echo
echo "\$ ldsearch --dlopen libucm.so.0 --from libucm.so.0 --dlopen libopenlibm.so bin/julia   (the search glibc made)"
"$LDSEARCH" --dlopen libucm.so.0 --from libucm.so.0 --dlopen libopenlibm.so bin/julia 2>&1 |
    sed -n '/^find library=libopenlibm.so/,$p' | grep -v '  trying file=' | cut -c1-200
echo "\$ ldsearch --from libjulia.so.1 --dlopen libopenlibm.so bin/julia                       (the real caller's search)"
"$LDSEARCH" --from libjulia.so.1 --dlopen libopenlibm.so bin/julia 2>&1 |
    sed -n '/^find library=libopenlibm.so/,$p' | grep -v '  trying file=' | cut -c1-200
exit $status
