#!/usr/bin/env python3
"""dlscope check on the 500-object process, and lint throughput on a directory of 1,000 objects."""
import os
import shutil
import statistics
import subprocess
import sys
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
libdir = os.path.join(build, "bench", "libs")
subprocess.run([os.path.join(root, "bench", "gen_libs.sh"), libdir, "500"], check=True)
dlscope = os.path.join(root, "dlscope")


def timed(argv, runs, ok=(0, 1)):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
        assert p.returncode in ok, (argv, p.returncode)
    return statistics.median(times), min(times)


proc = subprocess.Popen([os.path.join(build, "fixtures", "dlopen_list"),
                         "@" + os.path.join(libdir, "list.txt")], stdout=subprocess.PIPE, text=True)
try:
    assert proc.stdout.readline().startswith("ready")
    med, best = timed([dlscope, "check", str(proc.pid)], 20)
    print(f"check, 500-object process: median {med * 1e3:.1f} ms (min {best * 1e3:.1f} ms)"
          f"  goal < 200 ms")
finally:
    proc.kill()
    proc.wait()

# 1,000 objects: the 500 generated ones and 500 of the system's libraries, copied.
lintdir = os.path.join(build, "bench", "lint1000")
if not os.path.isdir(lintdir):
    os.makedirs(lintdir)
    for name in os.listdir(libdir):
        if name.endswith(".so"):
            shutil.copy(os.path.join(libdir, name), lintdir)
    picked = 0
    for top, _, names in sorted(os.walk("/usr/lib/x86_64-linux-gnu")):
        for name in sorted(names):
            path = os.path.join(top, name)
            if picked >= 500 or not os.path.isfile(path) or os.path.islink(path):
                continue
            with open(path, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    continue
            shutil.copy(path, os.path.join(lintdir, f"sys{picked}_{name}"))
            picked += 1
n = len(os.listdir(lintdir))
size = sum(os.path.getsize(os.path.join(lintdir, f)) for f in os.listdir(lintdir))
subprocess.run([dlscope, "lint", lintdir], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
med, best = timed([dlscope, "lint", lintdir], 5)
print(f"lint, {n} objects ({size / 2**20:.0f} MiB): median {med * 1e3:.0f} ms, "
      f"{n / med:.0f} objects/s, {size / 2**20 / med:.0f} MiB/s")
