#!/bin/sh
# What the release tarball (scripts/release.sh) asks of the system it runs
# on: every ELF file in it may need glibc alone, at most GLIBC_2.28.
#   - DT_NEEDED only glibc's libraries (libc.so.6, libdl.so.2,
#     libpthread.so.0, libm.so.6, librt.so.1, the loader) and libraries the
#     tarball itself ships, found through a RUNPATH $ORIGIN/... entry;
#   - every version it imports (.gnu.version_r) is a GLIBC_x.y no newer than
#     GLIBC_2.28: no GLIBCXX_, CXXABI_, GCC_ (libstdc++ and libgcc are linked
#     in), no GLIBC_PRIVATE, no GLIBC_ABI_DT_RELR;
#   - a shipped library exports what its version script says and nothing of
#     the C++ runtime linked into it: libldshim_preload.so exactly the global
#     names of preload/preload.map, libldshim.so only names of a version of
#     lib/ldshim.map (LDSHIM_*);
#   - a static executable (ldsearch) has no program interpreter.
# Prints what it found per file and one summary line; exits 1 on any
# finding, 2 on a usage error.
#   scripts/release-symbols.sh TARBALL
set -eu
case ${1:-} in
    --help | -h) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    "" | -*) echo "release-symbols: usage: $0 TARBALL (see --help)" >&2; exit 2 ;;
esac
tarball=$1
[ -f "$tarball" ] || { echo "release-symbols: no tarball $tarball" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
max=GLIBC_2.28
glibc_libs='^(libc\.so\.6|libdl\.so\.2|libpthread\.so\.0|libm\.so\.6|librt\.so\.1|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1)$'
# Names of the C++ runtime and the unwinder, mangled or not.
cxx_runtime='^(_ZSt|_ZNSt|_ZNKSt|_ZTISt|_ZTSSt|_ZTVSt|_ZGVNSt|_ZN9__gnu_cxx|_ZNK9__gnu_cxx|_ZN10__cxxabiv1|_ZTIN10__cxxabiv1|_ZTVN10__cxxabiv1|_ZdlPv|_ZdaPv|_Znwm|_Znam|__cxa_|__gxx_|__gcc_|_Unwind_|__dynamic_cast)'

work=$(mktemp -d "${TMPDIR:-/tmp}/ldshim-release-symbols.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xJf "$tarball" -C "$work"
findings=0
finding() { echo "  FINDING: $*"; findings=$((findings + 1)); }

# Versions of `readelf -VW`'s needs section, one "FILE VERSION" a line.
needed_versions() {
    readelf -VW "$1" | awk '
        /^Version needs section/ { in_r = 1; next }
        /^Version (symbols|definition) section/ { in_r = 0 }
        in_r && / File: / { for (i = 1; i <= NF; i++) if ($i == "File:") file = $(i + 1) }
        in_r && / Name: / { for (i = 1; i <= NF; i++) if ($i == "Name:") print file, $(i + 1) }'
}
# The global names of an anonymous version script.
map_globals() {
    sed 's|/\*.*\*/||' "$1" | tr -d '\n' | sed 's/.*global:\(.*\)local:.*/\1/' | tr ';' '\n' | tr -d ' \t' | grep -v '^$' | sort
}

shipped=$(cd "$work" && find . -type f -o -type l | sed 's|.*/||')
overall=""
summary=""
at_highest=""
for f in $(cd "$work" && find . -type f | sort); do
    path=$work/$f
    [ "$(head -c 4 "$path" | od -An -c | tr -d ' ')" = "177ELF" ] || continue
    base=${f##*/}
    echo "$base ($(echo "$f" | cut -d/ -f3-)):"
    if ! readelf -dW "$path" | grep -q 'There is no dynamic section\|^Dynamic section'; then
        finding "$base: readelf cannot read its dynamic section"
    fi
    if readelf -dW "$path" | grep -q 'There is no dynamic section'; then
        if readelf -lW "$path" | grep -q 'INTERP'; then finding "$base: no dynamic section but a program interpreter"; fi
        echo "  static: no dynamic section, no interpreter, no library needed"
        summary="$summary
$base: static"
        continue
    fi
    needed=$(readelf -dW "$path" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    echo "  NEEDED: $(echo "$needed" | tr '\n' ' ' | sed 's/ $//')"
    # A library the tarball ships is found through the file's own place:
    # a RUNPATH (or RPATH) entry $ORIGIN/... that holds it.
    runpath=$(readelf -dW "$path" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p' | tr ':' '\n')
    for n in $needed; do
        echo "$n" | grep -Eq "$glibc_libs" && continue
        if echo "$shipped" | grep -qxF "$n"; then
            found=""
            for r in $runpath; do
                # shellcheck disable=SC2016 # $ORIGIN is the loader's
                case $r in '$ORIGIN' | '$ORIGIN/'* | '${ORIGIN}' | '${ORIGIN}/'*) ;; *) continue ;; esac
                d=$(dirname "$path")${r#*ORIGIN}
                d=${d%\}}
                [ -e "$d/$n" ] && found="$r" && break
            done
            if [ -n "$found" ]; then
                echo "  $n: the tarball's, through RUNPATH $found"
            else
                finding "$base needs the tarball's $n but no \$ORIGIN entry of its RUNPATH (${runpath:-none}) leads to it"
            fi
            continue
        fi
        finding "$base needs $n, which is neither glibc's nor in the tarball"
    done
    versions=$(needed_versions "$path")
    highest=""
    # Versions of the tarball's own libraries (the preload's LDSHIM_0) are its own business.
    for v in $(echo "$versions" | awk '{ print $2 }' | sort -u); do
        lib=$(echo "$versions" | awk -v v="$v" '$2 == v { print $1; exit }')
        if ! echo "$lib" | grep -Eq "$glibc_libs" && echo "$shipped" | grep -qxF "$lib"; then continue; fi
        case $v in
            GLIBC_[0-9]*.[0-9]*)
                if [ "$(printf '%s\n%s\n' "$v" "$max" | sort -V | tail -n 1)" != "$max" ]; then
                    syms=$(readelf --dyn-syms -W "$path" | awk -v v="@$v" '$7 == "UND" && index($8, v) { sub(/@.*/, "", $8); print $8 }' | tr '\n' ' ' | sed 's/ $//')
                    finding "$base imports $v (newer than $max): $syms"
                fi
                highest=$(printf '%s\n%s\n' "$highest" "$v" | sed '/^$/d' | sort -V | tail -n 1) ;;
            *)
                syms=$(readelf --dyn-syms -W "$path" | awk -v v="@$v" '$7 == "UND" && index($8, v) { sub(/@.*/, "", $8); print $8 }' | tr '\n' ' ' | sed 's/ $//')
                finding "$base imports version $v ($lib)${syms:+: $syms}" ;;
        esac
    done
    [ -n "$highest" ] || highest="none"
    at=$(readelf --dyn-syms -W "$path" | awk -v v="@$highest" '$7 == "UND" && index($8, v) { sub(/@.*/, "", $8); print $8 }' | sort | tr '\n' ' ' | sed 's/ $//')
    echo "  highest imported version: $highest${at:+ ($at)}"
    echo "  versions: $(echo "$versions" | awk '{ print $2 }' | sort -uV | tr '\n' ' ' | sed 's/ $//')"
    summary="$summary
$base: $highest"
    [ -z "$at" ] || at_highest="$at_highest
$highest $at ($base)"
    overall=$(printf '%s\n%s\n' "$overall" "$highest" | grep '^GLIBC_' | sort -V | tail -n 1)

    # What a library exports.
    case $base in
        *.so | *.so.*)
            defined=$(nm -D --defined-only "$path" | awk '{ print $NF }' | sort -u)
            cxx=$(echo "$defined" | grep -E "$cxx_runtime" | tr '\n' ' ' || true)
            [ -z "$cxx" ] || finding "$base exports the C++ runtime's $cxx"
            case $base in
                libldshim_preload.so)
                    want=$(map_globals "$src/preload/preload.map")
                    got=$(echo "$defined" | grep -v '^$' | sort)
                    if [ "$got" != "$want" ]; then
                        finding "$base exports $(echo "$got" | tr '\n' ' '), preload/preload.map says $(echo "$want" | tr '\n' ' ')"
                    fi ;;
                libldshim.so*)
                    # Every defined name but the version nodes carries a node of ldshim.map.
                    # Local symbols export nothing (bullseye's aarch64 ld writes the
                    # section symbols of .init and .data into .dynsym).
                    other=$(readelf --dyn-syms -W "$path" | awk '$7 != "UND" && $8 != "" && $5 != "LOCAL" && NR > 3 {
                            if ($8 !~ /@@?LDSHIM_/ && $7 != "ABS") print $8 }' | tr '\n' ' ')
                    [ -z "$other" ] || finding "$base exports names outside ldshim.map's versions: $other" ;;
            esac
            echo "  exports: $(echo "$defined" | grep -c .) names${cxx:-, none of the C++ runtime}" | sed 's/names[^,].*/names/' ;;
    esac
done

name=${tarball##*/}
# One entry per distinct "file: version" (the probe's targets are one file
# in several directories): the newest first, the names imported at the
# highest version with it, then the files that import no glibc version,
# then the static ones.
files=$(echo "$summary" | sed '/^$/d' | sort | uniq -c | awk -v v="$overall" -v at="$(echo "$at_highest" | sed '/^$/d' | tr '\n' '|')" '
    { n = $1; f = $2; sub(/:$/, "", f); ver = $3
      name = n > 1 ? f " (" n " files)" : f
      if (ver == "static") { print "3 " name ": static"; next }
      if (ver == "none") { print "2 " name ": no glibc version"; next }
      syms = ""
      if (ver == v) {
          k = split(at, a, "|")
          for (i = 1; i <= k; i++) if (index(a[i], v " ") == 1 && index(a[i], "(" f ")")) {
              syms = a[i]; sub("^" v " ", "", syms); sub(" [(][^(]*[)]$", "", syms); syms = " " syms }
      }
      print "1 " name ": " ver syms }' |
    sort -k1,1n -k3,3Vr | cut -d' ' -f2- | paste -sd';' - | sed 's/;/; /g')
if [ "$findings" -ne 0 ]; then
    echo "$name: FAIL: $findings finding(s) above (highest glibc symbol version ${overall:-none}: $files)"
    exit 1
fi
echo "$name: highest glibc symbol version ${overall:-none} ($files), no libstdc++ versions"
