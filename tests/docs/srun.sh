#!/bin/sh
# A stand-in for Slurm's srun in the docs suite, on one machine: like srun it
# takes no per-variable option and only forwards the environment it was
# started with (--export=ALL, the default; --export=ALL,NAME=VALUE,... adds
# variables; --export=NONE is refused, as it would drop LD_PRELOAD).  The
# ranks are started and wired up by `mpirun -np N` (Slurm's PMI's part),
# which passes its own environment on to local ranks.
#   srun [-n N | --ntasks=N] [--export=ALL[,NAME=VALUE...]] COMMAND [ARGS...]
set -eu
ntasks=1
while [ $# -gt 0 ]; do
    case $1 in
        -n) ntasks=$2; shift 2 ;;
        -n*) ntasks=${1#-n}; shift ;;
        --ntasks=*) ntasks=${1#--ntasks=}; shift ;;
        --export=ALL) shift ;;
        --export=ALL,*)
            rest=${1#--export=ALL,}
            shift
            old_ifs=$IFS
            IFS=,
            for kv in $rest; do
                case $kv in
                    *=*) export "${kv%%=*}=${kv#*=}" ;;
                    *) echo "srun (stand-in): --export=ALL,NAME without a value is not supported" >&2; exit 2 ;;
                esac
            done
            IFS=$old_ifs
            ;;
        --export=*) echo "srun (stand-in): only --export=ALL[,NAME=VALUE...] is supported" >&2; exit 2 ;;
        --) shift; break ;;
        -*) echo "srun (stand-in): unsupported option $1" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || { echo "usage: srun [-n N] [--export=ALL[,NAME=VALUE...]] COMMAND [ARGS...]" >&2; exit 2; }
exec mpirun -np "$ntasks" "$@"
