#!/bin/sh
# Cross-builds ldshim for aarch64 in ./build-arm64 with Debian's cross
# toolchain: arm64's -dev packages come through multiarch (dpkg
# --add-architecture arm64), qemu-user runs the test programs
# (scripts/cross/aarch64-linux-gnu.ini).  Safe to run again.
#   scripts/cross-aarch64.sh            install what is missing (as root), configure, build
#   scripts/cross-aarch64.sh --check    also the checks under qemu-user that CI runs
#   scripts/cross-aarch64.sh --full     every meson suite, and the generator's full run
# Every module compiles with warnings as errors.  --check runs, with qemu as
# meson's exe wrapper, the meson suites that take seconds there (CI's share;
# --full runs every suite, about 12 minutes: what cannot hold under qemu-user
# says SKIPPED, docs/testing.md), then tests/arm64/entries_test.sh (the jump
# entries: glibc still sees the real caller) and tests/arm64/resolver_test.sh
# (the runtime resolves dlopen past an interposer, on two emulated CPUs),
# each here and chrooted in the trixie root (glibc 2.41),
# tests/arm64/interposers_test.sh and tools_test.sh (the interposers),
# scripts/arm64-repro.sh (bookworm and trixie) and a share of scripts/arm64-generator.sh
# (LDSHIM_ARM64_GEN_SEEDS trees per root and CPU, default 75; --full: 2000).
set -eu
cd "$(dirname "$0")/.."
check=false full=false
case ${1:-} in
    --check) check=true ;;
    --full) check=true full=true ;;
    "") ;;
    -h | --help)
        sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "cross-aarch64: unknown argument '$1' (see --help)" >&2
        exit 2
        ;;
esac

packages="g++-aarch64-linux-gnu qemu-user-static nlohmann-json3-dev libgtest-dev:arm64 libgmock-dev:arm64 \
libelf-dev:arm64 libbenchmark-dev:arm64 libasan8-arm64-cross libtsan2-arm64-cross clang-14 lld-14 libclang-rt-14-dev:arm64 \
libbz2-1.0:arm64 libxml2:arm64 libgfortran5:arm64 libucx0:arm64 libtinfo6:arm64"
missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "SKIPPED: missing Debian packages:$missing (run as root to install them)"
        exit 77
    fi
    echo "cross-aarch64: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
    # Without the archive's arm64 packages nothing here can run: SKIPPED.
    # shellcheck disable=SC2086  # one word per package
    if ! apt-get update -qq || ! apt-get install -y -qq --no-install-recommends $missing >/dev/null; then
        echo "SKIPPED: the cross toolchain or arm64's -dev packages cannot be installed"
        exit 77
    fi
fi

if [ ! -f build-arm64/build.ninja ]; then
    set -- --cross-file scripts/cross/aarch64-linux-gnu.ini
    ! command -v ccache >/dev/null || set -- "$@" --cross-file scripts/cross/aarch64-ccache.ini
    meson setup build-arm64 "$@" --buildtype=debugoptimized -Dwerror=true >/dev/null
fi
ninja -C build-arm64
# CI's share of the meson suites under qemu-user: the ones that take seconds.
ci_suites="unit memtype differential ldsearch-check ldsearch-cli c99-api exports doc-examples resolver \
resolver-try resolver-concurrency ucm-no-mpi memtype-driver-fallback memtype-no-driver hooks-scan hooks-api dlsym-scopes secure"
if $check; then
    # The arm64 roots (made once, about 6 minutes each; qemu-user goes into
    # binfmt_misc with them): what runs under the emulated loaders needs them.
    for suite in bookworm trixie; do
        scripts/arm64-root.sh "$suite" >/dev/null ||
            echo "cross-aarch64: no arm64 $suite root: the checks that need it say SKIPPED"
    done
    # The ldconfig of an arm64 root writes the caches the tests' arm64 loader reads.
    [ ! -x /var/cache/ldshim/arm64-roots/bookworm/sbin/ldconfig ] ||
        export LDSHIM_TEST_LDCONFIG=/var/cache/ldshim/arm64-roots/bookworm/sbin/ldconfig
    if $full; then
        meson test -C build-arm64 --num-processes 2 --timeout-multiplier 3
    else
        # shellcheck disable=SC2086  # one word per suite
        meson test -C build-arm64 --num-processes 2 --timeout-multiplier 3 $ci_suites
    fi
    # 77: SKIPPED (no binfmt_misc registration, no root): the build still counts.
    tests/arm64/entries_test.sh build-arm64 || [ $? -eq 77 ]
    tests/arm64/resolver_test.sh build-arm64 || [ $? -eq 77 ]
    # The same, chrooted in the trixie root: glibc 2.41's loader and libc.
    if [ -f /var/cache/ldshim/arm64-roots/trixie.done ]; then
        ARM64_ROOT=/var/cache/ldshim/arm64-roots/trixie tests/arm64/entries_test.sh build-arm64 || [ $? -eq 77 ]
        ARM64_ROOT=/var/cache/ldshim/arm64-roots/trixie tests/arm64/resolver_test.sh build-arm64 || [ $? -eq 77 ]
    fi
    tests/arm64/interposers_test.sh build-arm64 || [ $? -eq 77 ] # the sanitizer runtimes' table
    tests/arm64/tools_test.sh build-arm64 || [ $? -eq 77 ]        # heaptrack, uftrace, fakechroot
    scripts/arm64-repro.sh bookworm || [ $? -eq 77 ] # the report, arm64 Open MPI + UCX (77: skipped)
    scripts/arm64-repro.sh trixie || [ $? -eq 77 ]   # Open MPI 5 + UCX 1.18, singleton ranks
    # CI's share of the random trees on each arm64 root and CPU (the full
    # run: scripts/arm64-generator.sh --seeds 2000).
    $full && LDSHIM_ARM64_GEN_SEEDS=${LDSHIM_ARM64_GEN_SEEDS:-2000}
    scripts/arm64-generator.sh --seeds "${LDSHIM_ARM64_GEN_SEEDS:-75}" || [ $? -eq 77 ]
fi
