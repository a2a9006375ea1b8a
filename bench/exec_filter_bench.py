#!/usr/bin/env python3
"""What an exec costs every process of the node while `record --slurm-job ID` (or the agent's)
runs where the job has no cgroup: the kernel reads each new program's environment for
SLURM_JOB_ID=ID. Each round times N spawns of /bin/true (posix_spawn + wait, from here) with
no dlscope, beside `record --comm` of a name no program has (the exec hook alone), and beside
`record --slurm-job` of a job no process is in (the hook and the whole environment scanned),
with this process's environment and with 32 KiB more; rounds interleaved, medians.

    sudo python3 bench/exec_filter_bench.py [--runs ROUNDS] [--execs N]
"""
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def spawn_loop(n, env):
    """Microseconds per spawn and wait of /bin/true, over @n."""
    t0 = time.perf_counter()
    for _ in range(n):
        pid = os.posix_spawn("/bin/true", ["true"], env)
        os.waitpid(pid, 0)
    return (time.perf_counter() - t0) / n * 1e6


def start_recorder(args, out):
    p = subprocess.Popen([os.path.join(ROOT, "dlscope"), "record", "-q", "-o", out, *args],
                         stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    if "watching" not in line:
        raise SystemExit(f"record did not start: {line}{p.stderr.read()}")
    return p


def stop_recorder(p):
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=60)


def main():
    args = sys.argv[1:]
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    n = int(args[args.index("--execs") + 1]) if "--execs" in args else 2000
    small = dict(os.environ)
    big = dict(small, DLSCOPE_BENCH_PAD="x" * 32768)
    modes = {"none": None, "--comm": ["--comm", "dlscope-none"],
             "--slurm-job": ["--slurm-job", "4199999999"]}
    got = {(m, e): [] for m in modes for e in ("small", "big")}
    with tempfile.TemporaryDirectory() as d:
        for r in range(runs):
            for m, extra in modes.items():
                rec = start_recorder(extra, os.path.join(d, f"{r}.jsonl")) if extra else None
                try:
                    for e, env in (("small", small), ("big", big)):
                        got[(m, e)].append(spawn_loop(n, env))
                finally:
                    if rec:
                        stop_recorder(rec)
                        os.unlink(os.path.join(d, f"{r}.jsonl"))
    envsize = sum(len(k) + len(v) + 2 for k, v in small.items())
    print(f"spawn + wait of /bin/true, us each (median of {runs} rounds of {n}); environment "
          f"{envsize} B (small) and {envsize + 32768 + 18} B (big)")
    for e in ("small", "big"):
        base = statistics.median(got[("none", e)])
        row = [f"{e:5}: none {base:7.1f}"]
        for m in ("--comm", "--slurm-job"):
            v = statistics.median(got[(m, e)])
            row.append(f"{m} {v:7.1f} (+{v - base:.1f})")
        print("  " + "   ".join(row))


if __name__ == "__main__":
    main()
