#!/bin/sh
# Sets up, builds and runs every test suite, then prints one summary line
# counting the individual test cases (both meson runs) and the whole-script
# checks.  Exit status: non-zero if anything failed.
#   meson suites as root      unit, differential, system programs, CLI, C API,
#                             resolver, repro (real Open MPI + UCX), hooks,
#                             roots (glibc 2.31, 2.41, 2.43: scripts/roots.sh), ...
#   ThreadSanitizer           the registry and hooks concurrency tests
#   ASan+UBSan+LSan           the in-process suites
#   libFuzzer                 30 s per target (longer: scripts/fuzz.sh 300)
#   lint                      clang-format, clang-tidy, shellcheck (scripts/lint.sh)
#   heaptrack loop            python3 under heaptrack with ldshim, 30 runs
#                             (the deadlock hunt: scripts/heaptrack-loop.sh 300)
#   normal user               the meson suites again, release build, not root
#   glibc 2.31 runtime        libldshim and its in-process suites built and run
#                             inside the bullseye root (scripts/root-resolver.sh)
#   glibc roots generator     random trees under each glibc root's loader
#                             (scripts/glibc-root-generator.sh; SKIPPED
#                             where no root was made)
#   aarch64                   cross build, arm64 roots, what passes under
#                             qemu-user (scripts/cross-aarch64.sh --check)
#   release tarballs          built in the bullseye root (aarch64: cross),
#                             imports checked (GLIBC_2.28 at most), unpacked
#                             and used as nobody here and in every root
#                             (scripts/release-test.sh)
#   build matrix              plain and clang builds (all of it: --full)
#   Spack and EasyBuild       the recipes of contrib/ run as each tool runs
#                             them, against the source tarball
#                             (tests/recipes/recipes_check.sh)
#   Debian packages           build, lintian, install into a fresh root, use;
#                             the same for arm64 (cross-built, used under qemu)
# Arguments go to the first meson test run (e.g. a suite name).
set -eu
cd "$(dirname "$0")/.."
. ./scripts/build-cache.sh
./scripts/setup.sh
# Debian's other releases as roots for the roots suite (about a minute the
# first time; without root it says SKIPPED, and so does the suite).
./scripts/roots.sh || echo "roots: not made; the roots suite will say SKIPPED"
# glibc built from source (RHEL 8 and 9, 2.28-2.39): cached, or prebuilt in
# ../shared/glibc-roots with the script's current key (seconds each); a
# root that is neither is built only within the budget (0 in a CI run: a
# build takes 25-45 min) and says SKIPPED otherwise.
# LDSHIM_GLIBC_BUDGET=SECONDS builds what fits; scripts/glibc-roots.sh alone
# builds them all.
./scripts/glibc-roots.sh --budget "${LDSHIM_GLIBC_BUDGET:-0}" ||
    echo "glibc roots: not all made; the roots suite says SKIPPED for the missing ones"
# UCX master, as is and with contrib/ucx/master, from ../shared/ucx: built
# once into the cache (4-5 min cold on 2 cores), for the ucx-master suite,
# which only reads it.
./scripts/ucx-master.sh --build >/dev/null || echo "ucx-master: not built; the ucx-master suite will say SKIPPED"
# The same two builds with ucm's CUDA module, for ucx-master-cuda (about
# 4 min cold).
./scripts/ucx-master.sh --cuda --build >/dev/null ||
    echo "ucx-master --cuda: not built; the ucx-master-cuda test will say SKIPPED"
# The patched libucm of the ucx-patched suite, from Debian's UCX source: built
# here, since that suite runs under the loopback guard and reaches no archive.
./scripts/ucx-patched.sh >/dev/null || echo "ucx-patched: not built; the ucx-patched suite will say SKIPPED"
status=0
checks_passed=0 checks_failed=0 checks_skipped=0
# One line per check (name, outcome, seconds): repeated at the end, where a
# log's tail shows it.
timings=$(mktemp /tmp/ldshim-test-timings.XXXXXX)
trap 'rm -f "$timings"' EXIT
record() { # START OUTCOME NAME
    printf '%6ss  %-17s %s\n' $(($(date +%s) - $1)) "$2" "$3" >>"$timings"
}
check() { # NAME COMMAND...: one whole-script check; 77 means SKIPPED
    name=$1; shift
    echo "== $name"
    start=$(date +%s)
    rc=0; "$@" || rc=$?
    case $rc in
        0) checks_passed=$((checks_passed + 1)); outcome=ok ;;
        77) checks_skipped=$((checks_skipped + 1)); outcome=SKIPPED; echo "== $name: SKIPPED" ;;
        *) checks_failed=$((checks_failed + 1)); status=1; outcome="FAILED (exit $rc)"
           echo "== $name: FAILED (exit $rc)" ;;
    esac
    record "$start" "$outcome" "$name"
}

start=$(date +%s)
rc=0; meson test -C build --print-errorlogs --num-processes 2 "$@" || rc=$?
outcome=ok
[ $rc = 0 ] || { status=1; outcome="FAILED (exit $rc)"; }
record "$start" "$outcome" "meson test (root, debugoptimized build)"
check "Lint: clang-format, clang-tidy, shellcheck" ./scripts/lint.sh
check "ThreadSanitizer: memtype and hooks concurrency tests" ./scripts/tsan.sh
check "AddressSanitizer + UndefinedBehaviorSanitizer: in-process suites" ./scripts/asan.sh
check "libFuzzer: ELF reader, ld.so.cache, tokens, LD_DEBUG log parser" ./scripts/fuzz.sh 30
check "heaptrack + python3 with ldshim: 30 runs, no hang" ./scripts/heaptrack-loop.sh 30
rm -f build/meson-logs/unprivileged.junit.xml
check "The meson suites as a normal user (release build)" ./scripts/test-unprivileged.sh
check "The runtime built and tested inside the bullseye root (glibc 2.31, gcc 10)" ./scripts/root-resolver.sh bullseye
# Before the release tarball: its aarch64 twin needs the cross tools and
# the arm64 roots this check makes.
check "aarch64: cross build, the suites that pass under qemu-user" ./scripts/cross-aarch64.sh --check
check "Release tarballs (x86-64, aarch64): built in bullseye, GLIBC_2.28 at most, relocated and used on every glibc" \
    ./scripts/release-test.sh
# The generator against each glibc root built from source (the six from
# ../shared/glibc-roots on a fresh machine: about 2 minutes in all);
# scripts/glibc-root-generator.sh --seeds 1000 for the full figures.
check "The random-tree generator in every glibc root built here: 100 trees each" \
    ./scripts/glibc-root-generator.sh --seeds 100
check "Build matrix: gcc plain, clang release" ./scripts/build-matrix.sh
# Against this checkout's source tarball (scripts/dist.sh): about a minute
# with ccache warm, 10-15 cold on 2 cores (two builds: Spack's release,
# EasyBuild's -O2).
check "Spack and EasyBuild recipes: their meson, ninja, test, install commands, stand-alone test, Lmod" \
    ./tests/recipes/recipes_check.sh
check "Debian packages: build, lintian, install into a fresh root" ./scripts/package-test.sh
check "Debian packages for arm64: cross-built, lintian, installed and used in the arm64 root" \
    ./scripts/package-test.sh --arch arm64

echo "== Summary: seconds and outcome of each part"
cat "$timings"
python3 - "$checks_passed" "$checks_failed" "$checks_skipped" build/meson-logs/testlog.junit.xml \
    build/meson-logs/unprivileged.junit.xml <<'PY' || true
import os, sys, xml.etree.ElementTree as ET
passed, failed, skipped = (int(x) for x in sys.argv[1:4])
for path in sys.argv[4:]:
    if not os.path.exists(path):
        continue
    for c in ET.parse(path).getroot().iter('testcase'):
        if c.find('failure') is not None or c.find('error') is not None:
            failed += 1
            print(f"failed: {os.path.basename(path)}: {c.get('classname')} {c.get('name')}")
        elif c.find('skipped') is not None:
            skipped += 1
        else:
            passed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
