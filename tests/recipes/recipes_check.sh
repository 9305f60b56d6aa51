#!/bin/sh
# The recipes of contrib/ checked offline against the source tarball, with
# neither Spack nor EasyBuild installed (scripts/test.sh runs this):
#   1. the tarball: TARBALL, or scripts/dist.sh's of this checkout
#   2. each recipe's version is the tarball's, and its sha256 the
#      tarball's where that is a release (--release: a difference fails;
#      between releases every commit changes the tarball, so it is said);
#      --update writes the tarball's into both recipes instead
#   3. Spack (contrib/spack/packages/ldshim/package.py, read by
#      tests/recipes/recipes.py with the Spack API stubbed): what
#      `spack install ldshim` runs (with --full: `spack install --test=root
#      ldshim`, which builds the GoogleTest suites and runs the recipe's
#      check(); two builds of every test, minutes more), in the order
#      MesonBuilder runs it (spack-packages' build_systems/meson.py): in
#      spack-build-HASH, `meson setup SRC` with std_args and the recipe's
#      meson_args(), `ninja -v`, check() where tests run, `ninja install`
#      into a fresh prefix; then its stand-alone tests (`spack test run
#      ldshim`: the test_* methods, from the test sources it caches); and
#      +cuda configured (where the CUDA headers are)
#   4. EasyBuild (contrib/easybuild/*.eb): what the MesonNinja easyblock
#      (easybuild-easyblocks' generic/mesonninja.py) runs: in
#      easybuild_obj, `meson setup --prefix INSTALLDIR --optimization=2
#      CONFIGOPTS -Dlibdir=lib -Db_ndebug=true SRC`, `ninja -v -j N`, the
#      recipe's runtest, `ninja -j N install` into a fresh prefix; then its
#      sanity_check_paths and, with the environment of the module EasyBuild
#      writes (loaded with Lmod where installed), its sanity_check_commands
#   5. every -Dname=value of both recipes names an option of
#      `meson introspect --buildoptions`
#   6. Lmod: the module files the Spack install carries
#      (share/modulefiles) load and point at that prefix
# ninja runs with -j 2 (Spack and EasyBuild pass their build jobs: here 2).
# The source is unpacked to /var/tmp/ldshim-recipes-check (one path, so
# that ccache hits from one run to the next); one run at a time (flock).
#   tests/recipes/recipes_check.sh [--help] [--full] [--release] [--update] [TARBALL]
# Exit status: 0 all passed, 1 one failed (said with "recipes: FAIL:").
set -eu
update=0 full=0 release=0
while [ "$#" -gt 0 ]; do
    case $1 in
        --help | -h) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        --update) update=1; shift ;;
        --full) full=1; shift ;;
        --release) release=1; shift ;;
        -*) echo "recipes_check: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done
[ "$#" -le 1 ] || { echo "recipes_check: one TARBALL at most (see --help)" >&2; exit 2; }
tarball=${1:-}
case $tarball in "" | /*) ;; *) tarball=$PWD/$tarball ;; esac
cd "$(dirname "$0")/../.."
top=$PWD
spack_recipe=$top/contrib/spack/packages/ldshim/package.py
eb_recipe=$(ls "$top"/contrib/easybuild/ldshim-*.eb)
recipes="python3 $top/tests/recipes/recipes.py"
w=/var/tmp/ldshim-recipes-check
mkdir -p "$w"
exec 9>"$w.lock"
flock 9
status=0
fail() { echo "recipes: FAIL: $*"; status=1; }
# A recipe's sha256 other than this tarball's: wrong at a release only.
sha_differs() { if [ "$release" = 1 ]; then fail "$*"; else echo "recipes: note: $* (not a release: --release makes this fail)"; fi; }
die() { echo "recipes: FAIL: $*"; exit 1; }
step() { echo "== recipes: $*"; }
run() { # LOG COMMAND...: the command echoed, its output in LOG (the tail shown if it fails)
    log=$1; shift
    echo "\$ $*"
    "$@" >"$log" 2>&1 || { tail -n 40 "$log"; return 1; }
}

# ---- 1, 2: the tarball, the recipes' version and sha256 -------------------
if [ -z "$tarball" ]; then
    rm -rf "$w/dist"
    ./scripts/dist.sh "$w/dist" >"$w/dist.out" || die "scripts/dist.sh failed (above)"
    tarball=$(tail -n 1 "$w/dist.out")
fi
[ -f "$tarball" ] || die "no tarball $tarball"
name=$(basename "$tarball" .tar.xz)
version=${name#ldshim-}
sha=$(sha256sum "$tarball" | cut -c1-64)
step "source tarball $tarball (version $version, sha256 $sha)"
if [ "$update" = 1 ]; then
    sed -i "s/version(\"$version\", sha256=\"[0-9a-f]*\")/version(\"$version\", sha256=\"$sha\")/" "$spack_recipe"
    sed -i "/^checksums = /s/'[0-9a-f]\{64\}'/'$sha'/" "$eb_recipe"
    echo "recipes: wrote sha256 $sha into $spack_recipe and $eb_recipe"
fi
spack_sha=$($recipes spack-info "$spack_recipe" /p | python3 -c 'import json, sys; print(json.load(sys.stdin)["versions"].get(sys.argv[1], "none"))' "$version")
eb_json=$($recipes eb-info "$eb_recipe")
eb_field() { printf '%s\n' "$eb_json" | python3 -c 'import json, sys
v = json.load(sys.stdin).get(sys.argv[1], "")
print(" ".join(v) if isinstance(v, list) else v)' "$1"; }
if [ "$spack_sha" = "$sha" ]; then echo "spack:     version(\"$version\") sha256 matches the tarball"; else
    sha_differs "the Spack recipe's version(\"$version\") has sha256 $spack_sha, the tarball $sha (recipes_check.sh --update writes it)"
fi
if [ "$(eb_field version)" = "$version" ]; then echo "easybuild: version $version matches the tarball"; else
    fail "the easyconfig's version is $(eb_field version), the tarball's $version"
fi
case $(basename "$eb_recipe") in "ldshim-$version-"*) ;; *) fail "$eb_recipe is not named for version $version" ;; esac
[ "$(eb_field sources)" = "$name.tar.xz" ] || fail "the easyconfig's sources are $(eb_field sources), not $name.tar.xz"
if [ "$(eb_field checksums)" = "$sha" ]; then echo "easybuild: checksums match the tarball"; else
    sha_differs "the easyconfig's checksums are $(eb_field checksums), the tarball's sha256 $sha (recipes_check.sh --update writes it)"
fi

rm -rf "$w/src" "${w:?}/$name"
tar -xJf "$tarball" -C "$w"
mv "$w/$name" "$w/src"
src=$w/src
[ "$(meson introspect --projectinfo "$src/meson.build" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')" = "$version" ] ||
    fail "the tarball's meson.build states another version than $version"

# ---- 3: Spack ---------------------------------------------------------------
if [ "$full" = 1 ]; then spack_cmd="spack install --test=root ldshim" tests_flag=+run_tests; else
    spack_cmd="spack install ldshim" tests_flag=""
fi
step "Spack: $spack_cmd (MesonBuilder's phases), then spack test run ldshim"
sp=$w/spack-prefix
sb=$w/spack-build-recipes
rm -rf "$sp" "$sb"
# shellcheck disable=SC2046 # the recipe's arguments, one per line, none with a space
set -- $($recipes spack-info "$spack_recipe" "$sp" $tests_flag | python3 -c 'import json, sys; print("\n".join(json.load(sys.stdin)["meson_args"]))')
spack_args="$*"
mkdir -p "$sb"
(
    cd "$sb"
    run "$w/spack-setup.log" meson setup "$src" "$@" &&
        run "$w/spack-build.log" ninja -v -j 2 &&
        if [ "$full" = 1 ]; then
            echo "\$ [the recipe's check()]" && $recipes spack-check "$spack_recipe" "$sb" "$sp" >"$w/spack-check.log" 2>&1 &&
                tail -n 12 "$w/spack-check.log"
        fi &&
        run "$w/spack-install.log" ninja -j 2 install
) || { [ ! -f "$w/spack-check.log" ] || tail -n 40 "$w/spack-check.log"; fail "the Spack recipe's build (above)"; }
meson introspect --buildoptions "$sb" >"$w/buildoptions.json" 2>/dev/null ||
    meson introspect --buildoptions "$src/meson.build" >"$w/buildoptions.json" 2>/dev/null
echo "the Spack recipe's -D options:"
# shellcheck disable=SC2086 # one word each
$recipes options "$w/buildoptions.json" $spack_args || fail "the Spack recipe passes options this project does not have"
if [ -x "$sp/bin/ldsearch" ]; then
    echo "\$ [spack test run ldshim: the recipe's test_* methods]"
    rm -rf "$w/spack-test"
    if $recipes spack-test "$spack_recipe" "$src" "$sp" "$w/spack-test" >"$w/spack-test.log" 2>&1; then
        grep -E '^(==> \[spack test\]|PASSED|repair:|ucm-like|ldsearch|ldshim-hooks)' "$w/spack-test.log"
    else
        cat "$w/spack-test.log"
        fail "the Spack recipe's stand-alone tests"
    fi
fi
if [ -f /usr/local/cuda/include/cuda.h ]; then
    # shellcheck disable=SC2046
    set -- $($recipes spack-info "$spack_recipe" "$sp" +cuda | python3 -c 'import json, sys; print("\n".join(json.load(sys.stdin)["meson_args"]))')
    rm -rf "$w/spack-build-cuda"
    if run "$w/spack-cuda.log" meson setup "$w/spack-build-cuda" "$src" "$@"; then
        grep -q "CUDA" "$w/spack-cuda.log" && echo "+cuda: configured with the hooks ($*)"
    else
        fail "the Spack recipe's +cuda does not configure"
    fi
    # shellcheck disable=SC2086
    $recipes options "$w/buildoptions.json" "$@" >/dev/null || fail "ldshim+cuda passes options this project does not have"
else
    echo "+cuda: SKIPPED: no CUDA Toolkit headers at /usr/local/cuda/include"
fi

# ---- 4: EasyBuild -----------------------------------------------------------
step "EasyBuild: eb $(basename "$eb_recipe") (MesonNinja's steps, then the sanity check)"
ep=$w/eb-prefix
eb_dir=$w/eb/easybuild_obj
rm -rf "$ep" "$w/eb"
mkdir -p "$eb_dir"
configopts=$(eb_field configopts)
runtest=$(eb_field runtest)
(
    cd "$eb_dir"
    # shellcheck disable=SC2086 # configopts and runtest are shell words, as EasyBuild runs them
    run "$w/eb-setup.log" meson setup --prefix "$ep" --optimization=2 $configopts -Dlibdir=lib -Db_ndebug=true "$src" &&
        run "$w/eb-build.log" ninja -v -j 2 &&
        if [ -n "$runtest" ]; then
            echo "\$ $runtest" && sh -c "$runtest" >"$w/eb-test.log" 2>&1 && tail -n 12 "$w/eb-test.log"
        fi &&
        run "$w/eb-install.log" ninja -j 2 install
) || { [ ! -f "$w/eb-test.log" ] || tail -n 40 "$w/eb-test.log"; fail "the easyconfig's build (above)"; }
echo "the easyconfig's -D options:"
# shellcheck disable=SC2086
$recipes options "$w/buildoptions.json" $configopts -Dlibdir=lib -Db_ndebug=true || fail "the easyconfig passes options this project does not have"
missing=""
for f in $(printf '%s\n' "$eb_json" | python3 -c 'import json, sys; p = json.load(sys.stdin)["sanity_check_paths"]; print("\n".join(p["files"] + p["dirs"]))'); do
    [ -e "$ep/$f" ] || missing="$missing $f"
done
if [ -z "$missing" ]; then echo "sanity_check_paths: all present"; else fail "sanity_check_paths missing from the install:$missing"; fi
# The module EasyBuild writes for it (its default: the prefix's bin, lib,
# include, lib/pkgconfig, share/man, and EBROOTLDSHIM / EBVERSIONLDSHIM).
mkdir -p "$w/eb-modules/ldshim"
cat >"$w/eb-modules/ldshim/$version.lua" <<EOF
whatis("Description: ldshim (the easyconfig's module, as EasyBuild writes it)")
local root = "$ep"
prepend_path("PATH", pathJoin(root, "bin"))
prepend_path("LIBRARY_PATH", pathJoin(root, "lib"))
prepend_path("CPATH", pathJoin(root, "include"))
prepend_path("PKG_CONFIG_PATH", pathJoin(root, "lib/pkgconfig"))
prepend_path("MANPATH", pathJoin(root, "share/man"))
setenv("EBROOTLDSHIM", root)
setenv("EBVERSIONLDSHIM", "$version")
EOF
lmod_init=/usr/share/lmod/lmod/init/sh
if [ -r "$lmod_init" ]; then
    load=". $lmod_init && module use $w/eb-modules && module load ldshim/$version"
    echo "sanity_check_commands, after \`module load ldshim/$version\` (Lmod):"
else
    load="export PATH=$ep/bin:\$PATH EBROOTLDSHIM=$ep EBVERSIONLDSHIM=$version"
    echo "sanity_check_commands, with the module's PATH and EBROOTLDSHIM (Lmod: SKIPPED: not installed at $lmod_init):"
fi
printf '%s\n' "$eb_json" | python3 -c 'import json, sys; print("\n".join(json.load(sys.stdin)["sanity_check_commands"]))' >"$w/eb-sanity"
while IFS= read -r c; do
    if out=$(sh -c "$load && $c" 2>&1); then echo "  ok: $c${out:+ -> $(echo "$out" | head -n 1)}"; else
        echo "$out"
        fail "sanity_check_command: $c"
    fi
done <"$w/eb-sanity"

# ---- 6: Lmod: the module files of the Spack install ---------------------------
if [ ! -r "$lmod_init" ]; then
    echo "recipes: Lmod module load: SKIPPED: Lmod is not installed ($lmod_init)"
elif [ -f "$sp/share/modulefiles/ldshim/$version.lua" ]; then
    out=$(sh -c ". $lmod_init && module use $sp/share/modulefiles && module load ldshim && echo \"LD_PRELOAD=\$LD_PRELOAD\" && command -v ldsearch" 2>&1) ||
        fail "module load ldshim from the Spack prefix: $out"
    if echo "$out" | grep -qxF "LD_PRELOAD=$sp/lib/libldshim_preload.so" && echo "$out" | grep -qxF "$sp/bin/ldsearch"; then
        echo "Lmod: module load ldshim from $sp/share/modulefiles: LD_PRELOAD and PATH at the prefix"
    else
        fail "module load ldshim from the Spack prefix set: $out"
    fi
else
    fail "the Spack install has no share/modulefiles/ldshim/$version.lua"
fi

[ "$status" -eq 0 ] && echo "recipes: PASS (Spack and EasyBuild recipes against $tarball)" || echo "recipes: FAIL (above)"
exit "$status"
