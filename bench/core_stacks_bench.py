#!/usr/bin/env python3
"""dlscope stacks CORE against gdb (`thread apply all bt`) and eu-stack (--core) on one core of
a 64-thread process (bench/heartbeat.c, gcore'd), all in the same run: median wall time of each,
and the ratios. dlscope's figure includes the lock-wait graph and the Python check.

    core_stacks_bench.py [--runs N] [--threads N] [--dlscope PATH]...
"""
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import start_heartbeat, builds_and_runs, timed  # noqa: E402

args, runs, builds = builds_and_runs(sys.argv[1:], 5)
threads = int(args[args.index("--threads") + 1]) if "--threads" in args else 64
work, exe, shm, target = start_heartbeat(threads, "core-stacks-bench-")
try:
    assert target.stdout.readline().startswith("ready")
    time.sleep(0.3)
    subprocess.run(["gcore", "-o", os.path.join(work, "core"), str(target.pid)],
                   capture_output=True, check=True)
    core = os.path.join(work, f"core.{target.pid}")
    target.kill()
    target.wait()
    # A first read of each fills the page cache and the debuginfo caches alike.
    gdb = ["gdb", "-batch", "-nx", "-ex", "thread apply all bt", exe, core]
    eu = ["eu-stack", "--core", core, "--executable", exe]
    for argv in [gdb, eu] + [[b, "stacks", core] for b in builds]:
        subprocess.run(argv, capture_output=True)
    t_gdb, t_eu = timed(gdb, runs), timed(eu, runs)
    doc = json.loads(subprocess.run([builds[0], "stacks", "--json", core], capture_output=True,
                                    text=True).stdout)
    n = len(doc["processes"][0]["threads"])
    print(f"core of {n} threads ({os.path.getsize(core) / 2**20:.1f} MiB), "
          f"{runs} runs each, median wall")
    print(f"  gdb thread apply all bt: {t_gdb * 1000:8.1f} ms")
    print(f"  eu-stack --core:         {t_eu * 1000:8.1f} ms")
    for b in builds:
        for extra in ([], ["--json"]):
            t = timed([b, "stacks", *extra, core], runs, ok=(0,))
            print(f"  dlscope stacks {' '.join(extra) or 'CORE':6s}:   {t * 1000:8.1f} ms  "
                  f"gdb/dlscope {t_gdb / t:5.1f}x  eu-stack/dlscope {t_eu / t:4.2f}x  [{b}]")
finally:
    if target.poll() is None:
        target.kill()
        target.wait()
    shutil.rmtree(work, ignore_errors=True)
