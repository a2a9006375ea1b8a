#!/usr/bin/env python3
"""Start and stop: the first event line after start (`watch -- CMD`), the "attached in" figure,
`watch --duration 1 -p PID` from start to end, and Ctrl-C (SIGINT) to exit with the probes of a
Python process with numpy and scipy (--hot: its OpenMP and BLAS runtimes too). Needs root.

    stop_bench.py [--runs N] [--dlscope PATH]...

Each --dlscope is measured in turn, in the same run (before/after comparisons)."""
import os
import re
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import builds_and_runs  # noqa: E402

args, runs, builds = builds_and_runs(sys.argv[1:], 5)
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.geteuid() != 0:
    print("stop bench: needs root (BPF); skipped")
    sys.exit(0)
target = subprocess.Popen(["/usr/bin/python3", "-c", "import numpy, scipy.linalg, sys, time\n"
                           "print('ready', flush=True); time.sleep(3600)"],
                          stdout=subprocess.PIPE, text=True)
assert target.stdout.readline().startswith("ready")


def first_line(dls):
    t0 = time.monotonic()
    p = subprocess.Popen([dls, "watch", "--", "/bin/true"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    t = time.monotonic() - t0
    err = p.communicate()[1]
    assert line.startswith("["), line
    m = re.search(r"attached in ([\d.]+) ms", err)
    return t, float(m.group(1)) / 1e3


def duration(dls):
    t0 = time.monotonic()
    subprocess.run([dls, "watch", "--hot", "--duration", "1", "-p", str(target.pid)],
                   capture_output=True, check=True)
    return time.monotonic() - t0


def sigint(dls):
    p = subprocess.Popen([dls, "watch", "--hot", "-p", str(target.pid)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    n = re.search(r"\((\d+) uprobes\)", line)
    time.sleep(0.3)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    p.communicate()
    return time.monotonic() - t0, int(n.group(1)) if n else None


try:
    for dls in builds:
        fl = [first_line(dls) for _ in range(runs)]
        du = [duration(dls) for _ in range(runs)]
        si = [sigint(dls) for _ in range(runs)]
        med = statistics.median
        print(f"{dls}:\n  first event line {med(t for t, _ in fl) * 1e3:.0f} ms after start "
              f"(says attached in {med(a for _, a in fl) * 1e3:.0f} ms)\n"
              f"  watch --hot --duration 1 -p PID: {med(du):.2f} s\n"
              f"  SIGINT to exit: {med(t for t, _ in si) * 1e3:.0f} ms "
              f"({si[0][1] or 'perf-event'} uprobes)  [median of {runs}]")
finally:
    target.kill()
