#!/usr/bin/env bash
# Run each fuzzer for a fixed time over fresh seeds; fail on the first crash, leak or timeout.
# The fuzzers run at once (each is one process, and CI has other work beside them): the time
# is wall-clock for each, as libFuzzer's -max_total_time counts it.
set -euo pipefail
fuzz_build=$1 build=$2 seconds=$3
cd "$(dirname "$0")/.."
seeds=$fuzz_build/seeds findings=$fuzz_build/findings
rm -rf "$seeds"
mkdir -p "$findings"
python3 tests/fuzz/make_seeds.py "$seeds" "$build"
pids=() names=() works=()
for f in "$fuzz_build"/fuzz/fuzz_*; do
	name=$(basename "$f") corpus=$seeds/${name#fuzz_}
	work=$(mktemp -d)
	cp -r "$corpus"/. "$work"/
	# The core reader runs libdwfl, whose own leaks (tests/lsan.supp) are known only by a
	# stack unwound through libdw, which has no frame pointers: the slow unwinder for it.
	unwind=1
	[ "$name" = fuzz_core ] && unwind=0
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=$unwind \
		LSAN_OPTIONS=suppressions=$PWD/tests/lsan.supp \
		"$f" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$findings/$name-" "$work" > "$fuzz_build/$name.log" 2>&1 &
	pids+=($!) names+=("$name") works+=("$work")
done
status=0
for i in "${!pids[@]}"; do
	name=${names[$i]}
	if wait "${pids[$i]}"; then
		echo "ok   $name: $(grep -Eo 'Done [0-9]+ runs' "$fuzz_build/$name.log" || echo done)"
	else
		echo "FAIL $name (see $fuzz_build/$name.log and $findings)"
		tail -n 30 "$fuzz_build/$name.log"
		status=1
	fi
	rm -rf "${works[$i]}"
done
exit $status
