#!/usr/bin/env bash
# Prints the path of a cached tarball of a Debian suite's minimal root with the packages named:
# debootstrap --variant=minbase --include=PKGS SUITE, made once under a lock (callers running at
# once make it once) in DLSCOPE_ROOT_CACHE (/var/cache/dlscope-ci by default, outside the
# repository). Used by scripts/fresh-root.sh and the tests' distro roots.
#
#   scripts/root-tarball.sh SUITE PKG[,PKG...]
#
# Exit 2: usage or not root; 3: debootstrap missing or failed (the reason on stderr).
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: scripts/root-tarball.sh SUITE PKG[,PKG...]" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "root-tarball: debootstrap needs root" >&2; exit 2; }
suite=$1
include=$(tr ',' '\n' <<< "$2" | sort | paste -sd,)
mirror=http://deb.debian.org/debian
script=
gpg=
components=
case $suite in
focal | jammy | noble)
	# Ubuntu's roots (its archive, and the gutsy script every release since uses). Debian
	# ships no Ubuntu keyring, so the Release files are not verified: these roots are test
	# fixtures, run only inside the tests' namespaces, never booted or trusted.
	mirror=http://archive.ubuntu.com/ubuntu
	script=/usr/share/debootstrap/scripts/gutsy
	components=--components=main,universe # NumPy and OpenBLAS are universe's
	[ -f /usr/share/keyrings/ubuntu-archive-keyring.gpg ] ||
		gpg=--no-check-gpg
	;;
esac
cache=${DLSCOPE_ROOT_CACHE:-/var/cache/dlscope-ci}
tarball=$cache/$suite-minbase-${include//,/-}.tar.gz

mkdir -p "$cache"
exec 9> "$tarball.lock"
flock 9
if [ ! -f "$tarball" ]; then
	command -v debootstrap > /dev/null ||
		{ echo "root-tarball: debootstrap is not installed (make deps installs it)" >&2; exit 3; }
	tmp=$(mktemp -d "$cache/make-$suite.XXXXXX")
	trap 'rm -rf --one-file-system "$tmp"' EXIT
	echo "root-tarball: debootstrap --variant=minbase --include=$include $suite" >&2
	# shellcheck disable=SC2086 # $gpg and $components are one option or none
	if ! debootstrap --variant=minbase $gpg $components --include="$include" "$suite" "$tmp/root" \
		"$mirror" $script > "$tmp/debootstrap.log" 2>&1; then
		tail -n 5 "$tmp/debootstrap.log" >&2
		echo "root-tarball: debootstrap of $suite failed (is $mirror reachable?)" >&2
		exit 3
	fi
	rm -rf "$tmp/root/var/lib/apt/lists/"* "$tmp/root/var/cache/apt/archives/"*.deb
	tar -C "$tmp/root" -czf "$tmp/root.tar.gz" . && mv "$tmp/root.tar.gz" "$tarball"
fi
echo "$tarball"
