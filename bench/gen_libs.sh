#!/usr/bin/env bash
# Generate N small shared objects (default 500) under DIR, each with a few functions and data,
# every tenth one needing the one before it, and a list file for tests/fixtures/dlopen_list.
# Built once (list.txt is written last) and in parallel: the ten objects of a chain one after
# the other, the chains on every CPU; a lock makes callers at once wait for one build.
set -euo pipefail
dir=${1:?usage: gen_libs.sh DIR [N]}
n=${2:-500}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)  # absolute: the list, the rpaths and -L name it from anywhere
exec 9> "$dir/.lock"
flock 9
[ -f "$dir/list.txt" ] && [ "$(wc -l < "$dir/list.txt")" -eq "$n" ] && exit 0
cat > "$dir/gen.c" <<'SRC'
#include <math.h>
static double table[64];
double gen_value(double x) { return sqrt(x) + table[(int)x & 63] + ID; }
int gen_id(void) { return ID; }
__attribute__((constructor)) static void init(void) { table[ID & 63] = ID; }
SRC
chain() {  # the objects $1 .. $1+9 (fewer at the end), each needing the one before it
	local i dep
	for ((i = $1; i < $1 + 10 && i < n; i++)); do
		dep=""
		if ((i % 10)); then dep="-L$dir -lgen$((i - 1))"; fi
		cc -O1 -shared -fPIC -DID=$i -Wl,-soname,libgen$i.so -o "$dir/libgen$i.so" \
			"$dir/gen.c" $dep -lm -Wl,-rpath,"$dir"
	done
}
export -f chain
export dir n
seq 0 10 $((n - 1)) | xargs -P "$(nproc)" -I{} bash -c 'chain {}'
for ((i = 0; i < n; i++)); do echo "$dir/libgen$i.so"; done > "$dir/list.txt.tmp"
mv "$dir/list.txt.tmp" "$dir/list.txt"
