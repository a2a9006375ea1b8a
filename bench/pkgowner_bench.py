#!/usr/bin/env python3
"""dlscope libs on a real torch+numpy+scipy process (Debian's packages), with the owning package
of every object (dpkg's lists, pip's RECORDs, conda-meta, read through /proc/PID/root) and with
--no-packages, interleaved, warm (each run a new dlscope: the lists come from the page cache),
medians. Goal (issue 11): with packages within 1.5 times of without.

With root, also watch -q on that import: the collector's CPU, which now names the package of
every arriving object (DLSCOPE_BASE=/path/to/another/dlscope adds its figure, interleaved).

usage: pkgowner_bench.py [BUILD]"""
import json
import os
import re
import statistics
import subprocess
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
RUNS = int(os.environ.get("RUNS", "21"))


def once(argv):
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


code = "import torch, numpy, scipy.linalg, time; print('ready', flush=True); time.sleep(600)"
proc = subprocess.Popen(["/usr/bin/python3", "-c", code], stdout=subprocess.PIPE, text=True)
try:
    assert proc.stdout.readline().startswith("ready")
    pid = str(proc.pid)
    doc = json.loads(subprocess.run([dlscope, "libs", "--json", pid], capture_output=True,
                                    text=True, check=True).stdout)
    objs = doc["processes"][0]["objects"]
    owned = sum(1 for o in objs if o["package"])
    cmds = {
        "libs": [dlscope, "libs", pid],
        "libs --no-packages": [dlscope, "libs", "--no-packages", pid],
        "libs --json": [dlscope, "libs", "--json", pid],
        "libs --json --no-packages": [dlscope, "libs", "--json", "--no-packages", pid],
    }
    times = {k: [] for k in cmds}
    for k, argv in cmds.items():
        once(argv)  # warm the page cache
    for _ in range(RUNS):
        for k, argv in cmds.items():
            times[k].append(once(argv))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"torch+numpy+scipy process: {len(objs)} objects, {owned} with an owning package")
    for k in cmds:
        print(f"{k:26s} median {med[k] * 1e3:7.1f} ms  (min {min(times[k]) * 1e3:.1f}, "
              f"{len(times[k])} runs)")
    print(f"with / without packages: text {med['libs'] / med['libs --no-packages']:.2f}x, "
          f"json {med['libs --json'] / med['libs --json --no-packages']:.2f}x  goal <= 1.5x")
finally:
    proc.kill()
    proc.wait()


def collector_cpu(binary):
    p = subprocess.run([binary, "watch", "-q", "--", "/usr/bin/python3", "-c",
                        "import torch, numpy, scipy.linalg"], capture_output=True, text=True,
                       timeout=300)
    return float(re.search(r"collector CPU ([\d.]+) s", p.stderr).group(1))


if os.geteuid() == 0:
    bins = {"watch -q": dlscope}
    if os.environ.get("DLSCOPE_BASE"):
        bins["watch -q (base)"] = os.environ["DLSCOPE_BASE"]
    cpu = {k: [] for k in bins}
    for _ in range(int(os.environ.get("WATCH_RUNS", "3"))):
        for k, b in bins.items():
            cpu[k].append(collector_cpu(b))
    for k in bins:
        print(f"{k + ' import torch...':26s} collector CPU median "
              f"{statistics.median(cpu[k]):.2f} s ({len(cpu[k])} runs)")
