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


def make_trace(path, host, offset, pid):
    hdr = {"type": "header", "format": "dlscope-trace/3", "dlscope": "0.1.0", "host": host,
           "boot_id": host + "-boot", "clock": "CLOCK_MONOTONIC", "t0": 1_000_000,
           "realtime_minus_monotonic_ns": offset, "targets": [pid], "follow": False,
           "hot": False}
    stack = ["___dlopen+0x8a (libc.so.6)", "load+0x9 (bench)", "main+0x1ba (bench)"]
    with open(path, "w") as f:
        f.write(json.dumps(hdr) + "\n")
        t = 2_000_000
        for i in range(N):
            base = {"t": t, "pid": pid, "tid": pid + i % 8, "comm": "bench", "in_dlopen": 1}
            if i % 10 == 0:
                rec = dict(base, type="dlopen", path=f"libx{i % 97}.so",
                           file=f"/lib/libx{i % 97}.so", flags=2, handle=0x1000 + i,
                           duration_ns=500, stack=stack, stack_pc=[1, 2, 3], in_dlopen=0)
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
        make_trace(a, "node-a", 1_700_000_000_000_000_000, 4242)
        make_trace(b, "node-b", 1_700_000_000_003_000_000, 4242)
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
