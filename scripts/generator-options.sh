# shellcheck shell=sh
# The options of the random-tree generator's drivers for roots
# (scripts/arm64-generator.sh, scripts/glibc-root-generator.sh), sourced by
# both after their header and `set -eu`:
#   generator_options "$@"; shift "$generator_shift"
# sets seeds (default 200) and seed (default empty: the driver picks one)
# from --seeds N and --seed S, and generator_shift to the number of words
# they took; --help or -h prints the calling script's header and exits 0; an
# unknown option exits 2.  The first other word ends the options.
# shellcheck disable=SC2034 # seeds and seed are for the script that sources this
generator_options() {
    seeds=200
    seed=""
    generator_shift=0
    while [ "$#" -gt 0 ]; do
        case $1 in
            --seeds) seeds=$2; shift 2; generator_shift=$((generator_shift + 2)) ;;
            --seed) seed=$2; shift 2; generator_shift=$((generator_shift + 2)) ;;
            --help | -h) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
            -*) echo "$(basename "$0" .sh): unknown option $1 (see --help)" >&2; exit 2 ;;
            *) break ;;
        esac
    done
}
