#!/bin/sh
# Installs what ldshim needs on Debian 12, then configures and builds it.
# Safe to run again: it installs only what is missing and reuses an existing
# build directory.
#   setup.sh          everything the tests need (scripts/test.sh); builds all
#                     of it in ./build
#   setup.sh --demo   only what scripts/demo.sh needs (196 packages, 123 MB,
#                     on a bare Debian 12 root); builds the product and the
#                     one test program the demo runs in ./build-demo
#                     (-Dtests=false -Ddemo=true), not the ~150 test sources
# Exit status: 0 done, 1 a package is missing and this is not root (or an
# install or build failed), 2 a wrong argument.
set -eu
cd "$(dirname "$0")/.."

demo=0
case ${1:-} in
    --demo) demo=1 ;;
    "") ;;
    *) echo "usage: $0 [--demo]" >&2; exit 2 ;;
esac

# What the demo needs: a compiler (gcc's libasan for its step 6), meson and
# ninja, nlohmann-json for ldsearch, GoogleTest for its layout table
# (tests/repro/mpi_test.cc; patchelf for one of its layouts), Open MPI with
# UCX (libucx0: libucm), ccache (scripts/build-cache.sh).
demo_packages="g++ gcc meson ninja-build pkg-config nlohmann-json3-dev libgtest-dev openmpi-bin libucx0 patchelf ccache"
# The rest, for the test suites, lint, the sanitizers and the roots: a
# plain setup.sh installs both lists.
test_packages="libelf-dev zlib1g-dev libgmock-dev libbenchmark-dev python3-jsonschema pax-utils python3-pyelftools \
libucx-dev ucx-utils util-linux hyperfine strace clang lld valgrind libclang-rt-14-dev heaptrack uftrace \
fakechroot clang-format clang-tidy shellcheck python3-numpy python3-scipy python3-mpi4py python3-torch gdb \
r-base-core lmod tcl autoconf automake libtool make git"
packages=$demo_packages
[ "$demo" = 1 ] || packages="$packages $test_packages"

missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: missing Debian packages:$missing (run as root to install them)" >&2
        exit 1
    fi
    echo "setup: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    # The package lists once an hour: the demo's setup and the tests' right
    # after it (.ci/run) share one update.  An install that fails on lists
    # that were not updated here updates them and tries again.
    stamp=/var/cache/ldshim/apt-update.stamp
    update() {
        apt-get update -qq || { echo "setup: apt-get update failed" >&2; exit 1; }
        mkdir -p "${stamp%/*}" && touch "$stamp" || true
    }
    updated=0
    if [ -z "$(find "$stamp" -mmin -60 2>/dev/null)" ]; then
        update
        updated=1
    fi
    # shellcheck disable=SC2086
    if ! apt-get install -y -qq --no-install-recommends $missing >/dev/null; then
        [ "$updated" = 0 ] || { echo "setup: apt-get install failed:$missing" >&2; exit 1; }
        update
        # shellcheck disable=SC2086
        apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
            { echo "setup: apt-get install failed:$missing" >&2; exit 1; }
    fi
fi

# The project's own builds treat warnings as errors; a packager's do not.
if [ "$demo" = 1 ]; then
    # The same compiler flags as ./build, so that ccache hands the objects
    # from one build directory to the other.
    if [ ! -f build-demo/build.ninja ]; then
        meson setup build-demo --buildtype=debugoptimized -Dwerror=true -Dtests=false -Dbench=false -Ddemo=true
    fi
    # Only what the demo runs (tests/meson.build's alias "demo": ldsearch,
    # libldshim and its probe, the preload, the layout table), one compile
    # a core.
    ninja -C build-demo -j "$(nproc)" demo
    exit 0
fi

# Environment Modules, for the docs suite's module test: it conflicts with
# lmod, so it is unpacked beside it rather than installed.
if [ "$(id -u)" -eq 0 ]; then
    ./scripts/environment-modules.sh >/dev/null || echo "setup: Environment Modules not unpacked; its module test will say SKIPPED"
fi

if [ ! -f build/build.ninja ]; then
    meson setup build --buildtype=debugoptimized -Dwerror=true
fi
ninja -C build
