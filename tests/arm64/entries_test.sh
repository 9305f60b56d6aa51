#!/bin/sh
# aarch64's jump entries (resolver/dlopen_entry.h, the dlsym trampolines of
# resolver/front_entries.cc), under qemu-user: whatever ldshim answers or passes
# on, glibc must still see the real caller.
#   [ARM64_ROOT=ROOT] tests/arm64/entries_test.sh BUILD_ARM64|ARM64_INSTALL_TREE
# BUILD_ARM64 is an aarch64 build (scripts/cross-aarch64.sh).  Checks, each
# against the same program without the preload:
#   - a library whose RUNPATH holds the plugin dlopens it; with the preload
#     switched off (LDSHIM_DISABLE=1) the call goes on to glibc by a jump,
#     and glibc searches the library's RUNPATH, not the preload's;
#   - with the dlsym hook written into the program's slot
#     (LDSHIM_CUDA_HOOKS=1), dlsym(RTLD_NEXT) from the program still finds
#     the next definition after the program, not after libldshim.
# Exit 77 (SKIPPED) without the cross compiler or a way to run arm64.
set -eu
# shellcheck source=tests/arm64/preload_test_setup.sh
. "$(dirname "$0")/preload_test_setup.sh"
mkdir plug
cat > a.c <<'EOF'
#include <dlfcn.h>
int marker(void) { return 1; }
__attribute__((noinline)) void *a_open(const char *n) {
    void *h = dlopen(n, RTLD_NOW);
    __asm__ volatile("" ::: "memory"); /* a call, not a tail jump */
    return h;
}
EOF
echo 'int marker(void) { return 2; }' > z.c
echo 'int plug(void) { return 42; }' > plug.c
cat > main.c <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
void *a_open(const char *);
int main(void) {
    int (*m)(void) = (int (*)(void))dlsym(RTLD_NEXT, "marker");
    printf("plugin %s, next marker %d\n", a_open("libplug.so") ? "found" : "missing", m ? m() : -1);
    return 0;
}
EOF
cc=aarch64-linux-gnu-gcc
$cc -O2 -fPIC -shared -o plug/libplug.so plug.c
$cc -O2 -fPIC -shared -o libZ.so z.c
# libA: RUNPATH to its plugin; libZ after libldshim in the scope.
# shellcheck disable=SC2016  # $ORIGIN is for the loader
$cc -O2 -fPIC -shared -o libA.so a.c -Wl,--no-as-needed -L. -lZ -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/plug:$ORIGIN'
# shellcheck disable=SC2016
$cc -O2 -o main main.c -Wl,--no-as-needed -L. -lA -Wl,-rpath,'$ORIGIN'

want=$(run ./main)
[ "$want" = "plugin found, next marker 1" ] || { echo "FAIL: without ldshim: $want"; exit 1; }
fail=0
for env in "" "LDSHIM_DISABLE=1" "LDSHIM_CUDA_HOOKS=1" "LDSHIM_CUDA_HOOKS=1 LDSHIM_DISABLE=1"; do
    # shellcheck disable=SC2086  # the words of $env are separate assignments
    got=$(run env LD_PRELOAD="$preload" $env ./main 2>&1)
    if [ "$got" = "$want" ]; then
        echo "ok: ${env:-(defaults)}: $got"
    else
        echo "FAIL: ${env:-(defaults)}: $got (without ldshim: $want)"
        fail=1
    fi
done
exit $fail
