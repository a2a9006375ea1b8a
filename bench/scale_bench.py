#!/usr/bin/env python3
"""Scale (issue 21): dlscope beside the old build, gdb and eu-stack, in the same run.

    scale_bench.py [--runs N] [--dlscope PATH]... [stop] [idle] [record|record-only] [libs]

stop:   stacks of 200 threads on 2 CPUs (tests/fixtures/stop_gaps 200 busy: one in three
        computes, the others tick): the stop each build reports against the one the target saw
        (the longest time no thread of it ran; the largest gap one thread saw, its own waits
        for the CPU included), and the wall time; gdb 'thread apply all bt' and eu-stack -p
        (the target's view of their stop, and their time).
idle:   stacks of 5,000 idle threads (busy_threads 5000 idle): peak RSS and wall time, against
        eu-stack -p.
record: record --comm over 200 busy processes (bench/dl_procs: each calls dlopen and dlsym in a
        loop; forked, then each running the program anew, its objects placed by ASLR): peak
        RSS against the goal of 100 MiB, events and lost (generated = recorded + lost), and
        watch -q. Needs root.
libs:   libs and check (warm cache) on a process with 500 generated objects (gen_libs.sh, as
        libs_bench.py) and on one with 120,000 mappings (vm.max_map_count raised for it, then
        set back).
Each --dlscope is measured in turn (e.g. --dlscope /tmp/oldbuild/dlscope --dlscope ./dlscope)."""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import builds_and_runs  # noqa: E402

args, runs, builds = builds_and_runs(sys.argv[1:], 3)
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
fixtures = os.path.join(root, "build", "fixtures")
parts = args or ["stop", "idle", "record"]
med = statistics.median


def start(argv, **kw):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, start_new_session=True, **kw)
    assert p.stdout.readline().startswith("ready")
    return p


def peak(argv):
    """(wall s, peak RSS MiB, exit status, stderr) of one run of @argv, by GNU time: a child's
    own rusage would count the pages of this Python process it was forked from."""
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    err = p.stderr.rstrip().splitlines()
    return time.monotonic() - t0, int(err[-1]) / 1024, p.returncode, "\n".join(err[:-1])


def warm(argv):
    """Median wall s of @runs runs of @argv after one to warm the caches."""
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times = []
    for _ in range(runs):
        t0 = time.monotonic()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.monotonic() - t0)
    return med(times)


MAPS = """import mmap, sys
keep = [mmap.mmap(-1, 4096, prot=mmap.PROT_READ | (mmap.PROT_WRITE if i % 2 else 0))
        for i in range(int(sys.argv[1]))]
print("ready", flush=True)
sys.stdin.read()
"""


def libs():
    libdir = os.path.join(root, "build", "bench", "libs")
    subprocess.run([os.path.join(root, "bench", "gen_libs.sh"), libdir, "500"], check=True)
    with open("/proc/sys/vm/max_map_count") as f:
        was = f.read().strip()
    targets = [("500 objects", [os.path.join(fixtures, "dlopen_list"),
                                  "@" + os.path.join(libdir, "list.txt")], None)]
    if os.geteuid() == 0:
        targets.append(("120,000 mappings", ["/usr/bin/python3", "-c", MAPS, "120000"],
                        subprocess.PIPE))
    try:
        for name, argv, stdin in targets:
            if stdin:
                with open("/proc/sys/vm/max_map_count", "w") as f:
                    f.write("200000")
            fx = start(argv, stdin=stdin)
            try:
                with open(f"/proc/{fx.pid}/maps") as f:
                    n = sum(1 for _ in f)
                print(f"== libs and check, {name} ({n} mappings), warm, median of {runs}")
                for dls in builds:
                    t = {c: warm([dls, c, str(fx.pid)]) for c in ("libs", "check")}
                    print(f"{dls}: libs {t['libs'] * 1e3:.0f} ms, check {t['check'] * 1e3:.0f} ms")
            finally:
                os.killpg(fx.pid, signal.SIGKILL)
    finally:
        with open("/proc/sys/vm/max_map_count", "w") as f:
            f.write(was)


def seen(fx, argv):
    """Run @argv between two measurements of stop_gaps: (wall s, stdout, the target's view)."""
    fx.send_signal(signal.SIGUSR1)
    time.sleep(0.2)
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True)
    wall = time.monotonic() - t0
    time.sleep(0.2)
    fx.send_signal(signal.SIGUSR2)
    line = fx.stdout.readline()
    return wall, p.stdout, {k: float(v) for k, v in (w.split("=") for w in line.split()[1:])}


def stop():
    fx = start([os.path.join(fixtures, "stop_gaps"), "200", "busy"])
    try:
        time.sleep(0.5)
        print("== stacks, 200 threads on 2 CPUs (one in three computing), median of", runs)
        for dls in builds:
            r = [seen(fx, [dls, "stacks", "--json", str(fx.pid)]) for _ in range(runs)]
            # A build before the one document shape printed the process at the top level.
            rep = [json.loads(out).get("processes", [json.loads(out)])[0]["stopped_ms"]
                   for _, out, _ in r]
            print(f"{dls}: reported stop {med(rep):.1f} ms (max {max(rep):.1f}); target saw"
                  f" no thread run for {med(s['none'] for _, _, s in r):.1f} ms"
                  f" (max {max(s['none'] for _, _, s in r):.1f}); largest gap of one thread"
                  f" {med(s['max'] for _, _, s in r):.0f} ms; wall"
                  f" {med(w for w, _, _ in r):.2f} s")
        for name, argv in (("gdb", ["gdb", "-nx", "-batch", "-p", str(fx.pid), "-ex",
                                    "thread apply all bt"]),
                           ("eu-stack", ["eu-stack", "-p", str(fx.pid)])):
            w, _, s = seen(fx, argv)
            print(f"{name}: target saw no thread run for {s['none']:.1f} ms; largest gap of one"
                  f" thread {s['max']:.0f} ms; wall {w:.2f} s (one run)")
    finally:
        os.killpg(fx.pid, signal.SIGKILL)


def idle():
    fx = start([os.path.join(fixtures, "busy_threads"), "5000", "idle"])
    try:
        time.sleep(1)
        print("== stacks, 5,000 idle threads, median of", runs)
        for dls in builds:
            r = [peak([dls, "stacks", str(fx.pid)]) for _ in range(runs)]
            print(f"{dls}: peak RSS {med(m for _, m, _, _ in r):.1f} MiB (max"
                  f" {max(m for _, m, _, _ in r):.1f}), goal < 32 MiB; wall"
                  f" {med(w for w, _, _, _ in r):.2f} s")
        w, m, _, _ = peak(["eu-stack", "-p", str(fx.pid)])
        print(f"eu-stack -p: peak RSS {m:.1f} MiB; wall {w:.2f} s (one run)")
    finally:
        os.killpg(fx.pid, signal.SIGKILL)


def record(cmds=(["record", "-o", "/tmp/scale_bench.jsonl"], ["watch", "-q"])):
    if os.geteuid() != 0:
        print("record: needs root (BPF); skipped")
        return
    exe = "/tmp/dl_procs"
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(root, "bench", "dl_procs.c"), "-ldl"],
                   check=True)
    for mode in ([], ["exec"]):
        print(f"== 200 busy processes ({'each its own exec' if mode else 'forked'}),"
              " --duration 10, one run each")
        for dls in builds:
            for cmd in cmds:
                fx = start([exe, "200", *mode])
                try:
                    time.sleep(1)
                    w, m, rc, err = peak([dls, *cmd, "--comm", "dl_procs", "--duration", "10"])
                finally:
                    os.killpg(fx.pid, signal.SIGKILL)
                tail = [line for line in err.splitlines() if " events, " in line]
                print(f"{dls} {cmd[0]}: peak RSS {m:.1f} MiB, goal < 100 MiB; exit {rc};"
                      f" {tail[-1].split(': ', 1)[1].split(';')[0] if tail else err.strip()}")


for part in parts:
    {"stop": stop, "idle": idle, "record": record, "libs": libs,
     "record-only": lambda: record([["record", "-o", "/tmp/scale_bench.jsonl"]])}[part]()
