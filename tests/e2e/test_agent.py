"""dlscope agent: every process of the node, its findings through Debian's real node_exporter
(textfile collector) and Prometheus, as JSON lines and as report files."""
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

import harness
from harness import Fixture, Skip, dlscope, dlscope_path, fixture_path, is_root, wait_until

# The agent watches every process of the machine: no other test may run beside it.
SERIAL = True

SCRAPE_S = 5  # Prometheus scrapes node_exporter every 5 s, as the operators would
INTERVAL_S = 5  # the agent's --interval


def _need_root():
    if not is_root():
        raise Skip("BPF tests need root")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def _stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


@contextlib.contextmanager
def _agent(*args):
    """dlscope agent ARGS, until it says it watches; stopped (SIGTERM) at the end."""
    p = subprocess.Popen([dlscope_path(), "agent", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = p.stderr.readline()
        assert re.match(r"dlscope: watching \d+ process(es)?( [^;]*)? and those that start",
                        line), \
            (line, p.stderr.read() if p.poll() is not None else "")
        yield p
    finally:
        _stop(p)


@contextlib.contextmanager
def _prometheus(textfile_dir, work):
    """Debian's node_exporter serving TEXTFILE_DIR and Prometheus scraping it, on 127.0.0.1;
    yields a function running an instant PromQL query through Prometheus's HTTP API."""
    for exe in ("prometheus", "prometheus-node-exporter"):
        if not shutil.which(exe):
            raise Skip(f"needs {exe} (make deps)")
    ne_port, prom_port = _free_port(), _free_port()
    ne = subprocess.Popen(["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{ne_port}",
                           "--collector.disable-defaults", "--collector.textfile",
                           f"--collector.textfile.directory={textfile_dir}"],
                          stdout=subprocess.DEVNULL, stderr=open(f"{work}/node_exporter.log", "w"))
    cfg = f"{work}/prometheus.yml"
    with open(cfg, "w") as f:
        f.write(f"global:\n  scrape_interval: {SCRAPE_S}s\n  evaluation_interval: {SCRAPE_S}s\n"
                f"scrape_configs:\n  - job_name: node\n    static_configs:\n"
                f"      - targets: ['127.0.0.1:{ne_port}']\n")
    prom = subprocess.Popen(["prometheus", f"--config.file={cfg}",
                             f"--storage.tsdb.path={work}/tsdb",
                             f"--web.listen-address=127.0.0.1:{prom_port}"],
                            stdout=subprocess.DEVNULL, stderr=open(f"{work}/prometheus.log", "w"))
    base = f"http://127.0.0.1:{prom_port}"

    def ready():
        try:
            return "Ready" in _get(f"{base}/-/ready", timeout=1)
        except OSError:
            return False

    def query(q):
        doc = json.loads(_get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": q})))
        assert doc["status"] == "success", doc
        return doc["data"]["result"]

    try:
        wait_until(ready, 60, lambda: "Prometheus ready: " + open(f"{work}/prometheus.log").read()[-2000:],
                   interval=0.2)
        # Its node_exporter target up: a scrape has happened.
        wait_until(lambda: query('up{job="node"} == 1'), 30, "node_exporter scraped", interval=0.5)
        yield query
    finally:
        for p in (prom, ne):
            _stop(p)


def test_prometheus_has_a_finding_while_its_process_lives():
    """A process with two OpenMP runtimes started under the agent: a PromQL query through
    Prometheus's HTTP API (scraping the real node_exporter's textfile collector every 5 s)
    returns its dlscope_finding series within 60 s, and no more within two intervals of its
    exit. The agent's own counts are there too."""
    _need_root()
    with tempfile.TemporaryDirectory() as work:
        tf = f"{work}/textfile"
        os.mkdir(tf)
        with _prometheus(tf, work) as query, \
                _agent("--textfile-dir", tf, "--interval", str(INTERVAL_S)) as agent:
            with Fixture(["two_omp"]) as fx:
                q = f'dlscope_finding{{check="dup-openmp",pid="{fx.pid}"}}'
                t0 = time.monotonic()
                got = wait_until(lambda: query(q), 60, f"{q} in Prometheus", interval=0.5)
                took = time.monotonic() - t0
                labels = got[0]["metric"]
                assert labels["severity"] == "error" and labels["comm"] == "two_omp", labels
                # An empty label is no label to Prometheus: on the host, no container.
                assert "container" not in labels, labels
                assert got[0]["value"][1] == "1", got
                assert took < 60, took
                procs = query("dlscope_agent_processes")
                assert procs and int(procs[0]["value"][1]) >= 1, procs
                events = query("dlscope_agent_events_total")
                assert events and int(events[0]["value"][1]) >= 1, events
                assert query("dlscope_agent_cpu_seconds_total"), "no CPU counter"
                assert query("dlscope_agent_lost_events_total"), "no lost counter"
            t_exit = time.monotonic()
            wait_until(lambda: not query(q), 2 * INTERVAL_S, f"{q} gone from Prometheus",
                       interval=0.25)
            gone_after = time.monotonic() - t_exit
            # The JSON line the log shipper reads: the trace's finding record.
            _stop(agent)
            lines = [json.loads(line) for line in agent.stdout.read().splitlines()]
            mine = [r for r in lines if r.get("pid") == fx.pid]
            assert mine and mine[0]["type"] == "finding" and mine[0]["id"] == "dup-openmp", lines
            print(f"series in Prometheus after {took:.1f} s; gone {gone_after:.1f} s after exit")
        # The agent removed its file as it stopped: it vouches for nothing now.
        assert not os.path.exists(f"{tf}/dlscope.prom"), os.listdir(tf)


def test_an_agent_started_later_finds_the_collision_already_there():
    """The check path: a process that had its two runtimes before the agent started is named
    in the first file the agent writes, its JSON line and a report file that 'dlscope report'
    and 'check' read; healthy processes beside it give no series."""
    _need_root()
    with tempfile.TemporaryDirectory() as work, Fixture(["two_omp"]) as fx, \
            Fixture(["dlopen_list", fixture_path("libplain.so")]) as healthy:
        reports = f"{work}/reports"
        os.mkdir(reports)
        with _agent("--textfile-dir", work, "--interval", "1", "--reports-dir", reports,
                    "--reports-keep", "3") as agent:
            prom = wait_until(lambda: f'pid="{fx.pid}"' in _read(f"{work}/dlscope.prom") and
                              _read(f"{work}/dlscope.prom"), 30, "the first file's series")
            series = [line for line in prom.splitlines() if line.startswith("dlscope_finding{")]
            assert series == [f'dlscope_finding{{check="dup-openmp",severity="error",'
                              f'pid="{fx.pid}",comm="two_omp",container=""}} 1'], prom
            assert f'pid="{healthy.pid}"' not in prom, prom
            assert re.search(r"^# TYPE dlscope_agent_events_total counter$", prom, re.M), prom
            _stop(agent)
            out, err = agent.communicate()
        assert agent.returncode == 0, err
        rec = json.loads(out.splitlines()[0])
        assert rec["type"] == "finding" and rec["pid"] == fx.pid and rec["id"] == "dup-openmp", out
        files = os.listdir(reports)
        assert len(files) == 1 and files[0].endswith(f"-{fx.pid}-dup-openmp.jsonl"), files
        report = f"{reports}/{files[0]}"
        md = f"{work}/r.md"
        dlscope("report", report, "-o", md, check=0)
        text = open(md).read()
        assert "2 OpenMP runtimes in process" in text and "Incomplete" not in text, text
        assert re.search(rf"process {fx.pid} \(two_omp\)", text), text
        p = dlscope("check", report, check=1)
        assert "error dup-openmp" in p.stdout, p.stdout


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def test_the_report_ring_keeps_the_newest():
    """--reports-keep N: the ring of report files keeps the newest N, whatever number of
    findings came."""
    _need_root()
    with tempfile.TemporaryDirectory() as work:
        reports = f"{work}/reports"
        os.mkdir(reports)
        with _agent("--reports-dir", reports, "--reports-keep", "2") as agent:
            pids = []
            for _ in range(4):
                with Fixture(["two_omp"]) as fx:
                    pids.append(fx.pid)
                    wait_until(lambda: any(f"-{fx.pid}-" in n for n in os.listdir(reports)),
                               30, "its report file")
            _stop(agent)
        names = sorted(os.listdir(reports))
        assert len(names) == 2, names
        assert [int(n.split("-")[2]) for n in names] == pids[2:], (names, pids)


def test_a_killed_agent_leaves_no_probe_behind():
    """SIGKILL: every BPF link of the agent (its uprobes in every process, its tracepoints)
    is gone soon after, with nothing of it left to tell."""
    _need_root()
    if not shutil.which("bpftool"):
        raise Skip("needs bpftool")
    with _agent() as agent:
        links = harness.bpf_links_of(agent.pid)
        assert len(links) > 4, links
        agent.kill()
        agent.wait()
    wait_until(lambda: not harness.bpf_links_alive(links), 10, "every link of the agent closed")


def test_agent_usage_errors_say_what_and_why():
    """One line and a non-zero status for what a user can get wrong."""
    p = dlscope("agent", "--textfile-dir", "/nonexistent/dir", check=3)
    assert "agent: --textfile-dir /nonexistent/dir: No such file or directory" in p.stderr, p.stderr
    p = dlscope("agent", "--interval", "0", check=2)
    assert "--interval takes a number of seconds" in p.stderr, p.stderr
    p = dlscope("agent", "1234", check=2)
    assert "takes no operand" in p.stderr, p.stderr
    p = dlscope("agent", "--reports-keep", "x", check=2)
    assert "--reports-keep takes a whole number" in p.stderr, p.stderr


DEPLOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy")


def _runs_as_written(argv, dirs, work):
    """Runs the agent's command line ARGV (its binary replaced by this build's, each directory
    of DIRS by a fresh one under WORK, plus --duration) beside a process with two OpenMP
    runtimes: its metrics file names the finding and a report file is kept."""
    local = {}
    for d in dirs:
        local[d] = os.path.join(work, d.strip("/").replace("/", "_"))
        os.makedirs(local[d], exist_ok=True)
    args = [local.get(a, a) for a in argv[1:]]
    assert args[0] == "agent", argv
    textfile = args[args.index("--textfile-dir") + 1]
    reports = args[args.index("--reports-dir") + 1]
    with Fixture(["two_omp"]) as fx, _agent(*args[1:], "--duration", "30") as agent:
        wait_until(lambda: f'pid="{fx.pid}"' in _read(f"{textfile}/dlscope.prom"), 30,
                   "the finding in the metrics file")
        wait_until(lambda: any(f"-{fx.pid}-dup-openmp" in n for n in os.listdir(reports)), 30,
                   "its report file")
        _stop(agent)
        assert agent.returncode == 0, agent.stderr.read()


def test_the_systemd_unit_verifies_and_runs_as_written():
    """deploy/systemd/dlscope-agent.service: systemd-analyze verify finds nothing to say, and its
    ExecStart runs as written."""
    _need_root()
    if not shutil.which("systemd-analyze"):
        raise Skip("needs systemd-analyze (make deps)")
    unit = open(os.path.join(DEPLOY, "systemd", "dlscope-agent.service")).read()
    exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1).split()
    assert exec_start[0] == "/usr/local/bin/dlscope", exec_start  # make install's
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "dlscope-agent.service")
        with open(path, "w") as f:
            f.write(unit.replace(exec_start[0], dlscope_path()))
        p = subprocess.run(["systemd-analyze", "verify", "--man=no", path], capture_output=True,
                           text=True)
        assert p.returncode == 0 and not p.stderr.strip(), p.stderr
        dirs = [a for a in exec_start if a.startswith("/var/")]
        _runs_as_written(exec_start, dirs, work)


def test_the_daemonset_runs_the_agent_as_written():
    """deploy/k8s/dlscope-agent.yaml: a DaemonSet in the host's PID namespace whose command
    writes into the volumes it mounts, and that command runs as written."""
    _need_root()
    import yaml
    docs = list(yaml.safe_load_all(open(os.path.join(DEPLOY, "k8s", "dlscope-agent.yaml"))))
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    pod = ds["spec"]["template"]["spec"]
    assert pod["hostPID"] is True, pod
    assert ds["spec"]["selector"]["matchLabels"].items() <= \
        ds["spec"]["template"]["metadata"]["labels"].items(), ds
    (c,) = pod["containers"]
    argv = c["command"] + c["args"]
    mounts = {m["mountPath"] for m in c["volumeMounts"]}
    volumes = {v["name"] for v in pod["volumes"]}
    assert {m["name"] for m in c["volumeMounts"]} <= volumes, (c, pod["volumes"])
    dirs = [a for a in argv if a in mounts]
    assert len(dirs) == 2, (argv, mounts)
    with tempfile.TemporaryDirectory() as work:
        _runs_as_written(argv, dirs, work)


def test_containers_of_another_distro_are_judged_from_the_host():
    """Debian 13 in containers (their own PID and mount namespaces, pivot_root): a NumPy process
    gives no series, a process with two OpenMP runtimes (host-built, its runtimes copied into
    the root) gives one under its host PID, found running when the agent starts."""
    _need_root()
    from distro_roots import NUMPY_ROOT, DistroRoot
    with DistroRoot("trixie", NUMPY_ROOT) as root, tempfile.TemporaryDirectory() as work:
        libdir = f"{root.dir}/usr/lib/x86_64-linux-gnu"
        for lib in ("libgomp.so.1", "libomp.so.5"):
            shutil.copy(os.path.realpath(f"/lib/x86_64-linux-gnu/{lib}"), f"{libdir}/{lib}")
        shutil.copy(fixture_path("two_omp"), f"{root.dir}/two_omp")
        numpy = Fixture(root.pivot_argv("python3", "-c", "import numpy, time; "
                                        "print('ready', flush=True); time.sleep(1000)"))
        two = Fixture(root.pivot_argv("/two_omp"))
        with numpy, two:
            numpy_pid, two_pid = harness.first_child(numpy.pid), harness.first_child(two.pid)
            with _agent("--textfile-dir", work, "--interval", "1"):
                prom = wait_until(lambda: f'pid="{two_pid}"' in _read(f"{work}/dlscope.prom") and
                                  _read(f"{work}/dlscope.prom"), 30, "the container's series")
                # The NumPy process was judged too: the next file still has no series of it.
                time.sleep(1.5)
                prom = _read(f"{work}/dlscope.prom")
        series = [line for line in prom.splitlines() if line.startswith("dlscope_finding{")]
        assert series == [f'dlscope_finding{{check="dup-openmp",severity="error",'
                          f'pid="{two_pid}",comm="two_omp",container=""}} 1'], prom
        assert f'pid="{numpy_pid}"' not in prom, prom


def _cgroup2_root():
    for line in open("/proc/self/mounts"):
        dev, mnt, fstype = line.split()[:3]
        if fstype == "cgroup2":
            return mnt
    raise Skip("no cgroup v2 hierarchy mounted")


@contextlib.contextmanager
def _cgroup(*parts):
    """A cgroup v2 directory made for the test (PARTS below the hierarchy's root), removed with
    whatever is left in it killed."""
    path = os.path.join(_cgroup2_root(), *parts)
    os.makedirs(path)
    try:
        yield path
    finally:
        for d, _, _ in sorted(os.walk(path), key=lambda x: -len(x[0])):
            for pid in open(f"{d}/cgroup.procs").read().split():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            wait_until(lambda: not open(f"{d}/cgroup.procs").read().strip(), 10,
                       f"{d} empty")
            os.rmdir(d)


def _in_cgroup(path, argv):
    """ARGV exec'ed inside cgroup PATH (it joins before its exec, as a runtime's init does)."""
    def join():
        with open(f"{path}/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
    return Fixture(argv, preexec_fn=join)


def test_cgroup_and_slurm_job_filters_judge_their_processes_only():
    """--cgroup DIR: a process running in it when the agent starts and one that execs in it
    later are judged, one outside is not; --slurm-job ID finds the job's cgroup job_ID as
    Slurm's cgroup/v2 plugin names it (system.slice/slurmstepd.scope/job_ID)."""
    _need_root()
    tag = f"dlscope-test-{os.getpid()}"
    jobid = str(900000 + os.getpid() % 10000)
    for args, parts in ((["--cgroup"], (tag,)),
                        (["--slurm-job", jobid], (tag, "slurmstepd.scope", f"job_{jobid}"))):
        with tempfile.TemporaryDirectory() as work, _cgroup(*parts) as cg:
            before = _in_cgroup(cg, [fixture_path("two_omp")])
            outside = Fixture(["two_omp"])
            argv = args + [cg] if args == ["--cgroup"] else args
            with before, outside, _agent(*argv, "--textfile-dir", work, "--interval", "1"):
                later = _in_cgroup(cg, [fixture_path("two_omp")])
                with later:
                    prom = wait_until(
                        lambda: all(f'pid="{p}"' in _read(f"{work}/dlscope.prom")
                                    for p in (before.pid, later.pid)) and
                        _read(f"{work}/dlscope.prom"), 30, "both processes of the cgroup")
                    time.sleep(1.5)  # a write later: still nothing of the one outside
                    prom = _read(f"{work}/dlscope.prom")
            assert f'pid="{outside.pid}"' not in prom, (argv, prom)
    p = dlscope("agent", "--slurm-job", "42x", check=2)
    assert "--slurm-job takes a job ID (digits), not '42x'" in p.stderr, p.stderr


def test_slurm_job_without_its_cgroup_is_selected_by_its_environment():
    """--slurm-job ID where Slurm made no cgroup job_ID (another proctrack plugin, a hybrid
    hierarchy: this VM's): the processes whose environment holds SLURM_JOB_ID=ID, the one
    running when the agent starts and one exec'ed later (the kernel's exec filter reads the new
    image's environment); neither a process of job ID1 (the same digits and one more) nor one
    of no job."""
    _need_root()
    jobid = str(4200000000 + os.getpid() % 10000)
    job = {"SLURM_JOB_ID": jobid, "SLURM_STEP_ID": "0"}
    with tempfile.TemporaryDirectory() as work:
        before = Fixture(["two_omp"], env=job)
        other = Fixture(["two_omp"], env={"SLURM_JOB_ID": jobid + "1"})
        plain = Fixture(["two_omp"])
        with before, other, plain, _agent("--slurm-job", jobid, "--textfile-dir", work,
                                         "--interval", "1"):
            with Fixture(["two_omp"], env=job) as later:
                late_other = Fixture(["two_omp"], env={"SLURM_JOB_ID": jobid[:-1]})
                with late_other:
                    prom = wait_until(
                        lambda: all(f'pid="{p}"' in _read(f"{work}/dlscope.prom")
                                    for p in (before.pid, later.pid)) and
                        _read(f"{work}/dlscope.prom"), 30, "both processes of the job")
                    time.sleep(1.5)  # a write later: still nothing of the others
                    prom = _read(f"{work}/dlscope.prom")
        for p in (other, plain, late_other):
            assert f'pid="{p.pid}"' not in prom, (p.pid, prom)
