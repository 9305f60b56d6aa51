#!/bin/sh
# `ldsearch --diff` on real programs from Debian's archive where dlopen,
# dlclose and child processes are common: each one is run under the real
# loader and every search of every process is replayed; each must end
# "N searches in M processes: all identical", with no log line skipped.
# A program that is not installed is SKIPPED, with its Debian package.
#   tests/realworld/realworld_test.sh LDSEARCH MPI_LOOPBACK_ENV
#   tests/realworld/realworld_test.sh LDSEARCH MPI_LOOPBACK_ENV --hooks PRELOAD [HAVE_CUDA_HOOKS]
# With --hooks, the same programs are not diffed but each run as it is and
# under ldshim's CUDA hooks (LD_PRELOAD=PRELOAD LDSHIM_CUDA_HOOKS=1), by
# tests/realworld/hooks_run.sh: same exit status and output, no crash
# (SKIPPED when HAVE_CUDA_HOOKS is 0: a build without CUDA's headers).
# Two cases are run in both modes: python3 importing every extension module
# of Debian's packages (tests/realworld/import_all.py) and a small CPU
# workload with Debian's python3-torch (tests/realworld/torch_cpu.py).
# MPI and UCX keep to loopback with scripts/mpi-loopback.env (meson runs
# this script under tests/loopback's guard).
# Each process is modelled with the environment it started with (R's
# launcher exports LD_LIBRARY_PATH before it execs the R binary).
set -u
LDSEARCH=$1
set -a
# shellcheck disable=SC1090
. "$2"
set +a
case $LDSEARCH in /*) ;; *) LDSEARCH=$PWD/$LDSEARCH ;; esac
here=$(cd "$(dirname "$0")" && pwd)
preload=""
if [ "${3:-}" = --hooks ]; then
    preload=$4
    case $preload in /*) ;; *) preload=$PWD/$preload ;; esac
    [ "${5:-1}" = 1 ] || {
        echo "SKIPPED: built without CUDA's headers, LDSHIM_CUDA_HOOKS=1 installs no hook"
        exit 77
    }
    [ -z "${LDSHIM_TEST_EMULATOR:-}" ] || {
        echo "SKIPPED: this machine's programs cannot load a preload built for $LDSHIM_TEST_EMULATOR"
        exit 77
    }
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1
pass=0 fail=0 skipped=0 nondeterministic=0 crashed=0

# case NAME PACKAGE NEEDS COMMAND...: NEEDS is a program or a python module
# ("py:numpy") that must be there.
case_() {
    name=$1 package=$2 needs=$3
    shift 3
    case $needs in
        py:*) /usr/bin/python3 -c "import ${needs#py:}" 2>/dev/null ;;
        *) command -v "$needs" >/dev/null 2>&1 ;;
    esac || {
        skipped=$((skipped + 1))
        echo "[ SKIPPED  ] $name: $needs is not installed (Debian package $package)"
        return
    }
    if [ -n "$preload" ]; then
        sh "$here/hooks_run.sh" "$preload" "$name" -- "$@" >"$tmp/hooks"
        rc=$?
        cat "$tmp/hooks"
        case $rc in
            0) if grep -q '^\[ NONDETERM\]' "$tmp/hooks"; then
                   nondeterministic=$((nondeterministic + 1))
               else
                   pass=$((pass + 1))
               fi ;;
            2) crashed=$((crashed + 1)) fail=$((fail + 1)) ;;
            *) fail=$((fail + 1)) ;;
        esac
        return
    fi
    timeout 300 "$LDSEARCH" --diff -- "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    summary=$(grep -E '^[0-9]+ (of [0-9]+ )?searches in [0-9]+ process' "$tmp/out" | tail -n 1)
    if [ "$rc" -eq 0 ] && echo "$summary" | grep -q ': all identical$' && ! grep -q -e 'skipped' -e 'own environment' "$tmp/err"; then
        pass=$((pass + 1))
        echo "[ REAL     ] $name: $summary"
    else
        fail=$((fail + 1))
        echo "[ FAILED   ] $name: exit $rc: ${summary:-no summary}"
        tail -n 40 "$tmp/out" "$tmp/err"
    fi
}

mpi="--allow-run-as-root --oversubscribe"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
case_ "mpirun -np 2 hostname" openmpi-bin mpirun mpirun $mpi -np 2 hostname
# A real MPI program on the UCX pml (ucm patches dlopen in every rank).
ucx="--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any"
# shellcheck disable=SC2086
case_ "mpirun -np 2, mpi4py on the UCX pml" python3-mpi4py py:mpi4py mpirun $mpi -np 2 $ucx \
    /usr/bin/python3 -c 'from mpi4py import MPI; c = MPI.COMM_WORLD; assert c.allreduce(1) == c.size'
case_ "ompi_info" openmpi-bin ompi_info ompi_info
# -c dlopens every UCX module to read its configuration, as -d does, but opens
# no device: -d binds a socket on every network interface, eth0's included.
case_ "ucx_info -c" ucx-utils ucx_info ucx_info -c
case_ "python3: numpy" python3-numpy py:numpy /usr/bin/python3 -c 'import numpy; numpy.ones(3).sum()'
case_ "python3: scipy" python3-scipy py:scipy /usr/bin/python3 -c 'import scipy.linalg, scipy.sparse.linalg, scipy.fft'
case_ "R through its launcher" r-base-core Rscript Rscript -e 'library(stats); library(tools); invisible(fft(1:8))'
case_ "python3: ssl, sqlite3, ctypes" python3 py:ctypes /usr/bin/python3 -c 'import ssl, sqlite3, ctypes, decimal, lzma'
case_ "gdb's python" gdb gdb gdb -batch -ex 'python import os'
case_ "java -version" default-jre-headless java java -version
case_ "perl with XS modules" perl perl perl -MPOSIX -MSocket -MList::Util -e 1
case_ "systemctl (RUNPATH to systemd's private libraries)" systemd systemctl systemctl --version
case_ "apt-cache (method processes)" apt apt-cache apt-cache policy bash
case_ "tar -J (execs xz)" tar xz tar -cJf "$tmp/x.tar.xz" -C /etc hostname
case_ "python3: every extension module of Debian's packages" python3 python3 \
    /usr/bin/python3 "$here/import_all.py"
case_ "python3-torch: a small CPU workload" python3-torch py:torch /usr/bin/python3 "$here/torch_cpu.py"
if [ -n "$preload" ]; then
    echo "$pass same under the hooks, $nondeterministic nondeterministic (not compared)," \
        "$((fail - crashed)) different, $crashed crashed, $skipped skipped"
else
    echo "$pass passed, $fail failed, $skipped skipped"
fi
[ "$fail" -eq 0 ]
