#!/usr/bin/env python3
"""dlscope libs on a process with 500+ loaded objects, against gdb's 'info sharedlibrary' and the
floor of any reader, 'cat /proc/PID/maps': cold cache, warm cache and --no-cache side by side."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
libdir = os.path.join(build, "bench", "libs")
subprocess.run([os.path.join(root, "bench", "gen_libs.sh"), libdir, "500"], check=True)
dlscope = os.path.join(root, "dlscope")
home = tempfile.mkdtemp(prefix="dlscope-bench-")
env = dict(os.environ, XDG_CACHE_HOME=home)


def run_once(argv, before=None):
    """Wall time and peak RSS (KiB, from the child's rusage) of one run."""
    if before:
        before()
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    assert p.returncode in (0, 1), (argv, p.returncode)
    return dt, ru.ru_maxrss


def drop_cache():
    shutil.rmtree(os.path.join(home, "dlscope"), ignore_errors=True)


def timed(argv, runs, before=None):
    res = [run_once(argv, before) for _ in range(runs)]
    return statistics.median(r[0] for r in res), min(r[0] for r in res), max(r[1] for r in res)


proc = subprocess.Popen([os.path.join(build, "fixtures", "dlopen_list"),
                         "@" + os.path.join(libdir, "list.txt")],
                        stdout=subprocess.PIPE, text=True)
try:
    assert proc.stdout.readline().startswith("ready")
    pid = str(proc.pid)
    with open(f"/proc/{pid}/maps") as f:
        n_objects = len({l.split()[5] for l in f if len(l.split()) > 5 and ".so" in l})
    libs = [dlscope, "libs", pid]
    rows = {}
    # Interleaved rounds, so that a busy moment of the machine falls on every row alike.
    samples = {k: [] for k in ("maps", "cold", "warm", "nocache", "json", "check")}
    for _ in range(15):
        samples["maps"].append(run_once(["cat", f"/proc/{pid}/maps"]))
        samples["cold"].append(run_once(libs, drop_cache))
        samples["warm"].append(run_once(libs))
        samples["nocache"].append(run_once([dlscope, "--no-cache", "libs", pid]))
        samples["json"].append(run_once([dlscope, "libs", "--json", pid]))
        samples["check"].append(run_once([dlscope, "check", pid]))
    for k, v in samples.items():
        rows[k] = (statistics.median(r[0] for r in v), min(r[0] for r in v),
                   max(r[1] for r in v))
    gdb = timed(["gdb", "-nx", "-batch", "-p", pid, "-ex", "info sharedlibrary"], 3)

    def line(label, r, goal=""):
        print(f"{label:<32} median {r[0] * 1e3:7.1f} ms  (min {r[1] * 1e3:6.1f} ms)"
              f"  peak RSS {r[2] / 1024:5.1f} MiB  {goal}")

    print(f"objects mapped: {n_objects}")
    line("cat /proc/PID/maps (floor)", rows["maps"])
    line("dlscope libs, cold cache", rows["cold"], "goal < 30 ms")
    line("dlscope libs, warm cache", rows["warm"], "goal < 15 ms")
    line("dlscope libs --no-cache", rows["nocache"])
    line("dlscope libs --json, warm", rows["json"])
    line("dlscope check, warm", rows["check"])
    line("gdb info sharedlibrary", gdb)
    print(f"gdb / libs cold: {gdb[0] / rows['cold'][0]:.0f}x, warm: {gdb[0] / rows['warm'][0]:.0f}x"
          f"  goal >= 40x")
    print(f"libs warm / maps floor: {rows['warm'][0] / rows['maps'][0]:.1f}x;"
          f"  check / libs (warm): {rows['check'][0] / rows['warm'][0]:.2f}x  goal < 2x")
finally:
    proc.kill()
    proc.wait()
    shutil.rmtree(home, ignore_errors=True)
