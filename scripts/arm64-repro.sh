#!/bin/sh
# The report's failure on aarch64: the Julia-shaped program
# (tests/repro/fixtures/julia_mpi.c, laid out as julia_tree.sh does) with
# Debian's arm64 Open MPI + UCX, run under qemu-user in a chroot.  UCX's ucm
# in reloc mode patches dlopen in libjulia's GOT, so glibc sees libucm as the
# caller and libjulia's RPATH/RUNPATH is ignored; LD_PRELOAD of ldshim's
# arm64 build (build-arm64, scripts/cross-aarch64.sh) repairs it.
#   scripts/arm64-repro.sh [bookworm|trixie]
#   scripts/arm64-repro.sh --root-only   make bookworm's copy below, run nothing
# bookworm (Open MPI 4.1.4, UCX 1.13.1): two ranks under mpirun, its
# out-of-band traffic pinned to lo.  trixie (Open MPI 5.0.7, UCX 1.18):
# PRRTE's mpirun pinned to lo exits 213 with no output under qemu-user, so
# each layout runs as an MPI singleton (one rank, MPI_Init with the UCX pml
# and no daemon: no out-of-band traffic at all).
# The packages go into a copy of scripts/arm64-root.sh's root
# ($LDSHIM_ARM64_ROOTS_DIR/SUITE-mpi, made once; the original is not
# touched).  /proc, /sys, /dev/pts and /dev/shm are mounted in the copy only
# while apt or the runs need them.  Every run carries scripts/mpi-loopback.env
# and pins Open MPI and UCX to lo.  Prints one table; exits 1 if a cell is not
# as expected, 77 (SKIPPED) when the root, qemu or the tools are missing.
set -eu
cd "$(dirname "$0")/.."
here=$(pwd)
suite=${1:-bookworm}
case $suite in
    -h | --help)
        sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    bookworm | --root-only) suite=bookworm ;;
    trixie) ;;
    *)
        echo "arm64-repro: unknown suite '$suite' (bookworm or trixie)" >&2
        exit 2
        ;;
esac
dir=${LDSHIM_ARM64_ROOTS_DIR:-/var/cache/ldshim/arm64-roots}
build=${LDSHIM_ARM64_BUILD:-build-arm64}
skip() {
    echo "arm64-repro: SKIPPED: $*" >&2
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, mount)"
if [ ! -e "$dir/$suite.done" ] || [ ! -x "$dir/$suite/usr/bin/env" ]; then
    skip "no arm64 $suite root in $dir (scripts/arm64-root.sh $suite)"
fi
[ "$(head -n 1 /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null)" = enabled ] ||
    skip "qemu-aarch64 is not registered in binfmt_misc (scripts/arm64-root.sh does it)"
command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || skip "no aarch64-linux-gnu-gcc (gcc-aarch64-linux-gnu)"
for f in preload/libldshim_preload.so lib/libldshim.so.0 lib/ldshim/probe/libldshim-probe.so; do
    [ -e "$build/$f" ] || skip "no aarch64 build of ldshim in $build ($f; scripts/cross-aarch64.sh)"
done

root=$dir/$suite-mpi
mounted=""
unmount() {
    for m in $mounted; do
        umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
    mounted=""
}
trap unmount EXIT
trap 'exit 130' INT TERM
# mount_in ROOT: /proc, /sys, /dev/pts, /dev/shm in ROOT, unmounted by unmount.
mount_in() {
    mount -t proc proc "$1/proc"
    mounted="$1/proc $mounted"
    mount -t sysfs sysfs "$1/sys"
    mounted="$1/sys $mounted"
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$1/dev/pts"
    mounted="$1/dev/pts $mounted"
    mount -t tmpfs -o size=256m tmpfs "$1/dev/shm"
    mounted="$1/dev/shm $mounted"
}

# stale_mounts ROOT: what a killed run left mounted in ROOT, unmounted.
stale_mounts() {
    for m in dev/shm dev/pts sys proc; do
        if mountpoint -q "$1/$m" 2>/dev/null; then umount "$1/$m" || umount -l "$1/$m"; fi
    done
}
stale_mounts "$root.tmp"
stale_mounts "$root"

# 1. The copy with Open MPI + UCX, and the dlopen interposer tools that
# tests/arm64/tools_test.sh runs, made once (through $root.tmp, so that an
# interrupted run never leaves half of one); $root.done lists its packages,
# and a copy made with fewer gets the others.
packages="openmpi-bin libopenmpi-dev libucx0 ucx-utils heaptrack uftrace fakechroot"
install_into() { # ROOT
    log=$dir/$suite-mpi.log
    echo "arm64-repro: installing $packages into $1 (log: $log)" >&2
    mount_in "$1"
    # shellcheck disable=SC2086 # one word per package
    if ! { chroot "$1" apt-get update -qq &&
        chroot "$1" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends $packages; } >"$log" 2>&1; then
        unmount
        tail -n 20 "$log" >&2
        echo "arm64-repro: apt-get in the $suite copy failed (log: $log)" >&2
        exit 1
    fi
    chroot "$1" apt-get clean
    unmount
}
if [ ! -e "$root.done" ]; then
    rm -rf --one-file-system "$root.tmp"
    cp -a "$dir/$suite" "$root.tmp"
    install_into "$root.tmp"
    rm -rf --one-file-system "$root"
    mv "$root.tmp" "$root"
    echo "$packages" >"$root.done"
elif [ "$(cat "$root.done")" != "$packages" ]; then
    install_into "$root"
    echo "$packages" >"$root.done"
fi
[ "${1:-}" != --root-only ] || exit 0

# 2. The layout, cross-compiled against the copy as sysroot (-B/-L: its own
# crt files and libc, not the cross toolchain's), as julia_tree.sh lays it out:
#   bin/julia                 RPATH $ORIGIN/../lib, needs libjulia.so.1
#   lib/libjulia.so.1         RPATH (or RUNPATH) $ORIGIN:$ORIGIN/julia;
#                             `julia NAME mpi`: MPI_Init, then dlopen NAME
#   lib/julia/libopenlibm.so  found only through libjulia's RPATH/RUNPATH
# one tree per kind of path, in /opt/ldshim-repro/{rpath,runpath}, and
# ldshim's build in /opt/ldshim/lib as installed (scripts/arm64-lib.sh).
src=$here/tests/repro/fixtures/julia_mpi.c
ml=$root/usr/lib/aarch64-linux-gnu
cc_arm64() {
    nice aarch64-linux-gnu-gcc --sysroot="$root" -B"$ml/" -L"$ml" -L"$root/lib/aarch64-linux-gnu" -O1 "$@"
}
rm -rf "$root/opt/ldshim-repro" "$root/opt/ldshim"
scripts/arm64-lib.sh "$build" "$root/opt/ldshim/lib"
for kind in rpath runpath; do
    t=$root/opt/ldshim-repro/$kind
    mkdir -p "$t/bin" "$t/lib/julia"
    dtags=--disable-new-dtags
    [ "$kind" = rpath ] || dtags=--enable-new-dtags
    printf 'int fixture_id(void) { return 1; }\n' >"$t/lib/julia/openlibm.c"
    cc_arm64 -shared -fPIC -o "$t/lib/julia/libopenlibm.so" "$t/lib/julia/openlibm.c"
    rm -f "$t/lib/julia/openlibm.c"
    # shellcheck disable=SC2016 # $ORIGIN is the loader's, not the shell's
    cc_arm64 -shared -fPIC -DNO_MAIN -o "$t/lib/libjulia.so.1" -Wl,-soname,libjulia.so.1 "$src" -ldl \
        -Wl,"$dtags" -Wl,-rpath,'$ORIGIN:$ORIGIN/julia'
    # shellcheck disable=SC2016
    cc_arm64 -o "$t/bin/julia" "$src" -L"$t/lib" -l:libjulia.so.1 -ldl \
        -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib'
done

# 3. The runs, in the chroot under qemu.  scripts/mpi-loopback.env, each
# setting both in the environment and as mpirun's own argument (--mca for
# Open MPI's, -x for UCX's, which then reaches the ranks); Open MPI's tcp
# pinned to lo on top.  UCX: its pml with any transport and device, its
# network devices lo only; cma (process_vm_readv) is left out, as qemu-user
# may not give it.
loopback_env=""
loopback_args=""
while IFS= read -r line; do
    case $line in "" | "#"*) continue ;; esac
    k=${line%%=*}
    loopback_env="$loopback_env $line"
    case $k in
        # Given below as they are here (lo); mpirun refuses an --mca twice.
        OMPI_MCA_btl_tcp_if_include | OMPI_MCA_oob_tcp_if_include | UCX_NET_DEVICES) ;;
        OMPI_MCA_*) loopback_args="$loopback_args --mca ${k#OMPI_MCA_} ${line#*=}" ;;
        *) loopback_args="$loopback_args -x $line" ;;
    esac
done <scripts/mpi-loopback.env
case $loopback_env in *UCX_NET_DEVICES=lo*) ;; *)
    echo "arm64-repro: scripts/mpi-loopback.env does not set UCX_NET_DEVICES=lo" >&2
    exit 1
    ;;
esac
preload=/opt/ldshim/lib/libldshim_preload.so
out=$(mktemp -d)
ranks=2
[ "$suite" != trixie ] || ranks=1
# run LAYOUT MODE PRELOAD: prints ok, FAIL (libopenlibm not found on both
# ranks) or ERR (anything else); the output is kept in $out.  MODE: reloc
# (the report: ucm's hooks in reloc mode, UCX_MEM_DLOPEN_PROCESS_RPATH=n as
# in the report and tests/repro), reloc-rpath (the same with UCX's RPATH
# emulation on, its default) or plain (UCX's defaults, no reloc: the control).
run() {
    case $2 in
        reloc) extra="-x UCX_MEM_MMAP_HOOK_MODE=reloc -x UCX_MEM_MALLOC_RELOC=n -x UCX_MEM_DLOPEN_PROCESS_RPATH=n" ;;
        reloc-rpath) extra="-x UCX_MEM_MMAP_HOOK_MODE=reloc -x UCX_MEM_MALLOC_RELOC=n" ;;
        *) extra="" ;;
    esac
    [ "$3" = no ] || extra="$extra -x LD_PRELOAD=$preload -x LDSHIM_DEBUG=1"
    log=$out/$1-$2-$3.log
    if [ "$ranks" -eq 1 ]; then
        # A singleton: mpirun's settings as the environment (-x VAR=V: VAR=V).
        envx=$(echo "$extra" | sed 's/-x //g')
        # shellcheck disable=SC2086 # word lists
        chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root $loopback_env \
            OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_tls=any OMPI_MCA_pml_ucx_devices=any \
            OMPI_MCA_opal_common_ucx_opal_mem_hooks=0 UCX_TLS=self,posix,sysv,tcp UCX_NET_DEVICES=lo \
            UCX_MEM_LOG_LEVEL=debug $envx \
            timeout 300 "/opt/ldshim-repro/$1/bin/julia" libopenlibm.so mpi >"$log" 2>&1 ||
            echo "exit status $?" >>"$log"
    else
        # shellcheck disable=SC2086 # word lists
        chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root $loopback_env \
            UCX_TLS=self,posix,sysv,tcp UCX_NET_DEVICES=lo \
            timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 \
            --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo $loopback_args \
            --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca opal_common_ucx_opal_mem_hooks 0 \
            -x UCX_TLS=self,posix,sysv,tcp -x UCX_NET_DEVICES=lo -x UCX_MEM_LOG_LEVEL=debug $extra \
            "/opt/ldshim-repro/$1/bin/julia" libopenlibm.so mpi >"$log" 2>&1 || echo "exit status $?" >>"$log"
    fi
    if [ "$(grep -c "^RESULT /opt/ldshim-repro/$1/.*lib/julia/libopenlibm\.so id=1\$" "$log")" -eq "$ranks" ]; then
        echo ok
    elif [ "$(grep -c '^ERROR libopenlibm\.so: cannot open shared object file' "$log")" -eq "$ranks" ]; then
        echo FAIL
    else
        echo ERR
    fi
}
# ucm_saw LOG: yes when ucm's dlopen took libjulia's call in that run (its
# debug line "open module: libopenlibm.so"), no otherwise.
ucm_saw() {
    if grep -q 'UCX  DEBUG open module: libopenlibm\.so' "$1"; then echo yes; else echo no; fi
}
# ldshim_said LOG: how ldshim found libopenlibm on every rank (LDSHIM_DEBUG=1:
# "found via RPATH"), or "-".
ldshim_said() {
    w=$(sed -n 's/^ldshim: dlopen("libopenlibm\.so") from .*: found via \([A-Z_]*\) -> .*/\1/p' "$1" | sort | uniq -c)
    case $w in *" $ranks "*) echo "${w##* }" ;; *) echo - ;; esac
}

mount_in "$root"
bad=0
badlogs=""
printf '%-22s %-14s %-14s %-18s %s\n' "layout (UCX mode)" "without ldshim" "with ldshim" "ucm hooked dlopen" "ldshim found it via"
# row LAYOUT MODE WANT_WITHOUT WANT_WITH WANT_UCM WANT_VIA
row() {
    a=$(run "$1" "$2" no)
    b=$(run "$1" "$2" yes)
    u=$(ucm_saw "$out/$1-$2-no.log")
    v=$(ldshim_said "$out/$1-$2-yes.log")
    ca=$a cb=$b cu=$u cv=$v
    [ "$a" = "$3" ] || { ca="$a (want $3)"; badlogs="$badlogs $out/$1-$2-no.log"; }
    [ "$b" = "$4" ] || { cb="$b (want $4)"; badlogs="$badlogs $out/$1-$2-yes.log"; }
    [ "$u" = "$5" ] || { cu="$u (want $5)"; badlogs="$badlogs $out/$1-$2-no.log"; }
    [ "$v" = "$6" ] || { cv="$v (want $6)"; badlogs="$badlogs $out/$1-$2-yes.log"; }
    [ "$ca$cb$cu$cv" = "$a$b$u$v" ] || bad=1
    printf '%-22s %-14s %-14s %-18s %s\n' "$1 ($2)" "$ca" "$cb" "$cu" "$cv"
}
row rpath reloc FAIL ok yes RPATH
row runpath reloc FAIL ok yes RUNPATH
row rpath reloc-rpath ok ok yes RPATH
# UCX's defaults: 1.13's ucm leaves dlopen alone; 1.18's takes the call
# too (its debug log says so), and its RPATH emulation, on by default,
# finds the file.
if [ "$suite" = trixie ]; then row rpath plain ok ok yes RPATH; else row rpath plain ok ok no RPATH; fi
unmount
if [ "$bad" -ne 0 ]; then
    # shellcheck disable=SC2086 # a word list of paths without blanks
    for f in $(printf '%s\n' $badlogs | sort -u); do
        echo "== $f" >&2
        grep -vE 'UCX  (DEBUG|DIAG)|^ldshim:' "$f" | tail -n 15 >&2
    done
    echo "arm64-repro: $suite: a cell is not as expected (logs above, in $out)" >&2
    exit 1
fi
evidence=$(grep -m1 'UCX  DEBUG open module: libopenlibm\.so' "$out/rpath-reloc-no.log" | sed 's/^.*UCX  DEBUG //')
error=$(grep -m1 '^ERROR' "$out/rpath-reloc-no.log")
rm -rf "$out"
echo "arm64-repro: $suite: as expected; without ldshim ucm took the call ($evidence) and: $error"
