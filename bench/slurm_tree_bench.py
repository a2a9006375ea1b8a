#!/usr/bin/env python3
"""The fan-in tree of a Slurm job (stacks/check --job slurm:JOBID --fanout N) against the flat
read, on a real Slurm of --nodes nodes (tests/e2e/slurm_cluster.py: network namespaces, a
slurmd each): an mpi4py job of 2 ranks per node, the last asleep away from the barrier. For
each way, medians over --runs of the whole command, the answers and bytes that reached the
front end (the JSON's fan_in), the relays, and the longest stop of one rank. Needs root and
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


def arg(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


RUNS, NODES, FANOUT = arg("--runs", 5), arg("--nodes", 5), arg("--fanout", 2)
DLSCOPE = os.path.join(ROOT, "dlscope")
RANK = os.path.join(ROOT, "tests", "e2e", "python", "slurm_rank.py")
NTASKS = 2 * NODES


def run(argv, env):
    t0 = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    return time.perf_counter() - t0, json.loads(p.stdout)


def main():
    why = missing()
    if why:
        print(f"slurm tree bench: {why}; skipped")
        return
    with SlurmCluster(nodes=NODES) as c:
        d = tempfile.mkdtemp(dir=c.dir)
        c.srun_background(["-N", str(NODES), "-n", str(NTASKS), "--ntasks-per-node=2",
                           "--mpi=pmix", "/usr/bin/python3", RANK, "mpi", "sleep", d], cwd=d)
        deadline = time.monotonic() + 180
        while sum(f.startswith("ready.") for f in os.listdir(d)) < NTASKS:
            if time.monotonic() > deadline:
                raise SystemExit("slurm tree bench: the ranks did not start")
            time.sleep(0.2)
        time.sleep(1)
        job = max(json.loads(c.run("squeue", "--json").stdout)["jobs"],
                  key=lambda j: j["job_id"])["job_id"]
        print(f"{NTASKS} mpi4py ranks on {NODES} nodes (network namespaces), median of {RUNS}, "
              f"interleaved:")
        for cmd in ("stacks", "check"):
            rows = {}
            for _ in range(RUNS):
                for fanout in (NODES, FANOUT):  # NODES: every node read by the front end
                    t, doc = run([DLSCOPE, cmd, "--job", "--json", "--fanout", str(fanout),
                                  f"slurm:{job}"], c.full_env)
                    r = rows.setdefault(fanout, {"wall": [], "stop": [], "fan": set(),
                                                 "verdict": set()})
                    r["wall"].append(t)
                    fi = doc["fan_in"]
                    r["fan"].add((fi["answers"], fi["bytes"], fi["relays"]))
                    if cmd == "stacks":
                        r["stop"].append(max(x["stopped_ms"] or 0 for x in doc["ranks"]))
                        r["verdict"].add(tuple(doc["verdict"]["outliers"]))
                    else:
                        r["verdict"].add(tuple(f["id"] for f in doc["job_findings"]))
            print(f"  {cmd} --job slurm:JOBID")
            for fanout, r in rows.items():
                way = "flat (front end reads every node)" if fanout == NODES else \
                    f"tree, --fanout {fanout}"
                answers = sorted({a for a, _, _ in r["fan"]})
                nbytes = statistics.median(b for _, b, _ in r["fan"])
                relays = sorted({x for _, _, x in r["fan"]})
                stop = f", longest stop {statistics.median(r['stop']):.1f} ms" if r["stop"] \
                    else ""
                print(f"    {way:36s} {statistics.median(r['wall']) * 1000:8.1f} ms, "
                      f"answers {answers}, relays {relays}, {nbytes:,.0f} bytes to the "
                      f"front end{stop}; verdicts {sorted(r['verdict'])}")


if __name__ == "__main__":
    main()
