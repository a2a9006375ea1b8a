#!/usr/bin/env python3
"""What the collision rules of the field (shadowed-soname, static-tls, dup-proto,
blas-in-parallel, dup-blas's harm read from GOT slots, the settings read from environ) cost:
dlscope check of Debian's torch + numpy + scipy process, and lint of /usr/lib/x86_64-linux-gnu,
for each build given, interleaved, beside an anchor doing part of the same job in the same run
(gdb's "info sharedlibrary" of the process; readelf -dW of every file of the tree).

    collisions_bench.py [--runs N] [--dlscope OLD --dlscope NEW]
"""
import glob
import os
import statistics
import subprocess
import sys
import time

from timing import builds_and_runs

PY = "/usr/bin/python3"
TREE = "/usr/lib/x86_64-linux-gnu"
TORCH = ("import torch, numpy, scipy.linalg, os, time\n"
         "print('ready', os.getpid(), flush=True)\n"
         "time.sleep(3600)\n")


def once(argv):
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, p.returncode


def interleaved(commands, runs):
    """{name: median seconds} of @commands ({name: argv}), each run @runs times in turn."""
    times = {k: [] for k in commands}
    for _ in range(runs):
        for k, argv in commands.items():
            times[k].append(once(argv)[0])
    return {k: statistics.median(v) for k, v in times.items()}


def main():
    _, runs, builds = builds_and_runs(sys.argv[1:], 7)
    if os.geteuid() != 0:
        print("collisions bench: needs root (check reads another user's process); skipped")
        return
    names = [f"dlscope {i}" if len(builds) > 1 else "dlscope" for i in range(len(builds))]
    p = subprocess.Popen([PY, "-c", TORCH], stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        assert p.stdout.readline().startswith("ready")
        cmds = {n: [b, "check", str(p.pid)] for n, b in zip(names, builds)}
        for b in builds:  # the caches warm
            once([b, "check", str(p.pid)])
        cmds["gdb info sharedlibrary"] = ["gdb", "-q", "-batch", "-nx", "-p", str(p.pid), "-ex",
                                          "info sharedlibrary"]
        med = interleaved(cmds, runs)
        objects = len({line.split()[-1] for line in open(f"/proc/{p.pid}/maps")
                       if ".so" in line})
        print(f"check of import torch, numpy, scipy.linalg ({objects} files mapped), median of "
              f"{runs}, warm cache:")
        for k, v in med.items():
            ratio = f"  ({med['gdb info sharedlibrary'] / v:.1f}x faster than gdb)" \
                if k.startswith("dlscope") else ""
            print(f"  {k:24s} {v * 1e3:8.1f} ms{ratio}")
    finally:
        p.kill()
        p.wait()
    files = [f for f in glob.glob(f"{TREE}/*.so*") if os.path.isfile(f)]
    cmds = {n: [b, "lint", TREE] for n, b in zip(names, builds)}
    cmds["readelf -dW of each file"] = ["sh", "-c", f"readelf -dW {TREE}/*.so* >/dev/null 2>&1"]
    for b in builds:
        once([b, "lint", TREE])
    med = interleaved(cmds, max(3, runs // 2))
    print(f"lint {TREE} ({len(files)} files), median of {max(3, runs // 2)}, warm cache:")
    for k, v in med.items():
        print(f"  {k:24s} {v * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
