#!/usr/bin/env python3
"""dlscope stacks on a process with 64 threads: how long the target is stopped, and the whole
command beside gdb's 'thread apply all bt' and eu-stack -p."""
import json
import os
import statistics
import subprocess
import shutil
import sys
import tempfile
import time

from timing import timed

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")



def peak_rss_kib(argv, env=None):
    """Peak RSS of one run of @argv, from GNU time."""
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], capture_output=True, text=True,
                       env=env)
    return int(p.stderr.strip().splitlines()[-1])


def cold_env():
    """A cache folder holding the inflated debug info but no frame names: every pc named from
    DWARF, as on a first run (the debug sections' one-time inflation is left out)."""
    d = tempfile.mkdtemp(prefix="dlscope-cold-")
    home = os.environ.get("DLSCOPE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "dlscope")
    if os.path.isdir(os.path.join(home, "debuginfo")):
        os.symlink(os.path.join(home, "debuginfo"), os.path.join(d, "debuginfo"))
    return d, dict(os.environ, DLSCOPE_CACHE_DIR=d)


def timed_cold(argv, runs):
    times = []
    for _ in range(runs):
        d, env = cold_env()
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - t0)
        shutil.rmtree(d)
    return statistics.median(times)


def run(mode):
    proc = subprocess.Popen([os.path.join(build, "fixtures", "busy_threads"), "64", mode],
                            stdout=subprocess.PIPE, text=True)
    try:
        bench(proc, mode)
    finally:
        proc.kill()
        proc.wait()


def bench(proc, mode):
    assert proc.stdout.readline().startswith("ready")
    time.sleep(0.3)
    stops, frames = [], 0
    for _ in range(20):
        doc = json.loads(subprocess.run([dlscope, "stacks", "--json", str(proc.pid)],
                                        capture_output=True, text=True).stdout)
        doc = doc["processes"][0]
        stops.append(doc["stopped_ms"])
        frames = sum(len(t["frames"]) for t in doc["threads"])
    ours = timed([dlscope, "stacks", str(proc.pid)], 10)
    cold = timed_cold([dlscope, "stacks", str(proc.pid)], 5)
    eu = timed(["eu-stack", "-p", str(proc.pid)], 10)
    rss = peak_rss_kib([dlscope, "stacks", str(proc.pid)])
    d, env = cold_env()
    rss_cold = peak_rss_kib([dlscope, "stacks", str(proc.pid)], env)
    shutil.rmtree(d)
    eu_rss = peak_rss_kib(["eu-stack", "-p", str(proc.pid)])
    gdb = timed(["gdb", "-nx", "-batch", "-p", str(proc.pid), "-ex", "thread apply all bt"], 3)
    print(f"== 64 threads, {mode}: {len(doc['threads'])} threads, {frames} frames")
    print(f"target stopped: median {statistics.median(stops):.2f} ms, max {max(stops):.2f} ms"
          f"  goal < 50 ms")
    print(f"dlscope stacks: median {ours * 1e3:.0f} ms (symbols, inline frames, source lines,"
          f" lock graph; pcs named from the frame cache)")
    print(f"  first run (no frame cache, names from DWARF): median {cold * 1e3:.0f} ms")
    print(f"eu-stack -p:    median {eu * 1e3:.0f} ms (symbols only)   goal: dlscope <= 0.7x:"
          f" {ours / eu:.2f}x, first run {cold / eu:.2f}x")
    print(f"peak RSS: dlscope stacks {rss / 1024:.1f} MiB (first run {rss_cold / 1024:.1f} MiB),"
          f" eu-stack {eu_rss / 1024:.1f} MiB")
    goal = 20 if mode == "idle" else 10
    print(f"gdb thread apply all bt: median {gdb * 1e3:.0f} ms  goal >= {goal}x"
          f" ({gdb / ours:.1f}x, first run {gdb / cold:.1f}x)")


# idle: every thread sleeps or waits, as in a hung process; busy: 21 threads compute on this
# machine's two cores, so every tool competes with them for the CPU.
for mode in ("idle", "busy"):
    run(mode)
