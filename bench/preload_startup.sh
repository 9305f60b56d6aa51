#!/bin/sh
# What LD_PRELOAD=libldshim_preload.so costs a process that never calls
# dlopen, against no preload and against the floor: an empty preload (a
# shared object with nothing in it, built here).  Programs: /bin/true,
# python3 -c pass, a program linked against LIBS small libraries, and one
# whose library holds RELOCS symbol relocations (Julia-sized), all built
# here at run time; then, for what a first dlopen adds, python3 importing
# three extension modules.  For each, without a preload, with the empty one and
# with ldshim:
#   - instructions, counted by callgrind (stable on a shared machine; perf
#     stat cannot count them in this VM), with the differences and ratios;
#   - peak RSS: VmHWM read while the program is stopped at its exit
#     (bench/exit_rss), min and median of RSS_RUNS runs.  Not
#     /usr/bin/time -f %M: its ru_maxrss covers whatever the child ran
#     before its exec too, from counters Linux 6.2 and later fold in
#     lazily, and is not a short process's own peak;
#   - wall time: bench/spawn_wall, the three interleaved for WALL_RUNS
#     rounds, medians and ratios to no preload.
#   bench/preload_startup.sh                       (BUILD=build by default)
#   BUILD=build-perf LIBS=400 RELOCS=200000 RSS_RUNS=11 WALL_RUNS=200 bench/preload_startup.sh
#   QUICK=1 bench/preload_startup.sh    (a quick look: 100 libraries, 20,000 relocations, few runs)
# Targets: /bin/true at most +100,000 instructions over no
# preload; python3 at most +1 %; the 400-library program at most +2 %;
# peak RSS at most +256 KiB.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
if [ -n "${QUICK:-}" ]; then
    LIBS=${LIBS:-100} RELOCS=${RELOCS:-20000} RSS_RUNS=${RSS_RUNS:-3} WALL_RUNS=${WALL_RUNS:-20}
fi
LIBS=${LIBS:-400}
RELOCS=${RELOCS:-200000}
RSS_RUNS=${RSS_RUNS:-11}
WALL_RUNS=${WALL_RUNS:-200}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
PRELOAD=$BUILD/preload/libldshim_preload.so
WALL=${WALL:-$BUILD/bench/spawn_wall}
EXIT_RSS=${EXIT_RSS:-$BUILD/bench/exit_rss}
PYTHON=${PYTHON:-/usr/bin/python3}
for f in "$PRELOAD" "$WALL" "$EXIT_RSS"; do
    [ -e "$f" ] || { echo "preload_startup: $f is missing (build with -Dbench=true)" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "preload_startup: valgrind is not installed" >&2; exit 1; }
export PYTHONHASHSEED=0  # python's start-up work depends on its hash seed
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The floor: a preload with nothing in it (no code, no libc, no start files).
: > "$tmp/empty.c"
cc -shared -nostdlib -o "$tmp/empty.so" "$tmp/empty.c"

# LIBS small libraries, one function each, and a program that calls them all.
mkdir "$tmp/libs"
awk -v n="$LIBS" -v dir="$tmp/libs" 'BEGIN {
    for (i = 0; i < n; i++) printf "int v%d = %d;\nint f%d(void) { return v%d; }\n", i, i, i, i > (dir "/l" i ".c")
    for (i = 0; i < n; i++) printf "int f%d(void);\n", i > (dir "/many.c")
    print "int main(void) {\n    int s = 0;" > (dir "/many.c")
    for (i = 0; i < n; i++) printf "    s += f%d();\n", i > (dir "/many.c")
    print "    return s == " n * (n - 1) / 2 " ? 0 : 1;\n}" > (dir "/many.c")
}'
(cd "$tmp/libs" && find . -name 'l*.c' -print0 | xargs -0 -P 2 -n 50 cc -O2 -fPIC -c)
i=0
while [ "$i" -lt "$LIBS" ]; do
    echo "$i"
    i=$((i + 1))
done | xargs -P 2 -I{} cc -shared -o "$tmp/libs/libl{}.so" "$tmp/libs/l{}.o" -Wl,-soname,libl{}.so
libs=$(i=0; while [ "$i" -lt "$LIBS" ]; do printf ' -ll%d' "$i"; i=$((i + 1)); done)
# shellcheck disable=SC2086  # one word per library
cc -O2 -o "$tmp/many" "$tmp/libs/many.c" -L"$tmp/libs" $libs -Wl,-rpath,"$tmp/libs"

# A library with RELOCS symbol relocations (a table of pointers to its own
# exported variables), and a program linked against it.
awk -v n="$RELOCS" 'BEGIN {
    for (i = 0; i < n; i++) printf "int v%d;\n", i
    print "int *const table[] = {"
    for (i = 0; i < n; i++) printf "    &v%d,\n", i
    print "};"
}' > "$tmp/big.c"
cc -O0 -fPIC -shared -o "$tmp/libbig.so" "$tmp/big.c"
printf 'extern int *const table[];\nint main(void) { return *table[0]; }\n' > "$tmp/relocs.c"
cc -O2 -o "$tmp/relocs" "$tmp/relocs.c" -L"$tmp" -lbig -Wl,-rpath,"$tmp"
if ! "$tmp/many" || ! "$tmp/relocs"; then
    echo "preload_startup: the fixtures fail" >&2
    exit 1
fi

# The last program does call dlopen: python3 importing three extension
# modules, each dlopen through ldshim's resolver (its first builds the
# resolver's model of the process).
imports="__import__('_ssl');__import__('_ctypes');__import__('_sqlite3')"
progs="/bin/true|$PYTHON -c pass|$tmp/many|$tmp/relocs|$PYTHON -c $imports"
name() {
    case $1 in
        "$PYTHON -c $imports") echo "python3, 3 modules" ;;
        "$tmp/many") echo "$LIBS libraries" ;;
        "$tmp/relocs") echo "$RELOCS relocations" ;;
        *) echo "$1" ;;
    esac
}

# Instructions of one run: PRELOAD ('' for none) PROGRAM...
instructions() {
    p=$1
    shift
    LD_PRELOAD=$p valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 |
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
}
# Peak RSS in KiB, min and median of RSS_RUNS runs: PRELOAD PROGRAM...
peak_rss() {
    p=$1
    shift
    n=0
    while [ "$n" -lt "$RSS_RUNS" ]; do
        # The larger of the resident set at exit and VmHWM (which is never
        # smaller, unless the kernel's counters lag behind).
        "$EXIT_RSS" -o "$tmp/rss" env LD_PRELOAD="$p" "$@" >/dev/null 2>&1 || true
        awk '{ print ($2 > $1 ? $2 : $1) }' "$tmp/rss"
        n=$((n + 1))
    done | sort -n | awk '{ v[NR] = $1 } END { printf "%d %d\n", v[1], v[int((NR + 1) / 2)] }'
}

# One line per program: its name, then "$1 PRELOAD PROGRAM..." without a
# preload, with the empty one and with ldshim, separated by '|'.
three_ways() {
    IFS='|'
    for prog in $progs; do
        unset IFS
        # shellcheck disable=SC2086  # the program and its arguments
        printf '%s|%s|%s|%s\n' "$(name "$prog")" "$("$1" "" $prog)" "$("$1" "$tmp/empty.so" $prog)" \
            "$("$1" "$PRELOAD" $prog)"
        IFS='|'
    done
    unset IFS
}

echo "instructions (callgrind), one run each"
printf '%-22s %13s %13s %13s %12s %8s %12s %8s\n' program "no preload" "empty" ldshim "ldshim-none" ratio \
    "ldshim-empty" "empty-none"
three_ways instructions | awk -F'|' '{
    printf "%-22s %13d %13d %13d %+12d %8.4f %+12d %+8d\n", $1, $2, $3, $4, $4 - $2, $4 / $2, $4 - $3, $3 - $2 }'

# A file's pages are mapped around each fault in blocks as large as the
# page cache holds it: a file just written by the linker or this script may
# sit there in larger blocks than one read back from disk, and a process
# that maps it shows more resident.  So the files measured leave the page
# cache first, and come back the way an installed library's do.
pdir=$(dirname "$PRELOAD")
for f in "$PRELOAD" "$pdir/libldshim.so.0" "$pdir/../lib/libldshim.so.0" "$tmp"/empty.so "$tmp"/many "$tmp"/libs/*.so "$tmp"/relocs "$tmp"/libbig.so; do
    [ -e "$f" ] && dd if="$f" iflag=nocache count=0 status=none
done

echo
echo "peak RSS (KiB, VmHWM at exit: bench/exit_rss), min / median of $RSS_RUNS runs"
printf '%-22s %15s %15s %15s %14s\n' program "no preload" "empty" ldshim "ldshim-none"
three_ways peak_rss | awk -F'|' '{
    split($2, a, " "); split($3, e, " "); split($4, l, " ")
    printf "%-22s %7d / %5d %7d / %5d %7d / %5d %+6d / %+5d\n", $1, a[1], a[2], e[1], e[2], l[1], l[2], l[1] - a[1], l[2] - a[2] }'

echo
echo "wall time (bench/spawn_wall, $WALL_RUNS interleaved rounds; baseline: no preload)"
IFS='|'
for prog in $progs; do
    unset IFS
    name "$prog"
    "$WALL" "$WALL_RUNS" "/usr/bin/env LD_PRELOAD=$PRELOAD $prog" "/usr/bin/env LD_PRELOAD=$tmp/empty.so $prog" \
        "/usr/bin/env LD_PRELOAD= $prog"
    IFS='|'
done
unset IFS
