#!/bin/sh
# tests/gpu/run.sh's cost part: builds tests/gpu/alloc_cost.c against the
# Toolkit's libcudart and BUILD_DIR's libldshim, and runs it (see the C
# file for what it measures).
#   tests/gpu/alloc_cost.sh [BUILD_DIR]     (default: build)
# Environment: CUDA_HOME (/usr/local/cuda), CC (cc).
# Exit: the program's (0 goal met, 1 not met or an error, 77 no GPU); 2 usage.
set -eu
case ${1:-} in -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
cd "$(dirname "$0")/../.."
build=${1:-build}
case $build in /*) ;; *) build=$PWD/$build ;; esac
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -f "$build/lib/libldshim.so" ] || { echo "alloc_cost: no $build/lib/libldshim.so (build ldshim first)" >&2; exit 2; }
[ -f "$cuda/include/cuda_runtime_api.h" ] || { echo "SKIPPED: no CUDA Toolkit at $cuda (set CUDA_HOME)"; exit 77; }
bin=$(mktemp -d /tmp/ldshim-alloc-cost.XXXXXX)
trap 'rm -rf "$bin"' EXIT
"${CC:-cc}" -std=gnu11 -O2 -Wall -Werror -Iinclude -I"$build/include" -I"$cuda/include" -o "$bin/alloc_cost" \
    tests/gpu/alloc_cost.c -L"$build/lib" -lldshim -L"$cuda/lib64" -lcudart -Wl,-rpath,"$build/lib:$cuda/lib64"
rc=0
"$bin/alloc_cost" || rc=$?
exit "$rc"
