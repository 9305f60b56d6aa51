#!/bin/sh
# Times the README's first command as a fresh Debian 12 machine runs it: a
# clone of this repository's HEAD (committed changes only) in a bare
# bookworm root (debootstrap minbase, made once and kept as a tarball beside
# the other roots), chrooted with /proc, /sys and /dev mounted in a private
# mount namespace, with a clean environment and no ccache but the root's
# own (empty).  Runs ./scripts/demo.sh twice, fresh and warm, and prints the
# seconds of each; their output goes to /var/cache/ldshim/demo-fresh/.  Not a
# root of scripts/roots.sh's directory, which other scripts take every root
# of.  apt in the root reaches the archive as roots.sh's
# roots do (the mirror of scripts/debian-mirror.sh), with this machine's
# Acquire settings (proxy, validity) and its resolver, hosts and hostname
# (Open MPI looks its host name up: without a hosts entry every MPI_Init
# waits on DNS).  Needs root; exits 77 (skipped) otherwise.
#   scripts/demo-fresh.sh [--keep]    --keep leaves the root in /var/cache/ldshim/demo-fresh/root
# Exit status: 0 both runs passed, 1 a run failed (or the root could not be
# made), 2 a wrong argument, 77 not root.
set -eu
cd "$(dirname "$0")/.."
keep=0
case ${1:-} in
    --keep) keep=1 ;;
    "") ;;
    *) echo "usage: $0 [--keep]" >&2; exit 2 ;;
esac
if [ "$(id -u)" -ne 0 ]; then
    echo "demo-fresh: SKIPPED: debootstrap and chroot need root"
    exit 77
fi
dir=/var/cache/ldshim/demo-fresh
tarball=/var/cache/ldshim/bookworm-amd64-minbase.tar
root=$dir/root
mkdir -p "$dir"

if [ ! -s "$tarball" ]; then
    command -v debootstrap >/dev/null 2>&1 ||
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
    mirror=$(./scripts/debian-mirror.sh bookworm)
    tmp=$dir/minbase.tmp
    rm -rf "$tmp"
    echo "demo-fresh: making a bookworm minbase root from $mirror (once)"
    debootstrap --variant=minbase bookworm "$tmp" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
        { tail -n 20 "$dir/debootstrap.log" >&2; echo "demo-fresh: debootstrap failed (log: $dir/debootstrap.log)" >&2; exit 1; }
    tar -C "$tmp" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$tmp"
fi

# What is mounted under the root, deepest first, unmounted (a run that was
# killed can leave its namespace's mounts behind only if it was not private).
unmount_under() {
    awk -v p="$1/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
        umount "$m" 2>/dev/null || umount -l "$m"
    done
}
unmount_under "$root"
rm -rf "$root"
mkdir -p "$root"
tar -C "$root" -xf "$tarball"
for f in /etc/apt/apt.conf.d/*; do
    [ -f "$f" ] && grep -q '^Acquire::' "$f" && cp "$f" "$root/etc/apt/apt.conf.d/"
done
cp /etc/resolv.conf /etc/hosts /etc/hostname "$root/etc/" 2>/dev/null || true
git clone -q "$PWD" "$root/root/ldshim"
[ "$keep" = 1 ] || trap 'rm -rf "$root"' EXIT

run() { # LABEL: ./scripts/demo.sh in the root, its output in $dir/LABEL.log
    echo "demo-fresh: $1 run (load average $(cut -d' ' -f1-3 /proc/loadavg)) ..."
    start=$(date +%s)
    rc=0
    # shellcheck disable=SC2016 # expanded by the inner shell
    unshare -m sh -c 'r=$1; mount -t proc proc "$r/proc" && mount --rbind /sys "$r/sys" &&
        mount --rbind /dev "$r/dev" && exec chroot "$r" /usr/bin/env -i HOME=/root TERM=dumb \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin sh -c "cd /root/ldshim && ./scripts/demo.sh"' \
        sh "$root" >"$dir/$1.log" 2>&1 || rc=$?
    seconds=$(($(date +%s) - start))
    echo "demo-fresh: $1 run: $seconds s, exit $rc: $(tail -n 1 "$dir/$1.log")"
    return "$rc"
}
status=0
run fresh || status=1
run warm || status=1
exit $status
