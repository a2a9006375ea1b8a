#!/usr/bin/env python3
"""dlscope stacks on a process with 64 threads: how long the target is stopped, and the whole
command beside gdb's 'thread apply all bt' and eu-stack -p."""
import json
import os
import statistics
import subprocess
import sys
import time

from timing import timed

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")



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
        stops.append(doc["stopped_ms"])
        frames = sum(len(t["frames"]) for t in doc["threads"])
    ours = timed([dlscope, "stacks", str(proc.pid)], 10)
    eu = timed(["eu-stack", "-p", str(proc.pid)], 10)
    gdb = timed(["gdb", "-nx", "-batch", "-p", str(proc.pid), "-ex", "thread apply all bt"], 3)
    print(f"== 64 threads, {mode}: {len(doc['threads'])} threads, {frames} frames")
    print(f"target stopped: median {statistics.median(stops):.2f} ms, max {max(stops):.2f} ms"
          f"  goal < 50 ms")
    print(f"dlscope stacks: median {ours * 1e3:.0f} ms (symbols, inline frames, lock graph)")
    print(f"eu-stack -p:    median {eu * 1e3:.0f} ms   goal: dlscope not slower"
          f" ({eu / ours:.2f}x)")
    print(f"gdb thread apply all bt: median {gdb * 1e3:.0f} ms  goal >= 10x"
          f" ({gdb / ours:.1f}x)")


# idle: every thread sleeps or waits, as in a hung process; busy: 21 threads compute on this
# machine's two cores, so every tool competes with them for the CPU.
for mode in ("idle", "busy"):
    run(mode)
