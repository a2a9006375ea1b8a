#!/usr/bin/env python3
"""dlscope capture against gdb's gcore, in the same run: how long the process stands still,
the wall time, the size of the core. Two targets: a 64-thread C process, and Debian's
/usr/bin/python3 after `import torch, numpy, scipy` (python3-torch, -numpy, -scipy). The stop
is measured the same way for both tools, from inside the target: a heartbeat thread
(bench/heartbeat.c; in Python its main() built as a library and run from a thread through
ctypes, which lets go of the GIL) wakes every 0.1 ms and keeps its longest gap, which a stop of
every thread stretches (the idle gap is printed beside it). dlscope's own figure for its stop
(capture --stats) is printed too. For the Python process the bench also checks that stacks,
libs and check of the capture say what they say of the live process. Needs gdb (gcore) and cc.

    capture_bench.py [--runs N] [--threads N] [--no-torch] [--dlscope PATH]...
"""
import json
import mmap
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import start_heartbeat, builds_and_runs  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"
# The torch process: the heartbeat's main() on a thread of its own, the main thread asleep.
TORCH_TARGET = r"""
import ctypes, sys, threading, time
import torch, numpy, scipy
lib = ctypes.CDLL(sys.argv[1])
argv = (ctypes.c_char_p * 3)(b"heartbeat", sys.argv[2].encode(), b"1")
threading.Thread(target=lib.heartbeat_main, args=(3, argv), daemon=True).start()
while True:
    time.sleep(3600)
"""

args, runs, builds = builds_and_runs(sys.argv[1:], 7)
threads = int(args[args.index("--threads") + 1]) if "--threads" in args else 64
med = statistics.median


class Target:
    """A process with a heartbeat, and the page where it keeps its longest gap."""

    def __init__(self, work, shm, proc):
        self.work, self.proc, self.pid = work, proc, proc.pid
        self.fd = os.open(shm, os.O_RDWR)
        self.gap = mmap.mmap(self.fd, 4096)
        line = proc.stdout.readline()
        assert line.startswith("ready"), line
        time.sleep(0.3)

    def measure(self, argv, out):
        """(heartbeat's longest gap in ms, wall s, core bytes, stderr) of one run of @argv."""
        if os.path.exists(out):
            os.unlink(out)
        self.gap[0:8] = bytes(8)
        t0 = time.perf_counter()
        p = subprocess.run(argv, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        time.sleep(0.01)  # the heartbeat's next beat closes the gap the stop opened
        assert p.returncode == 0, (argv, p.stderr)
        return struct.unpack("<Q", self.gap[0:8])[0] / 1e6, wall, os.path.getsize(out), p.stderr

    def idle(self):
        self.gap[0:8] = bytes(8)
        time.sleep(0.5)
        return struct.unpack("<Q", self.gap[0:8])[0] / 1e6

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.gap.close()
        os.close(self.fd)
        subprocess.run(["rm", "-rf", self.work])


def compare(title, t):
    """gcore and each build's capture (small and --full) of @t, @runs times each."""
    base = [t.idle() for _ in range(runs)]
    gcore = [t.measure(["gcore", "-o", os.path.join(t.work, "g"), str(t.pid)],
                       os.path.join(t.work, f"g.{t.pid}")) for _ in range(runs)]
    os.unlink(os.path.join(t.work, f"g.{t.pid}"))
    print(f"{title}: {runs} runs each, medians; heartbeat's longest gap when idle "
          f"{med(base):.2f} ms")
    print(f"  gcore:            stopped {med(g for g, _, _, _ in gcore):8.2f} ms  wall "
          f"{med(w for _, w, _, _ in gcore):6.3f} s  core "
          f"{med(s for _, _, s, _ in gcore) / 2**20:8.2f} MiB")
    for dls in builds:
        for flags in ([], ["--full"]):
            out = os.path.join(t.work, "c")
            r = [t.measure([dls, "capture", "--stats", *flags, "-o", out, str(t.pid)], out)
                 for _ in range(runs)]
            own = [float(re.search(r"stopped ([\d.]+) ms", e).group(1)) for _, _, _, e in r]
            g, w, s = (med(x[i] for x in r) for i in range(3))
            print(f"  capture{' --full' if flags else '       '}: stopped {g:8.2f} ms  wall "
                  f"{w:6.3f} s  core {s / 2**20:8.2f} MiB  (its own figure {med(own):.2f} ms, "
                  f"max {max(own):.2f})  [{dls}]")
            print(f"      gcore / capture: stop {med(x[0] for x in gcore) / g:.1f}x, wall "
                  f"{med(x[1] for x in gcore) / w:.1f}x, size {med(x[2] for x in gcore) / s:.1f}x")
            os.unlink(out)


def dls_json(dls, *argv):
    p = subprocess.run([dls, *argv, "--json"], capture_output=True, text=True)
    assert p.returncode in (0, 1), (argv, p.stderr)
    return json.loads(p.stdout)["processes"][0]


def agree(t, dls):
    """Whether stacks, libs and check of a capture of @t say what they say of @t live."""
    core = os.path.join(t.work, "agree.core")
    subprocess.run([dls, "capture", "-o", core, str(t.pid)], check=True)
    frames = lambda d: {th["tid"]: [f["function"] for f in th["frames"]] for th in d["threads"]}
    objects = lambda d: [(o["path"], o["build_id"], o["roles"]) for o in d["objects"]]
    findings = lambda d: sorted(f["id"] for f in d["findings"])
    live = [dls_json(dls, cmd, str(t.pid)) for cmd in ("stacks", "libs", "check")]
    cap = [dls_json(dls, cmd, core) for cmd in ("stacks", "libs", "check")]
    fl, fc = frames(live[0]), frames(cap[0])
    same = [tid for tid in fl if fc.get(tid) == fl[tid]]
    print(f"  capture vs live [{dls}]: stacks: {len(same)}/{len(fl)} threads with the same "
          f"native frames (capture has {len(fc)} threads); libs: "
          f"{'the same' if objects(live[1]) == objects(cap[1]) else 'DIFFERENT'} "
          f"{len(objects(live[1]))} objects (path, build-id, roles); check: findings "
          f"{findings(live[2])} live, {findings(cap[2])} from the capture")
    for tid in fl:
        if fc.get(tid) != fl[tid]:
            print(f"      thread {tid}: live {fl[tid][:6]}, capture {fc.get(tid, [])[:6]}")
    # The Python frames are in the heap, which only --full writes.
    subprocess.run([dls, "capture", "--full", "-o", core, str(t.pid)], check=True)
    py = lambda d: {th["tid"]: [(f["function"], f["file"], f["line"])
                                for f in th["python"]["frames"]]
                    for th in d["threads"] if th.get("python")}
    pl, pc = py(dls_json(dls, "stacks", str(t.pid))), py(dls_json(dls, "stacks", core))
    print(f"      Python frames, capture --full vs live: "
          f"{'the same' if pl == pc else 'DIFFERENT'} ({len(pl)} threads, "
          f"{sum(map(len, pl.values()))} frames)")
    os.unlink(core)


def torch_target():
    work = tempfile.mkdtemp(prefix="capture-bench-torch-")
    shm = os.path.join(work, "gap")
    with open(shm, "wb") as f:
        f.write(bytes(4096))
    lib = os.path.join(work, "libheartbeat.so")
    subprocess.run(["cc", "-O2", "-g", "-shared", "-fPIC", "-pthread",
                    "-Dmain=heartbeat_main", "-o", lib, f"{ROOT}/bench/heartbeat.c"], check=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen([PYTHON, "-c", TORCH_TARGET, lib, shm], stdout=subprocess.PIPE,
                            text=True)
    t = Target(work, shm, proc)
    with open(f"/proc/{t.pid}/status") as f:
        n = re.search(r"^Threads:\s+(\d+)", f.read(), re.M).group(1)
    with open(f"/proc/{t.pid}/maps") as f:
        objs = {ln.split()[-1] for ln in f if ln.rstrip().endswith(".so") or ".so." in ln}
    print(f"{PYTHON} after import torch, numpy, scipy (ready in {time.perf_counter() - t0:.1f} "
          f"s): {n} threads, {len(objs)} shared objects mapped")
    return t


t = Target(*(lambda w, _, shm, p: (w, shm, p))(*start_heartbeat(threads, "capture-bench-")))
try:
    compare(f"{threads} threads", t)
finally:
    t.close()
if "--no-torch" not in args:
    t = torch_target()
    try:
        compare("import torch, numpy, scipy", t)
        for dls in builds:
            agree(t, dls)
    finally:
        t.close()
