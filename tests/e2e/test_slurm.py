"""stacks --job on real Slurm jobs (Debian's slurm-wlm 22.05, munge, OpenMPI's mpi4py, torch's
gloo): a one-node cluster and a two-node one made of network namespaces (slurm_cluster.py), no
stub of srun. In every job the last rank stays away from the collective the others wait in,
sleeping or spinning; the verdict must name it by its rank, asked by the job's id, srun's PID,
a rank's PID or the batch script's."""
import json
import os
import re
import signal
import subprocess
import tempfile
import time

from harness import ROOT, Skip, dlscope, dlscope_path, is_root, wait_until
from test_cli import validate
from slurm_cluster import SlurmCluster, free_port, proc_env

# Serial: the ranks of MPI's barrier spin on the CPUs, and clusters are whole-machine set-ups.
SERIAL = True
HERE = os.path.dirname(os.path.abspath(__file__))
RANK = os.path.join(HERE, "python", "slurm_rank.py")
PY = "/usr/bin/python3"  # Debian's, with mpi4py and torch


def start_job(c, ntasks, how, away, nodes=1, mpi="none", wrapper=False, env=None):
    """srun of @ntasks ranks of slurm_rank.py (as many on each of @nodes nodes), once every rank
    is at its wait: (srun, job id)."""
    d = tempfile.mkdtemp(dir=c.dir)
    cmd = [PY, RANK, how, away, d]
    if wrapper:
        # "; true": a shell that only ran one command would exec it.
        cmd = ["bash", "-c", " ".join(cmd) + "; true"]
    srun = c.srun_background(["-N", str(nodes), "-n", str(ntasks),
                              f"--ntasks-per-node={ntasks // nodes}", f"--mpi={mpi}", *cmd],
                             cwd=d, env=env)
    wait_until(lambda: sum(f.startswith("ready.") for f in os.listdir(d)) == ntasks, 90,
               f"the {ntasks} ranks to be ready")
    time.sleep(0.5)
    return srun, c.job_of(srun)


def stacks_job(c, what, status=1):
    p = dlscope("stacks", "--job", "--json", what, env=c.env, timeout=120)
    assert p.returncode == status, (what, p.returncode, p.stderr, p.stdout[-3000:])
    return json.loads(p.stdout)


def assert_names(doc, culprit, ranks, nodes=None):
    v = doc["verdict"]
    assert v["outliers"] == [culprit], v
    assert sorted(r["rank"] for r in doc["ranks"]) == list(range(ranks)), doc["ranks"]
    assert doc["job"]["world_size"] == ranks, doc["job"]
    assert not v["unreadable"], v
    if nodes:
        assert doc["job"]["slurm"]["nodes"] == nodes, doc["job"]
        assert {r["node"] for r in doc["ranks"]} == set(nodes.split(",")), doc["ranks"]


def test_one_node_mpi_plain_wrapper_and_batch_jobs_name_the_rank_that_stays_away():
    with SlurmCluster(nodes=1) as c:
        # mpi4py under srun --mpi=pmix, the last rank asleep: by srun, by a rank, by the job.
        # Each rank has a child of its own, with its PMIX_RANK: no rank, no launcher's.
        srun, job = start_job(c, 4, "mpi", "sleep", mpi="pmix", env={"SLURM_RANK_HELPER": "1"})
        rank0 = min(p for p, e in c.tasks(job).items() if e.get("SLURM_PROCID") == "0")
        for what in (srun.pid, rank0, f"slurm:{job}"):
            doc = stacks_job(c, str(what))
            assert_names(doc, 3, 4)
            assert "in no collective" in doc["verdict"]["text"], doc["verdict"]
            assert "PMPI_Barrier" in doc["verdict"]["majority"]["frame"], doc["verdict"]
            assert doc["job"]["slurm"]["job"] == job and doc["job"]["slurm"]["step"] == 0
        # World size from SLURM_STEP_NUM_TASKS (Slurm's PMIx sets no PMIX_SIZE), in words too.
        text = dlscope("stacks", "--job", f"slurm:{job}", env=c.env, check=1).stdout
        assert re.search(r"Slurm job \d+ step 0 \(PMIx\): 4 ranks \(SLURM_STEP_NUM_TASKS 4\)",
                         text), text
        assert "rank 3 is in stay_away" in text, text
        c.run("scancel", str(job))

        # The waiters spin in the progress engine, the culprit spins in Python.
        srun, job = start_job(c, 3, "mpi", "spin", mpi="pmix")
        assert_names(stacks_job(c, f"slurm:{job}"), 2, 3)
        c.run("scancel", str(job))

        # No library, under --mpi=pmi2 and a wrapper shell: the rank is the program it runs.
        srun, job = start_job(c, 3, "plain", "sleep", mpi="pmi2", wrapper=True)
        doc = stacks_job(c, f"slurm:{job}")
        assert_names(doc, 2, 3)
        assert {r["comm"] for r in doc["ranks"]} == {"python3"}, doc["ranks"]
        c.run("scancel", str(job))

        # The batch script's PID: the job's step, never the script or its srun.
        d = tempfile.mkdtemp(dir=c.dir)
        out = c.run("sbatch", "--parsable", "-n", "3", "-o", os.path.join(d, "out"), "--wrap",
                    f"srun --mpi=none {PY} {RANK} plain sleep {d}").stdout
        job = int(out.split(";")[0])
        wait_until(lambda: sum(f.startswith("ready.") for f in os.listdir(d)) == 3, 90,
                   "the batch job's ranks")
        batch = [p for p in os.listdir("/proc") if p.isdigit() and batch_script(p, job)]
        assert batch, "no batch script process"
        doc = stacks_job(c, batch[0])
        assert_names(doc, 2, 3)
        assert doc["job"]["asked"]["role"] == f"the batch script of job {job}", doc["job"]


def batch_script(pid, job):
    """Whether @pid is job @job's batch script: its job's variables and no step."""
    env, comm = proc_env(pid)
    return bool(env) and env.get(b"SLURM_JOB_ID") == str(job).encode() and \
        b"SLURM_STEP_ID" not in env and comm in ("slurm_script", "sh", "bash")


def test_two_node_jobs_are_read_on_each_node_and_name_the_rank_by_its_slurm_rank():
    with SlurmCluster(nodes=2) as c:
        # Ranks 0-1 on n1, 2-3 on n2; rank 3 asleep on n2. Asked from the controller's side
        # (a login node): by the job's id and srun's PID; and by rank 0's PID.
        srun, job = start_job(c, 4, "mpi", "sleep", nodes=2, mpi="pmix")
        rank0 = min(p for p, e in c.tasks(job).items() if e.get("SLURM_PROCID") == "0")
        for what in (f"slurm:{job}", srun.pid, rank0):
            doc = stacks_job(c, str(what))
            assert_names(doc, 3, 4, nodes="n1,n2")
            by_rank = {r["rank"]: r["node"] for r in doc["ranks"]}
            assert by_rank == {0: "n1", 1: "n1", 2: "n2", 3: "n2"}, by_rank
        c.run("scancel", str(job))

        # torch's gloo, one rank per node, rank 1 spinning away from all_reduce.
        # gloo finds its own address by the host name (127.0.0.1 here): the node's interface.
        env = {"MASTER_ADDR": f"{c.net}.1", "MASTER_PORT": str(free_port()),
               "GLOO_SOCKET_IFNAME": "eth0"}
        srun, job = start_job(c, 2, "gloo", "spin", nodes=2, env=env)
        doc = stacks_job(c, f"slurm:{job}")
        assert_names(doc, 1, 2, nodes="n1,n2")
        assert "in no collective" in doc["verdict"]["text"], doc["verdict"]


def test_a_three_node_job_read_through_a_fan_in_tree_gives_the_same_verdict():
    """--fanout 2 on three nodes: relays on n1 (reading n1 and n2) and on n3 (reading n3), each
    sending each distinct stack (library list) once; the front end reads two answers, and
    names the same rank (the same differences) as when it reads every node itself."""
    p = dlscope("stacks", "--job", "--fanout", "1", "slurm:1", check=2)
    assert "--fanout takes a number from 2" in p.stderr, p.stderr
    for cmd in ("stacks", "check"):
        p = dlscope(cmd, "--fanout", "4", str(os.getpid()), check=2)
        assert "--fanout is for --job" in p.stderr, p.stderr
    with SlurmCluster(nodes=3) as c:
        lib = "libgomp.so.1"
        srun, job = start_job(c, 6, "mpi", "sleep", nodes=3, mpi="pmix",
                              env={"SLURM_RANK_ODD_LIB": lib})
        flat = stacks_job(c, f"slurm:{job}")
        assert_names(flat, 5, 6, nodes="n1,n2,n3")
        assert flat["fan_in"]["answers"] == 3 and flat["fan_in"]["relays"] == 0, flat["fan_in"]
        for args in ((), ("--python",)):
            p = dlscope("stacks", "--job", "--json", "--fanout", "2", *args, f"slurm:{job}",
                        env=c.env, timeout=120)
            assert p.returncode == 1, (args, p.returncode, p.stderr, p.stdout[-3000:])
            tree = json.loads(p.stdout)
            assert_names(tree, 5, 6, nodes="n1,n2,n3")
            assert tree["fan_in"] == {"width": 2, "relays": 2, "answers": 2,
                                      "bytes": tree["fan_in"]["bytes"]}, tree["fan_in"]
            by_rank = {r["rank"]: r["node"] for r in tree["ranks"]}
            assert by_rank == {0: "n1", 1: "n1", 2: "n2", 3: "n2", 4: "n3", 5: "n3"}, by_rank
            assert tree["verdict"]["majority"]["ranks"] == [0, 1, 2, 3, 4], tree["verdict"]
            assert all(r["threads"] > 0 and r["stopped_ms"] is not None
                       for r in tree["ranks"]), tree["ranks"]
            if not args:
                assert tree["verdict"]["text"] == flat["verdict"]["text"], (tree, flat)
                # Each distinct stack crossed once per relay, not once per rank.
                assert tree["fan_in"]["bytes"] < flat["fan_in"]["bytes"], \
                    (tree["fan_in"], flat["fan_in"])
        text = dlscope("stacks", "--job", "--stats", "--fanout", "2", f"slurm:{job}",
                       env=c.env, check=1).stdout
        assert "rank 5 is in stay_away" in text, text
        assert re.search(r"2 answers, \d+ bytes, came to this reader through 2 relays", text), text

        # check: each rank's library list and runtimes cross each relay once; the comparison
        # of the ranks is the flat read's.
        flat = check_job(c, f"slurm:{job}")
        tree = check_job(c, f"slurm:{job}", "--fanout", "2")
        assert validate("check", tree) is None, validate("check", tree)
        assert tree["fan_in"]["relays"] == 2 and tree["fan_in"]["answers"] == 2, tree["fan_in"]
        assert tree["fan_in"]["bytes"] < flat["fan_in"]["bytes"], (tree["fan_in"],
                                                                  flat["fan_in"])
        odd = [(o["ranks"], o["missing_in"]) for o in tree["diff"]["objects"]
               if lib in o["path"]]
        assert odd == [([5], [0, 1, 2, 3, 4])], tree["diff"]["objects"]
        for key in ("diff", "job_findings"):
            assert tree[key] == flat[key], (key, tree[key], flat[key])
        assert [(p["rank"], p["node"], p["object_count"]) for p in tree["processes"]] == \
            [(p["rank"], p["node"], p["object_count"]) for p in flat["processes"]]
        c.run("scancel", str(job))


def test_torchrun_on_each_node_its_ranks_are_the_jobs_ranks():
    with SlurmCluster(nodes=2) as c:
        # srun starts torchrun once per node; each starts 2 ranks (gloo): ranks 0-1 on n1,
        # 2-3 on n2, rank 3 asleep away from all_reduce. The tasks are torchrun; the ranks,
        # with torchrun's RANK and WORLD_SIZE, are its children.
        d = tempfile.mkdtemp(dir=c.dir)
        # --redirects/--tee: their default "0" breaks torch 1.13's launcher on Python 3.11
        # (test_job.py says why).
        run = (f"exec torchrun --nnodes=2 --nproc_per_node=2 --node_rank=$SLURM_NODEID "
               f"--master_addr={c.net}.1 --master_port={free_port()} --redirects 2 --tee 2 "
               f"--log_dir {d}/logs-$SLURM_NODEID {RANK} torchrun sleep {d}")
        srun = c.srun_background(["-N", "2", "-n", "2", "--ntasks-per-node=1", "--mpi=none",
                                  "bash", "-c", run], cwd=d,
                                 env={"GLOO_SOCKET_IFNAME": "eth0", "OMP_NUM_THREADS": "1"})
        wait_until(lambda: sum(f.startswith("ready.") for f in os.listdir(d)) == 4, 120,
                   "the 4 ranks to be ready")
        time.sleep(0.5)
        job = c.job_of(srun)
        rank0 = min(p for p, e in c.tasks(job).items() if e.get("RANK") == "0")
        for what in (f"slurm:{job}", str(rank0)):
            doc = stacks_job(c, what)
            assert_names(doc, 3, 4, nodes="n1,n2")
            assert doc["job"]["scheme"] == "torchrun", doc["job"]
            by_rank = {r["rank"]: r["node"] for r in doc["ranks"]}
            assert by_rank == {0: "n1", 1: "n1", 2: "n2", 3: "n2"}, by_rank
        doc = check_job(c, f"slurm:{job}")
        assert sorted(p["rank"] for p in doc["processes"]) == [0, 1, 2, 3], doc["processes"]
        c.run("scancel", str(job))


def check_job(c, what, *args, status=0):
    p = dlscope("check", "--job", "--json", *args, what, env=c.env, timeout=120)
    assert p.returncode == status, (what, p.returncode, p.stderr, p.stdout[-3000:])
    return json.loads(p.stdout)


def test_check_and_report_of_a_two_node_job_compare_ranks_read_on_their_own_nodes():
    with SlurmCluster(nodes=2) as c:
        # Ranks 0-1 on n1, 2-3 on n2; rank 3 alone loads libgomp and runs with
        # OMP_NUM_THREADS=1. Asked from the controller's side, by the job's id and srun's PID.
        lib = "libgomp.so.1"
        srun, job = start_job(c, 4, "plain", "sleep", nodes=2,
                              env={"SLURM_RANK_ODD_LIB": lib})
        for what in (f"slurm:{job}", str(srun.pid)):
            doc = check_job(c, what)
            assert validate("check", doc) is None, validate("check", doc)
            procs = {p["rank"]: p for p in doc["processes"]}
            assert {r: p["node"] for r, p in procs.items()} == \
                {0: "n1", 1: "n1", 2: "n2", 3: "n2"}, procs
            assert all(p["object_count"] > 5 for p in procs.values()), procs
            assert doc["job"]["slurm"]["job"] == job and doc["job"]["world_size"] == 4, doc["job"]
            odd = [o for o in doc["diff"]["objects"] if lib in o["path"]]
            assert [(o["ranks"], o["missing_in"]) for o in odd] == [([3], [0, 1, 2])], \
                doc["diff"]["objects"]
            env = {e["name"]: e["values"] for e in doc["diff"]["environment"]}
            assert env.get("OMP_NUM_THREADS") == [{"value": None, "ranks": [0, 1, 2]},
                                                 {"value": "1", "ranks": [3]}], env
            ids = {f["id"]: f for f in doc["job_findings"]}
            assert {"rank-objects", "rank-environment"} <= set(ids), ids
            assert ids["rank-objects"]["title"] == f"ranks of Slurm job {job} load different " \
                "objects", ids["rank-objects"]
            # CPUs are counted node by node: two nodes never share one.
            assert sorted(n["node"] for n in doc["diff"]["cpus"]["nodes"]) == ["n1", "n2"], \
                doc["diff"]["cpus"]
        # In words, and the warning counts for --fail-on.
        p = dlscope("check", "--job", "--fail-on", "warning", f"slurm:{job}", env=c.env,
                    timeout=120)
        assert p.returncode == 1, (p.returncode, p.stderr, p.stdout[-3000:])
        assert re.search(rf"Slurm job {job} step 0 \(\w+\): 4 ranks .* on n1,n2\n", p.stdout), \
            p.stdout
        assert re.search(r"\nrank 3 on n2, process \d+ \(python3\): \d+ objects", p.stdout), \
            p.stdout
        assert re.search(rf"{lib} .*: in rank 3, not in ranks 0-2", p.stdout), p.stdout
        # report --job: both, by the job's id, each rank with its node.
        md = dlscope("report", "--job", f"slurm:{job}", env=c.env, timeout=120, check=0).stdout
        assert md.startswith(f"# dlscope report: Slurm job {job} (4 ranks"), md[:300]
        assert re.search(r"\| n2: rank 3 \(\d+ python3\) \|", md), md
        assert "`rank-objects`: ranks of Slurm job" in md and "rank 3 is in stay_away" in md, md
        assert f"\ndlscope report --job slurm:{job}\n" in md, md
        c.run("scancel", str(job))


def test_watch_and_record_of_a_two_node_job_name_each_nodes_lines_and_merge_its_traces():
    with SlurmCluster(nodes=2) as c:
        # Ranks 0-1 on n1, 2-3 on n2; once both watch and record run on both nodes, rank 3
        # loads libgomp. From the controller's side, by the job's id.
        lib = "libgomp.so.1"
        srun, job = start_job(c, 4, "plain", "sleep", nodes=2,
                              env={"SLURM_RANK_LATE_LIB": lib})
        d = next(os.path.dirname(os.path.join(r, "ready.3")) for r, _, fs in os.walk(c.dir)
                 if "ready.3" in fs)
        trace = os.path.join(c.dir, "job.jsonl")
        runs = {}
        for cmd, extra in (("watch", []), ("record", ["-o", trace])):
            out, err = (open(c.path(f"{cmd}.{k}"), "w+") for k in ("out", "err"))
            runs[cmd] = (subprocess.Popen([dlscope_path(), cmd, "--job", f"slurm:{job}", *extra],
                                          stdout=out, stderr=err, env=c.full_env), out, err)

        def said(cmd, pattern, stream=2):
            f = runs[cmd][stream]
            f.seek(0)
            return re.search(pattern, f.read(), re.M)
        for cmd in runs:
            wait_until(lambda: said(cmd, r"^n1: dlscope: watching 2 processes") and
                       said(cmd, r"^n2: dlscope: watching 2 processes"), 60,
                       f"{cmd} to watch on both nodes")
        open(os.path.join(d, "go"), "w").close()
        wait_until(lambda: said("watch", rf"^n2: .*\[rank 3\] \d+ \+ \S+{lib} \[OpenMP", 1),
                   30, "the load in watch's lines")
        time.sleep(1)
        for p, _, _ in runs.values():
            p.send_signal(signal.SIGINT)
        for cmd, (p, out, err) in runs.items():
            assert p.wait(timeout=60) == 0, (cmd, p.returncode, said(cmd, r"(?s).*", 2))
            # Each node's summary, named; rank 3's load on its own node alone.
            assert said(cmd, r"^n1: dlscope: \d+ events") and \
                said(cmd, r"^n2: dlscope: \d+ events"), said(cmd, r"(?s).*", 2)
        assert not said("watch", rf"^n1: .*{lib}", 1), said("watch", r"(?s).*", 1)
        # record: each node's trace beside FILE, merged into FILE, labelled by node.
        recs = [json.loads(line) for line in open(trace)]
        assert recs[0]["merged"] and recs[0]["hosts"] == ["n1", "n2"], recs[0]
        loads = [r for r in recs if lib in json.dumps(r) and r.get("type") != "header"]
        assert loads and {(r["host"], r.get("rank")) for r in loads} == {("n2", 3)}, loads
        assert os.path.exists(f"{trace}.n1") and os.path.exists(f"{trace}.n2")
        assert dlscope("check", trace).returncode == 0
        c.run("scancel", str(job))


def test_the_record_recipe_as_written_gives_the_hangs_stacks_and_one_merged_trace():
    """deploy/slurm/dlscope-record.sbatch submitted with sbatch to a real Slurm, unchanged: an
    mpi4py job whose last rank sleeps away from the barrier, stopped as the docs say
    (scancel --batch --signal=USR1, what --signal=B:USR1@60 sends before the time limit). One
    recorder per node (not one per task, all on one file), that records the job's processes
    only (not a python3 of no job nor one of another job, started before or during it), the
    stacks taken before the job ends, and one whole merged trace."""
    sbatch = os.path.join(ROOT, "deploy", "slurm", "dlscope-record.sbatch")
    with SlurmCluster(nodes=1) as c:
        d = tempfile.mkdtemp(dir=c.dir)
        traces = os.path.join(d, "traces")
        env = dict(c.full_env, DLSCOPE=dlscope_path(), TRACE_DIR=traces, DLSCOPE_DRAIN_S="4")
        outsiders = [outsider(d, "before", {})]
        out = subprocess.run(["sbatch", "--parsable", "--nodes=1", "--ntasks-per-node=3",
                              "-o", os.path.join(d, "batch.out"), sbatch, "--mpi=pmix", PY,
                              RANK, "mpi", "sleep", d],
                             capture_output=True, text=True, env=env, check=True,
                             stdin=subprocess.DEVNULL).stdout
        job = int(out.split(";")[0])
        wait_until(lambda: sum(f.startswith("ready.") for f in os.listdir(d)) == 3, 120,
                   "the recipe's ranks")
        time.sleep(1)
        recorders = [p for p in os.listdir("/proc") if p.isdigit() and comm_of(p) == "dlscope"
                     and "trace-%n" in cmdline_of(p)]
        assert len(recorders) == 1, ("one recorder per node", recorders)
        outsiders.append(outsider(d, "during", {"SLURM_JOB_ID": str(job + 1000)}))
        c.run("scancel", "--batch", "--signal=USR1", str(job))
        wait_until(lambda: os.path.exists(os.path.join(traces, "job.jsonl")) and
                   job_gone(c, job), 120, "the recipe to take the stacks and merge")
        with open(os.path.join(traces, "stacks.json")) as f:
            doc = json.load(f)
        assert_names(doc, 2, 3)
        text = open(os.path.join(traces, "stacks.txt")).read()
        assert "rank 2 is in stay_away" in text, text
        merged = [json.loads(line) for line in open(os.path.join(traces, "job.jsonl"))]
        assert merged[0]["type"] == "header" and merged[-1]["type"] == "summary", merged[-1]
        host = merged[0]["hosts"][0]
        assert sorted(os.listdir(traces)) == ["job.jsonl", "stacks.err", "stacks.json",
                                              "stacks.txt", f"trace-{host}.jsonl"]
        ranks = {int(p) for p, e in c.tasks(job).items()} if not job_gone(c, job) else set()
        opens = [r for r in merged if r["type"] == "dlopen" and "mpi" in (r.get("path") or "")]
        assert opens, "the ranks' loads of mpi4py's modules are in the merged trace"
        assert not ranks, ("the job's ranks outlived the recipe", ranks)
        assert not [r for r in merged if r.get("comm") == "dlscope"], "dlscope recorded itself"
        node = [json.loads(line) for line in open(os.path.join(traces, f"trace-{host}.jsonl"))]
        assert node[-1]["type"] == "summary", ("the recorder did not end its trace", node[-1])
        for p in outsiders:
            seen = [r for r in merged if r.get("pid") == p.pid]
            assert not seen, ("a python3 outside the job was recorded", seen[:3])
            p.kill()
            p.wait()


def outsider(d, name, env):
    """A python3 of this node that is no process of the job: it loads extension modules (dlopen)
    once started, and sleeps."""
    p = subprocess.Popen([PY, "-c", "import ctypes, decimal, json, time; "
                          f"open({os.path.join(d, name)!r}, 'w').close(); time.sleep(600)"],
                         env=dict(os.environ, **env), stdin=subprocess.DEVNULL)
    wait_until(lambda: os.path.exists(os.path.join(d, name)), 30, f"the python3 {name} the job")
    return p


def comm_of(pid):
    return proc_env(pid)[1]


def cmdline_of(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def job_gone(c, job):
    jobs = json.loads(c.run("squeue", "--json").stdout)["jobs"]
    return not any(j["job_id"] == job and j["job_state"] in ("RUNNING", "PENDING", "COMPLETING")
                   for j in jobs)


def test_merge_exits_non_zero_when_it_leaves_records_out():
    if not is_root():
        raise Skip("recording a trace needs root")
    with tempfile.TemporaryDirectory() as d:
        good = os.path.join(d, "a.jsonl")
        subprocess.run([dlscope_path(), "record", "--comm", "dlscope-none", "-o", good, "-d",
                        "0.5"], capture_output=True, check=True, timeout=60)
        torn = os.path.join(d, "b.jsonl")
        with open(good) as f, open(torn, "w") as g:
            g.write(f.read() + '{"type": "dlopen", "pid": 1')  # a recorder killed mid-line
        p = dlscope("merge", torn, "-o", os.path.join(d, "m.jsonl"), check=3)
        assert "1 input line was no trace record and left out" in p.stderr, p.stderr
        assert "is incomplete" in p.stderr, p.stderr
