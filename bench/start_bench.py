#!/usr/bin/env python3
"""Start: from the exec of `dlscope watch -- /bin/true` to its first event line on stdout, the
"probes attached in" figure it prints, and from the exec of `dlscope watch -p PID` to its
"watching" line (the probes are in place, events can flow). Builds are measured in turn, run by
run (interleaved), so that the machine's load falls on each alike. Needs root (BPF).

    start_bench.py [--runs N] [--dlscope PATH]...

Each --dlscope is measured in the same run (before/after comparisons)."""
import os
import re
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import builds_and_runs  # noqa: E402

args, runs, builds = builds_and_runs(sys.argv[1:], 15)
if os.geteuid() != 0:
    print("start bench: needs root (BPF); skipped")
    sys.exit(0)
target = subprocess.Popen(["sleep", "3600"])


def first_line(dls):
    t0 = time.monotonic()
    p = subprocess.Popen([dls, "watch", "--", "/bin/true"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    t = time.monotonic() - t0
    err = p.communicate()[1]
    assert line.startswith("["), (line, err)
    return t, float(re.search(r"attached in ([\d.]+) ms", err).group(1)) / 1e3


def attached(dls):
    t0 = time.monotonic()
    p = subprocess.Popen([dls, "watch", "-p", str(target.pid)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    t = time.monotonic() - t0
    p.send_signal(signal.SIGINT)
    p.communicate()
    assert "watching" in line, line
    return t


try:
    res = {dls: ([], []) for dls in builds}
    for _ in range(runs):
        for dls in builds:
            res[dls][0].append(first_line(dls))
            res[dls][1].append(attached(dls))
    med = statistics.median
    base = None
    for dls in builds:
        fl, at = res[dls]
        t = med(x for x, _ in fl)
        ratio = f"  ({base / t:.1f}x faster than the first build)" if base else ""
        base = base or t
        print(f"{dls}:\n  watch -- /bin/true: first event line {t * 1e3:.0f} ms after exec "
              f"(says attached in {med(a for _, a in fl) * 1e3:.0f} ms; "
              f"best {min(x for x, _ in fl) * 1e3:.0f}, worst {max(x for x, _ in fl) * 1e3:.0f})"
              f"{ratio}\n  watch -p PID: watching line {med(at) * 1e3:.0f} ms after exec"
              f"  [median of {runs}]")
finally:
    target.kill()
