#!/bin/sh
# Install time of the CUDA hooks in a process with COUNT libraries (default
# 500), each importing cudaMalloc and cudaFree: about 2*COUNT slots, the size
# of the ucm patch measured at 11-15 ms here.  Target: at most 5 ms.
#   bench/hooks_install.sh [BUILD_DIR] [COUNT] [ROUNDS]
set -eu
build=${1:-build}
count=${2:-500}
rounds=${3:-21}
src=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$build" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -std=gnu11 -O2 -fPIC -shared -Wl,-soname,libcudart.so.13 -o "$tmp/libcudart.so.13" "$src/fixtures/bench_cudart.c"
cat > "$tmp/lib.c" <<'C'
#include <stddef.h>
int cudaMalloc(void **p, size_t n);
int cudaFree(void *p);
int lib_alloc(void **p, size_t n) { return cudaMalloc(p, n); }
int lib_free(void *p) { return cudaFree(p); }
C
cc -std=gnu11 -O2 -fPIC -c -o "$tmp/lib.o" "$tmp/lib.c"
i=0
while [ "$i" -lt "$count" ]; do
    cc -shared -Wl,-soname,libbench$i.so -o "$tmp/libbench$i.so" "$tmp/lib.o" -L"$tmp" -l:libcudart.so.13 -Wl,-rpath,"$tmp"
    i=$((i + 1))
done
cc -std=gnu11 -O2 -I"$src/../include" -I"$build/include" -o "$tmp/install" "$src/hooks_install.c" -L"$build/lib" -lldshim \
    -Wl,-rpath,"$build/lib" -ldl
"$tmp/install" "$tmp" "$count" "$rounds"
