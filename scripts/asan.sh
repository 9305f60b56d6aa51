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
suites="unit memtype memtype-driver-fallback memtype-no-driver differential system-programs ldsearch-cli c99-api
exports resolver-concurrency hooks-api"
# Only what these suites run (their programs and what they depend on, with
# the library, the preload and the probe tree beside it): the whole tree
# under ASan took 25 minutes of a CI run on 2 cores.
# shellcheck disable=SC2086  # one word per suite
targets=$(meson introspect build-asan --tests --targets | python3 -c '
import json, os, sys
info = json.load(sys.stdin)
files = {t["id"]: t["filename"] for t in info["targets"]}
want = set(sys.argv[1:])
out = {f for t in info["targets"] if t["name"] in ("ldshim", "ldshim_preload") for f in t["filename"]}
for test in info["tests"]:
    if test["name"] in want:
        out.update(f for d in test["depends"] for f in files.get(d, []))
print("\n".join(os.path.relpath(f, "build-asan") for f in sorted(out)))
' $suites)
# shellcheck disable=SC2086  # one word per target
ninja -C build-asan $targets >/dev/null
# The system-programs suite compares every program in /usr/bin: under ASan
# a quarter of them (a different quarter each day; the plain runs take all).
export LDSHIM_SYSTEM_PROGRAMS_EVERY="${LDSHIM_SYSTEM_PROGRAMS_EVERY:-4}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:exitcode=66 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:exitcode=66 ${UBSAN_OPTIONS:-}"
# shellcheck disable=SC2086  # one word per suite
meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 $suites "$@"
