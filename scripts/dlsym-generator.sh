#!/bin/sh
# The dlsym-scopes suite's random lookups at full length: RUNS processes of
# 200 operations each (default 1000: about 150,000 lookups), every one
# compared with the same process without ldshim (tests/hooks/dlsym_test.cc).
# CI runs 150 of them in the meson suite.
#   scripts/dlsym-generator.sh [RUNS] [SEED] [BUILD_DIR]
# SEED is the base seed (default: the day's); a difference is shrunk and
# printed as a script.  Exit status: the test's.
set -eu
cd "$(dirname "$0")/.."
case ${1:-} in
    -h | --help)
        sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
esac
runs=${1:-1000}
build=${3:-build}
[ -x "$build/tests/dlsym_tests" ] || { echo "dlsym-generator: build $build first (ninja -C $build)" >&2; exit 2; }
export LDSHIM_DLSYM_RUNS="$runs"
[ -z "${2:-}" ] || export LDSHIM_DLSYM_SEED="$2"
exec "$build/tests/dlsym_tests" --gtest_filter='DlsymScopes.random_lookups_answer_as_without_the_hooks'
