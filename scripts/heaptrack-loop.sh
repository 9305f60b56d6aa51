#!/bin/sh
# Runs python3 under heaptrack with libldshim_preload.so, N times, JOBS at a
# time, each with a watchdog: the real-world form of the loader-lock
# deadlock (docs/interposers.md).  heaptrack's malloc unwinds the stack
# under libunwind's mutex while its other thread waits in dl_iterate_phdr; an
# allocation by ldshim under the loader's lock hangs the process in about 1
# run of 90.  A hang is reported with every thread's stack (gdb) and ends the
# loop with status 1.
#   scripts/heaptrack-loop.sh [N] [BUILD_DIR]      (N: default 200)
# Environment: JOBS (default 3), TIMEOUT seconds per run (default 60).
# Ends with: heaptrack-loop: N runs, H hangs, F failures (exit 77: SKIPPED)
set -eu
cd "$(dirname "$0")/.."
n=${1:-200}
build=${2:-build}
jobs=${JOBS:-3}
limit=${TIMEOUT:-60}
case $build in /*) ;; *) build=$PWD/$build ;; esac
preload=$build/preload/libldshim_preload.so
command -v heaptrack >/dev/null || { echo "heaptrack-loop: SKIPPED: heaptrack is not installed (scripts/setup.sh)"; exit 77; }
[ -f "$preload" ] || { echo "heaptrack-loop: $preload is missing: build first" >&2; exit 2; }
dir=$(mktemp -d /tmp/ldshim-heaptrack-XXXXXX)
trap 'rm -rf "$dir"' EXIT
program="import ssl, sqlite3, ctypes, json, decimal, hashlib, lzma, bz2, zlib, curses, readline"

# One run: 0 ok, 1 failed, 2 hung (stacks written to $dir/hang-$i).
one() {
    i=$1
    LD_PRELOAD=$preload heaptrack -o "$dir/ht-$i" /usr/bin/python3 -c "$program" >"$dir/out-$i" 2>&1 &
    pid=$!
    waited=0
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$waited" -ge "$limit" ]; then
            for p in $(pgrep -f "ldshim-heaptrack.*ht-$i|python3 -c $program" || true); do
                gdb -p "$p" -batch -ex 'thread apply all bt' >>"$dir/hang-$i" 2>&1 || true
            done
            pkill -KILL -f "ht-$i" 2>/dev/null || true
            return 2
        fi
        sleep 1
        waited=$((waited + 1))
    done
    wait "$pid" && grep -q "heaptrack stats" "$dir/out-$i" && return 0
    return 1
}

runs=0 hangs=0 failures=0
while [ "$runs" -lt "$n" ]; do
    batch=""
    k=0
    while [ "$k" -lt "$jobs" ] && [ "$runs" -lt "$n" ]; do
        runs=$((runs + 1)); k=$((k + 1))
        ( one "$runs"; echo $? >"$dir/rc-$runs" ) &
        batch="$batch $!"
    done
    # shellcheck disable=SC2086 # a list of pids
    wait $batch
    for f in "$dir"/rc-*; do
        rc=$(cat "$f"); i=${f##*rc-}
        case $rc in
            0) ;;
            2) hangs=$((hangs + 1)); echo "heaptrack-loop: run $i hung; stacks:"; cat "$dir/hang-$i" ;;
            *) failures=$((failures + 1)); echo "heaptrack-loop: run $i failed:"; tail -20 "$dir/out-$i" ;;
        esac
        rm -f "$f" "$dir/ht-$i"*
    done
    [ $((hangs + failures)) -eq 0 ] || break
done
echo "heaptrack-loop: $runs runs, $hangs hangs, $failures failures"
[ $((hangs + failures)) -eq 0 ]
