#!/bin/sh
# The runtime resolver on aarch64, under qemu-user: the report's bug.  An
# interposer in front (an LD_PRELOAD'ed dlopen wrapper calling
# dlsym(RTLD_NEXT, "dlopen")) makes glibc see the wrapper as the caller, so
# a library's plugin is not found; with ldshim's preload behind the
# wrapper the plugin must be found, and LDSHIM_DEBUG=1 must say ldshim
# resolved the call (its in-process configuration of the aarch64 loader,
# host/loader_in_process.cc), not that it left it to glibc.
#   [ARM64_ROOT=ROOT] tests/arm64/resolver_test.sh BUILD_ARM64|ARM64_INSTALL_TREE
# BUILD_ARM64 is an aarch64 build (scripts/cross-aarch64.sh).  The plugin
# is reached by each of:
#   a  the caller's DT_RUNPATH,
#   b  the caller's DT_RPATH,
#   c  the program's DT_RPATH (the caller has neither);
# each plugin also has a copy in atomics/, the legacy subdirectory glibc
# 2.36 tries when AT_HWCAP has HWCAP_ATOMICS, so the file chosen depends on
# the CPU: each case runs on qemu's default CPU and as QEMU_CPU=cortex-a72
# (no atomics), and the file ldshim opens must be the one plain glibc opens
# without the interposer, on the same CPU.
# Exit 77 (SKIPPED) without the cross compiler, the build or a way to run
# arm64 programs.
set -eu
# shellcheck source=tests/arm64/preload_test_setup.sh
. "$(dirname "$0")/preload_test_setup.sh"
mkdir -p ra/atomics rb/atomics rc/atomics wrapdeps

# The callers: one library per case, each with its own plugin.
for c in a b c; do
    cat > libcall$c.c <<EOF
#include <dlfcn.h>
__attribute__((noinline)) void *${c}_open(const char *n) {
    void *h = dlopen(n, RTLD_NOW);
    __asm__ volatile("" ::: "memory"); /* a call, not a tail jump */
    return h;
}
EOF
done
echo 'const char *plug_where(void) { return WHERE; }' > plug.c
# The interposer: a dlopen wrapper, as profilers and path translators have.
# Its own RUNPATH (as modern linkers write one) keeps glibc from the
# program's RPATH when the wrapper is taken for the caller.
cat > wrap.c <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
void *dlopen(const char *file, int mode) {
    void *(*next)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    void *h = next ? next(file, mode) : 0;
    __asm__ volatile("" ::: "memory");
    return h;
}
EOF
cat > main.c <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
void *a_open(const char *), *b_open(const char *), *c_open(const char *);
int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "a";
    char name[32];
    snprintf(name, sizeof name, "libplug%s.so", c);
    void *h = !strcmp(c, "a") ? a_open(name) : !strcmp(c, "b") ? b_open(name) : c_open(name);
    struct link_map *m = 0;
    if (!h || dlinfo(h, RTLD_DI_LINKMAP, &m) != 0) {
        printf("plugin missing\n");
        return 0;
    }
    const char *(*where)(void) = (const char *(*)(void))dlsym(h, "plug_where");
    printf("plugin %s (%s)\n", m->l_name, where ? where() : "?");
    return 0;
}
EOF
cc=aarch64-linux-gnu-gcc
for c in a b c; do
    $cc -O2 -fPIC -shared -DWHERE='"base"' -o r$c/libplug$c.so plug.c
    $cc -O2 -fPIC -shared -DWHERE='"atomics"' -o r$c/atomics/libplug$c.so plug.c
done
# shellcheck disable=SC2016  # $ORIGIN is for the loader
$cc -O2 -fPIC -shared -o libcalla.so libcalla.c -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/ra'
# shellcheck disable=SC2016
$cc -O2 -fPIC -shared -o libcallb.so libcallb.c -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/rb'
$cc -O2 -fPIC -shared -o libcallc.so libcallc.c
# shellcheck disable=SC2016
$cc -O2 -fPIC -shared -o libwrap.so wrap.c -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/wrapdeps'
# shellcheck disable=SC2016
$cc -O2 -o main main.c -Wl,--no-as-needed -L. -lcalla -lcallb -lcallc -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN:$ORIGIN/rc'
readelf() { aarch64-linux-gnu-readelf "$@" 2>/dev/null || command readelf "$@"; }
readelf -d libcalla.so | grep -q RUNPATH || { echo "FAIL: libcalla.so has no RUNPATH"; exit 1; }
readelf -d libcallb.so | grep -q '(RPATH)' || { echo "FAIL: libcallb.so has no RPATH"; exit 1; }
readelf -d main | grep -q '(RPATH)' || { echo "FAIL: main has no RPATH"; exit 1; }

fail=0
report() { # STATUS WHAT DETAIL
    echo "$1: $2: $3"
    [ "$1" = ok ] || fail=1
}
files=""
for cpu in default cortex-a72; do
    for c in a b c; do
        what="case $c ($cpu CPU)"
        if [ $cpu = default ]; then qcpu=""; else qcpu="QEMU_CPU=$cpu"; fi
        # shellcheck disable=SC2086  # $qcpu is one assignment or none
        want=$(run env $qcpu ./main $c)
        # shellcheck disable=SC2086
        bug=$(run env $qcpu LD_PRELOAD="$itmp/libwrap.so" ./main $c)
        # shellcheck disable=SC2086
        got=$(run env $qcpu LD_PRELOAD="$itmp/libwrap.so $preload" LDSHIM_DEBUG=1 ./main $c 2>debug.txt)
        case $want in
            "plugin $itmp/"*) ;;
            *) report FAIL "$what" "without the interposer, glibc: $want" && continue ;;
        esac
        [ "$bug" = "plugin missing" ] || report FAIL "$what" "the interposer does not hide the caller: $bug"
        if [ "$got" != "$want" ]; then
            report FAIL "$what" "with ldshim: $got (glibc without the interposer: $want)"
        elif grep -q 'left to glibc\|unresolved' debug.txt || ! grep -q "libplug$c.so\").*-> " debug.txt; then
            report FAIL "$what" "$got, but not resolved by ldshim: $(cat debug.txt)"
        else
            report ok "$what" "$got; $(grep "libplug$c.so" debug.txt | sed 's/^ldshim: //')"
        fi
        files="$files|$cpu $want"
    done
done
# The CPU must matter where glibc has legacy subdirectories (before 2.37):
# the default CPU (qemu's "max") has atomics, the Cortex-A72 has not; each
# run's answer was checked against glibc's own.  From 2.37 neither CPU's.
version=$(run /usr/bin/getconf GNU_LIBC_VERSION | sed 's/.* //')
if [ "$(printf '%s\n2.37\n' "$version" | sort -V | head -n 1)" = 2.37 ]; then
    if echo "$files" | grep -q "/atomics/libplug"; then
        report FAIL "cpu" "glibc $version has no legacy subdirectories, yet:$(echo "$files" | tr '|' ' ')"
    else
        report ok "cpu" "glibc $version: atomics/ chosen on neither CPU, by glibc and ldshim alike"
    fi
elif echo "$files" | grep -q "default plugin .*/atomics/libplug" &&
    echo "$files" | grep -q "cortex-a72 plugin $itmp/r./libplug" &&
    ! echo "$files" | grep -q "cortex-a72 plugin .*/atomics/"; then
    report ok "cpu" "atomics/ chosen on the default CPU only, by glibc and ldshim alike"
else
    report FAIL "cpu" "the chosen copies do not differ by CPU:$(echo "$files" | tr '|' ' ')"
fi
exit $fail
