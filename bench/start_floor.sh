#!/bin/sh
# Where a glibc process's start goes, on this machine: what one CPUID
# instruction, one system call and one page fault cost, and how many CPUID
# instructions each start executes (ld.so --version, an empty static C
# program, ldsearch --version and ldsearch PROGRAM), counted with gdb by a
# breakpoint on every CPUID instruction of the binary.  In a virtual machine
# CPUID traps to the hypervisor, and glibc's start asks it dozens of times
# (init_cpu_features, then the cache sizes: intel_check_word per descriptor),
# so this is the floor under ldsearch's start and the loader's alike.
#   bench/start_floor.sh [PROGRAM]      (default: /bin/ls)
#   BUILD=build-release bench/start_floor.sh
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
LDSEARCH=$PWD/$BUILD/tools/ldsearch/ldsearch
RTLD=/lib64/ld-linux-x86-64.so.2
PROG=${1:-/bin/ls}
[ -x "$LDSEARCH" ] || { echo "start_floor: $LDSEARCH is missing (build it first)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat > "$tmp/unit.c" <<'EOF'
#include <cpuid.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}
int main(void) {
    enum { N = 2000, PAGES = 4096 };
    unsigned a, b, c, d;
    double t0 = now();
    for (int i = 0; i < N; ++i) __cpuid_count(4, 0, a, b, c, d);
    double t1 = now();
    for (int i = 0; i < N; ++i) syscall(SYS_getppid);
    double t2 = now();
    char *p = mmap(0, PAGES * 4096L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    double t3 = now();
    for (long i = 0; i < PAGES; ++i) p[i * 4096] = 1;
    double t4 = now();
    printf("one CPUID %.0f ns, one system call (getppid) %.0f ns, one page fault (anonymous, written) %.0f ns\n",
           (t1 - t0) / N, (t2 - t1) / N, (t4 - t3) / PAGES);
    return 0;
}
EOF
cc -O2 "$tmp/unit.c" -o "$tmp/unit"
"$tmp/unit"

printf 'int main(void) { return 0; }\n' > "$tmp/empty.c"
cc -O2 -static "$tmp/empty.c" -o "$tmp/empty-static"

command -v gdb >/dev/null || { echo "start_floor: SKIPPED the CPUID counts (gdb is not installed)"; exit 0; }
# count OBJECT COMMAND...: CPUID instructions executed by COMMAND whose
# addresses lie in OBJECT (the binary that starts: a static program or ld.so).
count() {
    obj=$1; shift
    objdump -d --no-show-raw-insn "$obj" | awk '/\tcpuid/ { sub(":", "", $1); print $1 }' > "$tmp/addrs"
    entry=$(readelf -h "$obj" | awk '/Entry point/ { print $4 }')
    cat > "$tmp/count.gdb" <<EOF
set pagination off
starti
python
import gdb
bias = int(gdb.parse_and_eval("\$pc")) - $entry
hits = [0]
class Count(gdb.Breakpoint):
    def stop(self):
        hits[0] += 1
        return False
for line in open("$tmp/addrs"):
    Count("*0x%x" % (int(line, 16) + bias), internal=True)
end
continue
python print("cpuid-count", hits[0])
EOF
    n=$(gdb -q -batch -x "$tmp/count.gdb" --args "$@" 2>/dev/null | awk '/^cpuid-count/ { print $2 }')
    printf '%6s CPUID instructions  %s\n' "${n:-?}" "$*"
}
count "$RTLD" "$RTLD" --version
count "$RTLD" "$RTLD" --list "$PROG"
count "$tmp/empty-static" "$tmp/empty-static"
count "$LDSEARCH" "$LDSEARCH" --version
count "$LDSEARCH" "$LDSEARCH" "$PROG"
