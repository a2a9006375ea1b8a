#!/usr/bin/env python3
"""What each of watch's BPF programs costs a hit, by the kernel's own count
(kernel.bpf_stats_enabled: run_time_ns and run_cnt of each program), while `watch -q` follows a
loop of dlopens and dlcloses of an object not loaded yet (bench/dlopen_new_loop). Each build is
run in turn, round by round, and the median of each program's cost a hit is printed with the
loop's own time a dlopen. Needs root (BPF) and the fixtures (make).

    bpf_prog_bench.py [--runs N] [--dlscope PATH]... [--loops N]

The counts are read while watch runs (they go with its programs when it exits): the last read
before the loop ends holds nearly all of its hits.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

from timing import builds_and_runs

args, RUNS, BUILDS = builds_and_runs(sys.argv[1:], 3)
LOOPS = int(args[args.index("--loops") + 1]) if "--loops" in args else 3000
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "bench")
LIB = os.path.join(ROOT, "build", "fixtures", "libplain.so")
# The programs a dlopen and a dlclose run (bpf/dlwatch/loader.bpf.h, holds.bpf.h).
PROGS = ("dlopen_enter", "dlopen_exit", "dlclose_enter", "dlclose_exit", "linkmap_consistent")

if os.geteuid() != 0:
    print("bpf prog bench: needs root (BPF); skipped")
    sys.exit(0)
os.makedirs(OUT, exist_ok=True)
subprocess.run(["cc", "-O2", "-o", f"{OUT}/dlopen_new_loop", f"{ROOT}/bench/dlopen_new_loop.c",
                "-ldl"], check=True)


def prog_counts():
    """{name: (run_time_ns, run_cnt)} of the loaded programs named in PROGS."""
    out = subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True, text=True)
    try:
        progs = json.loads(out.stdout)
    except ValueError:
        return {}
    return {p["name"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0))
            for p in progs if p.get("name") in PROGS}


def one_run(build):
    """({program: us a hit}, us a dlopen) of one watch of the loop."""
    w = subprocess.Popen([build, "watch", "-q", "--", f"{OUT}/dlopen_new_loop", str(LOOPS), LIB],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    last = {}
    while w.poll() is None:
        now = prog_counts()
        if now:
            last = now
        time.sleep(0.1)
    per_dlopen = float(re.search(r"([\d.]+) us per dlopen", w.stdout.read()).group(1))
    return {k: t / c / 1000 for k, (t, c) in last.items() if c}, per_dlopen


def main():
    was = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    subprocess.run(["sysctl", "-q", "kernel.bpf_stats_enabled=1"], check=True)
    try:
        costs = {b: {p: [] for p in PROGS} for b in BUILDS}
        loop = {b: [] for b in BUILDS}
        for _ in range(RUNS):
            for b in BUILDS:
                per_prog, per_dlopen = one_run(b)
                loop[b].append(per_dlopen)
                for p, us in per_prog.items():
                    costs[b][p].append(us)
    finally:
        subprocess.run(["sysctl", "-q", f"kernel.bpf_stats_enabled={was}"])
    print(f"BPF programs of watch on {LOOPS} dlopens and dlcloses of libplain.so, "
          f"median of {RUNS}, us a hit:")
    names = [os.path.join(os.path.basename(os.path.dirname(b)), os.path.basename(b))
             for b in BUILDS]
    print(f"  {'program':20s}" + "".join(f" {n[-24:]:>24s}" for n in names))
    for p in PROGS:
        cells = [statistics.median(costs[b][p]) if costs[b][p] else float("nan") for b in BUILDS]
        print(f"  {p:20s}" + "".join(f" {c:24.2f}" for c in cells))
    print(f"  {'(the loop, us a dlopen)':20s}" +
          "".join(f" {statistics.median(loop[b]):24.1f}" for b in BUILDS))


main()
