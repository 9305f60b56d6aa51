#!/bin/sh
# The CUDA hooks on a real GPU (for a session lent an NVIDIA machine; about a
# minute).  Builds ldshim if BUILD_DIR has no libldshim, builds gpu_check
# against the Toolkit's libcudart and the driver's libcuda, and runs it.
#   tests/gpu/run.sh [BUILD_DIR]
# Exit: 0 all agree; 1 a disagreement; 77 SKIPPED (no GPU, driver or Toolkit).
set -eu
cd "$(dirname "$0")/../.."
build=${1:-build}
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -e /dev/nvidiactl ] && ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "SKIPPED: no NVIDIA driver on this machine"; exit 77
fi
if [ ! -f "$cuda/include/cuda_runtime_api.h" ] || [ ! -e "$cuda/lib64/libcudart.so" ]; then
    echo "SKIPPED: no CUDA Toolkit at $cuda (set CUDA_HOME)"; exit 77
fi
if [ ! -e "$build/lib/libldshim.so" ]; then
    meson setup "$build" -Dtests=false -Dbench=false -Dcudatoolkit_include="$cuda/include" >/dev/null
    ninja -C "$build" lib/libldshim.so include/ldshim_version.h >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cc -std=gnu11 -O2 -Iinclude -I"$build/include" -I"$cuda/include" -o "$out/gpu_check" tests/gpu/gpu_check.c \
    -L"$build/lib" -lldshim -L"$cuda/lib64" -L"$cuda/lib64/stubs" -lcudart -lcuda -Wl,-rpath,"$build/lib:$cuda/lib64"
timeout 150 "$out/gpu_check"
