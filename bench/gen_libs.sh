#!/usr/bin/env bash
# Generate N small shared objects (default 500) under DIR, each with a few functions and data,
# every tenth one needing the one before it, and a list file for tests/fixtures/dlopen_list.
set -euo pipefail
dir=${1:?usage: gen_libs.sh DIR [N]}
n=${2:-500}
mkdir -p "$dir"
[ -f "$dir/list.txt" ] && [ "$(wc -l < "$dir/list.txt")" -eq "$n" ] && exit 0
cat > "$dir/gen.c" <<'SRC'
#include <math.h>
static double table[64];
double gen_value(double x) { return sqrt(x) + table[(int)x & 63] + ID; }
int gen_id(void) { return ID; }
__attribute__((constructor)) static void init(void) { table[ID & 63] = ID; }
SRC
: > "$dir/list.txt"
for ((i = 0; i < n; i++)); do
	dep=""
	if (( i % 10 )); then dep="-L$dir -lgen$((i - 1))"; fi
	cc -O1 -shared -fPIC -DID=$i -Wl,-soname,libgen$i.so -o "$dir/libgen$i.so" "$dir/gen.c" \
		$dep -lm -Wl,-rpath,"$dir"
	echo "$dir/libgen$i.so" >> "$dir/list.txt"
done
