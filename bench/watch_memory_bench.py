#!/usr/bin/env python3
"""Peak memory of dlscope watch holding 1,000 loaded objects across 100 processes: 100 processes
each dlopen 10 distinct generated objects (bench/gen_libs.sh, each chained to the one before it
in its ten) plus the libraries they all share (libc, libm, the loader), half of them while watch
already runs (their dlopens are events), half before (read when watch attaches). Needs root.

    watch_memory_bench.py [BUILD]

Prints the peak RSS of dlscope watch (getrusage of the child, ru_maxrss) against the goal of
100 MiB, and how many objects watch reported."""
import os
import resource
import subprocess
import sys
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
libdir = os.path.join(build, "bench", "libs1000")
NPROC, PER = 100, 10
COMM = "dlopen_list"
GOAL_MIB = 100

if os.geteuid() != 0:
    print("watch memory bench: needs root (BPF); skipped")
    sys.exit(0)
subprocess.run([os.path.join(root, "bench", "gen_libs.sh"), libdir, str(NPROC * PER)], check=True)
with open(os.path.join(libdir, "list.txt")) as f:
    libs = [line.strip() for line in f if line.strip()]


def start(k):
    """Process k: objects k*10 .. k*10+9 (one chain of ten), then it waits, holding them."""
    return subprocess.Popen([os.path.join(build, "fixtures", COMM), *libs[k * PER:(k + 1) * PER]],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def wait_ready(procs, deadline):
    for p in procs:
        assert time.monotonic() < deadline, "a loader process did not come up in time"
        line = p.stdout.readline()
        assert line.startswith("ready"), line


procs = []
watch = None
try:
    # Half loaded before watch starts: read from each process's link maps when it attaches.
    procs = [start(k) for k in range(NPROC // 2)]
    wait_ready(procs, time.monotonic() + 120)
    t0 = time.monotonic()
    watch = subprocess.Popen([dlscope, "watch", "--comm", COMM, "--duration", "30"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # the probes attach; no result depends on it (the counts below say what came)
    # The other half start under watch: each of their dlopens is an event.
    later = [start(k) for k in range(NPROC // 2, NPROC)]
    procs += later
    wait_ready(later, time.monotonic() + 120)
    out, err = watch.communicate(timeout=120)
    wall = time.monotonic() - t0
    with open(os.path.join(build, "bench", "watch_memory.out"), "w") as f:
        f.write(out)
    # ru_maxrss of the children reaped so far: watch is the only dlscope child; the loader
    # processes are still running (not reaped), so they do not count.
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    gen = sum(1 for line in out.splitlines() if "libgen" in line and "dlopen" in line)
    print(f"== watch --comm {COMM}: {NPROC} processes x {PER} objects ({NPROC * PER} generated,"
          f" plus the shared ones), {wall:.1f} s")
    print(f"dlopen events of generated objects seen live: {gen}"
          f" (of {(NPROC - NPROC // 2) * PER} loaded under watch)")
    print(f"dlscope watch peak RSS: {peak_kib / 1024:.1f} MiB   goal < {GOAL_MIB} MiB"
          f" ({'met' if peak_kib / 1024 < GOAL_MIB else 'NOT met'})")
    if watch.returncode not in (0, 1):
        print(f"watch exited {watch.returncode}: {err.strip()[-500:]}")
finally:
    if watch and watch.poll() is None:
        watch.kill()
    for p in procs:
        p.kill()
        p.wait()
