#!/bin/sh
# Builds the libFuzzer targets (clang, with ASan+UBSan) and runs each for
# SECONDS (default 30), on seed corpora generated here from this machine's
# files.  Any crash, leak, sanitizer report or timeout fails the run; the
# input is kept under build-fuzz/crashes/ for a regression test.
#   scripts/fuzz.sh [SECONDS] [TARGET...]
# Targets: elf_reader ld_cache tokens ld_debug_log (the log, the environment
# records, ld.so --help, the loader probe and the cached configuration)
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-30}
[ $# -gt 0 ] && shift
targets=${*:-"elf_reader ld_cache tokens ld_debug_log"}
command -v clang++ >/dev/null || { echo "fuzz: clang++ is missing (apt-get install clang)" >&2; exit 1; }
out=build-fuzz
mkdir -p "$out/crashes"

sources="loader/fs.cc loader/paths.cc loader/elf_facts.cc loader/ld_cache.cc loader/tokens.cc loader/path_pool.cc loader/trace.cc tools/ldsearch/ld_debug_log.cc tools/ldsearch/env_record.cc loader/loader_env.cc loader/loader_config.cc loader/loader_config_codec.cc loader/loader_probe.cc"
flags="-std=c++20 -g -O1 -D_GNU_SOURCE -Iinclude -I. -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"

seed() { # TARGET DIR
    case $1 in
    elf_reader)
        for f in /bin/true /lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libz.so.1 /lib/x86_64-linux-gnu/libm.so.6; do
            [ -f "$f" ] && cp -L "$f" "$2/$(basename "$f")"
        done
        if echo 'void _start(void){}' | cc -m32 -nostdlib -x c -o "$2/prog32" - 2>/dev/null; then :; fi
        head -c 4096 /bin/true > "$2/head" ;;
    ld_cache)
        cp /etc/ld.so.cache "$2/system"
        printf '%s\n' /lib/x86_64-linux-gnu > "$out/conf"
        for fmt in old compat new; do
            /sbin/ldconfig -c "$fmt" -C "$2/$fmt" -f "$out/conf" 2>/dev/null || true
        done ;;
    tokens)
        i=0
        for s in '$ORIGIN/../lib' '${ORIGIN}/x:$LIB/y' '$PLATFORM:$$ORIGIN' '/a/./b//c/../d' ':;::' '$ORIGINX/$' \
                 '/lib/$ORIGIN/x' '${LIB}${PLATFORM}${ORIGIN}'; do
            printf '\037%s' "$s" > "$2/s$i"; i=$((i + 1))
        done ;;
    ld_debug_log)
        LD_DEBUG=libs,files LD_DEBUG_OUTPUT="$2/log" /bin/true
        LD_DEBUG=libs,files LD_DEBUG_OUTPUT="$2/log" sh -c 'exec /bin/true'
        # ldsearch's cached loader configurations, where earlier runs left some.
        for f in "${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}"/ldshim/loader-*.txt; do
            [ -f "$f" ] && cp "$f" "$2/"
        done ;;
    esac
}

status=0
for t in $targets; do
    bin="$out/${t}_fuzz"
    src="tests/fuzz/${t}_fuzz.cc"
    [ -f "$src" ] || { echo "fuzz: no target $t" >&2; exit 2; }
    # shellcheck disable=SC2086
    clang++ $flags -o "$bin" "$src" $sources
    corpus="$out/corpus/$t"
    if [ ! -d "$corpus" ]; then mkdir -p "$corpus"; seed "$t" "$corpus"; fi
    log="$out/$t.log"
    if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$out/crashes/$t-" "$corpus" > "$log" 2>&1; then
        runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
        echo "fuzz: $t: ${seconds}s, $runs runs, 0 crashes, corpus $(ls "$corpus" | wc -l) inputs"
    else
        echo "fuzz: $t: FAILED (see $log; input under $out/crashes/)"
        tail -30 "$log"
        status=1
    fi
done
exit $status
