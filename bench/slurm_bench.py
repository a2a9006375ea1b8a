#!/usr/bin/env python3
"""stacks --job slurm:JOBID on a real two-node Slurm (tests/e2e/slurm_cluster.py: Debian's
slurmctld and a slurmd per network namespace): an mpi4py job of 8 ranks, 4 per node, the last
asleep away from the barrier the others spin in. Medians over --runs of: the whole command
(front end, srun --overlap to both nodes, each node's ranks read there, the merge), the longest
stop of one rank as that rank's reader measured it, and beside it gdb attached rank by rank
(`gdb -batch -p PID -ex 'thread apply all bt'` on each, one after the other: what a user does
without dlscope). Then check --job slurm:JOBID (each node's ranks checked there, compared at
the front end) beside `dlscope check PID` run rank by rank, one after the other. Needs root and
make deps (slurm-wlm, munge, python3-mpi4py)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))

from slurm_cluster import SlurmCluster, missing  # noqa: E402

RUNS = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 5
DLSCOPE = os.path.join(ROOT, "dlscope")
RANK = os.path.join(ROOT, "tests", "e2e", "python", "slurm_rank.py")
NTASKS, NODES = 8, 2


def timed(argv, env):
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    return time.perf_counter() - t0, p


def main():
    why = missing()
    if why:
        print(f"slurm bench: {why}; skipped")
        return
    with SlurmCluster(nodes=NODES) as c:
        d = tempfile.mkdtemp(dir=c.dir)
        c.srun_background(["-N", str(NODES), "-n", str(NTASKS),
                           f"--ntasks-per-node={NTASKS // NODES}", "--mpi=pmix",
                           "/usr/bin/python3", RANK, "mpi", "sleep", d], cwd=d)
        deadline = time.monotonic() + 120
        while sum(f.startswith("ready.") for f in os.listdir(d)) < NTASKS:
            if time.monotonic() > deadline:
                raise SystemExit("slurm bench: the ranks did not start")
            time.sleep(0.2)
        time.sleep(1)
        job = max(json.loads(c.run("squeue", "--json").stdout)["jobs"],
                  key=lambda j: j["job_id"])["job_id"]
        ranks = sorted(c.tasks(job))
        walls, stops, gdbs, verdicts = [], [], [], set()
        for _ in range(RUNS):
            t, p = timed([DLSCOPE, "stacks", "--job", "--json", f"slurm:{job}"], c.full_env)
            doc = json.loads(p.stdout)
            walls.append(t)
            stops.append(max(r["stopped_ms"] or 0 for r in doc["ranks"]))
            verdicts.add(doc["verdict"]["text"])
            g = 0.0
            for pid in ranks:
                tg, _ = timed(["gdb", "-batch", "-nx", "-p", str(pid), "-ex",
                               "thread apply all bt"], c.full_env)
                g += tg
            gdbs.append(g)
        w, s, g = (statistics.median(x) for x in (walls, stops, gdbs))
        print(f"stacks --job slurm:JOBID, {NTASKS} mpi4py ranks on {NODES} nodes "
              f"(network namespaces), median of {RUNS}:")
        print(f"  dlscope, the whole command      {w * 1000:8.1f} ms")
        print(f"  longest stop of one rank        {s:8.1f} ms")
        print(f"  gdb rank by rank ({NTASKS} attaches)   {g * 1000:8.1f} ms  "
              f"({g / w:.1f}x dlscope)")
        for v in sorted(verdicts):
            print(f"  verdict: {v}")
        checks, singles, finds = [], [], set()
        for _ in range(RUNS):
            t, p = timed([DLSCOPE, "check", "--job", "--json", f"slurm:{job}"], c.full_env)
            doc = json.loads(p.stdout)
            checks.append(t)
            finds.add((len(doc["processes"]), len(doc["job_findings"])))
            singles.append(sum(timed([DLSCOPE, "check", str(pid)], c.full_env)[0]
                               for pid in ranks))
        k, one = statistics.median(checks), statistics.median(singles)
        print(f"check --job slurm:JOBID, the same job, median of {RUNS}:")
        print(f"  dlscope, the whole command      {k * 1000:8.1f} ms")
        print(f"  check PID rank by rank ({NTASKS})    {one * 1000:8.1f} ms  "
              f"({one / k:.1f}x check --job)")
        for n, f in sorted(finds):
            print(f"  {n} ranks checked, {f} job findings")


if __name__ == "__main__":
    main()
