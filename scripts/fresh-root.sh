#!/usr/bin/env bash
# Runs a command in a fresh Debian 12 root, as a new user's machine would have it: debootstrap
# --variant=minbase bookworm with make, git and ca-certificates and nothing else, a clean clone
# of this repository in /root/dlscope, the command run there as root (.ci/run runs the README's
# `make demo` and `make test` this way).
#
#   scripts/fresh-root.sh [--keep] [--in ROOT] [--logs DIR] 'make demo && make test'
#
# The root is bound onto itself (a mount point, as a machine's / is: `unshare --propagation`
# needs one) with /proc, /sys and /dev bound in (BPF, uprobes, ptrace and ptys work in a chroot
# on this kernel), all in a mount namespace of this script's own, gone when it ends. Only the
# minbase tarball and the downloaded .deb files are kept between runs (scripts/root-tarball.sh's
# folder, outside the repository): every package the command needs is installed afresh. Every process left in the root is killed at
# the end and the root removed ("fresh-root: made ROOT" first; --keep keeps the root and says
# where, "fresh-root: kept ROOT";
# --in ROOT runs the command in a root kept so, as the next command a user types on that
# machine; --logs DIR copies the files *.log the command left in /root to DIR first). Needs
# root.
set -euo pipefail

usage() { echo "usage: scripts/fresh-root.sh [--keep] [--in ROOT] [--logs DIR] COMMAND" >&2; exit 2; }
keep=0
logs=
root=
while [ $# -gt 1 ]; do
	case $1 in
	--keep) keep=1; shift ;;
	--in) root=$(realpath -m "$2"); shift 2 ;;
	--logs) logs=$(realpath -m "$2"); shift 2 ;;
	*) usage ;;
	esac
done
[ $# -eq 1 ] || usage
[ "$(id -u)" -eq 0 ] || { echo "fresh-root: debootstrap, chroot and mounts need root" >&2; exit 2; }
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)

cd "$repo"
if [ -n "$root" ]; then
	[ -d "$root/root/dlscope" ] || { echo "fresh-root: $root is not a root that --keep kept" >&2; exit 2; }
	made=0
else
	command -v debootstrap > /dev/null || scripts/install-deps.sh debootstrap
	tarball=$(scripts/root-tarball.sh bookworm make,git,ca-certificates)
	root=$(mktemp -d /var/tmp/dlscope-fresh.XXXXXX)
	# Said at once: a caller that stops this script early removes what it leaves.
	echo "fresh-root: made $root"
	made=1
fi
cleanup() {
	if [ -n "$logs" ]; then
		mkdir -p "$logs"
		cp "$root"/root/*.log "$logs"/ 2>/dev/null || true
	fi
	if [ "$keep" -eq 1 ]; then
		echo "fresh-root: kept $root"
	else
		rm -rf --one-file-system "$root"
	fi
}
trap cleanup EXIT
# A minbase root from the tarball, as Debian's installer leaves a machine, with a clone of this
# commit.
make_root() {
	tar -C "$root" -xzf "$tarball"
	# A real Debian 12 install has its updates and security suites; debootstrap writes only main.
	cat > "$root/etc/apt/sources.list" <<-EOF
		deb http://deb.debian.org/debian bookworm main
		deb http://deb.debian.org/debian bookworm-updates main
		deb http://deb.debian.org/debian-security bookworm-security main
	EOF
	# dpkg without an fsync per file, as Debian's own container images have it
	# (/etc/dpkg/dpkg.cfg.d/docker-apt-speedup): the same packages, unpacked the same way. On this
	# VM, installing python3-scipy, gdb and elfutils into the root took 96 and 129 s with the
	# fsyncs, 72 and 65 s without (2026-11-29); the whole `make test` of CI's next run did not
	# get faster (1,332 s, against 1,289-1,328 s before), so its install is slow for other reasons.
	echo force-unsafe-io > "$root/etc/dpkg/dpkg.cfg.d/unsafe-io"
	# The network as a machine on this one has it: its resolver, and the local certificate
	# authorities a site's TLS proxy needs (npm's registry is reached over https).
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	if compgen -G "/usr/local/share/ca-certificates/*.crt" > /dev/null; then
		cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
		chroot "$root" update-ca-certificates > /dev/null
	fi
	git clone -q "$repo" "$root/root/dlscope"
}
[ "$made" -eq 0 ] || make_root

# Inside a private mount namespace: the mounts, the command with an environment a login shell
# would give it, then every process whose root is this one killed (a fixture left behind keeps
# the namespace, and so the mounts, alive).
# The .deb files the root downloads are kept between runs, beside the tarball (as an apt proxy
# keeps them): apt checks each against the root's own package lists, so what is installed and
# how is the same as from the network, only the transfer is saved.
# DLSCOPE_ROOT_DEBS: another folder for them, for a root made at the same time as another (apt
# locks its archive folder for the whole of an install).
debs=${DLSCOPE_ROOT_DEBS:-${DLSCOPE_ROOT_CACHE:-/var/cache/dlscope-ci}/bookworm-debs}
mkdir -p "$debs/partial"
status=0
unshare --mount --propagation private bash -s "$root" "$1" "$debs" <<-'EOF' || status=$?
	set -u
	root=$1
	mount --bind "$root" "$root"
	for fs in proc sys dev; do mount --rbind "/$fs" "$root/$fs"; done
	mount --bind "$3" "$root/var/cache/apt/archives"
	status=0
	env -i HOME=/root TERM="${TERM:-xterm}" \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		chroot "$root" /bin/bash -c "cd /root/dlscope && $2" || status=$?
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	exit $status
EOF
exit $status
