#!/bin/sh
# Runs N seeded random library trees (tests/differential/generator.cc) under
# the real loader, through ldsearch and through the runtime resolver, and
# prints the base seed, every differing seed (with a minimised tree for the
# first few) and a summary line "N trees: K differ ...".
#   scripts/fidelity.sh [--events] [N] [BASE_SEED]      (N: default 1000)
# --events: trees with process events between their dlopens (environment
# changes, chdir, files and directories made and removed, the cache
# rewritten, dlclose and reopen, two threads).
# Environment: BUILD (build directory, default ./build), and the generator's
# knobs (LDSHIM_GEN_JOBS, LDSHIM_GEN_RESOLVER=0|report, LDSHIM_GEN_SHRINK,
# LDSHIM_GEN_VERBOSE=1 for a line per seed; see generator_test.cc).
# Exit status: 0 when ldsearch agrees with the loader on every tree, and the
# resolver too but for its known limit (docs/fidelity.md).
set -eu
cd "$(dirname "$0")/.."
if [ "${1:-}" = --events ]; then
    LDSHIM_GEN_EVENTS=1
    export LDSHIM_GEN_EVENTS
    shift
fi
n=${1:-1000}
build=${BUILD:-build}
ninja -C "$build" >/dev/null
LDSHIM_GEN_SEEDS=$n
export LDSHIM_GEN_SEEDS
if [ $# -ge 2 ]; then
    LDSHIM_GEN_SEED=$2
    export LDSHIM_GEN_SEED
fi
exec "$build/tests/generator_tests" --gtest_brief=1
