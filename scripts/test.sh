#!/bin/sh
# Sets up, builds and runs every test suite (unit, differential, system
# programs, command line), then prints one summary line counting the
# individual test cases.  Exit status is meson test's.
set -eu
cd "$(dirname "$0")/.."
./scripts/setup.sh
status=0
meson test -C build --print-errorlogs --num-processes 2 "$@" || status=$?
# The registry's concurrency tests again, under ThreadSanitizer.
echo "== ThreadSanitizer: memtype and hooks concurrency tests"
./scripts/tsan.sh || status=$?
# Everything that runs inside instrumented processes, under ASan+UBSan+LSan.
echo "== AddressSanitizer + UndefinedBehaviorSanitizer: in-process suites"
./scripts/asan.sh || status=$?
# Each libFuzzer target for 30 seconds (longer runs: scripts/fuzz.sh 300).
echo "== libFuzzer: ELF reader, ld.so.cache, tokens, LD_DEBUG log parser"
./scripts/fuzz.sh 30 || status=$?
python3 - build/meson-logs/testlog.junit.xml <<'PY' || true
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = [c for c in root.iter('testcase')]
failed = sum(1 for c in cases if c.find('failure') is not None or c.find('error') is not None)
skipped = sum(1 for c in cases if c.find('skipped') is not None)
print(f"{len(cases) - failed - skipped} passed, {failed} failed, {skipped} skipped")
PY
exit $status
