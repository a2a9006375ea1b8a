"""A result is true or an error: the cases where a command printed a wrong or empty result and
exited 0 (issue 23), each refused now with exit 3 and the reason, or counted honestly."""
import os
import re
import subprocess
import tempfile

from harness import Fixture, Skip, dlscope, dlscope_path, is_root

GONE = 4194303  # above any pid_max Linux allows by default


def gone_pid():
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    return pid_max + 1 if pid_max < GONE else GONE


def test_report_job_of_a_process_in_no_job_is_an_error():
    with Fixture(["two_omp"]) as fx, tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.md")
        p = dlscope("report", "--job", fx.pid, "-o", out, check=3)
        assert re.fullmatch(r"dlscope: report: --job: process \d+ \(two_omp\) is not part of a "
                            r"multi-rank job: .*\n", p.stderr), p.stderr
        assert not os.path.exists(out) and not p.stdout


def test_report_refuses_a_pid_that_does_not_exist():
    gone = gone_pid()
    with Fixture(["two_omp"]) as fx, tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.md")
        p = dlscope("report", fx.pid, gone, "-o", out, check=3)
        assert p.stderr == f"dlscope: report: no process with PID {gone}\n", p.stderr
        assert not os.path.exists(out)
        # Two live ones: each started again by its command line (no PID of this machine),
        # each dlscope line one that dlscope accepts.
        with Fixture(["two_omp"]) as fx2:
            md = dlscope("report", fx.pid, fx2.pid, check=0).stdout
            repro = md.split("## Reproduce")[1]
            cmds = [l for l in repro.splitlines() if l and not l.startswith(("#", "`"))]
            assert cmds.count(f"{fx.proc.args[0]} &") == 2, repro
            assert all(str(pid) not in l for l in cmds for pid in (fx.pid, fx2.pid)), repro
            assert {l.split()[1] for l in cmds if l.startswith("dlscope ")} == \
                {"report", "record"}, repro


def test_watch_and_record_of_a_command_that_cannot_run():
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.jsonl")
        for args in (["watch", "-d", "2"], ["record", "-d", "2", "-o", trace]):
            p = dlscope(*args, "--", "no-such-command-dlscope", check=3)
            assert p.stderr == (f"dlscope: {args[0]}: cannot run 'no-such-command-dlscope': "
                                "No such file or directory\n"), p.stderr
            assert "exit, status" not in p.stdout and not p.stdout, p.stdout
        assert not os.path.exists(trace), "a failed record left a trace behind"


def test_failed_record_leaves_no_trace():
    if not is_root():
        raise Skip("needs root to run record as another user")
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o777)
        trace = os.path.join(d, "t.jsonl")
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            dlscope_path(), "record",
                            "-o", trace, "-p", str(os.getpid())],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 3 and "needs CAP_BPF and CAP_PERFMON" in p.stderr, p
        assert not os.path.exists(trace), "a failed record left an empty trace behind"


def test_lint_summary_agrees_with_the_exit_status():
    with tempfile.TemporaryDirectory() as d:
        text = os.path.join(d, "notes.txt")
        open(text, "w").write("not an object\n")
        p = dlscope("lint", "/usr/bin/true", text, check=3)
        assert "1 named path not checked" in p.stdout, p.stdout
        lib = os.path.join(d, "libexec.so")
        src = os.path.join(d, "e.c")
        open(src, "w").write("int f(void) { return 1; }\n")
        subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-z,execstack", "-o", lib, src],
                       check=True, capture_output=True)
        p = dlscope("lint", lib, check=0)
        assert "1 finding (none at or above error)" in p.stdout, p.stdout
        p = dlscope("lint", "--fail-on", "warning", lib, check=1)
        assert re.search(r", 1 finding\n", p.stdout), p.stdout


def test_check_exits_with_the_most_severe_outcome():
    """A process with an error finding and a PID that is gone: exit 1 (the finding), the
    error still said; documented in check --help."""
    gone = gone_pid()
    with Fixture(["two_omp"]) as fx:
        p = dlscope("check", fx.pid, gone, check=1)
        assert "error dup-openmp" in p.stdout, p.stdout
        assert p.stderr == f"dlscope: check: no process with PID {gone}\n", p.stderr
        dlscope("check", gone, check=3)
    assert "the most severe: 4, then 1, then 3" in " ".join(
        dlscope("check", "--help", check=0).stdout.split())


def test_trace_exit_record_says_the_exit_status_and_the_signal():
    """A trace's exit record says exit(3) as 3, not the raw wait status (768), and a process
    killed by a signal by its name, as check --json's COMMAND does; report reads it, and reads
    an older trace's raw "exit_code" the same."""
    import json
    from harness import fixture_path
    if not is_root():
        raise Skip("BPF tests need root")
    with tempfile.TemporaryDirectory() as d:
        runs = {"status": (["sh", "-c", "exit 3"], {}, 0),
                "signal": ([fixture_path("two_blas")], {"FIXTURE_EXIT": "fault"}, 1)}
        for name, (cmd, env, status) in runs.items():
            path = os.path.join(d, name + ".jsonl")
            dlscope("record", "-o", path, "--", *cmd, env=env, check=status, timeout=120)
            recs = [json.loads(line) for line in open(path)]
            exits = [r for r in recs if r["type"] == "exit"]
            assert len(exits) == 1, exits
            e = exits[0]
            if name == "status":
                assert (e["exit_status"], e["signal"], e["wait_status"]) == (3, None, 768), e
                want = "exit, status 3"
            else:
                assert (e["exit_status"], e["signal"]) == (None, "SIGSEGV"), e
                assert e["wait_status"] & 0x7f == 11, e
                want = "exit, killed by SIGSEGV"
            assert "exit_code" not in e, e
            old = os.path.join(d, name + "-old.jsonl")
            with open(old, "w") as f:
                for r in recs:
                    if r["type"] == "exit":
                        r = {k: v for k, v in r.items()
                             if k not in ("exit_status", "signal", "core_dumped", "wait_status")}
                        r["exit_code"] = e["wait_status"]
                    f.write(json.dumps(r) + "\n")
            for trace in (path, old):
                out = dlscope("report", trace, check=0).stdout
                assert re.search(rf"\| {e['pid']} \| {re.escape(want)} \|", out), (trace, out)
