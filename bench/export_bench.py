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

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
N = int(os.environ.get("EVENTS", 2_000_000))


def make_trace(path):
    hdr = {"type": "header", "format": "dlscope-trace/2", "dlscope": "0.1.0", "host": "bench",
           "clock": "CLOCK_MONOTONIC", "t0": 1_000_000, "realtime_minus_monotonic_ns": 0,
           "targets": [100], "follow": False, "hot": False}
    stack = ["___dlopen+0x8a (libc.so.6)", "load+0x9 (bench)", "main+0x1ba (bench)"]
    with open(path, "w") as f:
        f.write(json.dumps(hdr) + "\n")
        t = 2_000_000
        for i in range(N):
            tid = 100 + i % 8
            base = {"t": t, "pid": 100, "tid": tid, "comm": "bench", "in_dlopen": 1}
            if i % 10 == 0:
                rec = dict(base, type="dlopen", path=f"libx{i % 97}.so", file=f"/lib/libx{i % 97}.so",
                           flags=2, handle=0x1000 + i, duration_ns=500, stack=stack,
                           stack_pc=[1, 2, 3], in_dlopen=0)
                t += 1000
            elif i % 10 == 9:
                rec = dict(base, type="futex_wait", futex=0x7000, duration_ns=300)
                t += 400
            else:
                rec = dict(base, type="dlsym", symbol=f"sym_{i % 1000}", handle=0x1000,
                           address=0x4000 + i)
                t += 50
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        f.write(json.dumps({"type": "summary", "events": N, "lost": 0, "findings": 0}) + "\n")


with tempfile.TemporaryDirectory() as d:
    trace, out = os.path.join(d, "big.jsonl"), os.path.join(d, "big.json")
    make_trace(trace)
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
