#!/bin/sh
# Builds the concurrency tests with ThreadSanitizer (meson's b_sanitize=thread)
# and runs them.  Any report fails the run.
set -eu
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null
if [ ! -f build-tsan/build.ninja ]; then
    meson setup build-tsan -Dwerror=true -Db_sanitize=thread -Db_lundef=false -Dbench=false --buildtype=debugoptimized >/dev/null
fi
ninja -C build-tsan tests/memtype_tests tests/hooks_api_tests tests/fast_answers_tests >/dev/null
TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}" \
    ./build-tsan/tests/memtype_tests --gtest_filter='Memtype.readers_*:Memtype.c_api_*' "$@"
# The resolver's already-loaded answers, read without a lock while rewritten.
TSAN_OPTIONS="halt_on_error=1 exitcode=66 ${TSAN_OPTIONS:-}" ./build-tsan/tests/fast_answers_tests "$@"
# Hooked allocations on 4 threads while libraries come and go (the loader's
# own allocations are suppressed: see tsan.supp).
TSAN_OPTIONS="halt_on_error=1 exitcode=66 suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}" \
    ./build-tsan/tests/hooks_api_tests "$@"
