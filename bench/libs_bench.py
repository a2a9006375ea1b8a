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


def peak_rss(argv, run_env=None):
    """Peak RSS in KiB by /usr/bin/time: a child's own rusage would count the pages of this
    Python process it was forked from."""
    out = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=run_env or env)
    return int(out.stderr.strip().splitlines()[-1])


def run_once(argv, before=None, run_env=None):
    """Wall time of one run."""
    if before:
        before()
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=run_env or env)
    dt = time.perf_counter() - t0
    assert p.returncode in (0, 1), (argv, p.returncode)
    return dt, 0


def drop_cache():
    shutil.rmtree(os.path.join(home, "dlscope"), ignore_errors=True)


# check keeps its symbol digests in the same folder: its rows have a cache of their own, so that
# the cold libs rows do not make every check cold too.
check_home = tempfile.mkdtemp(prefix="dlscope-bench-check-")
check_env = dict(os.environ, XDG_CACHE_HOME=check_home)


# The static build is another producer: sharing a cache with ./dlscope, each would find the
# other's file foreign and rewrite it.
static_home = tempfile.mkdtemp(prefix="dlscope-bench-static-")
static_env = dict(os.environ, XDG_CACHE_HOME=static_home)


def env_of(key):
    return check_env if key.startswith("check") else static_env if key == "static" else None


def drop_check_cache():
    shutil.rmtree(os.path.join(check_home, "dlscope"), ignore_errors=True)


def timed(argv, runs, before=None):
    res = [run_once(argv, before) for _ in range(runs)]
    return statistics.median(r[0] for r in res), min(r[0] for r in res), peak_rss(argv)


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
    argvs = {
        "maps": ["cat", f"/proc/{pid}/maps"],
        "cold": libs,
        "warm": libs,
        "nocache": [dlscope, "--no-cache", "libs", pid],
        "nopkg": [dlscope, "libs", "--no-packages", pid],
        "json": [dlscope, "libs", "--json", pid],
        "static": [dlscope + "-static", "libs", pid],
        "check_cold": [dlscope, "check", pid],
        "check": [dlscope, "check", pid],
    }
    before = {"cold": drop_cache, "check_cold": drop_check_cache}
    if not os.path.exists(argvs["static"][0]):
        del argvs["static"]
    samples = {k: [] for k in argvs}
    for _ in range(15):
        for k, argv in argvs.items():
            samples[k].append(run_once(argv, before.get(k), env_of(k)))
    for k, v in samples.items():
        if k in before:
            before[k]()
        rows[k] = (statistics.median(r[0] for r in v), min(r[0] for r in v),
                   peak_rss(argvs[k], env_of(k)))
    gdb = timed(["gdb", "-nx", "-batch", "-p", pid, "-ex", "info sharedlibrary"], 3)

    def line(label, r, goal=""):
        print(f"{label:<32} median {r[0] * 1e3:7.1f} ms  (min {r[1] * 1e3:6.1f} ms)"
              f"  peak RSS {r[2] / 1024:5.1f} MiB  {goal}")

    print(f"objects mapped: {n_objects}")
    line("cat /proc/PID/maps (floor)", rows["maps"])
    line("dlscope libs, cold cache", rows["cold"], "goal < 30 ms")
    line("dlscope libs, warm cache", rows["warm"], "goal < 15 ms")
    line("dlscope libs --no-cache", rows["nocache"])
    if "static" in rows:
        line("dlscope-static libs, warm", rows["static"], "(make static)")
    line("dlscope libs --no-packages, warm", rows["nopkg"])
    line("dlscope libs --json, warm", rows["json"])
    line("dlscope check, cold cache", rows["check_cold"])
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
    shutil.rmtree(check_home, ignore_errors=True)
    shutil.rmtree(static_home, ignore_errors=True)
