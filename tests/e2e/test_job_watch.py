"""watch/record on a multi-rank job (--job PID, --follow -- LAUNCHER): every rank's lines and
records carry its rank, the first rank to die is named with its signal and faulting object and
the others' state, a rank without CPU progress while the others compute is named hung."""
import json
import os
import queue
import re
import signal
import subprocess
import tempfile
import threading
import time

from harness import Skip, dlscope, dlscope_path, fixture_path, is_root, serial, wait_until
from test_job import launcher

LINE = re.compile(r"^\[\s*\d+\.\d+\] (?:\[rank (\d+)\] )?(\d+)(?:/\d+)? ")


class Stream:
    """dlscope watch running: its stdout read line by line on a thread, waited on with a
    deadline."""

    def __init__(self, *args, env=None):
        if not is_root():
            raise Skip("BPF tests need root")
        full = dict(os.environ)
        full.update(env or {})
        self.proc = subprocess.Popen([dlscope_path(), *map(str, args)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=full,
                                     start_new_session=True)
        self.lines, self.err, self.q = [], [], queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.q.put(line)
        self.q.put(None)

    def wait_attached(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            assert line, f"dlscope ended before attaching: {self.proc.stderr.read()}"
            self.err.append(line)
            if "watching" in line:
                return
        raise AssertionError("dlscope did not attach")

    def wait_for(self, pattern, timeout=60, past=False):
        """The next line matching @pattern (@past: or one already read)."""
        for line in self.lines if past else ():
            m = re.search(pattern, line)
            if m:
                return m
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.q.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if line is None:
                break
            self.lines.append(line)
            m = re.search(pattern, line)
            if m:
                return m
        raise AssertionError(f"no line matching {pattern!r}:\n{''.join(self.lines)}")

    def stop(self):
        """SIGINT, as ^C: the summary, and everything printed; returns (status, stdout, err)."""
        self.proc.send_signal(signal.SIGINT)
        err = "".join(self.err) + self.proc.stderr.read()
        self.proc.wait(timeout=60)
        while True:
            line = self.q.get(timeout=30)
            if line is None:
                break
            self.lines.append(line)
        return self.proc.returncode, "".join(self.lines), err

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        # Its process group: dlscope and, after a failure, a command it runs (a launcher).
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def assert_labelled(out, ranks):
    """Every line of a rank's process carries its rank, and no other line carries one."""
    by_pid = {pid: r for r, pid in ranks.items()}
    seen = 0
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        pid = int(m.group(2))
        if pid in by_pid:
            assert m.group(1) == str(by_pid[pid]), line
            seen += 1
    assert seen, out


def not_stopped(pid):
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            assert f.read().rsplit(")", 1)[1].split()[0] not in "tT", (pid, tid)


def test_watch_job_names_the_first_rank_to_die_in_a_dlopened_object():
    fx, ranks = launcher(4, env={"JOB_MODE": "crash"})
    with fx, Stream("watch", "--job", fx.pid, "--duration", 120) as w:
        w.wait_attached()
        os.kill(ranks[1], signal.SIGUSR1)  # rank 1 dlopens libcrash.so ...
        w.wait_for(rf"^\[.*\] \[rank 1\] {ranks[1]} \+ \S+/libcrash.so")
        os.kill(ranks[1], signal.SIGUSR1)  # ... and faults in it
        w.wait_for(r"FINDING error rank-died")
        status, out, err = w.stop()
    assert status == 1, (status, out, err)
    assert re.search(rf"\] \[rank 1\] {ranks[1]}/{ranks[1]} job_launcher fatal signal SIGSEGV, "
                     r"fault address 0x10 \(null pointer \+ 0x10\), at crash_lib_store\+0x[0-9a-f]+ \(libcrash.so\)",
                     out), out
    assert re.search(rf"\[rank 1\] {ranks[1]}/{ranks[1]} job_launcher FINDING error rank-died: "
                     rf"rank 1 \(PID {ranks[1]}\) died first: SIGSEGV in "
                     r"crash_lib_store\+0x[0-9a-f]+ from libcrash.so \(fault address 0x10 \(null pointer \+ 0x10\)\)",
                     out), out
    # The others as they were: ranks 0 and 2 read the "allreduce" pipe, rank 3 its futex.
    for r in (0, 2):
        assert re.search(rf"- rank {r} \(PID {ranks[r]}\): sleeping in \S*pipe", out), out
    assert re.search(rf"- rank 3 \(PID {ranks[3]}\): sleeping in \S*futex", out), out
    assert out.count("rank-died") == 1, out
    assert_labelled(out, ranks)
    assert "torchrun job: launcher %d" % fx.pid in err and "1 finding;" in err, err


def test_watch_job_exit_status_first_then_the_ranks_that_follow():
    fx, ranks = launcher(4, env={"JOB_MODE": "crash"})
    with fx, Stream("watch", "--job", fx.pid, "--duration", 120) as w:
        w.wait_attached()
        os.kill(ranks[1], signal.SIGUSR2)  # rank 1 exits with status 3
        w.wait_for(r"FINDING error rank-died")
        os.kill(ranks[2], signal.SIGKILL)
        w.wait_for(r"FINDING warning rank-died")
        status, out, err = w.stop()
    assert status == 1, (status, out, err)
    assert f"rank 1 (PID {ranks[1]}) died first: exited with status 3" in out, out
    assert re.search(rf"- rank 2 \(PID {ranks[2]}\): sleeping in \S*pipe", out), out
    assert (f"rank 2 (PID {ranks[2]}) died after rank 1 (PID {ranks[1]}): killed by SIGKILL"
            in out), out
    assert out.count("died first") == 1, out
    assert "2 findings" in err, err


def test_a_rank_ended_by_sigterm_was_ended_not_dead():
    """scancel, a time limit or a launcher's teardown sends SIGTERM: no rank died there, and
    the first rank that does die is still the first death."""
    fx, ranks = launcher(4, env={"JOB_MODE": "crash"})
    with fx, Stream("watch", "--job", fx.pid, "--duration", 120) as w:
        w.wait_attached()
        os.kill(ranks[0], signal.SIGTERM)
        w.wait_for(rf"{ranks[0]}/{ranks[0]} \S+ exit, killed by SIGTERM")
        os.kill(ranks[1], signal.SIGUSR2)  # rank 1 exits with status 3
        w.wait_for(r"FINDING error rank-died")
        status, out, err = w.stop()
    assert status == 1, (status, out, err)
    assert f"rank 1 (PID {ranks[1]}) died first: exited with status 3" in out, out
    assert f"- rank 0 (PID {ranks[0]}): killed by SIGTERM" in out, out
    assert f"rank-died: rank 0 (PID {ranks[0]})" not in out, out
    assert "1 finding" in err, err


def test_watch_job_names_the_hung_rank_with_its_stack():
    fx, ranks = launcher(4, env={"JOB_MODE": "spin"})
    with fx, Stream("watch", "--job", ranks[2], "--hang-secs", 2, "--duration", 120) as w:
        w.wait_attached()
        w.wait_for(r"FINDING error rank-hung")
        w.wait_for(r"#\d+ main\+")  # the stack's last frames
        status, out, err = w.stop()
        for pid in ranks.values():
            not_stopped(pid)
    assert status == 1, (status, out, err)
    m = re.search(r"\[rank (\d+)\] (\d+)/\d+ job_launcher FINDING error rank-hung: rank (\d+) "
                  r"\(PID (\d+)\) is hung: no CPU progress \(under 2% of a CPU\) for \d+ s while "
                  r"ranks 0-2 progress; "
                  r"it is in wait_on_futex\+0x[0-9a-f]+ \(job_launcher\)", out)
    assert m and m.group(1) == m.group(3) == "3" and int(m.group(2)) == ranks[3], out
    assert out.count("rank-hung") == 1, out
    assert re.search(r"#1 wait_on_futex\+0x[0-9a-f]+ \(job_launcher\)", out), out


def test_watch_job_all_ranks_asleep_the_stacks_name_the_one_that_waits_elsewhere():
    """Every rank sleeps (rank 3 on a futex nobody wakes, the others in the allreduce it never
    joins): CPU alone says "no rank is the one", the stacks name rank 3."""
    fx, ranks = launcher(4)
    with fx:
        if not is_root():
            raise Skip("BPF tests need root")
        p = dlscope("watch", "--job", fx.pid, "--hang-secs", 1, "--duration", 4, check=1)
    hung = re.findall(r"rank-hung: rank (\d+) \(PID \d+\) hangs the job: every rank made no CPU "
                      r"progress for 1 s, and it waits where the others do not; it is in "
                      r"wait_on_futex", p.stdout)
    assert hung == ["3"], p.stdout
    assert "the ranks' stacks: rank 3 is in wait_on_futex (job_launcher.c:" in p.stdout, p.stdout
    assert "job: all 4 ranks made no CPU progress for 1 s at once: a job-wide wait\n" in p.stdout


@serial  # CPU progress over 2 s (--hang-secs 2): beside other tests, a rank may make none
def test_ranks_that_go_idle_after_the_hung_one_wait_for_it_and_are_not_hung_too():
    """Rank 3 stops; ranks 0, 1, 2 compute 8, 9, 10 s more, then wait for it one after another
    (as torchrun's ranks enter all_reduce): rank 3 alone is hung, then the job waits as a whole."""
    fx, ranks = launcher(4, env={"JOB_MODE": "spin", "JOB_SPIN_SECS": "8"})
    with fx:
        if not is_root():
            raise Skip("BPF tests need root")
        p = dlscope("watch", "--job", fx.pid, "--hang-secs", 2, "--duration", 16, check=1)
        for pid in ranks.values():
            not_stopped(pid)
    hung = re.findall(r"rank-hung: rank (\d+) ", p.stdout)
    assert hung == ["3"], p.stdout
    assert "a job-wide wait" in p.stdout, p.stdout


def test_record_job_trace_records_carry_rank():
    fx, ranks = launcher(4, env={"JOB_MODE": "crash"})
    with fx, tempfile.NamedTemporaryFile(suffix=".jsonl") as f, \
            Stream("record", "--job", fx.pid, "-o", f.name, "--duration", 120) as w:
        w.wait_attached()

        def records():
            with open(f.name) as t:
                return [json.loads(l) for l in t if l.endswith("\n")]

        def wait_record(pred):
            wait_until(lambda: any(pred(r) for r in records()), 60,
                       lambda: f"a record wanted among {records()}", interval=0.05)

        os.kill(ranks[1], signal.SIGUSR1)
        wait_record(lambda r: r["type"] == "loaded" and r["path"].endswith("/libcrash.so"))
        os.kill(ranks[1], signal.SIGUSR1)
        wait_record(lambda r: r["type"] == "finding" and r["id"] == "rank-died")
        status, _, err = w.stop()
        recs = records()
    assert status == 1, (status, err)
    by_pid = {pid: r for r, pid in ranks.items()}
    for rec in recs:
        if rec.get("pid") in by_pid:
            assert rec.get("rank") == by_pid[rec["pid"]], rec
        elif "pid" in rec:
            assert "rank" not in rec, rec
    lib = [r for r in recs if r["type"] == "loaded" and r["path"].endswith("/libcrash.so")]
    assert lib and lib[0]["rank"] == 1, lib
    died = [r for r in recs if r["type"] == "finding" and r["id"] == "rank-died"]
    assert len(died) == 1 and died[0]["rank"] == 1 and died[0]["pid"] == ranks[1], died
    assert "SIGSEGV in crash_lib_store+0x" in died[0]["title"], died
    assert any(e.startswith("rank 3 (PID %d): sleeping in" % ranks[3])
               for e in died[0]["evidence"]), died
    sig = [r for r in recs if r["type"] == "signal"]
    assert sig and sig[0]["rank"] == 1 and sig[0]["signal"] == 11, sig
    assert recs[-1]["type"] == "summary" and recs[-1]["findings"] >= 1, recs[-1]


def test_watch_follow_launcher_learns_ranks_as_they_exec():
    with Stream("watch", "--follow", "--duration", 120, "--", fixture_path("job_launcher"), 4,
                env={"JOB_MODE": "crash"}) as w:
        w.wait_attached()
        ranks = {}
        while len(ranks) < 4:
            m = w.wait_for(r"\[rank (\d+)\] (\d+)/\d+ job_launcher exec")
            ranks[int(m.group(1))] = int(m.group(2))
        # The launcher's own line (every rank waits for its signal), which may come before a
        # rank's exec line: the fixture writes it, the events come through the ring buffer.
        w.wait_for(r"^ready", past=True)
        os.kill(ranks[1], signal.SIGUSR1)
        w.wait_for(rf"\[rank 1\] {ranks[1]} \+ \S+/libcrash.so")
        os.kill(ranks[1], signal.SIGUSR1)
        w.wait_for(r"FINDING error rank-died")
        status, out, err = w.stop()
    assert status == 1, (status, out, err)
    assert sorted(ranks) == [0, 1, 2, 3], ranks
    assert re.search(rf"rank 1 \(PID {ranks[1]}\) died first: SIGSEGV in crash_lib_store\+", out)
    assert_labelled(out, ranks)
    # The launcher is no rank: its own lines carry none.
    launcher_pid = int(re.search(r"\] (\d+)/\d+ job_launcher fork, child", out).group(1))
    assert launcher_pid not in ranks.values()
    assert not re.search(rf"\[rank \d+\] {launcher_pid}/", out), out


def test_ui_job_events_show_the_rank_and_the_first_death():
    from test_ui import Tui
    if not is_root():
        raise Skip("live mode needs root")
    fx, ranks = launcher(4, env={"JOB_MODE": "crash"})
    with fx, Tui(["--job", fx.pid]) as ui:
        # The processes view lists every rank with its RANK; the status line says when the
        # probes are attached (the signal must come after).
        for r, pid in ranks.items():
            ui.wait_for(re.compile(rf"(?m)^\s*{pid}\s+\S+\s+{r}\s"))
        ui.wait_for("watching 5 processes; probes attached")
        ui.keys("4")
        os.kill(ranks[1], signal.SIGUSR1)
        row = re.compile(rf"\d+\.\d{{6}} {ranks[1]}\s+{ranks[1]}\s+1\s+job_launcher\s+dlopen\s+"
                         r"dlopen\(\"\S+/libcrash.so\"")
        ui.wait_for(row)
        os.kill(ranks[1], signal.SIGUSR1)
        ui.wait_for(re.compile(rf"{ranks[1]}\s+{ranks[1]}\s+1\s+job_launcher\s+signal\s+"))
        ui.keys("5")
        ui.wait_for(re.compile(rf"rank-died.*rank 1 \(PID {ranks[1]}\) died first: SIGSEGV in "
                               r"crash_lib_store"))
        status, s = ui.quit_and_status()
    assert status == 0, s  # the UI's status says nothing of findings (as without --job)


def test_watch_job_errors_are_one_line():
    if not is_root():
        raise Skip("BPF tests need root")
    fx, ranks = launcher(2)
    with fx:
        for args, status, line in (
                (("--job", "4000000"), 3, "watch: process 4000000 does not exist"),
                (("--job", os.getpid()), 3, "is not part of a multi-rank job"),
                (("--job", "abc"), 2, "watch: --job takes a process ID, not 'abc'"),
                (("--job", fx.pid, "--", "true"), 2, "--job watches a running job: not with"),
                (("--job", fx.pid, "--hang-secs", "0"), 2,
                 "--hang-secs takes a positive number of seconds, not '0'")):
            p = dlscope("watch", *args, check=status)
            assert line in p.stderr and p.stderr.startswith("dlscope: watch: "), p.stderr
            assert not p.stdout, p.stdout


@serial  # --comm job_launcher: every launcher of the machine
def test_record_by_comm_labels_the_ranks_it_finds_running():
    """Processes found by name (or -p) are looked up when first seen, not only at exec."""
    if not is_root():
        raise Skip("BPF tests need root")
    fx, ranks = launcher(4)
    with fx, tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        dlscope("record", "--comm", "job_launcher", "-o", f.name, "--duration", "1", check=0)
        recs = [json.loads(l) for l in open(f.name)]
    by_pid = {pid: r for r, pid in ranks.items()}
    loaded = {}
    for rec in recs:
        if rec["type"] == "loaded" and rec["pid"] in by_pid:
            loaded.setdefault(rec["pid"], set()).add(rec.get("rank"))
        elif rec["type"] == "loaded" and rec["pid"] == fx.pid:
            assert "rank" not in rec, rec
    assert {p: {r} for p, r in by_pid.items()} == loaded, loaded
