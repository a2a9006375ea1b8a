"""A real Slurm cluster on this machine, for tests and benchmarks: Debian's munged, slurmctld and
one slurmd per node, each in the foreground under this process, torn down on exit.

One node answers on 127.0.0.1. Two nodes are two network namespaces on a bridge (10.231.N.1 and
.2, the controller on .254), each slurmd in its own, so `srun --overlap` really reaches another
address; each also has a mount namespace of its own whose only differences are Slurm's TmpFS
(PMIx makes its client directory there, by job and step, and two nodes sharing /tmp collide)
and /dev/shm.
The nodes share the PID namespace: a node's processes are told apart by SLURMD_NODENAME.

    with SlurmCluster(nodes=2) as c:
        job = c.srun_background(["-N", "2", "-n", "4", "--mpi=pmix", "python3", "x.py"])
        c.env   # SLURM_CONF for dlscope and Slurm's commands
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from harness import Skip, is_root, wait_until

DAEMONS = ("munged", "slurmctld", "slurmd", "srun", "sbatch", "squeue", "scontrol")


def proc_env(pid):
    """(environ as {bytes: bytes}, comm) of process @pid, or (None, "") when it cannot be read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
        with open(f"/proc/{pid}/comm") as f:
            return env, f.read().strip()
    except OSError:
        return None, ""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def missing():
    """What this machine lacks for a cluster (make deps installs it), or None."""
    if not is_root():
        return "a Slurm cluster needs root (munged, slurmd, network namespaces)"
    for prog in DAEMONS + ("ip", "nsenter", "unshare"):
        if not shutil.which(prog) and not os.path.exists(f"/usr/sbin/{prog}"):
            return f"{prog} is not installed (make deps installs slurm-wlm, munge, iproute2)"
    return None


class SlurmCluster:
    def __init__(self, nodes=1, cpus=8):
        why = missing()
        if why:
            raise Skip(why)
        self.nodes = nodes
        self.cpus = cpus
        self.procs = []
        self.netns = []
        self.links = []
        self.tag = f"{os.getpid() % 100000}"
        self.dir = tempfile.mkdtemp(prefix="dlscope-slurm-")
        self.conf = os.path.join(self.dir, "slurm.conf")
        self.env = {"SLURM_CONF": self.conf}
        self.full_env = dict(os.environ, **self.env)
        # A /24 of our own per cluster, from the PID: clusters of parallel tests never meet.
        self.net = f"10.231.{os.getpid() % 250}"

    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def _run(self, *argv):
        subprocess.run(argv, check=True, capture_output=True, text=True)

    def _daemon(self, argv, log):
        f = open(self.path(log), "w")
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                             env=self.full_env, start_new_session=True)
        f.close()
        self.procs.append(p)
        return p

    def _network(self):
        """The bridge, and one namespace per node with its address on it."""
        br = f"dlsb{self.tag}"[:15]
        self._run("ip", "link", "add", br, "type", "bridge")
        self.links.append(br)
        self._run("ip", "addr", "add", f"{self.net}.254/24", "dev", br)
        self._run("ip", "link", "set", br, "up")
        for i in range(1, self.nodes + 1):
            ns, veth = f"dlsn{self.tag}-{i}", f"dlsv{self.tag}{i}"[:15]
            self._run("ip", "netns", "add", ns)
            self.netns.append(ns)
            self._run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0",
                      "netns", ns)
            self.links.append(veth)
            self._run("ip", "link", "set", veth, "master", br, "up")
            self._run("ip", "-n", ns, "addr", "add", f"{self.net}.{i}/24", "dev", "eth0")
            self._run("ip", "-n", ns, "link", "set", "eth0", "up")
            self._run("ip", "-n", ns, "link", "set", "lo", "up")

    def _config(self, host):
        multi = self.nodes > 1
        ctl_addr = f"{self.net}.254" if multi else "127.0.0.1"
        lines = [
            "ClusterName=dlscope",
            f"SlurmctldHost={host}({ctl_addr})",
            "SlurmUser=root", "SlurmdUser=root",
            "AuthType=auth/munge", f"AuthInfo=socket={self.path('munge.socket')}",
            f"StateSaveLocation={self.path('state')}",
            f"SlurmdSpoolDir={self.path('spool', '%n')}",
            f"SlurmctldPidFile={self.path('slurmctld.pid')}",
            f"SlurmdPidFile={self.path('slurmd-%n.pid')}",
            f"SlurmctldPort={free_port()}", f"SlurmdPort={free_port()}",
            f"SlurmctldLogFile={self.path('slurmctld.log')}",
            f"SlurmdLogFile={self.path('slurmd-%n.log')}",
            f"TmpFS={self.path('tmp')}",
            "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "SchedulerType=sched/builtin", "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            # The node says it has more CPUs than this machine: jobs of several ranks fit.
            "SlurmdParameters=config_overrides",
            "ReturnToService=2", "MpiDefault=none", "KillWait=2",
        ]
        for i in range(1, self.nodes + 1):
            addr = f"{self.net}.{i}" if multi else "127.0.0.1"
            lines.append(f"NodeName=n{i} NodeHostname={host} NodeAddr={addr} "
                         f"CPUs={self.cpus} State=UNKNOWN")
        lines.append("PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP "
                     "OverSubscribe=FORCE:4")
        with open(self.conf, "w") as f:
            f.write("\n".join(lines) + "\n")

    def _start(self):
        host = socket.gethostname().split(".")[0]
        for d in ("state", "tmp", "munge"):
            os.makedirs(self.path(d))
        for i in range(1, self.nodes + 1):
            os.makedirs(self.path("spool", f"n{i}"))
            os.makedirs(self.path(f"tmp-n{i}"))
        with open(self.path("munge.key"), "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(self.path("munge.key"), 0o400)
        self._config(host)
        self._daemon(["munged", "--foreground", "--force", f"--socket={self.path('munge.socket')}",
                      f"--key-file={self.path('munge.key')}", f"--seed-file={self.path('munge.seed')}",
                      f"--pid-file={self.path('munged.pid')}", f"--log-file={self.path('munged.log')}"],
                     "munged.out")
        wait_until(lambda: os.path.exists(self.path("munge.socket")), 10, "munged's socket")
        if self.nodes > 1:
            self._network()
        self._daemon(["slurmctld", "-D", "-i", "-f", self.conf], "slurmctld.out")
        for i in range(1, self.nodes + 1):
            argv = ["slurmd", "-D", "-f", self.conf, "-N", f"n{i}"]
            if self.nodes > 1:
                # Its own network, TmpFS and /dev/shm: a node's view of the shared machine
                # (OpenMPI names its shared-memory segments by host, job and local rank:
                # the ranks of two nodes on one /dev/shm would map each other's).
                argv = ["nsenter", f"--net=/run/netns/{self.netns[i - 1]}", "unshare", "-m",
                        "--propagation", "private", "sh", "-c",
                        f"mount --bind {self.path(f'tmp-n{i}')} {self.path('tmp')} && "
                        "mount -t tmpfs -o size=256m,mode=1777 shm /dev/shm && "
                        f"exec {' '.join(argv)}"]
            self._daemon(argv, f"slurmd-n{i}.out")
        try:
            wait_until(lambda: self.idle_nodes() == self.nodes, 60, "the nodes to be idle")
        except AssertionError as e:
            raise AssertionError(f"{e}; {self.logs()}") from None

    def logs(self):
        """The last lines of the daemons' logs, for a failure's message."""
        out = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith((".log", ".out")):
                with open(self.path(name), errors="replace") as f:
                    out.append(f"{name}: " + " | ".join(f.read().splitlines()[-4:]))
        return "; ".join(out)

    def idle_nodes(self):
        out = subprocess.run(["sinfo", "-h", "-N", "-o", "%t"], capture_output=True, text=True,
                             env=self.full_env).stdout.split()
        return sum(s == "idle" for s in out)

    def srun_background(self, argv, cwd=None, env=None):
        """srun ARGV, started and left running (its output in the cluster's folder)."""
        out = open(self.path(f"srun-{len(self.procs)}.out"), "w")
        # Its own input: srun forwards it to task 0 (the test runner's worker reads its own).
        p = subprocess.Popen(["srun", *argv], stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT, cwd=cwd,
                             env=dict(self.full_env, **(env or {})), start_new_session=True)
        out.close()
        self.procs.append(p)
        return p

    def run(self, *argv, timeout=60):
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=timeout, env=self.full_env)

    def job_of(self, srun, timeout=30):
        """The id of the job srun @srun started, once its step runs."""
        found = []

        def running():
            jobs = json.loads(self.run("squeue", "--json").stdout)["jobs"]
            found[:] = [j["job_id"] for j in jobs if j["job_state"] == "RUNNING"]
            return bool(found) and srun.poll() is None
        wait_until(running, timeout, "the job to run")
        return max(found)

    def tasks(self, jobid):
        """{pid: environ} of the processes that carry SLURM_JOB_ID=@jobid and a step."""
        out = {}
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            env, comm = proc_env(d)
            if env and env.get(b"SLURM_JOB_ID") == str(jobid).encode() and \
                    b"SLURM_STEP_ID" in env and comm not in ("slurmstepd", "srun"):
                out[int(d)] = {k.decode(): v.decode(errors="replace") for k, v in env.items()}
        return out

    def stop(self):
        if os.path.exists(self.conf):
            subprocess.run(["scancel", "--full", "--user=root"], capture_output=True,
                           env=self.full_env, timeout=30)
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        # slurmstepd, the tasks and batch scripts outlive slurmd: end what is left of this
        # cluster (each has slurmd's environment or a task's, which names our configuration).
        mine = f"SLURM_CONF={self.conf}".encode()
        for d in os.listdir("/proc"):
            try:
                if not d.isdigit() or int(d) == os.getpid():
                    continue
                with open(f"/proc/{d}/environ", "rb") as f:
                    if mine in f.read().split(b"\0"):
                        os.kill(int(d), signal.SIGKILL)
            except OSError:
                pass
        for ns in self.netns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        for link in self.links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        self.netns, self.links = [], []
        if not os.environ.get("DLSCOPE_KEEP_SLURM"):  # kept to read its logs after a failure
            shutil.rmtree(self.dir, ignore_errors=True)
