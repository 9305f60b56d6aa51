#!/bin/sh
# Prints the Debian mirror debootstrap should use: $LDSHIM_DEBIAN_MIRROR if
# set, else the one apt is configured with (sources.list or deb822 .sources),
# preferring an entry for SUITE.  Exit 1 when there is none.
#   scripts/debian-mirror.sh [SUITE]
set -eu
suite=${1:-}
if [ -n "${LDSHIM_DEBIAN_MIRROR:-}" ]; then
    echo "$LDSHIM_DEBIAN_MIRROR"
    exit 0
fi
# shellcheck disable=SC2016 # apt expands $(SITE), not the shell
m=$(apt-get indextargets --format '$(SITE) $(RELEASE) $(COMPONENT)' 'Identifier: Packages' |
    awk -v s="$suite" '$3 == "main" && $2 !~ /-/ { if ($2 == s) { print $1; found = 1; exit } if (!any) any = $1 }
                      END { if (!found && any) print any }')
[ -n "$m" ] || { echo "debian-mirror: no Debian mirror in apt's sources (set LDSHIM_DEBIAN_MIRROR)" >&2; exit 1; }
echo "$m"
