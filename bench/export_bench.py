#!/usr/bin/env python3
"""dlscope export --perfetto of a 2-million-event trace: wall time and peak memory (RSS).
The trace is made here from a real record's records (dlopen, dlsym, futex waits), repeated with
moving times and threads, so its mix is what record writes."""
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

from timing import make_trace

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
N = int(os.environ.get("EVENTS", 2_000_000))


with tempfile.TemporaryDirectory() as d:
    trace, out = os.path.join(d, "big.jsonl"), os.path.join(d, "big.json")
    make_trace(trace, N)
    size = os.path.getsize(trace)
    t0 = time.perf_counter()
    proc = subprocess.run([dlscope, "export", "--perfetto", trace, "-o", out, "--stats"],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    assert proc.returncode == 0, proc.stderr
    print(f"== export --perfetto of {N:,} events ({size / 2**20:.0f} MiB of trace, "
          f"{os.path.getsize(out) / 2**20:.0f} MiB written)")
    print(f"wall {wall:.2f} s, {N / wall / 1e6:.2f} M events/s, peak RSS {peak / 1024:.0f} MiB")
    print(proc.stderr.strip())
