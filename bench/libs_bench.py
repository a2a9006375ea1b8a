#!/usr/bin/env python3
"""dlscope libs on a process with 500+ loaded objects, against gdb's 'info sharedlibrary'."""
import os
import statistics
import subprocess
import sys
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
libdir = os.path.join(build, "bench", "libs")
subprocess.run([os.path.join(root, "bench", "gen_libs.sh"), libdir, "500"], check=True)

proc = subprocess.Popen([os.path.join(build, "fixtures", "dlopen_list"),
                         "@" + os.path.join(libdir, "list.txt")],
                        stdout=subprocess.PIPE, text=True)
try:
    assert proc.stdout.readline().startswith("ready")
    with open(f"/proc/{proc.pid}/maps") as f:
        n_objects = len({l.split()[5] for l in f if len(l.split()) > 5 and ".so" in l})
    dlscope = os.path.join(root, "dlscope")

    def timed(argv, runs):
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True)
            times.append(time.perf_counter() - t0)
        return statistics.median(times), min(times)

    ours, ours_min = timed([dlscope, "libs", str(proc.pid)], 30)
    ours_json, _ = timed([dlscope, "libs", "--json", str(proc.pid)], 30)
    gdb, gdb_min = timed(["gdb", "-nx", "-batch", "-p", str(proc.pid), "-ex",
                          "info sharedlibrary"], 3)
    print(f"objects mapped: {n_objects}")
    print(f"dlscope libs:          median {ours * 1e3:7.1f} ms  (min {ours_min * 1e3:.1f} ms)"
          f"  goal < 50 ms")
    print(f"dlscope libs --json:   median {ours_json * 1e3:7.1f} ms")
    print(f"gdb info sharedlibrary: median {gdb * 1e3:7.1f} ms  (min {gdb_min * 1e3:.1f} ms)")
    print(f"speed-up over gdb: {gdb / ours:.0f}x  goal >= 20x")
finally:
    proc.kill()
    proc.wait()
