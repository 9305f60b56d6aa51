#!/bin/sh
# The environment modules that `meson install` installs
# (contrib/modulefiles), loaded and unloaded with one module system:
#
#   modules_test.sh lmod|environment-modules BUILD_ROOT PREFIX DATADIR LIBDIR BINDIR MANDIR VERSION
#
# This build is installed with `meson install --destdir` into a scratch
# directory, whose share/modulefiles becomes MODULEPATH (the module files
# name PREFIX's paths; a module system does not look at them).  Four starting
# environments: LD_PRELOAD unset, holding two libraries, or holding the
# preload already; MANPATH and PKG_CONFIG_PATH unset, set, or holding
# ldshim's directory; PATH with and without BINDIR.  In each:
#   load    LD_PRELOAD = the preload, then whatever it held, in order (one
#           that held it already is left as it was); PATH,
#           MANPATH, PKG_CONFIG_PATH start with BINDIR, MANDIR and
#           LIBDIR/pkgconfig (a PATH that held BINDIR keeps its order); an
#           unset MANPATH ends in an empty entry (man's own search path);
#           nothing else changes but the module system's bookkeeping;
#   unload  every variable exactly as before load (the module system's
#           bookkeeping aside: LOADEDMODULES, _LMFILES_, _ModuleTable*,
#           __LMOD_*, __MODULES_*).
# Which file was loaded is checked too: Lmod takes VERSION.lua, Environment
# Modules the Tcl file VERSION.
# Lmod: /usr/share/lmod/lmod (Debian's lmod).  Environment Modules:
# modulecmd.tcl of Debian's environment-modules, installed, or unpacked by
# scripts/environment-modules.sh (the two packages conflict).
# Exit status: 0 passed; 1 failed (the differences printed); 77 SKIPPED
# (that module system is not here).
set -eu
[ $# -eq 8 ] || { echo "usage: $0 lmod|environment-modules BUILD_ROOT PREFIX DATADIR LIBDIR BINDIR MANDIR VERSION" >&2; exit 2; }
tool=$1 build=$2 prefix=$3 datadir=$4 libdir=$5 bindir=$6 mandir=$7 version=$8
abs() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
libdir=$(abs "$libdir") bindir=$(abs "$bindir") mandir=$(abs "$mandir") datadir=$(abs "$datadir")
preload=$libdir/libldshim_preload.so pcdir=$libdir/pkgconfig
skip() {
    echo "modules ($tool): SKIPPED: $*"
    exit 77
}

case $tool in
    lmod)
        init=/usr/share/lmod/lmod/init/sh
        [ -r "$init" ] || skip "Lmod is not installed ($init; Debian's lmod, scripts/setup.sh installs it)"
        setup=". $init"
        want_file=$version.lua
        ;;
    environment-modules)
        command -v tclsh >/dev/null 2>&1 || skip "tclsh is not installed (Debian's tcl)"
        cmd=""
        for m in /usr/lib/x86_64-linux-gnu/modulecmd.tcl \
            "${LDSHIM_ENVMODULES_ROOT:-/var/cache/ldshim/environment-modules}/root/usr/lib/x86_64-linux-gnu/modulecmd.tcl"; do
            if [ -r "$m" ]; then
                cmd=$m
                break
            fi
        done
        [ -n "$cmd" ] || skip "Environment Modules' modulecmd.tcl is neither installed nor unpacked (scripts/environment-modules.sh)"
        setup="module() { eval \"\$(tclsh '$cmd' sh \"\$@\")\"; }"
        want_file=$version
        ;;
    *)
        echo "unknown module system: $tool" >&2
        exit 2
        ;;
esac

work=$(mktemp -d /tmp/ldshim-modules.XXXXXX)
trap 'rm -rf "$work"' EXIT
meson install -C "$build" --destdir "$work/destdir" --no-rebuild --quiet >"$work/install.log" 2>&1 ||
    {
        cat "$work/install.log"
        echo "modules ($tool): meson install failed"
        exit 1
    }
modulepath=$work/destdir$datadir/modulefiles
[ -f "$modulepath/ldshim/$version.lua" ] && [ -f "$modulepath/ldshim/$version" ] ||
    { echo "modules ($tool): FAILED: meson install did not install $datadir/modulefiles/ldshim/$version{,.lua}"; exit 1; }

# The module system's own variables, and the shell's.
bookkeeping='(_=|SHLVL=|PWD=|OLDPWD=|LOADEDMODULES=|_LMFILES_=|_ModuleTable|__LMOD_|LMOD_|__MODULES_|MODULES_|MODULESHOME=|MODULEPATH=|MODULEPATH_ROOT=|BASH_ENV=|ENV=|FPATH=)'
failed=0
bad() { # NAME MESSAGE
    echo "modules ($tool): FAILED: $1: $2"
    failed=1
}
starts_with() { case $1 in "$2" | "$2":*) return 0 ;; esac; return 1; }

# One starting environment: NAME, then the variables to set (NAME=VALUE) or
# unset (-NAME), run in a fresh sh.
scenario() {
    name=$1
    shift
    d=$work/$name
    mkdir -p "$d"
    {
        echo 'set -e'
        for a in "$@"; do
            case $a in
                -*) echo "unset ${a#-}" ;;
                *) echo "export '$a'" ;;
            esac
        done
        echo "$setup"
        echo "export MODULEPATH='$modulepath'"
        echo "env | sort > '$d/before'"
        echo "module load ldshim"
        echo "env | sort > '$d/loaded'"
        echo "module unload ldshim"
        echo "env | sort > '$d/after'"
    } >"$d/run.sh"
    env -i HOME="$work" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin sh "$d/run.sh" \
        >"$d/out" 2>&1 || { echo "modules ($tool): FAILED: $name: the shell failed:"; cat "$d/out"; failed=1; return; }
    get() { sed -n "s/^$2=//p" "$d/$1"; }
    has() { grep -q "^$2=" "$d/$1"; }

    # load
    ldp=$(get before LD_PRELOAD)
    case ":$ldp:" in
        *":$preload:"*) want=$ldp ;; # already there: left where it is
        *) want=$preload${ldp:+:$ldp} ;;
    esac
    [ "$(get loaded LD_PRELOAD)" = "$want" ] ||
        bad "$name" "LD_PRELOAD after load is '$(get loaded LD_PRELOAD)', not '$want'"
    path_before=$(get before PATH)
    case ":$path_before:" in
        *":$bindir:"*) want=$path_before ;;
        *) want=$bindir:$path_before ;;
    esac
    [ "$(get loaded PATH)" = "$want" ] || bad "$name" "PATH after load is '$(get loaded PATH)', not '$want'"
    starts_with "$(get loaded MANPATH)" "$mandir" || bad "$name" "MANPATH after load is '$(get loaded MANPATH)'"
    if ! has before MANPATH; then
        case $(get loaded MANPATH) in
            *:) ;;
            *) bad "$name" "MANPATH was unset: it must end in an empty entry (man's own path), not '$(get loaded MANPATH)'" ;;
        esac
    fi
    starts_with "$(get loaded PKG_CONFIG_PATH)" "$pcdir" ||
        bad "$name" "PKG_CONFIG_PATH after load is '$(get loaded PKG_CONFIG_PATH)'"
    lmfile=$(get loaded _LMFILES_)
    [ "${lmfile##*/}" = "$want_file" ] || bad "$name" "the module file loaded is '$lmfile', not ldshim/$want_file"
    other=$(diff "$d/before" "$d/loaded" | sed -n 's/^[<>] //p' | grep -Ev "^$bookkeeping" |
        grep -Ev '^(LD_PRELOAD|PATH|MANPATH|PKG_CONFIG_PATH|__LDSHIM_MODULE)=' || true)
    [ -z "$other" ] || bad "$name" "load changed other variables: $other"

    # unload
    diff "$d/before" "$d/after" | grep -E '^[<>] ' | grep -Ev "^[<>] ($bookkeeping)" >"$d/changed" || true
    [ ! -s "$d/changed" ] || bad "$name" "unload did not restore the environment: $(tr '\n' ' ' <"$d/changed")"
    echo "modules ($tool): $name: LD_PRELOAD '$ldp' -> '$(get loaded LD_PRELOAD)' -> restored: $([ -s "$d/changed" ] && echo no || echo yes)"
}

std=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
scenario nothing-set -LD_PRELOAD -MANPATH -PKG_CONFIG_PATH "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
scenario preloads-set "LD_PRELOAD=/opt/site/lib/libsite.so:/opt/tool/libtool.so" "MANPATH=/opt/site/man" \
    "PKG_CONFIG_PATH=/opt/site/lib/pkgconfig" "PATH=$std"
scenario bindir-in-path -LD_PRELOAD -MANPATH "PKG_CONFIG_PATH=$pcdir:/opt/site/lib/pkgconfig" "PATH=/opt/x/bin:$bindir:$std"
scenario preload-held "LD_PRELOAD=/opt/site/lib/libsite.so:$preload" "MANPATH=$mandir:/opt/site/man" -PKG_CONFIG_PATH \
    "PATH=$std"

if [ "$failed" -ne 0 ]; then
    echo "modules ($tool): FAILED"
    exit 1
fi
echo "modules ($tool): ldshim/$want_file: 4 environments, load prepends, unload restores every variable"
