#!/bin/sh
# Builds the project with AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer included) and runs every suite that stays inside
# instrumented processes.  Any report fails the run.
#
# Left out: the resolver, repro and hooks suites.  They start fixture programs
# compiled at test time without sanitizers, which then load the instrumented
# libldshim; ASan refuses to run when its runtime is not the first library.
# The resolver's concurrency test and the hooks API test (hooked
# allocations while libraries come and go) are in-process and do run here.
set -eu
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null
if [ ! -f build-asan/build.ninja ]; then
    meson setup build-asan -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false \
        -Dbench=false --buildtype=debugoptimized >/dev/null
fi
ninja -C build-asan >/dev/null
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=66 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=66 ${UBSAN_OPTIONS:-}"
meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 \
    unit memtype memtype-driver-fallback memtype-no-driver differential \
    system-programs ldsearch-cli c99-api exports resolver-concurrency hooks-api "$@"
