#!/usr/bin/env python3
"""dlscope stacks on each child a fork() left hung (an OpenMP region after the fork, a mutex a
parent's thread held, a Python Lock, Debian's torch with the fork start method), beside gdb's
'thread apply all bt' on the same child, in the same run: medians of N runs (warm caches), and
whether dlscope's verdict named the wait that can never end (exit 1).

    fork_hang_bench.py [--runs N]
"""
import os
import subprocess
import sys
import time

from timing import timed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DLSCOPE = os.path.join(ROOT, "dlscope")
FX = os.path.join(ROOT, "build", "fixtures")
PY = "/usr/bin/python3"
RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
CASES = [
    ("OpenMP region after fork", [f"{FX}/fork_hang", "omp"]),
    ("mutex held across fork", [f"{FX}/fork_hang", "mutex"]),
    ("Python Lock across fork", [PY, os.path.join(ROOT, "tests/e2e/python/fork_lock.py")]),
    ("torch, fork start method", [PY, os.path.join(ROOT, "tests/e2e/python/torch_fork.py")]),
]


def hung_child(argv):
    """Start @argv; its "ready CHILD" line names the hung child. (process, child)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         start_new_session=True)
    line = p.stdout.readline()
    if not line.startswith("ready"):
        p.kill()
        return p, None
    child = int(line.split()[1])
    time.sleep(0.5)  # its wait settles (libgomp spins a while before it sleeps)
    return p, child


def main():
    if os.geteuid() != 0:
        print("fork hang bench: needs root (ptrace of any process); skipped")
        return
    print(f"stacks of a hung fork child, median of {RUNS} (warm), beside gdb:")
    for name, argv in CASES:
        p, child = hung_child(argv)
        try:
            if child is None:
                print(f"  {name:28s} could not be started; skipped")
                continue
            status = subprocess.run([DLSCOPE, "stacks", str(child)], capture_output=True)
            ours = timed([DLSCOPE, "stacks", str(child)], RUNS, ok=(0, 1))
            gdb = timed(["gdb", "-q", "-batch", "-nx", "-p", str(child), "-ex",
                         "thread apply all bt"], RUNS)
            print(f"  {name:28s} dlscope {ours * 1e3:8.1f} ms  gdb {gdb * 1e3:8.1f} ms  "
                  f"({gdb / ours:.1f}x)  exit {status.returncode}"
                  f"{' (never ends)' if status.returncode == 1 else ''}")
        finally:
            os.killpg(p.pid, 9)
            p.wait()


main()
