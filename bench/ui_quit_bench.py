#!/usr/bin/env python3
"""`q` in the live TUI: from the key to the process's exit, with the probes of a Python process
with numpy and scipy attached (tmux drives the TUI). Needs root and tmux.

    ui_quit_bench.py [--runs N] [--dlscope PATH]...

Each --dlscope is measured in turn, in the same run (before/after comparisons)."""
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import builds_and_runs, tmux_wait  # noqa: E402

args, runs, builds = builds_and_runs(sys.argv[1:], 5)
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if os.geteuid() != 0:
    print("ui quit bench: needs root (BPF); skipped")
    sys.exit(0)
target = subprocess.Popen(["/usr/bin/python3", "-c", "import numpy, scipy.linalg, sys, time\n"
                           "print('ready', flush=True); time.sleep(3600)"],
                          stdout=subprocess.PIPE, text=True)
assert target.stdout.readline().startswith("ready")


try:
    for dls in builds:
        times = []
        for r in range(runs):
            name = f"uiquit-{os.getpid()}-{r}"
            subprocess.run(["tmux", "new-session", "-d", "-x", "160", "-y", "50", "-s", name,
                            "sh", "-c", f"{dls} ui -p {target.pid}; echo EXIT=$?; sleep 600"],
                           check=True)
            try:
                tmux_wait(name, "1 Processes")
                time.sleep(1.0)
                t = time.monotonic()
                subprocess.run(["tmux", "send-keys", "-t", name, "q"], check=True)
                times.append(tmux_wait(name, "EXIT=") - t)
            finally:
                subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        print(f"{dls}: q to exit, median {statistics.median(times) * 1e3:.0f} ms, "
              f"max {max(times) * 1e3:.0f} ms over {runs}")
finally:
    target.kill()
