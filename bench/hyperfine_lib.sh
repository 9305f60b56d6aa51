# shellcheck shell=sh
# Shared by the benchmark scripts: read hyperfine's --export-json results.
# mean_ms FILE INDEX: the mean of command INDEX in milliseconds.
mean_ms() {
    python3 -c "import json,sys; print('%.3f' % (json.load(open(sys.argv[1]))['results'][int(sys.argv[2])]['mean']*1000))" "$1" "$2"
}
# ratio A B: A/B with the given decimals (default 2).
ratio() { python3 -c "print('%.${3:-2}f' % ($1/$2))"; }
# hyperfine_means FILE N: the means of commands 0..N-1, space-separated.
hyperfine_means() {
    i=0 out=""
    while [ "$i" -lt "$2" ]; do out="$out $(mean_ms "$1" "$i")"; i=$((i + 1)); done
    echo $out
}
