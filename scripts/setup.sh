#!/bin/sh
# Installs what ldshim needs to build and test on Debian 12, then configures
# and builds it in ./build.  Safe to run again: it installs only what is
# missing and reuses an existing build directory.
set -eu
cd "$(dirname "$0")/.."

packages="g++ gcc meson ninja-build pkg-config libelf-dev zlib1g-dev libgtest-dev libgmock-dev \
libbenchmark-dev nlohmann-json3-dev python3-jsonschema pax-utils python3-pyelftools libucx-dev ucx-utils openmpi-bin patchelf util-linux hyperfine strace clang lld valgrind \
libclang-rt-14-dev heaptrack uftrace fakechroot clang-format clang-tidy shellcheck python3-numpy \
python3-scipy python3-mpi4py python3-torch gdb r-base-core lmod tcl ccache autoconf automake libtool make git"
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
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
# Environment Modules, for the docs suite's module test: it conflicts with
# lmod, so it is unpacked beside it rather than installed.
if [ "$(id -u)" -eq 0 ]; then
    ./scripts/environment-modules.sh >/dev/null || echo "setup: Environment Modules not unpacked; its module test will say SKIPPED"
fi

if [ ! -f build/build.ninja ]; then
    # The project's own builds treat warnings as errors; a packager's do not.
    meson setup build --buildtype=debugoptimized -Dwerror=true
fi
ninja -C build
