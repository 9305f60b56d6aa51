#!/bin/sh
# Sets up, builds and runs every test suite (unit, differential, system
# programs, command line).  Exit status is meson test's.
set -eu
cd "$(dirname "$0")/.."
./scripts/setup.sh
meson test -C build --print-errorlogs --num-processes 2 "$@"
