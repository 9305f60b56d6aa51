#!/bin/sh
# Every usage example in the public header builds: each block between a
# line "@code" and a line "@endcode" in ldshim.h's comments (each marker
# alone on its line after the comment's " * ") is taken out, with the
# comment's leading " * " removed, and put after "#include <ldshim.h>" as
# one C99 translation unit, compiled with -std=c99 -pedantic-errors -Wall
# -Werror and linked against libldshim.  A block without main() gets an
# empty one, so that it is still linked.  The examples are built, not run.
#   doc_examples_test.sh INCLUDE_DIR GENERATED_INCLUDE_DIR LIB_DIR
# (GENERATED_INCLUDE_DIR holds ldshim_version.h; LIB_DIR libldshim.so.)
set -eu
[ $# -eq 3 ] || { echo "usage: $0 INCLUDE_DIR GENERATED_INCLUDE_DIR LIB_DIR" >&2; exit 2; }
header="$1/ldshim.h"
[ -r "$header" ] || { echo "FAIL cannot read $header"; exit 1; }
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One file per block: example1.body, example2.body, ...; an unclosed block
# or a nested @code is an error (exit 3).
awk -v dir="$tmp" '
    /^[ \t]*\*?[ \t]*@endcode[ \t]*$/ {
        if (!open) { printf "line %d: @endcode without @code\n", NR; bad = 1; exit }
        open = 0; close(file); next
    }
    /^[ \t]*\*?[ \t]*@code[ \t]*$/ {
        if (open) { printf "line %d: @code inside a block\n", NR; bad = 1; exit }
        open = 1; n++; file = sprintf("%s/example%d.body", dir, n)
        printf "/* %s, block %d (line %d) */\n", FILENAME, n, NR + 1 > file
        next
    }
    open {
        line = $0
        sub(/^[ \t]*\*( |$)/, "", line)
        print line > file
    }
    END {
        if (!bad && open) { print "@code block not closed"; bad = 1 }
        exit bad ? 3 : 0
    }
' "$header" || { echo "FAIL malformed @code blocks in $header"; exit 1; }

pass=0 fail=0
for body in "$tmp"/example*.body; do
    [ -e "$body" ] || break
    name=$(basename "$body" .body)
    src="$tmp/$name.c"
    {
        echo '#include <ldshim.h>'
        cat "$body"
        grep -q '\bmain[[:space:]]*(' "$body" || echo 'int main(void) { return 0; }'
    } > "$src"
    # -ldl: before glibc 2.34 an example that calls dlopen needs libdl.
    if "$cc" -std=c99 -pedantic-errors -Wall -Werror -I"$1" -I"$2" -o "$tmp/$name" "$src" -L"$3" -lldshim -ldl \
        > "$tmp/$name.log" 2>&1; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $name does not build:"
        cat -n "$src"
        cat "$tmp/$name.log"
    fi
done
if [ $((pass + fail)) -eq 0 ]; then
    fail=1
    echo "FAIL no @code block in $header"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
