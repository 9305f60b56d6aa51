#!/bin/sh
# The CUDA hooks on a real GPU, for a session lent an NVIDIA machine: one
# prepared script of at most LDSHIM_GPU_BUDGET seconds (300), building
# included, every part under its own timeout:
#   build     ldshim release in BUILD_DIR if the preload, libldshim or
#             ldsearch is missing there (ninja of everything, no tests)
#   c-check   tests/gpu/gpu_check.c against the Toolkit's libcudart, hooks
#             installed through the C API (every kind; 100,000 pointers)
#   static    tests/gpu/static_kinds.c, nvcc -cudart static, under the preload
#   ctypes    tests/gpu/frameworks.py --framework ctypes, under the preload:
#             the driver's allocation functions through dlsym, no framework
#   torch     tests/gpu/frameworks.py --framework torch, under the preload
#   cupy      ... --framework cupy
#   jax       ... --framework jax, with XLA's platform allocator and its BFC one
#   ucx       scripts/ucx-master.sh --cuda, when the script has that mode
#   cost      tests/gpu/alloc_cost.sh BUILD_DIR, or bench/hooks_bench --real,
#             when the tree has one
#   ldsearch  ldsearch --diff of each framework's import and first device
#             operation, plain and under the preload: all identical
# Each part prints a header and one verdict line, `gpu: PART: ok ...`,
# `gpu: PART: FAILED ...` or `gpu: PART: SKIPPED: reason`; the last line
# counts them.  Full logs: LDSHIM_GPU_LOGS (default a new directory, named
# at the end).
#   tests/gpu/run.sh [BUILD_DIR]          (BUILD_DIR default: build)
# Environment: CUDA_HOME (/usr/local/cuda), PYTHON (python3),
# LDSHIM_GPU_BUDGET (300), LDSHIM_GPU_LOGS.
# Exit: 0 every part ok or skipped; 1 a part failed; 77 no NVIDIA driver.
set -u
cd "$(dirname "$0")/../.." || exit 1
top=$(pwd)
build=${1:-build}
case $build in /*) ;; *) build=$top/$build ;; esac
cuda=${CUDA_HOME:-/usr/local/cuda}
py=${PYTHON:-python3}
budget=${LDSHIM_GPU_BUDGET:-300}
start=$(date +%s)

if [ ! -e /dev/nvidiactl ] && ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "gpu: SKIPPED: no NVIDIA driver on this machine"
    exit 77
fi
logs=${LDSHIM_GPU_LOGS:-$(mktemp -d /tmp/ldshim-gpu.XXXXXX)}
mkdir -p "$logs"
bin=$(mktemp -d /tmp/ldshim-gpu-bin.XXXXXX) # the programs built here, apart from the logs
trap 'rm -rf "$bin"' EXIT
echo "gpu: machine: $(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 |
    head -n 1), $(uname -r), $(ldd --version 2>&1 | head -n 1)"
preload=$build/preload/libldshim_preload.so
ldsearch=$build/tools/ldsearch/ldsearch
n_ok=0 n_failed=0 n_skipped=0 failed_parts=""

header() { printf '\n==== gpu: %s (%s s left of %s) ====\n' "$1" "$(left)" "$budget"; }
left() { echo $((budget - ($(date +%s) - start))); }
verdict() { # PART ok|FAILED|SKIPPED TEXT
    case $2 in
        ok) n_ok=$((n_ok + 1)) && echo "gpu: $1: ok $3" ;;
        FAILED) n_failed=$((n_failed + 1)) failed_parts="$failed_parts $1" && echo "gpu: $1: FAILED $3" ;;
        *) n_skipped=$((n_skipped + 1)) && echo "gpu: $1: SKIPPED: $3" ;;
    esac
}
# allot CAP: the seconds a part may take (its cap, or what the budget has
# left, 10 s kept for the end); false when under 15 s would be left.
allot() {
    t=$(($(left) - 10))
    [ "$t" -le "$1" ] || t=$1
    [ "$t" -ge 15 ]
}
# ready PART CAP: whether the part may run (ldshim is built; allot CAP);
# otherwise its SKIPPED verdict.
ready() {
    if ! $have_ldshim; then
        verdict "$1" SKIPPED "no ldshim build"
        return 1
    fi
    allot "$2" && return 0
    verdict "$1" SKIPPED "out of time"
    return 1
}
# show LOG: a part's output, at most 60 lines (the rest stays in the log).
show() {
    head -n 60 "$1"
    n=$(wc -l <"$1")
    [ "$n" -le 60 ] || echo "... $((n - 60)) more lines in $1"
}
# run_part LOG CMD...: the command under timeout $t; sets rc.
run_part() {
    log=$1
    shift
    timeout -k 5 "$t" "$@" >"$log" 2>&1
    rc=$?
}
why() { # rc -> words
    case $1 in
        124 | 137) echo "timed out after $t s" ;;
        0) echo "exit 0" ;;
        *) [ "$1" -gt 128 ] && echo "killed by signal $(($1 - 128))" || echo "exit $1" ;;
    esac
}
# conclude PART OK-TEXT: the verdict from rc; a SKIPPED reason, or the log
# named, from $log (the last run_part's).
conclude() {
    case $rc in
        0) verdict "$1" ok "($2)" ;;
        77) verdict "$1" SKIPPED "$(grep -m1 'SKIPPED' "$log" | sed 's/.*SKIPPED: //')" ;;
        *) verdict "$1" FAILED "($(why "$rc"); log $log)" ;;
    esac
}
# `run_part LOG env "$hooks" LDSHIM_CUDA_HOOKS=1 CMD...`: CMD under the preload
# with the CUDA hooks on.
hooks=LD_PRELOAD=$preload${LD_PRELOAD:+:$LD_PRELOAD}

# ---- build ------------------------------------------------------------------
header build
if [ -e "$build/lib/libldshim.so" ] && [ -e "$preload" ] && [ -x "$ldsearch" ]; then
    verdict build ok "(already built in $build)"
elif allot 240; then
    b0=$(date +%s)
    rc=0
    if [ ! -f "$build/build.ninja" ]; then
        run_part "$logs/build.log" meson setup "$build" --buildtype=release -Dtests=false -Dbench=false \
            -Dcudatoolkit_include="$cuda/include"
    fi
    [ "$rc" -ne 0 ] || run_part "$logs/build-ninja.log" ninja -C "$build"
    if [ "$rc" -eq 0 ] && [ -e "$preload" ]; then
        verdict build ok "(release build in $build, $(($(date +%s) - b0)) s)"
    else
        tail -n 20 "$logs"/build*.log
        verdict build FAILED "($(why "$rc"); logs in $logs)"
    fi
else
    verdict build SKIPPED "out of time"
fi
have_ldshim=false
[ -e "$build/lib/libldshim.so" ] && [ -e "$preload" ] && have_ldshim=true
have_toolkit=false
[ -f "$cuda/include/cuda_runtime_api.h" ] && [ -e "$cuda/lib64/libcudart.so" ] && have_toolkit=true

# ---- c-check: gpu_check.c, dynamic cudart, C API install --------------------
header "c-check (tests/gpu/gpu_check.c)"
if ! $have_toolkit; then
    verdict c-check SKIPPED "no CUDA Toolkit at $cuda (set CUDA_HOME)"
elif ready c-check 90; then
    run_part "$logs/c-check-build.log" cc -std=gnu11 -O2 -Iinclude -I"$build/include" -I"$cuda/include" \
        -o "$bin/gpu_check" tests/gpu/gpu_check.c -L"$build/lib" -lldshim -L"$cuda/lib64" -L"$cuda/lib64/stubs" \
        -lcudart -lcuda -Wl,-rpath,"$build/lib:$cuda/lib64"
    [ "$rc" -ne 0 ] || run_part "$logs/c-check.log" "$bin/gpu_check"
    show "$logs/c-check-build.log"
    [ ! -f "$logs/c-check.log" ] || show "$logs/c-check.log"
    conclude c-check "$(tail -n 1 "$log")"
fi

# ---- static: every allocation kind through a static cudart -----------------
header "static (tests/gpu/static_kinds.c, nvcc -cudart static, under the preload)"
nvcc=$cuda/bin/nvcc
[ -x "$nvcc" ] || nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ] || [ ! -f "$cuda/include/cuda.h" ]; then
    verdict static SKIPPED "no nvcc or CUDA headers (set CUDA_HOME)"
elif ready static 90; then
    run_part "$logs/static-build.log" "$nvcc" -cudart static -O2 -DCUDA_API_PER_THREAD_DEFAULT_STREAM=1 \
        -Iinclude -I"$build/include" -o "$bin/static_kinds" tests/gpu/static_kinds.c \
        -L"$cuda/lib64/stubs" -lcuda -ldl
    [ "$rc" -ne 0 ] || run_part "$logs/static.log" env "$hooks" LDSHIM_CUDA_HOOKS=1 "$bin/static_kinds"
    show "$logs/static-build.log"
    [ ! -f "$logs/static.log" ] || show "$logs/static.log"
    conclude static "$(tail -n 1 "$log")"
fi

# ---- torch, cupy, jax -------------------------------------------------------
importable="" # the frameworks that imported, for the ldsearch part
framework() { # PART CAP MODULE ARGS... (MODULE: what to import, or "")
    part=$1 cap=$2 module=$3
    shift 3
    if ! command -v "$py" >/dev/null 2>&1; then
        verdict "$part" SKIPPED "no $py (set PYTHON)"
        return
    fi
    ready "$part" "$cap" || return
    worst=0 notes="" skipped=""
    for args in "$@"; do
        tag=${args##* } # its last word: the framework, or the variant
        [ "$tag" = "$part" ] || tag=$part-$tag
        # shellcheck disable=SC2086 # ARGS is a list of options
        run_part "$logs/$tag.log" env "$hooks" LDSHIM_CUDA_HOOKS=1 "$py" tests/gpu/frameworks.py $args
        # Its own lines (the frameworks' warnings stay in the log); the
        # log's end when it did not finish.
        grep -E '^(ok  |FAIL|MISMATCH|SKIPPED|skip |torch |cupy |jax |     )' "$log" | head -n 60
        [ "$rc" -eq 0 ] || [ "$rc" -eq 77 ] || tail -n 8 "$log"
        if [ "$rc" -eq 77 ]; then
            # Not there, or not importable under ldshim only?
            if [ -n "$module" ] && timeout 30 "$py" -c "import $module" >/dev/null 2>&1; then
                echo "$module imports without the preload and not with it"
                rc=1
            else
                skipped=$(grep -m1 '^SKIPPED' "$log" | sed 's/^SKIPPED: //')
                continue
            fi
        fi
        importable="$importable $module"
        [ "$rc" -eq 0 ] || worst=1
        notes="$notes; $args: $(grep -E "^$part: " "$log" | tail -n 1 | sed "s/^$part: //")"
        [ "$rc" -eq 0 ] || notes="$notes ($(why "$rc"))"
        allot "$cap" || break
    done
    if [ -n "$skipped" ] && [ -z "$notes" ]; then
        verdict "$part" SKIPPED "$skipped"
    elif [ "$worst" -ne 0 ]; then
        verdict "$part" FAILED "(${notes#; })"
    else
        verdict "$part" ok "(${notes#; })"
    fi
}
header "ctypes (tests/gpu/frameworks.py: the driver's allocations through dlsym, the checker's baseline)"
framework ctypes 30 "" "--framework ctypes"
header "torch (tests/gpu/frameworks.py: caching allocator, expandable_segments, pinned memory, a CUDA graph)"
framework torch 75 torch "--framework torch"
header "cupy (tests/gpu/frameworks.py: default pool, MemoryAsyncPool, managed, pinned)"
framework cupy 60 cupy "--framework cupy"
header "jax (tests/gpu/frameworks.py: device and pinned_host buffers, platform and BFC allocators)"
framework jax 75 jax "--framework jax --jax-allocator platform" "--framework jax --jax-allocator bfc"
importable=$(echo "$importable" | tr ' ' '\n' | sort -u | tr '\n' ' ')

# ---- ucx: UCX master built with CUDA, on the report's layout -----------------
header "ucx (scripts/ucx-master.sh --cuda)"
if ! grep -qE '(^|[^a-z-])--cuda([^a-z-]|$)' scripts/ucx-master.sh 2>/dev/null; then
    verdict ucx SKIPPED "not in this tree (scripts/ucx-master.sh has no --cuda mode)"
elif ready ucx 150; then
    # The tarball: LDSHIM_UCX_MASTER_TARBALL, else the script's default
    # beside the checkout, else a shared/ inside it (a copied checkout).
    if [ -z "${LDSHIM_UCX_MASTER_TARBALL:-}" ] && [ ! -d "$top/../shared/ucx" ]; then
        for f in "$top"/shared/ucx/ucx-master-*.tar.xz; do
            [ ! -f "$f" ] || export LDSHIM_UCX_MASTER_TARBALL="$f"
        done
    fi
    run_part "$logs/ucx.log" env LDSHIM_LIB_DIR="$build/lib" LDSHIM_UCX_JOBS="$(nproc)" CUDA_HOME="$cuda" \
        scripts/ucx-master.sh --cuda
    tail -n 25 "$logs/ucx.log"
    conclude ucx "$(grep -c 'ok:' "$log") checks ok"
fi

# ---- cost: the allocation path with and without the hooks -------------------
header "cost (tests/gpu/alloc_cost.sh, or bench/hooks_bench --real)"
cost_cmd=""
if [ -x tests/gpu/alloc_cost.sh ]; then
    cost_cmd="tests/gpu/alloc_cost.sh $build"
elif grep -q -e '--real' bench/hooks_bench.cc 2>/dev/null; then
    cost_cmd="bench"
fi
if [ -z "$cost_cmd" ]; then
    verdict cost SKIPPED "not in this tree (no tests/gpu/alloc_cost.sh, no hooks_bench --real)"
elif ready cost 60; then
    if [ "$cost_cmd" = bench ]; then
        rc=0
        [ -x "$build/bench/hooks_bench" ] || run_part "$logs/cost-build.log" sh -c \
            "meson configure '$build' -Dbench=true && ninja -C '$build' bench/hooks_bench"
        [ "$rc" -ne 0 ] || run_part "$logs/cost.log" "$build/bench/hooks_bench" --real --quick
    else
        # shellcheck disable=SC2086 # the script and its argument
        run_part "$logs/cost.log" $cost_cmd
    fi
    [ ! -f "$logs/cost-build.log" ] || tail -n 20 "$logs/cost-build.log"
    [ ! -f "$logs/cost.log" ] || show "$logs/cost.log"
    conclude cost "table above"
fi

# ---- ldsearch --diff of the imports -------------------------------------------
header "ldsearch (ldsearch --diff of each framework's import, plain and under the preload)"
if [ ! -x "$ldsearch" ]; then
    verdict ldsearch SKIPPED "no ldsearch in $build"
elif [ -z "${importable# }" ]; then
    verdict ldsearch SKIPPED "no framework imported (torch, cupy, jax)"
else
    bad=0 done_=0 summary=""
    for m in $importable; do
        case $m in
            torch) code='import torch; torch.ones(1, device="cuda").sum().item()' ;;
            cupy) code='import cupy; cupy.ones(1).sum().get()' ;;
            jax) code='import jax, jax.numpy as jnp; jnp.ones(1).sum().block_until_ready()' ;;
        esac
        for how in plain preload; do
            if ! allot 60; then
                summary="$summary; $m $how: out of time"
                bad=1
                continue
            fi
            if [ "$how" = plain ]; then
                run_part "$logs/ldsearch-$m-$how.log" "$ldsearch" --diff -- "$py" -c "$code"
            else
                run_part "$logs/ldsearch-$m-$how.log" env "$hooks" LDSHIM_CUDA_HOOKS=1 "$ldsearch" --diff -- "$py" -c "$code"
            fi
            line=$(grep -E '^[0-9]+ searches in [0-9]+ process' "$logs/ldsearch-$m-$how.log" | tail -n 1)
            echo "python3 -c '$code' ($how): ${line:-no verdict line ($(why "$rc"))}"
            done_=$((done_ + 1))
            case $line in
                *"all identical") [ "$rc" -eq 0 ] || bad=1 ;;
                *)
                    bad=1
                    head -n 30 "$logs/ldsearch-$m-$how.log"
                    ;;
            esac
            summary="$summary; $m $how: ${line:-$(why "$rc")}"
        done
    done
    if [ "$bad" -eq 0 ]; then
        verdict ldsearch ok "($done_ runs all identical${summary:+: ${summary#; }})"
    else
        verdict ldsearch FAILED "(${summary#; })"
    fi
fi

echo
echo "gpu: summary: $n_ok ok, $n_failed failed${failed_parts:+ (${failed_parts# })}, $n_skipped skipped, in $(($(date +%s) - start)) s; logs in $logs"
[ "$n_failed" -eq 0 ] || exit 1
exit 0
