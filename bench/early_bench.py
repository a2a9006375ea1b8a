#!/usr/bin/env python3
"""Probes before the first call: how often a GPU module load made right after its runtime
arrives is seen, and what the hold costs. Each case runs RUNS times under `record -- CMD` with the
collector at nice 19 pinned to the command's CPU (the worst case: the held thread and the
collector share one CPU); the summary's holds give the cost per arrival. Needs root (BPF).

    early_bench.py [BUILD] [--runs N] [--dlscope PATH]...

Each --dlscope is measured in turn, in the same run (before/after comparisons)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import builds_and_runs  # noqa: E402

args, runs, builds = builds_and_runs(sys.argv[1:], 200)
build = os.path.abspath(args[0] if args else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
fx = os.path.join(build, "fixtures")
if os.geteuid() != 0:
    print("early bench: needs root (BPF); skipped")
    sys.exit(0)
cpu = str(sorted(os.sched_getaffinity(0))[-1])
cases = [("hip after dlopen", [f"{fx}/early_gpu", "hip"], "hipModuleLoadData"),
         ("hip linked", [f"{fx}/early_hip_linked"], "hipModuleLoadData"),
         ("cuda stub after dlopen", [f"{fx}/early_gpu", "cuda", f"{fx}/stubcuda/libcuda.so.1"],
          "cuModuleLoadData"),
         ("cuda stub linked", [f"{fx}/early_cuda_linked"], "cuModuleLoadData")]
for dls in builds:
    print(f"{dls}: {runs} runs a case, collector at nice 19 on CPU {cpu} with the command")
    for name, cmd, fn in cases:
        seen, holds, worst, late, walls = 0, [], 0.0, 0, []
        for _ in range(runs):
            with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
                t0 = time.monotonic()
                subprocess.run(["nice", "-n", "19", "taskset", "-c", cpu, dls, "record", "-o",
                                f.name, "--", "taskset", "-c", cpu, *cmd],
                               capture_output=True, timeout=120)
                walls.append(time.monotonic() - t0)
                recs = [json.loads(line) for line in open(f.name) if line.strip()]
            seen += any(r["type"] == "gpu_load" and r.get("function") == fn for r in recs)
            s = [r for r in recs if r["type"] == "summary"]
            if s and s[0].get("holds"):
                holds.append(s[0]["holds"])
                worst = max(worst, s[0]["hold_ms_max"])
                late += s[0]["holds_late"]
        print(f"  {name:24} seen {seen}/{runs}; holds a run {statistics.mean(holds or [0]):.1f},"
              f" longest {worst:.1f} ms, late {late}; run {statistics.median(walls):.2f} s "
              f"(median)")
