#!/bin/sh
# A small arm64 program tree inside an arm64 root, cross-compiled with
# Debian's aarch64-linux-gnu-gcc against the root as sysroot, for
# scripts/arm64-root-ldsearch.sh.  DIR/bin/app's DT_RPATH is $ORIGIN/../lib,
# whose legacy subdirectories hold its libraries:
#   libt.so in tls/, libp.so in aarch64/ (the platform), liba.so in
#   atomics/ (and in lib/ itself, for a CPU without LSE atomics), libx.so in
#   tls/aarch64/atomics/ (and in lib/), libd.so in lib/ after an x86-64 copy
#   in aarch64/ (another machine: skipped) and an i386 one in tls/ (another
#   class: skipped).
# app prints where each library it runs with came from.
#   scripts/arm64-tree.sh ROOT DIR        DIR: a path inside ROOT
set -eu
root=$1 dir=$2
out=$root$dir
if ! command -v aarch64-linux-gnu-gcc >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc-aarch64-linux-gnu >&2
fi
rm -rf "$out"
mkdir -p "$out/src" "$out/bin" "$out/lib/tls/aarch64/atomics" "$out/lib/aarch64" "$out/lib/atomics"
cc() { aarch64-linux-gnu-gcc --sysroot="$root" -O1 "$@"; }

# lib NAME SUBDIR: libNAME.so whose where_NAME() says SUBDIR.
lib() {
    printf 'const char *where_%s(void) { return "%s"; }\n' "$1" "lib$1.so from lib/$2" >"$out/src/$1.c"
    cc -shared -fPIC -Wl,-soname,"lib$1.so" -o "$out/lib/$2/lib$1.so" "$out/src/$1.c"
}
lib t tls
lib p aarch64
lib a atomics
lib a .
lib x tls/aarch64/atomics
lib x .
lib d .
# The same name built for other machines, earlier in the search.
printf 'int where_d;\n' >"$out/src/other.c"
gcc -shared -fPIC -o "$out/lib/aarch64/libd.so" "$out/src/other.c"
gcc -m32 -shared -nostdlib -fPIC -o "$out/lib/tls/libd.so" "$out/src/other.c"

cat >"$out/src/app.c" <<'EOF'
#include <stdio.h>
const char *where_t(void), *where_p(void), *where_a(void), *where_x(void), *where_d(void);
int main(void) {
    printf("%s, %s, %s, %s, %s\n", where_t(), where_p(), where_a(), where_x(), where_d());
    return 0;
}
EOF
# DT_RPATH (not RUNPATH): its search line lists every subdirectory.
# shellcheck disable=SC2016 # $ORIGIN is the loader's
cc -o "$out/bin/app" "$out/src/app.c" -L"$out/lib/tls" -L"$out/lib/aarch64" -L"$out/lib" -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib' \
    -lt -lp -la -lx -ld
