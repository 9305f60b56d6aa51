#!/bin/sh
# ucm's CUDA hooks and ldshim's in one process: UCX master
# built --with-cuda (scripts/ucx-master.sh --cuda, cached; this test only
# reads the cache and says SKIPPED without it), unpatched and with
# contrib/ucx/master, against the hooks suite's fake libcuda.so.1 and
# libcudart.so.13.  tests/ucx-master/cuda_hooks.c runs, for each build and
# UCX_MEM_CUDA_HOOK_MODE (reloc, bistro), ucm's hooks alone, ldshim's alone,
# and both in either order of installation; with both, ucm's events must be
# exactly those of ucm alone and ldshim's registry exactly that of ldshim
# alone, which must be the truth (every allocation's base, length and type;
# nothing left after the frees).  No run may crash or hang (30 s).
# Then the Julia-shaped layouts with ucm's dlopen hook installed by its CUDA
# module in reloc mode: the report's one here, and the fifteen of the
# ucx-master test (UCX_MASTER_TESTS, its program, with
# LDSHIM_UCX_MASTER_CUDA_LIBS at the fakes), UCX_MEM_DLOPEN_PROCESS_RPATH on
# and off.  Nothing here opens a network device; UCX's settings come from
# scripts/mpi-loopback.env all the same.
#   tests/ucx-master/cuda_test.sh UCX_MASTER_SCRIPT SOURCE_ROOT BUILD_ROOT UCX_MASTER_TESTS
set -u
script=$1 src=$2 build=$3 layouts=$4
set -a
# shellcheck source=scripts/mpi-loopback.env
. "$src/scripts/mpi-loopback.env"
set +a
[ -z "${LDSHIM_TEST_EMULATOR:-}" ] || {
    echo "SKIPPED: the cached UCX master build is the build machine's, these tests run under $LDSHIM_TEST_EMULATOR"
    exit 77
}
dir=$("$script" --cuda --check 2>/dev/null) || {
    echo "SKIPPED: no cached UCX master CUDA build: run scripts/ucx-master.sh --cuda --build"
    exit 77
}
cc=${CC:-cc}
fixtures=$src/tests/hooks/fixtures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The fake driver and runtime, as the hooks suite builds them.
# shellcheck disable=SC2086 # $cc may be a command with options
$cc -fPIC -shared -fvisibility=hidden -Wl,-soname,libcuda.so.1 -o "$tmp/libcuda.so.1" "$fixtures/fake_cuda.c" \
    -lpthread || exit 1
# shellcheck disable=SC2086,SC2016 # $ORIGIN is the linker's
$cc -fPIC -shared -fvisibility=hidden -Wl,-soname,libcudart.so.13 -Wl,--version-script="$fixtures/fake_cudart.map" \
    -Wl,-rpath,'$ORIGIN' -o "$tmp/libcudart.so.13" "$fixtures/fake_cudart.c" -ldl -lpthread || exit 1
for v in unpatched patched; do
    # shellcheck disable=SC2086
    $cc -O1 -I"$dir/$v-src/src" -I"$dir/$v-build/src" -I"$dir/$v-build" -I"$src/include" -I"$build/include" \
        -I"$fixtures" -o "$tmp/cuda_hooks-$v" "$src/tests/ucx-master/cuda_hooks.c" \
        -L"$dir/$v/lib" -lucm -lucs -L"$build/lib" -lldshim "$tmp/libcudart.so.13" "$tmp/libcuda.so.1" \
        -Wl,--enable-new-dtags,-rpath,"$dir/$v/lib:$build/lib:$tmp" || exit 1
done

failed=0
say() { echo "ucx-master-cuda: $*"; }
fail() {
    say "FAILED: $*"
    failed=1
}
for v in unpatched patched; do
    for mode in reloc bistro; do
        for order in ucm ldshim ldshim-ucm ucm-ldshim; do
            out=$tmp/$v-$mode-$order
            UCX_MEM_CUDA_HOOK_MODE=$mode timeout 30 "$tmp/cuda_hooks-$v" "$order" >"$out" 2>"$out.err"
            echo $? >"$out.rc"
        done
        base=$tmp/$v-$mode
        # ucm alone: how much of the truth it sees (reported, not asserted:
        # that is ucm's business with this driver).
        seen=0
        for i in 0 1 2 3 4 5; do
            grep -q "^ucm ALLOC #$i " "$base-ucm" && grep -q "^ucm FREE #$i " "$base-ucm" && seen=$((seen + 1))
        done
        say "$v, UCX_MEM_CUDA_HOOK_MODE=$mode, ucm alone: $(grep '^install' "$base-ucm" | sed 's/install //'), \
$(grep '^ucm events' "$base-ucm" | sed 's/ucm //'), $seen of 6 allocations seen allocated and freed"
        say "$v, UCX_MEM_CUDA_HOOK_MODE=$mode, ldshim alone: $(grep '^install' "$base-ldshim" | sed 's/install //'), \
$(grep '^truth' "$base-ldshim")"
        grep -q '^truth: registry exact$' "$base-ldshim" || fail "$v $mode ldshim alone: the registry is not exact"
        for order in ucm ldshim ldshim-ucm ucm-ldshim; do
            rc=$(cat "$base-$order.rc")
            [ "$rc" = 0 ] || {
                fail "$v $mode $order: exit $rc$([ "$rc" -gt 128 ] && echo " (signal $((rc - 128)))")"
                sed 's/^/  | /' "$base-$order.err" | tail -n 15
                # The stack of a crash, its repeating part once.
                [ "$rc" -le 128 ] || ! command -v gdb >/dev/null 2>&1 ||
                    UCX_MEM_CUDA_HOOK_MODE=$mode timeout 120 gdb -q -nx -batch -iex 'set debuginfod enabled off' \
                        -ex run -ex 'bt 8' -ex 'bt -6' --args "$tmp/cuda_hooks-$v" "$order" </dev/null 2>&1 |
                    grep -E '^(Program received|#[0-9]+ |\(More stack)' | sed 's/^/  | gdb: /'
            }
        done
        for order in ldshim-ucm ucm-ldshim; do
            got=$base-$order
            [ "$(cat "$got.rc")" = 0 ] || continue
            grep '^ucm ' "$base-ucm" >"$tmp/want-ucm"
            grep '^ucm ' "$got" >"$tmp/got-ucm"
            grep '^registry' "$base-ldshim" >"$tmp/want-reg"
            grep '^registry' "$got" >"$tmp/got-reg"
            ucm_same=no reg_same=no
            cmp -s "$tmp/want-ucm" "$tmp/got-ucm" && ucm_same=yes
            cmp -s "$tmp/want-reg" "$tmp/got-reg" && grep -q '^truth: registry exact$' "$got" && reg_same=yes
            say "$v, UCX_MEM_CUDA_HOOK_MODE=$mode, $order: $(grep '^install' "$got" | sed 's/install //' |
                tr '\n' ',' | sed 's/,$//; s/,/, /'); ucm's events as ucm alone: $ucm_same; \
ldshim's registry exact: $reg_same"
            [ "$ucm_same" = yes ] || {
                fail "$v $mode $order: ucm's events differ from ucm alone"
                diff -u "$tmp/want-ucm" "$tmp/got-ucm" | head -n 20 | sed 's/^/  | /'
            }
            if [ "$reg_same" = no ] && [ "$mode" = reloc ] && [ "$order" = ucm-ldshim ]; then
                # A known limit (docs/hooks.md): ucm in reloc mode, installed
                # first, writes its hooks into every slot again at its first
                # call of each function, by its own dlopen, which reaches no
                # slot ldshim watches.  What is asserted here: no crash, and
                # ucm's events exact.
                say "$v $mode $order: known limit: ldshim's registry misses what ucm took back"
            elif [ "$reg_same" = no ]; then
                fail "$v $mode $order: ldshim's registry differs from ldshim alone"
                diff -u "$tmp/want-reg" "$tmp/got-reg" | head -n 20 | sed 's/^/  | /'
            fi
        done
    done
done
# The Julia-shaped layout (tests/repro/fixtures/julia_tree.sh: libjulia,
# RPATH $ORIGIN:$ORIGIN/julia, dlopens libopenlibm.so from lib/julia/) with
# ucm's dlopen hook installed by its CUDA module in reloc mode
# (UCX_MEM_CUDA_HOOK_MODE=reloc, mmap hooks left in bistro mode: the route
# docs/ucx.md could not take without a CUDA build), UCX_MEM_DLOPEN_PROCESS_RPATH
# on and off: unpatched master fails without its RPATH emulation, ldshim's
# preload (with and without its own CUDA hooks) and the patched libucm with
# libldshim load what glibc loads.
sh "$src/tests/repro/fixtures/julia_tree.sh" "$tmp/julia" || exit 1
truth=$(cd "$tmp/julia" && bin/julia libopenlibm.so nompi | sed "s|$tmp/julia|<tree>|g")
notfound="ERROR libopenlibm.so: cannot open shared object file: No such file or directory"
julia() { # LABEL EXPECTED ENV...
    label=$1 want=$2
    shift 2
    got=$(cd "$tmp/julia" && env UCX_MEM_CUDA_HOOK_MODE=reloc "$@" timeout 60 bin/julia libopenlibm.so ucm-cuda 2>&1 |
        tr '\n' ' ' | sed "s|$tmp/julia|<tree>|g; s/ $//")
    if [ "$got" = "$want" ]; then
        say "ok: julia, $label: $got"
    else
        fail "julia, $label: expected '$want', got '$got'"
    fi
}
say "julia, glibc (no ucm): $truth"
preload=$build/preload/libldshim_preload.so
for rp in y n; do
    miss=$truth
    [ "$rp" = y ] || miss=$notfound
    e="UCX_MEM_DLOPEN_PROCESS_RPATH=$rp"
    u=$dir/unpatched/lib p=$dir/patched/lib
    julia "unpatched master, CUDA reloc, $e" "$miss" "$e" "LD_LIBRARY_PATH=$u:$tmp"
    julia "unpatched master + ldshim's preload, $e" "$truth" "$e" "LD_LIBRARY_PATH=$u:$tmp" "LD_PRELOAD=$preload"
    julia "unpatched master + ldshim's preload, LDSHIM_CUDA_HOOKS=1, $e" "$truth" "$e" "LD_LIBRARY_PATH=$u:$tmp" \
        "LD_PRELOAD=$preload" LDSHIM_CUDA_HOOKS=1
    julia "patched master, no libldshim, $e" "$miss" "$e" "LD_LIBRARY_PATH=$p:$tmp"
    julia "patched master + libldshim, $e" "$truth" "$e" "LD_LIBRARY_PATH=$p:$build/lib:$tmp"
    julia "patched master + libldshim + LDSHIM_CUDA_HOOKS=1 preload, $e" "$truth" "$e" \
        "LD_LIBRARY_PATH=$p:$build/lib:$tmp" "LD_PRELOAD=$preload" LDSHIM_CUDA_HOOKS=1
done
say "the fifteen Julia-shaped layouts, CUDA reloc mode ($layouts):"
LDSHIM_UCX_MASTER_CUDA_LIBS=$tmp "$layouts" >"$tmp/layouts.out" 2>&1
rc=$?
grep -E '^(\[ CASE|\| |\[  (PASSED|FAILED|SKIPPED) )' "$tmp/layouts.out"
[ "$rc" = 0 ] || {
    fail "the Julia-shaped layouts in CUDA reloc mode: exit $rc"
    grep -B2 -A8 'Failure' "$tmp/layouts.out" | head -n 40 | sed 's/^/  | /'
}
[ "$failed" -eq 0 ] && say "all as expected"
exit "$failed"
