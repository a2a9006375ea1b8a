#!/usr/bin/env python3
"""The cost of the Python stack each dlopen of a CPython process carries in `dlscope watch`: a
Debian python3 loop of ctypes.CDLL dlopen/dlclose 38 Python frames deep (an import chain's
depth), untraced, under this dlscope (the kernel walks the frames at dlopen's entry, the
collector names them) and under a dlscope without the capture (--base PATH: a build before it).
Medians of interleaved runs: the loop's time per dlopen, the collector's CPU per dlopen, and the
kernel's own account of the dlopen entry program (kernel.bpf_stats_enabled: run time per run),
which is what the capture adds to the traced thread, free of the noise of a shared machine.
Needs root (BPF) and bpftool.

    pyimport_bench.py [BUILD] [--base PATH_TO_OTHER_DLSCOPE] [--runs N] [--dlopens N]"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

args = sys.argv[1:]
opts = {"--base": None, "--runs": "5", "--dlopens": "1000"}
for k in list(opts):
    if k in args:
        i = args.index(k)
        opts[k] = args[i + 1]
        del args[i:i + 2]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
RUNS, N = int(opts["--runs"]), int(opts["--dlopens"])
PY = "/usr/bin/python3"

LOOP = """import ctypes, sys, time
from _ctypes import dlclose
n, depth, hold = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
def load():
    dlclose(ctypes.CDLL("libm.so.6")._handle)
def nest(k):
    return nest(k - 1) if k else load()
nest(depth)  # warm: the collector learns the process is Python at its first dlopen
time.sleep(0.5)
t = time.perf_counter()
for _ in range(n):
    nest(depth)
dt = time.perf_counter() - t
print(f"{dt / n * 1e6:.3f} us/dlopen", flush=True)
time.sleep(hold)  # every event is handled while the process lives
"""

if os.geteuid() != 0:
    print("pyimport bench: needs root (BPF); skipped")
    sys.exit(0)


def entry_ns(pid):
    """ns per run of the dlopen entry program that dlscope @pid loaded (bpf_stats): its id among
    those named dlopen_enter, its counters in the descriptor's fdinfo."""
    progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True,
                                      text=True, check=True).stdout)
    ids = {p["id"] for p in progs if p.get("name") == "dlopen_enter"}
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            info = dict(l.split(":", 1) for l in open(f"/proc/{pid}/fdinfo/{fd}") if ":" in l)
        except OSError:
            continue
        if "prog_id" in info and int(info["prog_id"]) in ids and int(info["run_cnt"]):
            return int(info["run_time_ns"]) / int(info["run_cnt"])
    return None


def run(argv):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line, ns = "", None
    while "us/dlopen" not in line:
        line = p.stdout.readline()
        if not line:
            break
    if argv[0] != PY:
        ns = entry_ns(p.pid)  # the target holds on for 3 s: the programs are still loaded
    out, err = p.communicate(timeout=600)
    m = re.search(r"([\d.]+) us/dlopen", line)
    assert m, (argv, line + out, err)
    cpu = re.search(r"collector CPU ([\d.]+) s", err)
    lost = re.search(r"(\d+) events, (\d+) lost", err)
    assert not lost or lost.group(2) == "0", err
    return float(m.group(1)), float(cpu.group(1)) / N * 1e6 if cpu else None, ns


with tempfile.TemporaryDirectory() as d:
    loop = os.path.join(d, "loop.py")
    with open(loop, "w") as f:
        f.write(LOOP)
    prog = [PY, loop, str(N), "36", "3"]
    configs = {"untraced": prog, "capture": [dlscope, "watch", "-q", "--", *prog]}
    if opts["--base"]:
        configs["no capture"] = [os.path.abspath(opts["--base"]), "watch", "-q", "--", *prog]
    samples = {k: [] for k in configs}
    stats = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
        f.write("1")
    try:
        for _ in range(RUNS):
            for k, argv in configs.items():
                samples[k].append(run(argv))
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(stats)
    med = {k: tuple(statistics.median(v[i] for v in s) if s[0][i] is not None else None
                    for i in range(3))
           for k, s in samples.items()}
    print(f"python3 ctypes.CDLL dlopen+dlclose loop, 38 Python frames deep, {N} dlopens, "
          f"median of {RUNS} interleaved runs:")
    for k, (us, cpu, ns) in med.items():
        extra = f"; collector CPU {cpu:.0f} us" if cpu is not None else ""
        extra += f"; dlopen entry program {ns / 1e3:.2f} us per run" if ns else ""
        print(f"  {k:11s} {us:8.2f} us per dlopen in the target{extra}")
    if "no capture" in med:
        (cu, cc, cn), (nu, nc, nn) = med["capture"], med["no capture"]
        print(f"  the Python stack: entry program +{(cn - nn) / 1e3:.2f} us per dlopen "
              f"({cn / nn:.1f}x); loop {cu / nu:.2f}x; collector CPU {cc / nc:.2f}x "
              f"({cc - nc:+.0f} us per dlopen)")
