"""Multi-rank jobs: stacks --job and check --job on the launcher fixture (4 ranks forked and
exec'd with RANK/LOCAL_RANK/WORLD_SIZE) and on a real torchrun job (Debian's python3-torch,
gloo on CPU) in which one rank stops before the collective."""
import json
import os
import re
import socket
import subprocess
import tempfile
import time

from harness import Fixture, Skip, dlscope, fixture_path, wait_idle, wait_until
from test_cli import validate

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python")


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d))
        except (OSError, IndexError, ValueError):
            pass
    return sorted(out)


def rank_of(pid):
    with open(f"/proc/{pid}/environ", "rb") as f:
        env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
    for var in (b"RANK", b"OMPI_COMM_WORLD_RANK", b"SLURM_PROCID"):
        if var in env:
            return int(env[var])
    return None


def launcher(nranks=4, *args, env=None, prefix=()):
    """The fixture with its ranks blocked: {rank: pid}, and rank 0's child (a worker)."""
    fx = Fixture([*prefix, fixture_path("job_launcher"), str(nranks), *map(str, args)], env=env)
    ranks = {rank_of(p): p for p in children(fx.pid)}
    for p in ranks.values():
        wait_idle(p)
    return fx, ranks


def stacks_job(pid, *extra, status=0):
    return json.loads(dlscope("stacks", "--job", "--json", *extra, pid, check=status).stdout)


def check_job(pid, *extra, status=1):
    return json.loads(dlscope("check", "--job", "--json", *extra, pid, check=status).stdout)


def test_stacks_job_from_the_launcher_names_the_futex_rank():
    fx, ranks = launcher(4)
    with fx:
        # The verdict names rank 3: exit 1, for a script that acts on the status alone.
        doc = stacks_job(fx.pid, status=1)
        assert doc["job"]["scheme"] == "torchrun" and doc["job"]["launcher"]["pid"] == fx.pid
        assert doc["job"]["asked"]["role"] == "the launcher"
        # Rank 0's child carries RANK=0 too but is a worker of rank 0, not a rank.
        assert [(r["rank"], r["pid"]) for r in doc["ranks"]] == sorted(ranks.items()), doc["ranks"]
        assert all(r["error"] is None and r["threads"] == 2 for r in doc["ranks"]), doc["ranks"]
        v = doc["verdict"]
        assert v["outliers"] == [3], v
        assert v["text"].startswith("rank 3 is in wait_on_futex (job_launcher.c:"), v["text"]
        assert "; the 3 others wait in pipe_allreduce (job_launcher.c:" in v["text"], v["text"]
        assert v["majority"]["ranks"] == [0, 1, 2]
        # Outliers first: the futex stack of rank 3 alone, then the pipe read of ranks 0-2.
        first, second = doc["groups"][0], doc["groups"][1]
        assert first["ranks"] == [3] and first["threads"][0]["tid"] == ranks[3], first
        funcs = [f["function"] for f in first["frames"]]
        assert "wait_on_futex" in funcs and "run_rank" in funcs, funcs
        assert second["ranks"] == [0, 1, 2] and second["ranks_text"] == "0-2", second
        # The pool threads of libgomp are alike in all four ranks.
        assert any(g["ranks_text"] == "0-3" and len(g["threads"]) == 4 for g in doc["groups"])
        text = dlscope("stacks", "--job", fx.pid, check=1).stdout
        assert "torchrun job: launcher %d" % fx.pid in text and "4 ranks (WORLD_SIZE 4)" in text
        assert "Verdict:\n    rank 3 is in wait_on_futex" in text, text
        assert "\nrank 3: 1 thread (LWP %d" % ranks[3] in text and "\nranks 0-2: 3 threads" in text


def test_report_job_names_an_unnamed_frame_as_every_view_does():
    """report --job printed a merged frame without a name as a line with none,
    " (/usr/lib/.../libgomp.so.1.0.0)"; it reads "?? from ...", as stacks does. A merged frame
    has no address nor offset: its line has neither, and is stacks --job's line."""
    fx, ranks = launcher(4)
    with fx:
        md = dlscope("report", "--job", fx.pid, check=0).stdout
        text = dlscope("stacks", "--job", fx.pid, check=1).stdout
        lines = [ln for b in re.findall(r"```\n(.*?)```", md, re.S) for ln in b.splitlines()]
        main = [ln for ln in lines if re.fullmatch(r"#\d+ +main from %s at \S*job_launcher\.c:\d+"
                                                   % re.escape(fixture_path("job_launcher")), ln)]
        assert main, md
        assert "\n    %s\n" % main[0] in text, text
        # The pool threads of libgomp run in code without a symbol (Debian strips it).
        assert any(re.fullmatch(r"#\d+ +\?\? from /\S+/libgomp\.so[.\d]*", ln) for ln in lines), md
        assert not [ln for ln in lines if ln.startswith(" ")], md


def test_stacks_job_from_a_rank_and_from_a_ranks_child():
    fx, ranks = launcher(4)
    with fx:
        doc = stacks_job(ranks[1], status=1)
        assert doc["job"]["launcher"]["pid"] == fx.pid and doc["job"]["asked"]["role"] == "rank 1"
        assert doc["verdict"]["outliers"] == [3], doc["verdict"]
        worker = children(ranks[0])
        assert len(worker) == 1
        doc = stacks_job(worker[0], status=1)
        assert doc["job"]["asked"]["role"] == "a child of rank 0", doc["job"]
        assert [r["pid"] for r in doc["ranks"]] == [ranks[r] for r in range(4)]
        assert doc["verdict"]["outliers"] == [3], doc


def test_stacks_job_part_of_the_world_and_other_launchers():
    fx, ranks = launcher(4, 8, 4, env={"JOB_SCHEME": "ompi"})
    with fx:
        doc = stacks_job(ranks[5])
        assert doc["job"]["scheme"] == "OpenMPI" and doc["job"]["world_size"] == 8
        assert doc["job"]["description"] == "4 of OMPI_COMM_WORLD_SIZE 8 ranks on this host"
        assert [r["rank"] for r in doc["ranks"]] == [4, 5, 6, 7]
        # No rank 3 here: all four read the pipe.
        assert doc["verdict"]["outliers"] == [] and \
            doc["verdict"]["text"].startswith("all 4 ranks are in pipe_allreduce"), doc["verdict"]
    fx, ranks = launcher(2, env={"JOB_SCHEME": "slurm"})
    with fx:
        doc = stacks_job(fx.pid)
        assert doc["job"]["scheme"] == "Slurm" and [r["rank"] for r in doc["ranks"]] == [0, 1]


def test_job_errors_are_one_line():
    with Fixture(["two_omp"]) as fx:
        for cmd in (["stacks", "--job"], ["check", "--job"]):
            p = dlscope(*cmd, fx.pid, check=3)
            assert p.stderr.count("\n") == 1 and "is not part of a multi-rank job" in p.stderr, \
                p.stderr
            assert p.stdout == ""
    p = dlscope("stacks", "--job", 4194304 + 7, check=3)
    assert p.stderr.strip().endswith("does not exist"), p.stderr
    p = dlscope("check", "--job", "1", "2", check=2)
    assert "--job takes one process ID" in p.stderr


def test_check_job_reports_rank_2s_extra_libgomp():
    fx, ranks = launcher(4)
    with fx:
        doc = check_job(fx.pid)
        assert validate("check", doc) is None, validate("check", doc)
        procs = {p["rank"]: p for p in doc["processes"]}
        assert sorted(procs) == [0, 1, 2, 3]
        assert {f["id"] for f in procs[2]["findings"]} >= {"dup-openmp"}, procs[2]["findings"]
        assert not procs[0]["findings"] and not procs[3]["findings"]
        vendored = fixture_path("vendored/libgomp-a34b3233.so.1")
        objs = doc["diff"]["objects"]
        assert [(o["path"], o["ranks"], o["missing_in"]) for o in objs] == \
            [(vendored, [2], [0, 1, 3])], objs
        assert objs[0]["build_id"] and objs[0]["version"] == "5.1"
        ids = [f["id"] for f in doc["job_findings"]]
        assert "rank-objects" in ids and "rank-environment" not in ids, ids
        f = [f for f in doc["job_findings"] if f["id"] == "rank-objects"][0]
        # The copy named with its release and OpenMP level, not "version 5.1" (its GOMP_ node).
        assert re.fullmatch(r"GNU libgomp \(GCC \d+\), OpenMP 5\.1", objs[0]["label"]), objs
        assert f["evidence"] == [f"{vendored} ({objs[0]['label']}, build-id "
                                 f"{objs[0]['build_id'][:12]}): in rank 2, not in ranks 0-1,3"], \
            f["evidence"]
        assert doc["diff"]["environment"] == []
        text = dlscope("check", "--job", ranks[3], check=1).stdout
        assert "\nrank 2, process %d (job_launcher)" % ranks[2] in text
        # Each part of the diff is said only when its detector ran.
        only = dlscope("check", "--job", "--only", "rank-objects", ranks[3], check=0).stdout
        assert "objects not in every rank" in only and "\n  environment (" not in only and \
            "\n  CPUs" not in only, only
        assert "objects not in every rank:\n    %s" % vendored in text and \
            "in rank 2, not in ranks 0-1,3" in text, text


def test_check_job_environment_diff():
    fx, ranks = launcher(4, env={"JOB_RANK_ENV": "1:OMP_NUM_THREADS=4",
                                 "OMP_NUM_THREADS": "2"})
    with fx:
        doc = check_job(fx.pid)
        env = doc["diff"]["environment"]
        assert env == [{"name": "OMP_NUM_THREADS",
                        "values": [{"value": "2", "ranks": [0, 2, 3]},
                                   {"value": "4", "ranks": [1]}]}], env
        f = [f for f in doc["job_findings"] if f["id"] == "rank-environment"]
        assert f and f[0]["severity"] == "warning", doc["job_findings"]
        assert f[0]["evidence"] == ['OMP_NUM_THREADS: "2" in ranks 0,2-3; "4" in rank 1']
        # Rank 1's pool follows its own setting: 3 pool threads against 1 in the others.
        pools = {r["rank"]: r["pool_threads"] for r in doc["diff"]["cpus"]["ranks"]}
        assert pools == {0: 1, 1: 3, 2: 1, 3: 1}, pools


def test_check_job_oversubscription():
    if len(os.sched_getaffinity(0)) < 2:
        raise Skip("needs 2 CPUs")
    # 2 ranks of 2 threads each (main and one pool thread) on 1 CPU.
    fx, ranks = launcher(2, env={"OMP_NUM_THREADS": "2"}, prefix=("taskset", "-c", "0"))
    with fx:
        doc = check_job(fx.pid, status=0)
        cpus = doc["diff"]["cpus"]
        assert cpus["cpus"] == 1 and cpus["threads"] == 4, cpus
        assert [r["cpus_allowed"] for r in cpus["ranks"]] == ["0", "0"]
        f = [f for f in doc["job_findings"] if f["id"] == "oversubscription"]
        assert f and f[0]["title"] == (f"the ranks of job {fx.pid} run 4 threads (main and "
                                       "pool threads) on the 1 CPU they may use"), f
        assert f[0]["evidence"][0] == (f"rank 0 (pid {ranks[0]}): main thread + 1 pool thread "
                                       "(GNU libgomp libgomp.so.1: 1); may use CPUs 0")
        # --fail-on warning makes it count.
        dlscope("check", "--job", "--fail-on", "warning", fx.pid, check=1)
    # One rank of 2 threads on 2 CPUs: nothing to say.
    fx, ranks = launcher(1, env={"OMP_NUM_THREADS": "2"}, prefix=("taskset", "-c", "0,1"))
    with fx:
        doc = check_job(fx.pid, status=0)
        assert doc["diff"]["cpus"]["threads"] == 2 and doc["diff"]["cpus"]["cpus"] == 2
        assert not doc["job_findings"], doc["job_findings"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_torchrun_job_names_the_rank_that_stopped_before_all_reduce():
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import torch.distributed"], capture_output=True).returncode:
        raise Skip("Debian's python3-torch is not installed")
    script = os.path.join(HERE, "job_allreduce.py")
    with tempfile.TemporaryDirectory() as tmp:
        marker = os.path.join(tmp, "stopped")
        start = time.monotonic()
        # --redirects/--tee: their default "0" breaks torch 1.13's launcher on Python 3.11
        # (iterating an IntFlag no longer yields NONE, so Std.from_str("0") is None).
        fx = Fixture([py, "-m", "torch.distributed.run", "--nproc_per_node=4",
                      f"--master_port={free_port()}", "--redirects", "2", "--tee", "2",
                      "--log_dir", os.path.join(tmp, "logs"), script, "2", marker],
                     wait_ready=False, env={"OMP_NUM_THREADS": "1"})
        with fx:
            def started():
                assert fx.proc.poll() is None, fx.proc.stderr.read()
                return os.path.exists(marker)

            wait_until(started, 240, "the ranks started", interval=0.1)
            ranks = {rank_of(p): p for p in children(fx.pid)}
            assert sorted(ranks) == [0, 1, 2, 3], ranks
            for p in ranks.values():
                wait_idle(p, timeout=30)
            started = time.monotonic() - start
            doc = stacks_job(ranks[0], status=1)
            v = doc["verdict"]
            assert doc["job"]["launcher"]["pid"] == fx.pid, doc["job"]
            assert v["outliers"] == [2], v
            line = f"<module> ({script}:17)"
            # The others wait in torch.distributed's all_reduce, named with their own line.
            assert v["text"] == (f"rank 2 is in {line}, in no collective; ranks 0-1,3 are in "
                                 f"<module> ({script}:18), waiting in all_reduce"), v["text"]
            assert v["majority"]["frame"].endswith(", waiting in all_reduce"), v
            # gloo's std::threads are no compute pool: 4 ranks of OMP_NUM_THREADS=1 compute
            # with 4 threads, whatever the CPUs.
            doc = check_job(ranks[3], status=0)
            assert doc["diff"]["cpus"]["threads"] == 4, doc["diff"]["cpus"]
            assert doc["diff"]["objects"] == [] and doc["diff"]["environment"] == [], doc["diff"]
            print(f"    torchrun job: ranks ready in {started:.1f}s, whole test "
                  f"{time.monotonic() - start:.1f}s")


def test_check_job_names_the_rank_with_another_nccl():
    # Every rank loads the CUDA 12 runtime and NCCL 2.18.1; rank 1 NCCL 2.19.3 instead.
    gpu = fixture_path("gpu")
    libs = f"{gpu}/cu12/libcudart.so.12:{gpu}/cu12/libnccl.so.2"
    other = f"{gpu}/cu12/libcudart.so.12:{gpu}/nccl219/libnccl.so.2"
    fx, ranks = launcher(4, env={"JOB_GPU_LIBS": libs, "JOB_RANK_ENV": f"1:JOB_GPU_LIBS={other}"})
    with fx:
        doc = check_job(fx.pid)
        hits = [f for f in doc["job_findings"] if f["id"] == "rank-gpu-versions"]
        assert len(hits) == 1 and hits[0]["severity"] == "error", doc["job_findings"]
        assert hits[0]["title"] == f"ranks of job {fx.pid} load 2 versions of NCCL", hits
        ev = "\n".join(hits[0]["evidence"])
        assert "NCCL 2.18.1 (built for CUDA 12.1)" in ev and "in ranks 0,2-3" in ev, ev
        assert "NCCL 2.19.3 (built for CUDA 12.1)" in ev, ev
        assert ev.endswith("nccl219/libnccl.so.2): in rank 1"), ev
        gpu_diff = doc["diff"]["gpu"]
        assert [(d["impl"], [(v["version"], v["ranks"]) for v in d["versions"]])
                for d in gpu_diff] == [("nccl", [("2.18.1", [0, 2, 3]), ("2.19.3", [1])])]


def test_check_job_is_silent_on_ranks_with_one_gpu_set():
    gpu = fixture_path("gpu")
    fx, ranks = launcher(4, env={"JOB_GPU_LIBS": f"{gpu}/cu12/libcudart.so.12:"
                                                 f"{gpu}/cu12/libnccl.so.2"})
    with fx:
        doc = check_job(fx.pid)
        assert not [f for f in doc["job_findings"] if f["id"] == "rank-gpu-versions"]
        assert doc["diff"]["gpu"] == []
        # The inventory of each rank names the NCCL it loaded.
        for proc in doc["processes"]:
            assert any(r["label"] == "NCCL 2.18.1 (built for CUDA 12.1)"
                       for r in proc["runtimes"]), proc["runtimes"]
