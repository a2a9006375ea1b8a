#!/usr/bin/env bash
# make demo: start fixture processes that really carry runtime collisions and show them.
set -euo pipefail
build=${1:-build}
fx=$build/fixtures
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

start() {
	local out; out=$(mktemp)
	"$@" >"$out" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do grep -q '^ready' "$out" && break; sleep 0.05; done
	rm -f "$out"
}

start "$fx/two_omp"
echo "== A program linked with GNU libgomp that dlopens LLVM libomp: two OpenMP runtimes"
echo "\$ dlscope libs ${pids[0]}"
./dlscope libs "${pids[0]}"
echo
start "$fx/two_blas"
echo "== Two OpenBLAS builds with two thread pools in one process"
echo "\$ dlscope libs ${pids[1]}"
./dlscope libs "${pids[1]}"
