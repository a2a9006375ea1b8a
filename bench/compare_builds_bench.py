#!/usr/bin/env python3
"""Two builds of dlscope on the same Debian 12 processes, interleaved run by run so the VM's
drift hits both alike: stacks of a 64-thread CPython process and of the ABBA deadlock, libs and
check of a python with NumPy, and watch of a python that imports json, start to end. Prints
each build's median and the ratio to the first: what a change costs what worked before.

    bench/compare_builds_bench.py [--runs N] --dlscope OLD --dlscope NEW
"""
import os
import statistics
import subprocess
import sys
import time

from timing import PYTHON_64_THREADS, builds_and_runs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THREADS = PYTHON_64_THREADS
NUMPY = "import numpy, time; print('ready', flush=True); time.sleep(1000)"


def start(argv):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().startswith("ready"), argv
    return p


def once(argv):
    t = time.monotonic()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    return time.monotonic() - t


def main():
    _, runs, builds = builds_and_runs(sys.argv[1:], 15)
    targets = {
        "threads": start(["/usr/bin/python3", "-c", THREADS]),
        "abba": start([os.path.join(ROOT, "build", "fixtures", "hang_abba")]),
        "numpy": start(["/usr/bin/python3", "-c", NUMPY]),
    }
    time.sleep(0.5)
    cases = {
        "stacks, 64-thread python": lambda d: [d, "stacks", str(targets["threads"].pid)],
        "stacks --json, ABBA deadlock": lambda d: [d, "stacks", "--json",
                                                   str(targets["abba"].pid)],
        "libs, python with NumPy": lambda d: [d, "libs", str(targets["numpy"].pid)],
        "check, python with NumPy": lambda d: [d, "check", str(targets["numpy"].pid)],
        "watch -- python3 -c 'import json'": lambda d: [d, "watch", "--", "/usr/bin/python3",
                                                        "-c", "import json"],
    }
    try:
        for d in builds:  # warm: caches filled, pages in
            for case in cases.values():
                once(case(d))
        print(f"{runs} interleaved runs each; median ms; ratio to {builds[0]}")
        for name, case in cases.items():
            times = {d: [] for d in builds}
            for _ in range(runs):
                for d in builds:
                    times[d].append(once(case(d)))
            base = statistics.median(times[builds[0]])
            cols = [f"{statistics.median(times[d]) * 1000:8.1f} ms "
                    f"({statistics.median(times[d]) / base:4.2f}x)" for d in builds]
            print(f"{name:40s} " + "  ".join(cols))
    finally:
        for p in targets.values():
            p.kill()


if __name__ == "__main__":
    main()
