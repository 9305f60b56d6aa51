#!/bin/sh
# The docs suite: every command block of README.md's "Using it" section and
# of docs/troubleshooting.md, run as written, in order, against this build.
#
#   doc_commands.sh SOURCE_ROOT BUILD_ROOT PREFIX LIBDIR CUDA_HOOKS(0|1) MPI_LOOPBACK_ENV
#
# The blocks name the installed paths (/usr/local/lib/x86_64-linux-gnu/
# libldshim_preload.so, /usr/local/share/modulefiles, ldsearch on PATH), so
# that a reader sees the commands they would type.  To make those paths this
# build's: `meson install --destdir` into a scratch directory, and, in a
# mount namespace of the test's own (root, or a user namespace otherwise),
# an overlay of that install on top of PREFIX; nothing outside the namespace
# sees it.  The blocks run in a scratch directory with scripts/ and contrib/
# linked as in a checkout, with PATH holding the example programs they use:
#   julia     the report's Julia-shaped program (tests/repro/fixtures/julia_tree.sh,
#             as scripts/demo.sh builds it): `julia NAME mpi` calls
#             MPI_Init, then libjulia.so.1 dlopens NAME, which only
#             libjulia's RPATH ($ORIGIN/julia) finds
#   plug-app  a program whose library (RUNPATH $ORIGIN/plug) dlopens
#             libplug.so (tests/interposers/fixtures/plug_tree.sh, the
#             interposers suite's case); asan-app: the same built with
#             -fsanitize=address
#   cuda-app  tests/hooks/fixtures/plain_app.c on the hooks suite's fake
#             libcudart.so.13 and libcuda.so.1
#   srun      tests/docs/srun.sh, a stand-in for Slurm's that only forwards
#             the environment
# and the report's UCX settings (pml ucx, ucm in reloc mode, UCX's own RPATH
# workaround off), under which `julia libopenlibm.so mpi` fails without
# ldshim -- checked first, or the blocks would prove nothing.  Every MPI and
# UCX setting of scripts/mpi-loopback.env is exported before any block runs
# (the blocks source it too), and meson runs this under the loopback guard.
# LeakSanitizer cannot run under the guard's strace: ASAN_OPTIONS=detect_leaks=0.
#
# HTML comments before a block say what its output must show and what it
# needs (tests/docs/doc_blocks.py); `needs` here: module (Lmod, or
# Environment Modules' modulecmd.tcl), ucx-patched (scripts/ucx-patched.sh
# has built the patched libucm), cuda-hooks (built with the CUDA headers),
# or a command on PATH.
# Exit status: 0 every block ran as documented; 1 one did not (named, with its
# output); 77 SKIPPED (no mount namespace, no MPI, another install prefix).
set -eu
[ $# -eq 6 ] || { echo "usage: $0 SOURCE_ROOT BUILD_ROOT PREFIX LIBDIR CUDA_HOOKS MPI_LOOPBACK_ENV" >&2; exit 2; }
src=$1 build=$2 prefix=$3 libdir=$4 cuda_hooks=$5 loopback_env=$6
skip() {
    echo "doc-commands: SKIPPED: $*"
    exit 77
}
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
preload=$libdir/libldshim_preload.so
docs="README.md#Using it
docs/troubleshooting.md"

grep -qF "$preload" "$src/README.md" ||
    skip "this build installs the preload as $preload, which README.md's commands do not name (they use meson's default prefix on Debian)"
for tool in mpirun gcc cc python3 unshare mount; do
    command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed (scripts/setup.sh installs it)"
done
[ -d "$prefix" ] || skip "$prefix does not exist: nothing to lay the install over"
if [ "$(id -u)" -eq 0 ]; then
    namespace="unshare --mount"
else
    namespace="unshare --user --map-root-user --mount"
fi
$namespace true 2>/dev/null || skip "cannot make a mount namespace ($namespace)"

work=$(mktemp -d /tmp/ldshim-docs.XXXXXX)
trap 'rm -rf "$work"' EXIT
examples=$work/examples
mkdir -p "$examples"

# This build, installed.
meson install -C "$build" --destdir "$work/destdir" --no-rebuild --quiet >"$work/install.log" 2>&1 ||
    {
        cat "$work/install.log"
        echo "doc-commands: meson install failed"
        exit 1
    }

# The example programs, from the fixtures scripts/demo.sh builds them from.
j=$examples/julia
p=$examples/plug
"$src/tests/repro/fixtures/julia_tree.sh" "$j"
"$src/tests/interposers/fixtures/plug_tree.sh" "$p/plain"
"$src/tests/interposers/fixtures/plug_tree.sh" "$p/asan" -fsanitize=address
mkdir -p "$work/bin"
ln -s "$p/plain/prog" "$work/bin/plug-app"
ln -s "$p/asan/prog" "$work/bin/asan-app"

c=$examples/cuda
if [ "$cuda_hooks" = 1 ]; then
    mkdir -p "$c/bin" "$c/lib"
    f=$src/tests/hooks/fixtures
    cc -std=gnu11 -O1 -I"$f" -fPIC -shared -fvisibility=hidden -Wl,-soname,libcuda.so.1 -o "$c/lib/libcuda.so.1" \
        "$f/fake_cuda.c" -lpthread
    cc -std=gnu11 -O1 -I"$f" -fPIC -shared -fvisibility=hidden -Wl,-soname,libcudart.so.13 \
        -Wl,--version-script="$f/fake_cudart.map" -Wl,-rpath,'$ORIGIN' -o "$c/lib/libcudart.so.13" \
        "$f/fake_cudart.c" -ldl -lpthread
    cc -std=gnu11 -I"$f" -I"$src/include" -I"$build/include" -o "$c/bin/cuda-app" "$f/plain_app.c" \
        -L"$c/lib" -l:libcudart.so.13 -Wl,-rpath,'$ORIGIN/../lib' -ldl
fi

mkdir -p "$work/cwd" "$work/out"
ln -s "$src/tests/docs/srun.sh" "$work/bin/srun"
ln -s "$src/scripts" "$work/cwd/scripts"
ln -s "$src/contrib" "$work/cwd/contrib"

# The commands, from the Markdown.
(cd "$src" && printf '%s\n' "$docs" | tr '\n' '\0' | xargs -0 python3 tests/docs/doc_blocks.py) >"$work/blocks.sh"

# The shell the blocks run in: the harness's functions, then the blocks.
cat >"$work/run.sh" <<'SH'
set -eu
# The install on top of PREFIX, in this namespace only.
mount -t overlay overlay -o "lowerdir=$LDSHIM_DOCS_DESTDIR$LDSHIM_DOCS_PREFIX:$LDSHIM_DOCS_PREFIX" "$LDSHIM_DOCS_PREFIX" ||
    { echo "doc-commands: SKIPPED: cannot lay an overlay over $LDSHIM_DOCS_PREFIX"; exit 77; }
doc_out=$LDSHIM_DOCS_WORK/out
current="" where="" skipped=0 ran=0
block_start() { current=$1 where=$2; echo "== block $1 ($2)"; }
block_output() {
    sed -n '1,60{s/^/   /;p}' "$doc_out/$1"
    lines=$(wc -l <"$doc_out/$1")
    [ "$lines" -le 60 ] || echo "   ... ($lines lines)"
    ran=$((ran + 1))
    current=""
}
block_skipped() { echo "== block $1 ($2): SKIPPED: $needs_reason"; skipped=$((skipped + 1)); }
fail() {
    echo "doc-commands: FAILED: block $1 ($where): $2"
    trap - EXIT
    exit 1
}
trap 'if [ -n "$current" ]; then echo "doc-commands: FAILED: block $current ($where) exited non-zero; its output:"; sed "s/^/   /" "$doc_out/$current"; fi' EXIT
needs_reason=""
needs() {
    case $1 in
        module)
            command -v module >/dev/null 2>&1 && return 0
            needs_reason="neither Lmod nor Environment Modules is installed (scripts/setup.sh)" ;;
        ucx-patched)
            scripts/ucx-patched.sh --check >/dev/null 2>&1 && return 0
            needs_reason="the patched libucm is not built (scripts/ucx-patched.sh; scripts/test.sh builds it)" ;;
        cuda-hooks)
            [ "$LDSHIM_DOCS_CUDA_HOOKS" = 1 ] && return 0
            needs_reason="built without the CUDA headers: no CUDA hooks" ;;
        *)
            command -v "$1" >/dev/null 2>&1 && return 0
            needs_reason="$1 is not installed" ;;
    esac
    return 1
}
# `module`, as a cluster's login shell has it: Lmod's, or Environment
# Modules' (installed, or unpacked by scripts/environment-modules.sh).
if [ -r /usr/share/lmod/lmod/init/sh ]; then
    . /usr/share/lmod/lmod/init/sh
else
    for m in /usr/lib/x86_64-linux-gnu/modulecmd.tcl \
        "${LDSHIM_ENVMODULES_ROOT:-/var/cache/ldshim/environment-modules}/root/usr/lib/x86_64-linux-gnu/modulecmd.tcl"; do
        if [ -r "$m" ] && command -v tclsh >/dev/null 2>&1; then
            modulecmd=$m
            module() { eval "$(tclsh "$modulecmd" sh "$@")"; }
            break
        fi
    done
fi
cd "$LDSHIM_DOCS_WORK/cwd"
SH

# The environment of the blocks: Debian's standard PATH (not the caller's:
# its python3 is the one with mpi4py), with the install's bin, the stand-in
# srun and the examples first; the report's UCX settings; loopback only.
set -a
# shellcheck disable=SC1090 # the settings file is an argument
. "$loopback_env"
set +a
export PATH="$prefix/bin:$work/bin:$j/bin:$c/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_tls=any \
    OMPI_MCA_pml_ucx_devices=any OMPI_MCA_opal_common_ucx_opal_mem_hooks=0 UCX_MEM_MMAP_HOOK_MODE=reloc \
    UCX_MEM_MALLOC_RELOC=n UCX_MEM_DLOPEN_PROCESS_RPATH=n ASAN_OPTIONS=detect_leaks=0 LDSHIM_UCX_OFFLINE=1 \
    LDSHIM_DOCS_DESTDIR="$work/destdir" LDSHIM_DOCS_PREFIX="$prefix" LDSHIM_DOCS_WORK="$work" \
    LDSHIM_DOCS_CUDA_HOOKS="$cuda_hooks"
# PYTHONUNBUFFERED (set on the development machines) makes print() two
# writes, its text and its newline, and mpirun then interleaves two ranks'
# lines ("rank 1 of 2rank 0 of 2"): the blocks run with Python's default.
unset LD_PRELOAD LD_LIBRARY_PATH LDSHIM_DEBUG LDSHIM_DISABLE LDSHIM_CUDA_HOOKS MODULEPATH LOADEDMODULES \
    _LMFILES_ __LDSHIM_MODULE PYTHONUNBUFFERED 2>/dev/null || true

# Without ldshim the report's failure must be there, or the blocks prove nothing.
before=$(cd "$work" && timeout 120 julia libopenlibm.so mpi 2>&1 | tail -1)
case $before in
    "ERROR libopenlibm.so: cannot open shared object file"*) ;;
    *)
        echo "doc-commands: FAILED: without ldshim, julia libopenlibm.so mpi should fail as in the report; it gave: $before"
        exit 1
        ;;
esac
echo "without ldshim: $before"

cat "$work/blocks.sh" >>"$work/run.sh"
cat >>"$work/run.sh" <<'SH'
current=""
echo "doc-commands: $doc_blocks_total command blocks (README.md \"Using it\", docs/troubleshooting.md): $ran ran as documented, $skipped skipped"
SH
rc=0
$namespace sh "$work/run.sh" || rc=$?
exit $rc
