#!/usr/bin/env python3
"""watch --job on 4, 8 and 16 ranks of the launcher fixture (every rank with an OpenMP pool,
all waiting): the wall time from the start of dlscope to its probes attached on every rank
(job resolution, the ranks' graphs, the probes), and the CPU dlscope uses while it watches (the
rank labels and the twice-a-second CPU-progress scan of every rank's threads). Anchor, run
interleaved with it: `watch -p` on the same launcher and ranks (what a user ran before --job;
the job layer labels ranks there too, so the ratio is the cost of --job itself), and dlscope's
CPU per second of watching against the 1.00 of a whole CPU."""
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import time

from timing import children

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
RUNS = int(os.environ.get("JOBWATCH_BENCH_RUNS", "3"))
WATCH_S = float(os.environ.get("JOBWATCH_BENCH_SECS", "3"))




def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def watch(args):
    """(seconds to "watching", dlscope's whole CPU seconds, the collector's CPU seconds)."""
    cpu0 = children_cpu()
    t0 = time.perf_counter()
    p = subprocess.Popen([dlscope, "watch", "-q", "--duration", str(WATCH_S), *args],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    attach = None
    err = []
    for line in p.stderr:
        err.append(line)
        if attach is None and "watching" in line:
            attach = time.perf_counter() - t0
    p.wait()
    assert p.returncode == 0 and attach is not None, (p.returncode, "".join(err))
    collector = float(re.search(r"collector CPU ([\d.]+) s", "".join(err)).group(1))
    return attach, children_cpu() - cpu0, collector


def bench(n):
    proc = subprocess.Popen([os.path.join(build, "fixtures", "job_launcher"), str(n)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().startswith("ready")
        pids = [proc.pid] + children(proc.pid)
        job, anchor = [], []
        # Interleaved, so that the other load of the machine falls on both alike.
        for _ in range(RUNS):
            job.append(watch(["--job", str(proc.pid)]))
            anchor.append(watch(["-f", *[a for p in pids for a in ("-p", str(p))]]))
        med = statistics.median
        ja, jc, jl = (med(x[i] for x in job) for i in range(3))
        aa, ac, al = (med(x[i] for x in anchor) for i in range(3))
        print(f"{n:2d} ranks: watch --job attached in {ja * 1000:5.0f} ms median "
              f"(watch -p on the same {len(pids)} processes {aa * 1000:5.0f} ms, "
              f"{ja / aa:.2f}x); dlscope CPU {jc:.2f} s for {WATCH_S:.0f} s watched "
              f"({jc / WATCH_S:.3f} of a CPU; -p {ac:.2f} s, {jc / ac:.2f}x), "
              f"of which watching (after the attach) {jl:.3f} s, {jl / WATCH_S * 100:.1f}% of "
              f"a CPU (-p {al:.3f} s)")
        return ja, jc
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main():
    if os.geteuid():
        raise SystemExit("jobwatch_bench: watch needs root")
    res = {n: bench(n) for n in (4, 8, 16)}
    print(f"watch --job: attached in {res[4][0] * 1000:.0f} / {res[8][0] * 1000:.0f} / "
          f"{res[16][0] * 1000:.0f} ms for 4 / 8 / 16 ranks, about "
          f"{(res[16][0] - res[4][0]) / 12 * 1000:.0f} ms per added rank")


if __name__ == "__main__":
    main()
