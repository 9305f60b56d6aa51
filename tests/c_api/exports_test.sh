#!/bin/sh
# libldshim.so must export ldshim_* and nothing else (the version script).
set -eu
extra=$(nm -D --defined-only "$1" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | grep -v '^ldshim_' || true)
if [ -n "$extra" ]; then echo "exported beyond ldshim_*:"; echo "$extra"; exit 1; fi
n=$(nm -D --defined-only "$1" | grep -c ' ldshim_')
[ "$n" -gt 0 ] || { echo "no ldshim_ symbol exported"; exit 1; }
echo "1 passed, 0 failed"
