#!/usr/bin/env bash
# make demo: start fixture processes that really carry runtime collisions and show them.
set -uo pipefail
build=${1:-build}
fx=$build/fixtures
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

start() {
	local out
	out=$(mktemp)
	"$@" >"$out" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do grep -q '^ready' "$out" && break; sleep 0.05; done
	rm -f "$out"
}

# Each command as it can be pasted: ./dlscope (it is not installed), words quoted for a shell.
run() {
	local w line='$ ./dlscope'
	for w in "$@"; do
		if [[ $w =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then
			line+=" $w"
		else
			line+=" '${w//\'/\'\\\'\'}'"
		fi
	done
	echo "$line"
	./dlscope "$@"
	echo
}

start "$fx/two_omp"
echo "== A program linked with GNU libgomp that dlopens LLVM libomp: two OpenMP runtimes"
run libs "${pids[0]}"
run check "${pids[0]}"

start "$fx/dlopen_list" --global /usr/lib/x86_64-linux-gnu/libstdc++.so.6 \
	"$fx/libcxx_ext_static.so"
echo "== An extension with a stripped, statically linked libstdc++ beside the shared one"
run check "${pids[1]}"

echo "== numpy with a second OpenBLAS loaded through ctypes, checked at its exit (no root needed)"
run check -- /usr/bin/python3 -c "import numpy, ctypes; ctypes.CDLL('libopenblas64.so.0')"

echo "== A JIT kernel cache with an object whose two .text sections have conflicting flags"
run lint "$fx/kcache"
exit 0
