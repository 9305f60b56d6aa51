#!/bin/sh
# One command run as it is and under ldshim's CUDA hooks (LD_PRELOAD of the
# preload with LDSHIM_CUDA_HOOKS=1, which also puts ldshim's dlopen, dlclose,
# dlsym and dlvsym hooks in every object's import slots): the exit status,
# stdout and stderr must be the same, and the hooked run must not die of a
# signal the plain one did not.
#   tests/realworld/hooks_run.sh [--isolate] [--timeout S] PRELOAD NAME -- COMMAND...
# Used by tests/realworld/realworld_test.sh --hooks (real programs) and by
# the system-programs-hooks test (every program in /usr/bin).
# --isolate: both runs in new network, UTS and IPC namespaces (unshare, in a
#   user namespace when not root): no network device but a loopback that is
#   down, so nothing a program sends can leave; host name and IPC private.
# Both runs start in the current directory with stdin from /dev/null, under
# a timeout (S seconds, default 300), without core files; "[HOST:PID]" in
# their output (Open MPI's messages) is compared as "[HOST:PID]".  When the outputs
# differ each run is made again: a program whose two plain runs, or two
# hooked runs, differ (or whose second hooked run is the plain one) is
# reported as nondeterministic and not compared.  A crash under the hooks
# is run again under gdb (when installed), and its stack printed.
# Prints one line, then any details indented by "  | ":
#   [ SAME     ] NAME: exit N, L lines of output; hooks wrote K slots
#                (the same lines in another order count as the same, said so)
#                (or: the hooks never ran, when no hooked process wrote its log)
#   [ NONDETERM] NAME: two plain (or hooked) runs differ (exit N and M), not compared
#   [ DIFFERENT] NAME: plain exit N, hooked exit M; a unified diff follows
#   [ HUNG     ] NAME: the hooked run timed out, the plain one did not
#   [ CRASHED  ] NAME: the hooked run died of SIGNAME (plain: exit N); the stack follows
# Exit status: 0 same or nondeterministic, 1 different or hung, 2 crashed,
# 77 (SKIPPED, with the reason) when --isolate cannot make the namespaces.
set -u
isolate="" secs=300
while :; do
    case ${1:-} in
        --isolate)
            if [ "$(id -u)" -eq 0 ]; then isolate="unshare -n -u -i"; else isolate="unshare -r -n -u -i"; fi
            $isolate true 2>/dev/null || {
                echo "SKIPPED: cannot make network namespaces ($isolate true failed)"
                exit 77
            }
            shift
            ;;
        --timeout)
            secs=$2
            shift 2
            ;;
        *) break ;;
    esac
done
if [ $# -lt 4 ] || [ "$3" != -- ]; then
    echo "usage: $0 [--isolate] [--timeout S] PRELOAD NAME -- COMMAND..." >&2
    exit 2
fi
preload=$1 name=$2
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset DEBUGINFOD_URLS

# run TAG HOOKED COMMAND...: the command once, plainly (HOOKED 0) or under
# the hooks (1); TAG.out, TAG.err and TAG.rc in $tmp.
run() {
    run_tag=$1 run_hooked=$2
    shift 2
    if [ "$run_hooked" = 1 ]; then
        # $isolate is a command line or nothing; dash and bash have ulimit -c.
        # shellcheck disable=SC2086,SC3045
        (ulimit -c 0 && exec timeout -k 5 "$secs" $isolate env \
            LD_PRELOAD="$preload${LD_PRELOAD:+:$LD_PRELOAD}" LDSHIM_CUDA_HOOKS=1 \
            LDSHIM_HOOKS_LOG="$tmp/$run_tag.log" "$@") \
            </dev/null >"$tmp/$run_tag.out" 2>"$tmp/$run_tag.err"
    else
        # shellcheck disable=SC2086,SC3045
        (ulimit -c 0 && exec timeout -k 5 "$secs" $isolate "$@") </dev/null >"$tmp/$run_tag.out" 2>"$tmp/$run_tag.err"
    fi
    echo $? >"$tmp/$run_tag.rc"
    # Open MPI's messages name the process as [HOST:PID]: the PID is not the
    # program's output.
    sed -i 's/\[\([^]:[:space:]]*\):[0-9][0-9]*\]/[\1:PID]/g' "$tmp/$run_tag.out" "$tmp/$run_tag.err"
}
same() { # TAG TAG
    [ "$(cat "$tmp/$1.rc")" = "$(cat "$tmp/$2.rc")" ] && cmp -s "$tmp/$1.out" "$tmp/$2.out" &&
        cmp -s "$tmp/$1.err" "$tmp/$2.err"
}
# One file per run to diff: its exit status, then stdout, then stderr.
whole() { # TAG
    echo "exit $(cat "$tmp/$1.rc")"
    sed 's/^/out: /' "$tmp/$1.out"
    sed 's/^/err: /' "$tmp/$1.err"
}
signame() { # STATUS: the signal's name for 129..191, else empty
    [ "$1" -gt 128 ] && [ "$1" -lt 192 ] && kill -l "$(($1 - 128))" 2>/dev/null
}

run plain 0 "$@"
run hooked 1 "$@"
p=$(cat "$tmp/plain.rc") h=$(cat "$tmp/hooked.rc")
# Whether the hooks ran: every hooked process writes their log at exit (the
# last one to exit leaves its own); none where the preload was not loaded
# (a static or set-id program, for which the loader ignores LD_PRELOAD's path).
if [ -f "$tmp/hooked.log" ]; then
    hooks="hooks wrote $(grep -c -E '^(patched|chained)' "$tmp/hooked.log") slots"
else
    hooks="the hooks never ran (no log: static or set-id?)"
fi
if same plain hooked; then
    echo "[ SAME     ] $name: exit $p, $(cat "$tmp/plain.out" "$tmp/plain.err" | wc -l) lines of output; $hooks"
    exit 0
fi
# The same lines in another order (groff's children print their versions
# as they finish): the same, said so.
if [ "$p" = "$h" ] && [ "$(sort "$tmp/plain.out")" = "$(sort "$tmp/hooked.out")" ] &&
    [ "$(sort "$tmp/plain.err")" = "$(sort "$tmp/hooked.err")" ]; then
    echo "[ SAME     ] $name: exit $p, $(cat "$tmp/plain.out" "$tmp/plain.err" | wc -l) lines of output" \
        "(in another order); $hooks"
    exit 0
fi
# A hang: timeout's 124 (or 137 when it had to kill).
if { [ "$h" = 124 ] || [ "$h" = 137 ]; } && [ "$p" != 124 ] && [ "$p" != 137 ]; then
    echo "[ HUNG     ] $name: the hooked run was killed after $secs s (plain: exit $p)"
    tail -n 20 "$tmp/hooked.err" | sed 's/^/  | /'
    exit 1
fi
sig=$(signame "$h")
if [ -n "$sig" ] && [ "$h" != 137 ] && [ "$h" != "$p" ]; then
    echo "[ CRASHED  ] $name: the hooked run died of SIG$sig (plain: exit $p): $*"
    tail -n 10 "$tmp/hooked.err" | sed 's/^/  | stderr: /'
    if command -v gdb >/dev/null 2>&1; then
        # gdb starts ELF programs only: a script runs under sh, which
        # execs it (gdb follows exec; a crash in a process it forks is not seen).
        prog=$(command -v "$1")
        if [ "$(head -c 4 "$prog" 2>/dev/null | od -An -c | tr -d ' ')" != 177ELF ]; then
            # shellcheck disable=SC2016 # for the inner sh
            set -- /bin/sh -c 'exec "$0" "$@"' "$@"
        fi
        # shellcheck disable=SC2086
        timeout -k 5 300 $isolate gdb -q -nx -batch -iex 'set debuginfod enabled off' \
            -ex "set environment LD_PRELOAD $preload" \
            -ex 'set environment LDSHIM_CUDA_HOOKS 1' -ex run -ex 'bt 40' --args "$@" \
            </dev/null >"$tmp/gdb.out" 2>&1
        if grep -q '^Program received signal' "$tmp/gdb.out"; then
            grep -E '^(Program received signal|#[0-9]+ )' "$tmp/gdb.out" | sed 's/^/  | gdb: /'
        else
            echo "  | gdb: no signal in the process gdb started (a child's crash?); its last lines:"
            tail -n 5 "$tmp/gdb.out" | sed 's/^/  | gdb: /'
        fi
    else
        echo "  | (gdb is not installed: no stack)"
    fi
    exit 2
fi
# Different: is the program its own difference?  Each side once more: a
# difference counts only when both sides repeat themselves (groff's
# children print in either order, so two plain runs can agree by chance).
run plain2 0 "$@"
if ! same plain plain2; then
    echo "[ NONDETERM] $name: two plain runs differ (exit $p and $(cat "$tmp/plain2.rc")), not compared"
    exit 0
fi
run hooked2 1 "$@"
if ! same hooked hooked2 || same plain hooked2; then
    echo "[ NONDETERM] $name: two hooked runs differ (exit $h and $(cat "$tmp/hooked2.rc")), not compared"
    exit 0
fi
whole plain >"$tmp/plain.all"
whole hooked >"$tmp/hooked.all"
echo "[ DIFFERENT] $name: plain exit $p, hooked exit $h: $*"
diff -u --label plain --label "hooked (LDSHIM_CUDA_HOOKS=1)" "$tmp/plain.all" "$tmp/hooked.all" | head -n 40 |
    sed 's/^/  | /'
exit 1
