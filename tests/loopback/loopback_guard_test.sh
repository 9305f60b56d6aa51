#!/bin/sh
# The loopback guard (tests/loopback/loopback_guard.py), which every suite
# that starts MPI or UCX runs under, judged on calls whose answer is known:
#   1. loopback addresses of both families, v4-mapped ones and wildcard binds
#      pass, and the guard says how many it saw;
#   2. addresses outside loopback in connect, sendto, sendmsg and bind fail,
#      each named -- made inside a network namespace of the test's own, where
#      only an unconfigured lo exists and nothing can leave the machine;
#   3. the command's own failure is its exit status;
#   4. mpirun -np 2 of an mpi4py program on the UCX pml, with the project's
#      settings (scripts/mpi-loopback.env): all on loopback.
#   tests/loopback/loopback_guard_test.sh GUARD SOCKET_PROBE MPI_LOOPBACK_ENV
set -u
guard=$1 probe=$2 loopback_env=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0 skipped=0
ok() { pass=$((pass + 1)); echo "[       OK ] $1"; }
bad() { fail=$((fail + 1)); echo "[  FAILED  ] $1"; sed 's/^/    /' "$tmp/out"; }
skip() { skipped=$((skipped + 1)); echo "[  SKIPPED ] $1"; }

if ! command -v strace >/dev/null 2>&1 || ! strace -f -qq -o /dev/null true 2>/dev/null; then
    echo "SKIPPED: strace cannot trace here (Debian package strace; ptrace allowed?)"
    exit 77
fi

"$guard" -- "$probe" connect 127.0.0.1 9 sendto 127.8.9.10 9 sendmsg ::1 9 connect ::ffff:127.0.0.1 9 \
    bind 0.0.0.0 0 bind :: 0 >"$tmp/out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q '^loopback guard: socket_probe: 6 socket addresses in 1 processes, all on loopback (2 wildcard binds' "$tmp/out"; then
    ok "loopback and wildcard binds pass, all six counted"
else
    bad "loopback and wildcard binds pass (exit $rc)"
fi

# A network namespace of our own: as root directly, otherwise in a user
# namespace.  Where neither can be made, step 2 cannot run safely.
netns=""
if unshare -n true 2>/dev/null; then
    netns="unshare -n"
elif unshare -rn true 2>/dev/null; then
    netns="unshare -rn"
fi
outside() { # NAME CALL ADDRESS: one call outside loopback must fail the guard and be named
    $netns "$guard" -- "$probe" connect 127.0.0.1 9 "$2" "$3" 9 >"$tmp/out" 2>&1
    rc=$?
    if [ "$rc" -eq 1 ] && grep -q "^loopback guard: OUTSIDE LOOPBACK: .*$2(.*$3" "$tmp/out" &&
        grep -q '^loopback guard: socket_probe: 1 of 2 socket addresses in 1 processes outside loopback$' "$tmp/out"; then
        ok "$1"
    else
        bad "$1 (exit $rc)"
    fi
}
if [ -n "$netns" ]; then
    outside "connect to 198.51.100.7 fails" connect 198.51.100.7
    outside "sendto 2001:db8::1 fails" sendto 2001:db8::1
    outside "sendmsg to 203.0.113.5 fails" sendmsg 203.0.113.5
    outside "sendto a v4-mapped 198.51.100.9 fails" sendto ::ffff:198.51.100.9
    outside "bind to 198.51.100.7 fails" bind 198.51.100.7
    outside "connect to the unspecified address fails (only bind may take it)" connect 0.0.0.0
else
    skip "addresses outside loopback: no network namespace can be made here (unshare -n, unshare -rn)"
fi

"$guard" -- sh -c 'exit 3' >"$tmp/out" 2>&1
rc=$?
[ "$rc" -eq 3 ] && ok "the command's exit status comes back" || bad "the command's exit status comes back (got $rc)"

if command -v mpirun >/dev/null 2>&1 && /usr/bin/python3 -c 'import mpi4py' 2>/dev/null; then
    (
        set -a
        # shellcheck disable=SC1090
        . "$loopback_env"
        set +a
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        timeout 120 "$guard" -- mpirun --oversubscribe -np 2 --mca pml ucx --mca pml_ucx_tls any \
            --mca pml_ucx_devices any /usr/bin/python3 -c \
            'from mpi4py import MPI; c = MPI.COMM_WORLD; assert c.allreduce(1) == c.size'
    ) >"$tmp/out" 2>&1
    rc=$?
    grep '^loopback guard:' "$tmp/out"
    if [ "$rc" -eq 0 ] && grep -q '^loopback guard: mpirun: [1-9][0-9]* socket addresses in [0-9]* processes, all on loopback' "$tmp/out"; then
        ok "mpirun -np 2 on the UCX pml with scripts/mpi-loopback.env: all on loopback"
    else
        bad "mpirun -np 2 on the UCX pml with scripts/mpi-loopback.env (exit $rc)"
    fi
else
    skip "mpirun -np 2: Open MPI or mpi4py not installed (openmpi-bin, python3-mpi4py)"
fi

echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
