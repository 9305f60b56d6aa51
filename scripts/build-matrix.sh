#!/bin/sh
# Builds ldshim the ways packagers and users do, with warnings as errors, so
# that a warning one optimisation level or compiler shows cannot hide:
#   gcc   --buildtype=plain,   tests and benchmarks
#   clang --buildtype=release, library and tools only
# (--buildtype=release with tests under gcc is test-unprivileged.sh's build;
# debugoptimized is setup.sh's.)  --full adds the rest of the matrix:
# gcc release without tests, clang release/plain/debugoptimized with tests.
#   scripts/build-matrix.sh [--full]
set -eu
cd "$(dirname "$0")/.."
src=$PWD
out=$(mktemp -d /tmp/ldshim-matrix.XXXXXX)
trap 'rm -rf "$out"' EXIT

configs="gcc:plain:tests clang:release:notests"
[ "${1:-}" != "--full" ] || configs="$configs gcc:release:notests clang:release:tests clang:plain:tests clang:debugoptimized:tests"

failed=0 built=0
for c in $configs; do
    compiler=${c%%:*} rest=${c#*:}
    buildtype=${rest%%:*} tests=${rest#*:}
    if [ "$compiler" = clang ]; then cc=clang cxx=clang++; else cc=gcc cxx=g++; fi
    flag=true; [ "$tests" = tests ] || flag=false
    dir="$out/$compiler-$buildtype-$tests"
    start=$(date +%s)
    if CC=$cc CXX=$cxx meson setup "$dir" "$src" --buildtype="$buildtype" -Dwerror=true \
           -Dtests=$flag -Dbench=$flag >"$dir.log" 2>&1 && ninja -C "$dir" >>"$dir.log" 2>&1; then
        echo "build-matrix: $compiler $buildtype ($tests): ok in $(( $(date +%s) - start )) s"
        built=$((built + 1))
    else
        echo "build-matrix: $compiler $buildtype ($tests): FAILED"
        grep -E 'error|warning' "$dir.log" | head -20
        failed=$((failed + 1))
    fi
    rm -rf "$dir"
done
echo "build-matrix: $built built, $failed failed"
[ "$failed" -eq 0 ]
