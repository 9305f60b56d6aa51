#!/bin/sh
# The project's layout and static checks:
#   clang-format  every C and C++ file is laid out as .clang-format says
#                 (scripts/lint.sh --fix rewrites them);
#   clang-tidy    .clang-tidy's checks on the library and tool sources;
#   ShellCheck    every script.
#   scripts/lint.sh [--fix] [BUILD_DIR]     (BUILD_DIR: default ./build, for
#                                           its compile_commands.json)
# Exit status: non-zero if any check fails.
set -eu
cd "$(dirname "$0")/.."
fix=""
if [ "${1:-}" = "--fix" ]; then fix=1; shift; fi
build=${1:-build}
status=0

sources=$(git ls-files '*.c' '*.cc' '*.h')
if [ -n "$fix" ]; then
    # shellcheck disable=SC2086 # a list of files
    clang-format -i $sources
    echo "lint: reformatted"
    exit 0
fi
# shellcheck disable=SC2086
if clang-format --dry-run --Werror $sources 2>/tmp/ldshim-format.$$; then
    echo "lint: clang-format: $(echo "$sources" | wc -l) files laid out as .clang-format says"
else
    echo "lint: clang-format: these files differ from .clang-format (scripts/lint.sh --fix):"
    grep -o '^[^:]*:[0-9]*' /tmp/ldshim-format.$$ | cut -d: -f1 | sort -u | sed 's/^/  /'
    status=1
fi
rm -f /tmp/ldshim-format.$$

[ -f "$build/compile_commands.json" ] || { echo "lint: $build/compile_commands.json is missing: build first" >&2; exit 2; }
checked=$(git ls-files 'loader/*.cc' 'host/*.cc' 'resolver/*.cc' 'hooks/*.cc' 'memtype/*.cc' 'lib/*.cc' 'preload/*.cc' 'tools/*.cc')
# shellcheck disable=SC2086
if run-clang-tidy -quiet -j "$(nproc)" -p "$build" $checked >/tmp/ldshim-tidy.$$ 2>&1; then
    echo "lint: clang-tidy: $(echo "$checked" | wc -l) files, no findings"
else
    grep -E "(warning|error):" /tmp/ldshim-tidy.$$ | sort -u
    echo "lint: clang-tidy: findings above"
    status=1
fi
rm -f /tmp/ldshim-tidy.$$

# shellcheck disable=SC2046
if shellcheck -S warning $(git ls-files '*.sh') .ci/run; then
    echo "lint: shellcheck: $(git ls-files '*.sh' | wc -l) scripts, no findings"
else
    status=1
fi
exit $status
