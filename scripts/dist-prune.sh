#!/bin/sh
# meson dist's script (meson.build): the recipes that state the source
# tarball's sha256 (contrib/spack, contrib/easybuild) cannot be inside it.
set -eu
[ -n "${MESON_DIST_ROOT:-}" ] || { echo "dist-prune: run by meson dist (no MESON_DIST_ROOT)" >&2; exit 2; }
rm -rf "$MESON_DIST_ROOT/contrib/spack" "$MESON_DIST_ROOT/contrib/easybuild"
