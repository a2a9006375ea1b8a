#!/usr/bin/env python3
"""dlscope capture against gdb's gcore on a 64-thread process: how long the process stands
still, the wall time, the size of the core. The stop is measured the same way for both, from
inside the target: a heartbeat thread wakes every 0.1 ms and keeps its longest gap, which a
stop of every thread stretches (the idle gap is printed beside it). dlscope's own figure for its
stop (capture --stats) is printed too. Needs gdb (gcore) and cc.

    capture_bench.py [--runs N] [--threads N] [--dlscope PATH]...
"""
import mmap
import os
import re
import statistics
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import start_heartbeat, builds_and_runs  # noqa: E402

args, runs, builds = builds_and_runs(sys.argv[1:], 7)
threads = int(args[args.index("--threads") + 1]) if "--threads" in args else 64
work, exe, shm, target = start_heartbeat(threads, "capture-bench-")
fd = os.open(shm, os.O_RDWR)
gap = mmap.mmap(fd, 4096)
assert target.stdout.readline().startswith("ready")
time.sleep(0.3)


def measure(argv, out):
    """(heartbeat's longest gap in ms, wall s, core bytes, stderr) of one run of @argv."""
    if os.path.exists(out):
        os.unlink(out)
    gap[0:8] = bytes(8)
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    time.sleep(0.01)  # the heartbeat's next beat closes the gap the stop opened
    assert p.returncode == 0, (argv, p.stderr)
    return struct.unpack("<Q", gap[0:8])[0] / 1e6, wall, os.path.getsize(out), p.stderr


def idle():
    gap[0:8] = bytes(8)
    time.sleep(0.5)
    return struct.unpack("<Q", gap[0:8])[0] / 1e6


med = statistics.median
try:
    base = [idle() for _ in range(runs)]
    gcore = [measure(["gcore", "-o", os.path.join(work, "g"), str(target.pid)],
                     os.path.join(work, f"g.{target.pid}")) for _ in range(runs)]
    print(f"{threads} threads, {runs} runs each, medians; heartbeat's longest gap when idle "
          f"{med(base):.2f} ms")
    print(f"  gcore:            stopped {med(g for g, _, _, _ in gcore):8.2f} ms  wall "
          f"{med(w for _, w, _, _ in gcore):6.3f} s  core {med(s for _, _, s, _ in gcore) / 2**20:8.2f} MiB")
    for dls in builds:
        for flags in ([], ["--full"]):
            out = os.path.join(work, "c")
            r = [measure([dls, "capture", "--stats", *flags, "-o", out, str(target.pid)], out)
                 for _ in range(runs)]
            own = [float(re.search(r"stopped ([\d.]+) ms", e).group(1)) for _, _, _, e in r]
            g, w, s = (med(x[i] for x in r) for i in range(3))
            print(f"  capture{' --full' if flags else '       '}: stopped {g:8.2f} ms  wall "
                  f"{w:6.3f} s  core {s / 2**20:8.2f} MiB  (its own figure {med(own):.2f} ms, "
                  f"max {max(own):.2f})  [{dls}]")
            print(f"      gcore / capture: stop {med(x[0] for x in gcore) / g:.1f}x, wall "
                  f"{med(x[1] for x in gcore) / w:.1f}x, size {med(x[2] for x in gcore) / s:.1f}x")
finally:
    target.kill()
    gap.close()
    os.close(fd)
    subprocess.run(["rm", "-rf", work])
