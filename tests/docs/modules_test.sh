#!/bin/sh
# The environment modules (contrib/modulefiles), loaded and unloaded with one
# module system, from a meson build or from the release tarball:
#
#   modules_test.sh lmod|environment-modules BUILD_ROOT PREFIX DATADIR LIBDIR BINDIR MANDIR VERSION
#   modules_test.sh lmod|environment-modules --tarball TARBALL
#
# A build is installed with `meson install --destdir` into a scratch
# directory.  Pass "installed": its share/modulefiles is MODULEPATH and the
# paths expected are PREFIX's (the files name them; a module system does not
# look at them), or the scratch directory's where the build installs the
# relocatable files (-Dmodulefiles=relocatable).  Pass "relocatable": the
# installed tree is moved to another directory, with the build's
# ldshim-relocatable.lua and .tcl in place of the installed files, and the
# paths expected are the moved tree's.
# The tarball (scripts/release.sh) is unpacked in a scratch directory and
# then moved to another one, as nobody where this runs as root; its own
# share/modulefiles is MODULEPATH and the paths expected are the moved
# tree's (pass "tarball").
# Each pass with a relocatable file is also run through a module directory
# of links to it ("...-linked": the file finds its prefix through the link).
#
# Four starting environments per pass: LD_PRELOAD unset, holding two
# libraries, or holding the preload already; MANPATH and PKG_CONFIG_PATH
# unset, set, or holding ldshim's directory; PATH with and without BINDIR.
# In each:
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
usage() {
    echo "usage: $0 lmod|environment-modules BUILD_ROOT PREFIX DATADIR LIBDIR BINDIR MANDIR VERSION" >&2
    echo "       $0 lmod|environment-modules --tarball TARBALL" >&2
    exit 2
}
tool=${1:-}
if [ "${2:-}" = --tarball ]; then
    [ $# -eq 3 ] || usage
    tarball=$3
    [ -f "$tarball" ] || { echo "modules ($tool): no tarball $tarball" >&2; exit 2; }
    pkgname=${tarball##*/}
    pkgname=${pkgname%.tar.xz}
    version=$(echo "$pkgname" | sed 's/^ldshim-\([^-]*\)-.*/\1/')
else
    [ $# -eq 8 ] || usage
    # (pass() sets bindir and mandir to the paths expected)
    tarball="" build=$2 prefix=$3 datadir=$4 rel_lib=$5 rel_bin=$6 rel_man=$7 version=$8
fi
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
        usage
        ;;
esac

work=$(mktemp -d /tmp/ldshim-modules.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The scenarios' shells: as nobody for the tarball where this is root (a user
# unpacks it), as the caller otherwise.
as_user() { "$@"; }
if [ -n "$tarball" ] && [ "$(id -u)" -eq 0 ]; then
    PATH=$PATH:/usr/sbin:/sbin # runuser
    chown nobody "$work"
    as_user() { runuser -u nobody -- "$@"; }
fi

# The module system's own variables, and the shell's.
bookkeeping='(_=|SHLVL=|PWD=|OLDPWD=|LOADEDMODULES=|_LMFILES_=|_ModuleTable|__LMOD_|LMOD_|__MODULES_|MODULES_|MODULESHOME=|MODULEPATH=|MODULEPATH_ROOT=|BASH_ENV=|ENV=|FPATH=)'
failed=0
passes=""
bad() { # NAME MESSAGE
    echo "modules ($tool): FAILED: $1: $2"
    failed=1
}
starts_with() { case $1 in "$2" | "$2":*) return 0 ;; esac; return 1; }

# One starting environment of the pass $pass: NAME, then the variables to
# set (NAME=VALUE) or unset (-NAME), run in a fresh sh.  The pass sets
# modulepath and the paths expected: preload, bindir, mandir, pcdir.
scenario() {
    name=$pass/$1
    shift
    d=$work/scenarios/$name
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
    chmod -R a+rwX "$work/scenarios"
    as_user env -i HOME="$work" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin sh "$d/run.sh" \
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

# A pass: NAME MODULEPATH PREFIX LIBDIR BINDIR MANDIR (the directories
# relative to PREFIX, or absolute).
pass() {
    pass=$1 modulepath=$2 p=$3
    [ -f "$modulepath/ldshim/$version.lua" ] && [ -f "$modulepath/ldshim/$version" ] ||
        { bad "$pass" "no module files ldshim/$version{,.lua} in $modulepath"; return; }
    abs() { case $1 in /*) echo "$1" ;; *) echo "$p/$1" ;; esac; }
    l=$(abs "$4") bindir=$(abs "$5") mandir=$(abs "$6")
    preload=$l/libldshim_preload.so pcdir=$l/pkgconfig
    std=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    scenario nothing-set -LD_PRELOAD -MANPATH -PKG_CONFIG_PATH "PATH=/usr/sbin:/usr/bin:/sbin:/bin"
    scenario preloads-set "LD_PRELOAD=/opt/site/lib/libsite.so:/opt/tool/libtool.so" "MANPATH=/opt/site/man" \
        "PKG_CONFIG_PATH=/opt/site/lib/pkgconfig" "PATH=$std"
    scenario bindir-in-path -LD_PRELOAD -MANPATH "PKG_CONFIG_PATH=$pcdir:/opt/site/lib/pkgconfig" "PATH=/opt/x/bin:$bindir:$std"
    scenario preload-held "LD_PRELOAD=/opt/site/lib/libsite.so:$preload" "MANPATH=$mandir:/opt/site/man" -PKG_CONFIG_PATH \
        "PATH=$std"
    passes="$passes${passes:+, }$pass ($p)"
}
# The same pass through a module directory of links to the files in
# MODULEPATH (which lies in $work): an absolute link to the Lua file, a
# relative one to the Tcl file.
linked_pass() { # NAME MODULEPATH PREFIX LIBDIR BINDIR MANDIR
    links=$work/links-$1
    mkdir -p "$links/ldshim"
    ln -s "$2/ldshim/$version.lua" "$links/ldshim/$version.lua"
    ln -s "../../${2#"$work"/}/ldshim/$version" "$links/ldshim/$version"
    n=$1
    shift 2
    pass "$n-linked" "$links" "$@"
}
is_relocatable() { grep -q '^local prefix = nil$' "$1/ldshim/$version.lua"; }

if [ -n "$tarball" ]; then
    # Unpacked, then moved elsewhere, by the user.
    as_user mkdir "$work/unpacked" "$work/moved"
    as_user tar -xJf - -C "$work/unpacked" <"$tarball" || { echo "modules ($tool): FAILED: cannot unpack $tarball"; exit 1; }
    as_user mv "$work/unpacked/$pkgname" "$work/moved/$pkgname"
    top=$work/moved/$pkgname
    [ -d "$top/share/modulefiles" ] || { echo "modules ($tool): FAILED: $pkgname has no share/modulefiles"; exit 1; }
    is_relocatable "$top/share/modulefiles" ||
        { echo "modules ($tool): FAILED: $pkgname/share/modulefiles/ldshim/$version.lua names its prefix (not -Dmodulefiles=relocatable)"; exit 1; }
    pass tarball "$top/share/modulefiles" "$top" lib bin share/man
    linked_pass tarball "$top/share/modulefiles" "$top" lib bin share/man
else
    meson install -C "$build" --destdir "$work/destdir" --no-rebuild --quiet >"$work/install.log" 2>&1 ||
        {
            cat "$work/install.log"
            echo "modules ($tool): meson install failed"
            exit 1
        }
    abs() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
    modulepath=$work/destdir$(abs "$datadir")/modulefiles
    expected=$prefix
    ! is_relocatable "$modulepath" || expected=$work/destdir$prefix
    pass installed "$modulepath" "$expected" "$rel_lib" "$rel_bin" "$rel_man"
    generated=$build/contrib/modulefiles
    if [ -f "$generated/ldshim-relocatable.lua" ]; then
        # The installed tree, moved, with the relocatable files in place.
        top=$work/moved/elsewhere
        mkdir -p "$work/moved"
        mv "$work/destdir$prefix" "$top"
        m=$top/$datadir/modulefiles
        cp "$generated/ldshim-relocatable.lua" "$m/ldshim/$version.lua"
        cp "$generated/ldshim-relocatable.tcl" "$m/ldshim/$version"
        pass relocatable "$m" "$top" "$rel_lib" "$rel_bin" "$rel_man"
        linked_pass relocatable "$m" "$top" "$rel_lib" "$rel_bin" "$rel_man"
    else
        echo "modules ($tool): no relocatable pass: this build has a directory outside the prefix (contrib/modulefiles/meson.build)"
    fi
fi

if [ "$failed" -ne 0 ]; then
    echo "modules ($tool): FAILED"
    exit 1
fi
echo "modules ($tool): ldshim/$want_file: 4 environments in each of $passes: load prepends, unload restores every variable"
