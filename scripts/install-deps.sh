#!/usr/bin/env bash
# Installs the Debian packages named on the command line that are missing. Idempotent: when all
# are present it does nothing; when some are missing and we are not root it names them and fails.
set -euo pipefail
missing=()
# One dpkg-query for all (make test runs this first: one call each took a second on a busy host).
installed=$(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null |
	awk '/ install ok installed$/ { print $1 }' || true)
# A name an installed package Provides is there too (NodeSource's nodejs provides npm, and
# conflicts with Debian's).
provided=$(dpkg-query -W -f='${db:Status-Abbrev} ${Provides}\n' 2>/dev/null |
	awk '/^ii / { $1 = ""; print }' | tr ',' '\n' | sed 's/([^)]*)//g; s/[[:space:]]//g' || true)
for p in "$@"; do
	grep -qxF "$p" <<< "$installed" || grep -qxF "$p" <<< "$provided" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "dlscope: missing Debian packages: ${missing[*]} (run 'make deps' as root)" >&2
	exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Another apt or dpkg (unattended-upgrades) may hold the lock: wait for it, up to 10 minutes.
lock=(-o DPkg::Lock::Timeout=600)
apt-get "${lock[@]}" update -qq
apt-get "${lock[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
