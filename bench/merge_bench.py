#!/usr/bin/env python3
"""dlscope merge of two nodes' traces of a million records each: wall time and peak RSS, beside
an anchor doing the same merge in Python (json, heapq.merge: parse each record, move its time to
the realtime clock, label it with its host, write it), and `cat` of the inputs (the I/O floor).
Peak RSS is GNU time's (/usr/bin/time).
The traces are made here in record's mix (dlopen with stacks, dlsym, futex waits), as in
export_bench.py; node b's clock is 3 ms off node a's, so the two interleave."""
import json
import os
import subprocess
import sys
import tempfile
import time

from timing import make_trace

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
N = int(os.environ.get("EVENTS", 1_000_000))

ANCHOR = r"""
import heapq, json, sys
out, paths = sys.argv[1], sys.argv[2:]
def stream(i, path):
    f = open(path)
    hdr = json.loads(f.readline())
    off, host, last = hdr["realtime_minus_monotonic_ns"], hdr["host"], 0
    for line in f:
        r = json.loads(line)
        if r["type"] == "summary":
            continue
        if isinstance(r.get("t"), int):
            r["t"] = last = r["t"] + off
        r["host"] = host
        yield last, i, r
with open(out, "w") as o:
    o.write(json.dumps({"type": "header", "format": "dlscope-trace/3"}) + "\n")
    for _, _, r in heapq.merge(*(stream(i, p) for i, p in enumerate(paths))):
        o.write(json.dumps(r, separators=(",", ":")) + "\n")
"""


def run(argv, d):
    """Wall seconds, CPU seconds (user + system: less moved by other load on a shared machine)
    and peak RSS (MiB) of one run of @argv, from GNU time: a child forked from this Python
    would start its ru_maxrss at this process's size."""
    rss = os.path.join(d, "rss")
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-o", rss, "-f", "%U %S %M", *argv],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    assert p.returncode == 0, (argv, p.stderr)
    user, system, peak = open(rss).read().split()[-3:]
    return wall, float(user) + float(system), int(peak) / 1024


def main():
    with tempfile.TemporaryDirectory() as d:
        a, b = os.path.join(d, "trace-a.jsonl"), os.path.join(d, "trace-b.jsonl")
        make_trace(a, N, "node-a", 1_700_000_000_000_000_000, 4242)
        make_trace(b, N, "node-b", 1_700_000_000_003_000_000, 4242)
        size = (os.path.getsize(a) + os.path.getsize(b)) / 2**20
        out = os.path.join(d, "job.jsonl")
        rows = []
        for name, argv in (("cat (I/O floor)", ["sh", "-c", f"cat {a} {b} > {out}"]),
                           ("python json+heapq", [sys.executable, "-c", ANCHOR, out, a, b]),
                           ("dlscope merge", [dlscope, "merge", a, b, "-o", out])):
            rows.append((name, *run(argv, d)))
            if name == "dlscope merge":
                with open(out) as f:
                    lines = sum(1 for _ in f)
                assert lines == 2 * N + 2, lines
        print(f"== dlscope merge of 2 traces x {N:,} records ({size:.0f} MiB in)")
        ours = rows[-1][2]
        for name, wall, cpu, rss in rows:
            print(f"{name:20s} wall {wall:6.2f} s  CPU {cpu:6.2f} s  peak RSS {rss:6.1f} MiB  "
                  f"{2 * N / cpu / 1e6:5.2f} M records/CPU-s  dlscope/this (CPU) "
                  f"{ours / max(cpu, 1e-3):5.2f}x")


main()
