#!/bin/sh
# Runs the hooks suite's fork stress (tests/hooks/fixtures/stress_fork.c:
# 8 threads, 10000 operations each, a fork half way) N times, to catch what
# shows once in a few hundred runs.  Stops at the first failure and prints
# its output; on a hang that is the watchdog's dump (gdb) of every thread's
# stack.
#   scripts/stress-loop.sh N [BUILD_DIR]      (BUILD_DIR: default ./build)
# Environment: STRESS_JOBS=2 runs that many copies at once (each counts as a
# run), STRESS_THREADS and STRESS_OPS change the load, STRESS_KEEP=1 keeps
# the directory of fixtures and outputs (its name is printed).
# Ends with: stress-loop: N runs, H hangs, F failures, median S s
# shellcheck disable=SC2086 # $cc and $flags are lists of words
set -eu
cd "$(dirname "$0")/.."
n=${1:?usage: scripts/stress-loop.sh N [BUILD_DIR]}
build=${2:-build}
jobs=${STRESS_JOBS:-1}
threads=${STRESS_THREADS:-8}
ops=${STRESS_OPS:-10000}

if [ ! -f "$build/build.ninja" ]; then
    meson setup "$build" --buildtype=debugoptimized -Dwerror=true -Dbench=false >/dev/null
fi
meson compile -C "$build" ldshim >/dev/null

# The fixtures, built the way tests/hooks/hooks_test.cc builds them (the
# partial-RELRO, lazy-binding, PIE variant the stress test uses).
dir=$(mktemp -d /tmp/ldshim-stress-XXXXXX)
if [ -n "${STRESS_KEEP:-}" ]; then echo "stress-loop: keeping $dir" >&2; else trap 'rm -rf "$dir"' EXIT; fi
fx=tests/hooks/fixtures
lib=$PWD/$build/lib
cc="cc -std=gnu11 -O1 -Wall -Werror -I$fx -Iinclude -I$build/include"
$cc -fPIC -shared -fvisibility=hidden -Wl,-soname,libcuda.so.1 -o "$dir/libcuda.so.1" $fx/fake_cuda.c -lpthread
# shellcheck disable=SC2016 # $ORIGIN is the loader's, not the shell's
$cc -fPIC -shared -fvisibility=hidden -Wl,-soname,libcudart.so.13 -Wl,--version-script=$fx/fake_cudart.map \
    -Wl,-rpath,'$ORIGIN' -o "$dir/libcudart.so.13" $fx/fake_cudart.c -ldl -lpthread
flags="-Wl,-z,lazy -Wl,-z,relro -Wl,--hash-style=gnu"
for c in consumer2 consumer3 consumer4 consumer5; do
    $cc -fPIC -shared $flags -Wl,-soname,lib$c.so -o "$dir/lib$c.so" $fx/consumer_lib.c \
        -L"$dir" -l:libcudart.so.13 -l:libcuda.so.1 -Wl,-rpath,"$dir"
done
$cc -o "$dir/stress_fork" $fx/stress_fork.c -L"$dir" -l:libcudart.so.13 -L"$lib" -lldshim \
    -Wl,-rpath,"$dir:$lib" -lpthread -ldl

now() { date +%s.%N; }
runs=0 hangs=0 failures=0
: >"$dir/times"
while [ "$runs" -lt "$n" ]; do
    # One round: $jobs copies at once.
    pids="" j=0
    while [ "$j" -lt "$jobs" ] && [ $((runs + j)) -lt "$n" ]; do
        j=$((j + 1))
        (
            t0=$(now)
            rc=0
            timeout -k 10 300 "$dir/stress_fork" "$dir" "$threads" "$ops" >"$dir/out.$j" 2>&1 || rc=$?
            echo "$rc $t0 $(now)" >"$dir/rc.$j"
        ) &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p"; done
    k=0
    while [ "$k" -lt "$j" ]; do
        k=$((k + 1))
        runs=$((runs + 1))
        read -r rc t0 t1 <"$dir/rc.$k"
        echo "$t0 $t1" | awk '{ printf "%.3f\n", $2 - $1 }' >>"$dir/times"
        out="$dir/out.$k"
        if [ "$rc" -eq 0 ] && grep -q " bad 0\$" "$out" && grep -q "ops after fork, 0 bad" "$out"; then
            continue
        fi
        if [ "$rc" -eq 142 ] || [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] || grep -q WATCHDOG "$out"; then
            hangs=$((hangs + 1)) what=hang
        else
            failures=$((failures + 1)) what=failure
        fi
        echo "stress-loop: run $runs: $what (exit status $rc); its output:"
        cat "$out"
    done
    [ $((hangs + failures)) -eq 0 ] || break
    [ $((runs % 50)) -ne 0 ] || echo "stress-loop: $runs runs" >&2
done
median=$(sort -n "$dir/times" | awk '{ t[NR] = $1 } END { printf "%.1f", NR ? t[int((NR + 1) / 2)] : 0 }')
echo "stress-loop: $runs runs, $hangs hangs, $failures failures, median $median s"
[ $((hangs + failures)) -eq 0 ]
