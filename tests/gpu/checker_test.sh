#!/bin/sh
# tests/gpu's parts that run without a GPU: frameworks.py's checker (its
# ctypes part) under the preload against the stand-in libcuda.so.1 of
# fake_driver.c: every buffer agrees; a driver that calls managed memory
# device memory is reported, pointer by pointer; without the preload, and
# for a framework that is absent or sees no device, the statuses run.sh
# reads.  Then run.sh itself exits 77 on a machine without a driver.
#   checker_test.sh PRELOAD FAKE_DRIVER_DIR
# Exit 0 all as expected, 1 otherwise.
set -u
cd "$(dirname "$0")/../.." || exit 1
preload=$1 fake=$2
if [ "${LDSHIM_HAVE_CUDA_HOOKS:-1}" = 0 ]; then
    echo "SKIPPED: libldshim was built without CUDA headers (option cudatoolkit_include), so it has no CUDA hooks"
    exit 77
fi
if [ -n "${LDSHIM_TEST_EMULATOR:-}" ]; then
    echo "SKIPPED: python3 is the build machine's, the preload runs under $LDSHIM_TEST_EMULATOR"
    exit 77
fi
failed=0
# expect WHAT RC PATTERN COUNT: the last run's status was RC and PATTERN
# (grep -E) matched COUNT of its lines.
expect() {
    n=$(printf '%s\n' "$out" | grep -cE "$3")
    if [ "$rc" = "$2" ] && [ "$n" = "$4" ]; then
        echo "ok: $1"
    else
        echo "FAILED: $1: exit $rc (want $2), $n lines /$3/ (want $4); output:"
        printf '%s\n' "$out" | sed 's/^/  | /'
        failed=1
    fi
}
hooked() { env LD_LIBRARY_PATH="$fake" LD_PRELOAD="$preload" LDSHIM_CUDA_HOOKS=1 "$@" 2>&1; }

out=$(hooked python3 tests/gpu/frameworks.py --framework ctypes)
rc=$?
expect "ctypes: five kinds, each alive and after free" 0 '^ok   ctypes cuMem.*after free: driver unregistered/registry unregistered$' 5
expect "ctypes: the summary" 0 '^ctypes: hook paths 0x[0-9a-f]+, 102 comparisons, 0 mismatches, 0 cases failed$' 1

out=$(FAKE_CUDA_LIE=1 hooked python3 tests/gpu/frameworks.py --framework ctypes)
rc=$?
expect "a lying driver: each managed pointer named" 1 \
    '^MISMATCH ctypes cuMemAllocManaged \(alive\) 0x[0-9a-f]+: driver cuda dev 0 .*, registry managed dev 0 ' 12
expect "a lying driver: the case fails, the others pass" 1 '^(FAIL ctypes cuMemAllocManaged|ok   ctypes)' 5

out=$(env LD_LIBRARY_PATH="$fake" python3 tests/gpu/frameworks.py --framework ctypes 2>&1)
rc=$?
expect "without the preload" 1 '^FAILED: run with LD_PRELOAD=libldshim_preload.so LDSHIM_CUDA_HOOKS=1$' 1

out=$(hooked python3 tests/gpu/frameworks.py --framework torch)
rc=$?
expect "torch absent or without a device: SKIPPED" 77 '^SKIPPED: torch (not importable|sees no CUDA device)' 1

if [ -e /dev/nvidiactl ] || command -v nvidia-smi >/dev/null 2>&1; then
    echo "SKIPPED: run.sh without a driver (this machine has one)"
else
    out=$(tests/gpu/run.sh 2>&1)
    rc=$?
    expect "run.sh without a driver" 77 '^gpu: SKIPPED: no NVIDIA driver on this machine$' 1
fi
exit $failed
