#!/bin/sh
# Unpacks Debian's environment-modules package (Environment Modules 5, the
# Tcl `module` command) into a directory of its own, for the modules test:
# Debian's lmod and environment-modules conflict, so scripts/setup.sh installs
# lmod and this puts the other one beside it, uninstalled.  Its modulecmd.tcl
# runs from there with the system's tclsh (its compiled helper library and
# /etc/environment-modules are optional).
#
#   scripts/environment-modules.sh     fetch and unpack if needed; prints the root
#
# The .deb comes from the system's apt sources with `apt-get download`; the
# version is the archive's candidate.  Where: LDSHIM_ENVMODULES_ROOT (default
# /var/cache/ldshim/environment-modules as root,
# ${XDG_CACHE_HOME:-~/.cache}/ldshim/environment-modules otherwise); the
# package lies unpacked under its root/.  With the package installed, nothing
# is fetched.
# Exit status: 0 ready; 77 cannot be done here (the reason on stderr).
set -eu
say() { echo "environment-modules: $*" >&2; }
if [ -r /usr/lib/x86_64-linux-gnu/modulecmd.tcl ]; then
    say "installed: /usr/lib/x86_64-linux-gnu/modulecmd.tcl"
    echo /
    exit 0
fi
if [ -n "${LDSHIM_ENVMODULES_ROOT:-}" ]; then
    dir=$LDSHIM_ENVMODULES_ROOT
elif [ "$(id -u)" -eq 0 ]; then
    dir=/var/cache/ldshim/environment-modules
else
    dir=${XDG_CACHE_HOME:-$HOME/.cache}/ldshim/environment-modules
fi
cmd=$dir/root/usr/lib/x86_64-linux-gnu/modulecmd.tcl
if [ -r "$cmd" ]; then
    say "unpacked: $cmd"
    echo "$dir/root"
    exit 0
fi
for tool in apt-get dpkg-deb; do
    command -v "$tool" >/dev/null 2>&1 || { say "SKIPPED: $tool is missing"; exit 77; }
done
mkdir -p "$dir/deb" || { say "SKIPPED: cannot create $dir"; exit 77; }
# apt-get download writes into the current directory, as the _apt user where
# it can: give it a directory it may write.
chmod 0777 "$dir/deb"
(cd "$dir/deb" && apt-get download -q environment-modules >"$dir/download.log" 2>&1) ||
    { say "SKIPPED: apt-get download environment-modules failed (see $dir/download.log)"; exit 77; }
deb=$(find "$dir/deb" -maxdepth 1 -name 'environment-modules_*.deb' | sort | tail -1)
[ -n "$deb" ] || { say "SKIPPED: apt-get download brought no .deb"; exit 77; }
rm -rf "$dir/root.new"
dpkg-deb -x "$deb" "$dir/root.new"
[ -r "$dir/root.new/usr/lib/x86_64-linux-gnu/modulecmd.tcl" ] ||
    { say "SKIPPED: $(basename "$deb") holds no usr/lib/x86_64-linux-gnu/modulecmd.tcl"; exit 77; }
rm -rf "$dir/root"
mv "$dir/root.new" "$dir/root"
say "unpacked $(basename "$deb") into $dir/root"
echo "$dir/root"
