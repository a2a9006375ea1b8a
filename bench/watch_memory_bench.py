#!/usr/bin/env python3
"""Peak memory of dlscope watch holding 1,000 loaded objects across 100 processes: 100 processes
each dlopen 10 distinct generated objects (bench/gen_libs.sh, each chained to the one before it
in its ten) plus the libraries they all share (libc, libm, the loader), half of them while watch
already runs (their dlopens are events), half before (read when watch attaches). Needs root.

    watch_memory_bench.py [BUILD]

Prints, for the default ring buffer (16 MiB) and for --ring-mb 64, the peak RSS of dlscope watch (its own
rusage) against the goal of 100 MiB, and how much of it is the BPF ring buffer's mapping: libbpf
maps the ring's data pages twice (for reads across the wrap) and the kernel maps every page at
once, so a 64 MiB ring counts 128 MiB of RSS whatever the traffic."""
import os
import subprocess
import sys
import time

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
libdir = os.path.join(build, "bench", "libs1000")
NPROC, PER = 100, 10
# A name of its own (a copy of the fixture): --comm must not catch other dlopen_list processes.
COMM = "dlmem_bench"
GOAL_MIB = 100
DURATION = 15

if os.geteuid() != 0:
    print("watch memory bench: needs root (BPF); skipped")
    sys.exit(0)
subprocess.run([os.path.join(root, "bench", "gen_libs.sh"), libdir, str(NPROC * PER)], check=True)
loader = os.path.join(build, "bench", COMM)
subprocess.run(["cp", os.path.join(build, "fixtures", "dlopen_list"), loader], check=True)
with open(os.path.join(libdir, "list.txt")) as f:
    libs = [line.strip() for line in f if line.strip()]


def start(k):
    """Process k: objects k*10 .. k*10+9 (one chain of ten), then it waits, holding them."""
    return subprocess.Popen([loader, *libs[k * PER:(k + 1) * PER]],
                            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


def wait_ready(procs):
    for p in procs:
        line = p.stdout.readline()
        assert line.startswith("ready"), line


def ring_rss_kib(pid):
    """RSS of the BPF map mappings (the ring buffer's) of @pid now; 0 once it is gone."""
    total, bpf = 0, False
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                if line[0] in "0123456789abcdef" and "-" in line.split()[0]:
                    bpf = line.rstrip().endswith("anon_inode:bpf-map")
                elif bpf and line.startswith("Rss:"):
                    total += int(line.split()[1])
    except OSError:
        return 0
    return total


def run(extra):
    procs, watch = [], None
    try:
        procs = [start(k) for k in range(NPROC // 2)]
        wait_ready(procs)
        out_path = os.path.join(build, "bench", "watch_memory.out")
        with open(out_path, "w") as out:
            watch = subprocess.Popen([dlscope, "watch", *extra, "--comm", COMM, "--duration",
                                      str(DURATION)], stdout=out, stderr=subprocess.STDOUT)
        # The other half start once the probes are attached: each of their dlopens is an event.
        deadline = time.monotonic() + 60
        while "probes attached" not in open(out_path).read():
            assert watch.poll() is None and time.monotonic() < deadline, open(out_path).read()
            time.sleep(0.05)
        later = [start(k) for k in range(NPROC // 2, NPROC)]
        procs += later
        wait_ready(later)
        ring = 0
        deadline = time.monotonic() + DURATION + 60
        while True:
            pid, status, usage = os.wait4(watch.pid, os.WNOHANG)
            if pid:
                break
            assert time.monotonic() < deadline, "watch did not end after --duration"
            ring = max(ring, ring_rss_kib(watch.pid))
            time.sleep(0.2)
        watch.returncode = os.waitstatus_to_exitcode(status)
        with open(out_path) as f:
            text = f.read()
        events = sum(1 for line in text.splitlines() if "libgen" in line)
        name = "watch " + " ".join(extra) if extra else "watch (default ring, 16 MiB)"
        peak = usage.ru_maxrss / 1024
        print(f"{name:34s} peak RSS {peak:6.1f} MiB (ring buffer mapping {ring / 1024:5.1f} MiB,"
              f" the rest {peak - ring / 1024:5.1f} MiB)  goal < {GOAL_MIB} MiB:"
              f" {'met' if peak < GOAL_MIB else 'NOT met'}; {events} lines name a generated"
              f" object; exit {watch.returncode}")
    finally:
        if watch and watch.poll() is None:
            watch.kill()
        for p in procs:
            p.kill()
            p.wait()


print(f"== dlscope watch --comm {COMM}: {NPROC} processes x {PER} generated objects"
      f" ({NPROC * PER}, plus the shared ones), {NPROC // 2} of them started under watch")
run([])
run(["--ring-mb", "64"])
