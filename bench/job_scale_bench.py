#!/usr/bin/env python3
"""stacks --job on a simulated job of N tiny ranks on this machine (bench/tiny_ranks.c: each
rank blocked in a read, the last asleep elsewhere), for N in 100, 300 and 1000: the verdict's
time, the longest stop of one rank, dlscope's peak RSS (its own, and its largest reader
worker's), beside gdb attached to 10 ranks in turn (extrapolated to N). Needs ptrace rights."""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from timing import children  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "bench")
DLSCOPE = os.path.join(ROOT, "dlscope")
SIZES = [int(x) for x in sys.argv[1:]] or [100, 300, 1000]
RUNS = int(os.environ.get("JOB_SCALE_RUNS", "3"))


def main():
    os.makedirs(OUT, exist_ok=True)
    exe = os.path.join(OUT, "tiny_ranks")
    subprocess.run(["cc", "-O2", "-g", "-o", exe, os.path.join(ROOT, "bench", "tiny_ranks.c")],
                   check=True)
    for n in SIZES:
        launcher = subprocess.Popen([exe, str(n)], stdout=subprocess.PIPE, text=True,
                                    start_new_session=True)
        try:
            assert launcher.stdout.readline().startswith("ready")
            time.sleep(0.5)
            walls, stops, rss = [], [], 0
            for _ in range(RUNS):
                t0 = time.perf_counter()
                p = subprocess.Popen([DLSCOPE, "stacks", "--job", "--json", str(launcher.pid)],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
                out = p.stdout.read()
                # Its own peak, and its reader workers' (each reaped by it, folded in).
                _, _, ru = os.wait4(p.pid, 0)
                p.returncode = 0
                walls.append(time.perf_counter() - t0)
                rss = max(rss, ru.ru_maxrss / 1024)
                doc = json.loads(out)
                assert doc["verdict"]["outliers"] == [n - 1], doc["verdict"]
                stops.append(max(r["stopped_ms"] or 0 for r in doc["ranks"]))
            ranks = children(launcher.pid)[:10]
            t0 = time.perf_counter()
            for r in ranks:
                subprocess.run(["gdb", "-batch", "-nx", "-p", str(r), "-ex",
                                "thread apply all bt"], capture_output=True)
            gdb = (time.perf_counter() - t0) / len(ranks) * n
            w = statistics.median(walls)
            print(f"{n:5d} ranks: verdict in {w:6.2f} s (median of {RUNS}), longest stop of "
                  f"one rank {statistics.median(stops):6.1f} ms, peak RSS of a dlscope "
                  f"process {rss:.0f} MiB; gdb rank by rank ~{gdb:7.1f} s ({gdb / w:.0f}x)")
        finally:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()


if __name__ == "__main__":
    main()
