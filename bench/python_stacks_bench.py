#!/usr/bin/env python3
"""dlscope stacks on a 64-thread CPython process: how long the target is stopped (Python frames
read in the same stop), the whole command, beside gdb's 'thread apply all py-bt' (on Debian's
debug interpreter python3.11d, which gdb's py-bt needs) and eu-stack -p (native frames only)."""
import json
import os
import statistics
import subprocess
import sys
import time

from timing import PYTHON_64_THREADS, timed

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
SCRIPT = PYTHON_64_THREADS



def start(python):
    proc = subprocess.Popen([python, "-c", SCRIPT], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("ready")
    return proc


def bench(python, gdb_too):
    proc = start(python)
    try:
        stops, pyframes = [], 0
        for _ in range(20):
            doc = json.loads(subprocess.run([dlscope, "stacks", "--json", str(proc.pid)],
                                            capture_output=True, text=True).stdout)
            doc = doc["processes"][0]
            stops.append(doc["stopped_ms"])
            pyframes = sum(len(t["python"]["frames"]) for t in doc["threads"] if t["python"])
        ours = timed([dlscope, "stacks", str(proc.pid)], 10)
        py_only = timed([dlscope, "stacks", "--python", str(proc.pid)], 10)
        eu = timed(["eu-stack", "-p", str(proc.pid)], 5)
        print(f"== {python}: {len(doc['threads'])} threads, {pyframes} Python frames")
        print(f"target stopped: median {statistics.median(stops):.2f} ms, max {max(stops):.2f} ms"
              "  goal < 50 ms")
        print(f"dlscope stacks (native + Python + lock graph): median {ours * 1e3:.0f} ms")
        print(f"dlscope stacks --python (Python frames alone, nothing unwound): median "
              f"{py_only * 1e3:.0f} ms")
        print(f"eu-stack -p (native only): median {eu * 1e3:.0f} ms  ratio {eu / ours:.2f}x")
        if gdb_too:
            gdb = timed(["gdb", "-nx", "-batch", "-p", str(proc.pid), "-ex",
                         "source /usr/share/gdb/auto-load/usr/bin/python3.11d-gdb.py", "-ex",
                         "thread apply all py-bt"], 5)
            print(f"gdb thread apply all py-bt: median {gdb * 1e3:.0f} ms  ratio "
                  f"{gdb / ours:.1f}x the merged stacks, {gdb / py_only:.1f}x --python  "
                  "goal >= 20x")
    finally:
        proc.kill()
        proc.wait()


bench("/usr/bin/python3.11", False)
if os.path.exists("/usr/bin/python3.11d"):
    bench("/usr/bin/python3.11d", True)
