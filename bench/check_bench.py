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
    # check against libs in the same run, interleaved, with the cache warm and without it.
    rows = {k: [] for k in ("libs", "check", "libs_nc", "check_nc")}
    for _ in range(15):
        for k, argv in (("libs", [dlscope, "libs", str(proc.pid)]),
                        ("check", [dlscope, "check", str(proc.pid)]),
                        ("libs_nc", [dlscope, "--no-cache", "libs", str(proc.pid)]),
                        ("check_nc", [dlscope, "--no-cache", "check", str(proc.pid)])):
            t0 = time.perf_counter()
            subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            rows[k].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in rows.items()}
    # Peak RSS by /usr/bin/time (a child's rusage would count this Python's pages before exec).
    rss = {}
    for k, argv in (("libs", ["libs"]), ("check", ["check"]), ("libs_nc", ["--no-cache", "libs"]),
                    ("check_nc", ["--no-cache", "check"])):
        out = subprocess.run(["/usr/bin/time", "-f", "%M", dlscope, *argv, str(proc.pid)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        rss[k] = int(out.stderr.strip().splitlines()[-1]) / 1024
    for k, label in (("libs", "libs, warm cache"), ("check", "check, warm cache"),
                     ("libs_nc", "libs --no-cache"), ("check_nc", "check --no-cache")):
        print(f"{label + ', 500-object process:':<38} median {med[k] * 1e3:6.1f} ms"
              f"  peak RSS {rss[k]:5.1f} MiB")
    print(f"check / libs: {med['check'] / med['libs']:.2f}x warm, "
          f"{med['check_nc'] / med['libs_nc']:.2f}x without the cache  goal < 2x")
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
