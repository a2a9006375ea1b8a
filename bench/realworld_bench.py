#!/usr/bin/env python3
"""dlscope libs and check on a real torch+numpy+scipy process (Debian's packages), against gdb's
`info sharedlibrary` on the same process in the same run, interleaved, medians.

usage: realworld_bench.py [BUILD] ; DLSCOPE_BASE=/path/to/another/dlscope adds its libs and
check, interleaved with this tree's, for a before/after figure taken in one run."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
RUNS = int(os.environ.get("RUNS", "15"))


# Another build is another cache producer: sharing one cache folder, each would find the other's
# files foreign and rewrite them every run. Each build gets a (warmed) folder of its own.
homes = {}


def env_of(argv):
    if argv[0] == "gdb":
        return None
    if argv[0] not in homes:
        homes[argv[0]] = tempfile.mkdtemp(prefix="dlscope-rw-bench-")
    return dict(os.environ, XDG_CACHE_HOME=homes[argv[0]])


def once(argv, ok=(0, 1)):
    env = env_of(argv)
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    dt = time.perf_counter() - t0
    assert p.returncode in ok, (argv, p.returncode)
    return dt


code = "import torch, numpy, scipy.linalg, time; print('ready', flush=True); time.sleep(600)"
proc = subprocess.Popen(["/usr/bin/python3", "-c", code], stdout=subprocess.PIPE, text=True)
try:
    assert proc.stdout.readline().startswith("ready")
    pid = str(proc.pid)
    n = len(open(f"/proc/{pid}/maps").read().splitlines())
    cmds = {
        "libs": [dlscope, "libs", pid],
        "check": [dlscope, "check", pid],
        "gdb info sharedlibrary": ["gdb", "-batch", "-p", pid, "-ex", "info sharedlibrary"],
    }
    base = os.environ.get("DLSCOPE_BASE")
    if base:
        cmds["libs (base)"] = [base, "libs", pid]
        cmds["check (base)"] = [base, "check", pid]
    times = {k: [] for k in cmds}
    for k, argv in cmds.items():  # the caches warm: the figures are of warm runs
        if not k.startswith("gdb"):
            once(argv)
    for i in range(RUNS):
        for k, argv in cmds.items():
            if k.startswith("gdb") and i >= 5:
                continue  # gdb takes seconds; five runs give its median
            times[k].append(once(argv))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"torch+numpy+scipy process: {n} mappings")
    for k in cmds:
        print(f"{k:24s} median {med[k] * 1e3:7.1f} ms  (min {min(times[k]) * 1e3:.1f}, "
              f"{len(times[k])} runs)")
    print(f"gdb / libs: {med['gdb info sharedlibrary'] / med['libs']:.1f}x; "
          f"check / libs: {med['check'] / med['libs']:.2f}x")
    if base:
        print(f"this tree / base: libs {med['libs'] / med['libs (base)']:.2f}x, "
              f"check {med['check'] / med['check (base)']:.2f}x")
finally:
    proc.kill()
    proc.wait()
    for h in homes.values():
        shutil.rmtree(h, ignore_errors=True)
