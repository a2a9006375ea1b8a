#!/usr/bin/env bash
# Run each fuzzer for a fixed time over fresh seeds; fail on the first crash, leak or timeout.
set -euo pipefail
fuzz_build=$1 build=$2 seconds=$3
cd "$(dirname "$0")/.."
seeds=$fuzz_build/seeds findings=$fuzz_build/findings
rm -rf "$seeds"
mkdir -p "$findings"
python3 tests/fuzz/make_seeds.py "$seeds" "$build"
status=0
for f in "$fuzz_build"/fuzz/fuzz_*; do
	name=$(basename "$f") corpus=$seeds/${name#fuzz_}
	work=$(mktemp -d)
	cp -r "$corpus"/. "$work"/
	if "$f" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$findings/$name-" "$work" > "$fuzz_build/$name.log" 2>&1; then
		echo "ok   $name: $(grep -Eo 'Done [0-9]+ runs' "$fuzz_build/$name.log" || echo done)"
	else
		echo "FAIL $name (see $fuzz_build/$name.log and $findings)"
		tail -n 30 "$fuzz_build/$name.log"
		status=1
	fi
	rm -rf "$work"
done
exit $status
