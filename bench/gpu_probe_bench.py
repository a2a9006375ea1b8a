#!/usr/bin/env python3
"""The cost of the GPU build probes to the calling thread: zeModuleCreate through Debian's
libze1 loader (no driver: the call itself returns at once) called CALLS times in a loop, timed
by the program itself, alone, under an empty bpftrace uprobe and uretprobe on it (the floor of
any entry-and-return probe on this machine), and under `record -- CMD` of each dlscope given (a
build without the Level Zero probe, the old one, pays for watching the process but not for the
probe). Each case runs RUNS times; the median ns per call is reported. Root (BPF).

    gpu_probe_bench.py [BUILD] [--runs N] [--calls N] [--dlscope PATH]...
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import builds_and_runs  # noqa: E402

argv = list(sys.argv[1:])
calls = 20000
if "--calls" in argv:
    i = argv.index("--calls")
    calls = int(argv[i + 1])
    del argv[i:i + 2]
args, runs, builds = builds_and_runs(argv, 5)
build = os.path.abspath(args[0] if args else "build")
fixture = os.path.join(build, "fixtures", "ze_module")
if os.geteuid() != 0:
    print("gpu probe bench: needs root (BPF); skipped")
    sys.exit(0)
if not os.path.exists("/usr/lib/x86_64-linux-gnu/libze_loader.so.1"):
    print("gpu probe bench: libze1 is not installed; skipped")
    sys.exit(0)


def per_call(prefix):
    """Median ns per zeModuleCreate over the runs, and the gpu_load events of the last."""
    ns, events = [], 0
    for _ in range(runs):
        with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
            cmd = [fixture, "libze_loader.so.1", str(calls)]
            full = [*prefix, "record", "-o", f.name, "--", *cmd] if prefix else cmd
            p = subprocess.run(full, capture_output=True, text=True, timeout=600)
            m = re.search(r"ns per call ([\d.]+)", p.stdout)
            if not m:
                raise SystemExit(f"{full}: no timing\n{p.stdout}\n{p.stderr}")
            ns.append(float(m.group(1)))
            events = sum('"gpu_load"' in line for line in open(f.name))
    return statistics.median(ns), events


def under_bpftrace():
    """Median ns per call with an empty uprobe and uretprobe of bpftrace on zeModuleCreate."""
    lib = "/usr/lib/x86_64-linux-gnu/libze_loader.so.1"
    bt = subprocess.Popen(["bpftrace", "-e", f"uprobe:{lib}:zeModuleCreate {{}} "
                           f"uretprobe:{lib}:zeModuleCreate {{}}"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    try:
        while "Attaching" not in (bt.stdout.readline() or "Attaching"):
            pass
        time.sleep(1)
        return per_call(None)[0]
    finally:
        bt.terminate()
        bt.wait(timeout=30)


alone, _ = per_call(None)
print(f"zeModuleCreate x {calls}, median of {runs} runs: alone {alone:.0f} ns per call")
if shutil.which("bpftrace"):
    t = under_bpftrace()
    print(f"  under an empty bpftrace uprobe+uretprobe: {t:.0f} ns per call "
          f"(+{(t - alone) / 1000:.1f} us)")
for dls in builds:
    t, ev = per_call([dls])
    print(f"  under {dls} record: {t:.0f} ns per call ({t / alone:.1f}x alone, "
          f"+{(t - alone) / 1000:.1f} us), {ev} gpu_load events recorded")
