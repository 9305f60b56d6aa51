# shellcheck shell=sh
# Sourced by scripts/demo.sh and scripts/test.sh before anything builds:
# every meson build directory they set up compiles through ccache (meson
# wraps the compilers in it when it is on PATH; scripts/setup.sh installs
# it), kept under /var/cache/ldshim like the roots, so that a run on a
# fresh clone recompiles only what changed since the last one.  Paths are
# hashed relative to the clone (CCACHE_BASEDIR, CCACHE_NOHASHDIR), wherever
# it lies.  Where the cache directory cannot be written, ccache keeps its
# own default (~/.cache/ccache).  LDSHIM_CCACHE=0 leaves ccache out.
if [ "${LDSHIM_CCACHE:-1}" = 0 ]; then
    export CCACHE_DISABLE=1
elif mkdir -p /var/cache/ldshim/ccache 2>/dev/null && [ -w /var/cache/ldshim/ccache ]; then
    export CCACHE_DIR=/var/cache/ldshim/ccache
    export CCACHE_BASEDIR="$PWD"
    export CCACHE_NOHASHDIR=1
    export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-10G}"
fi
