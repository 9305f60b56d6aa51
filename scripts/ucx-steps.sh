# shellcheck shell=sh
# What scripts/ucx-master.sh and scripts/ucx-patched.sh share, sourced by
# both; every message starts with the script's name:
#   say TEXT...        a line on stderr
#   skip REASON...     "SKIPPED: REASON" on stderr, then exit 77
#   step WHAT CMD...   say WHAT, run CMD with its output appended to $log (the
#                      build's log, set before the first step); if it fails,
#                      name it, show the log's last 20 lines and exit 1
#   ucx_cache OVERRIDE NAME
#                      where the builds are kept: OVERRIDE when not empty,
#                      else /var/cache/ldshim/NAME as root, else
#                      ${XDG_CACHE_HOME:-~/.cache}/ldshim/NAME
say() { echo "$(basename "$0" .sh): $*" >&2; }
skip() {
    say "SKIPPED: $*"
    exit 77
}
# shellcheck disable=SC2154 # log is the sourcing script's
step() {
    say "$1"
    shift
    "$@" >>"$log" 2>&1 || {
        say "failed: $*; the last lines of $log:"
        tail -20 "$log" >&2
        exit 1
    }
}
ucx_cache() {
    if [ -n "$1" ]; then
        echo "$1"
    elif [ "$(id -u)" -eq 0 ]; then
        echo "/var/cache/ldshim/$2"
    else
        echo "${XDG_CACHE_HOME:-$HOME/.cache}/ldshim/$2"
    fi
}
