#!/usr/bin/env bash
# make bench: every benchmark under bench/, each printing its own figures.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
for b in bench/*_bench.py; do
	echo "== $b"
	python3 "$b" "$build"
done
for b in bench/*.sh; do
	case "$b" in */gen_*|*/run_all.sh) continue ;; esac
	echo "== $b"
	"$b" "$build"
done
