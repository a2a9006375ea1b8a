#!/usr/bin/env python3
"""stacks --job and check --job on 4, 8 and 16 ranks of the launcher fixture (every rank with an
OpenMP pool; rank 3 on a futex, the others reading a pipe): medians of the whole command, the
longest stop of one rank, and, beside stacks --job, `stacks PID` run on each rank one after the
other (what a user would do without --job)."""
import json
import os
import signal
import statistics
import subprocess
import sys
import time

from timing import children

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
RUNS = int(os.environ.get("JOB_BENCH_RUNS", "7"))


def timed(argv):
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return time.perf_counter() - t0, p




def wait_asleep(pids, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = []
        for pid in pids:
            for tid in os.listdir(f"/proc/{pid}/task"):
                try:
                    with open(f"/proc/{pid}/task/{tid}/stat") as f:
                        states.append(f.read().rsplit(")", 1)[1].split()[0])
                except OSError:
                    pass
        if "R" not in states:
            return
        time.sleep(0.05)
    raise SystemExit("ranks still running")


def bench(n):
    proc = subprocess.Popen([os.path.join(build, "fixtures", "job_launcher"), str(n)],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().startswith("ready")
        ranks = children(proc.pid)
        wait_asleep(ranks)
        job, serial, check, stops = [], [], [], []
        # Interleaved, so that the other load of the machine falls on all three alike.
        for _ in range(RUNS):
            t, p = timed([dlscope, "stacks", "--job", "--json", str(proc.pid)])
            doc = json.loads(p.stdout)
            assert doc["verdict"]["outliers"] == [3], doc["verdict"]
            stops.append(max(r["stopped_ms"] for r in doc["ranks"]))
            job.append(t)
            t0 = time.perf_counter()
            for r in ranks:
                subprocess.run([dlscope, "stacks", str(r)], stdout=subprocess.DEVNULL)
            serial.append(time.perf_counter() - t0)
            t, p = timed([dlscope, "check", "--job", str(proc.pid)])
            check.append(t)
        med = statistics.median
        print(f"{n:2d} ranks: stacks --job {med(job) * 1000:6.0f} ms median "
              f"(max {max(job) * 1000:.0f}), each rank stopped {med(stops):.2f} ms median "
              f"(max {max(stops):.2f}); stacks PID on each rank in turn "
              f"{med(serial) * 1000:6.0f} ms ({med(serial) / med(job):.1f}x); "
              f"check --job {med(check) * 1000:6.0f} ms")
        return med(job), med(check)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main():
    res = {n: bench(n) for n in (4, 8, 16)}
    for i, what in enumerate(("stacks --job", "check --job")):
        per = [(res[16][i] - res[4][i]) / 12 * 1000]
        print(f"{what}: {res[4][i] * 1000:.0f} / {res[8][i] * 1000:.0f} / "
              f"{res[16][i] * 1000:.0f} ms for 4 / 8 / 16 ranks, "
              f"about {per[0]:.0f} ms per added rank")


if __name__ == "__main__":
    main()
