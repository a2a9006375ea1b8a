"""dlscope watch/record: which processes are watched (-p, --comm, --follow, a command) and how a
watch ends (--duration, signals, a kill), leaving nothing behind."""
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile

import harness
from harness import Fixture, Skip, dlscope, dlscope_path, fixture_path, is_root, serial, wait_until
from watchlib import watch, gone_or_zombie


def test_futex_tracepoints_on_request():
    """--futex-ms: every long futex wait, and a wait inside dlopen as it begins."""
    p = watch("--futex-ms", "5", "--duration", "2", "--", fixture_path("dlopen_list"),
              fixture_path("libhang_ctor_omp_dlsym.so"), status=1)
    assert re.search(r"futex wait on 0x[0-9a-f]+ begins inside dlopen", p.stdout), p.stdout
    assert "- a thread inside dlopen blocks on a futex" in p.stdout, p.stdout


@serial  # --comm two_omp: any two_omp of the machine is watched
def test_processes_by_name():
    """--comm: a process that starts later under that name is watched from its exec."""
    if not is_root():
        raise Skip("BPF tests need root")
    w = subprocess.Popen([dlscope_path(), "watch", "--comm", "two_omp", "--duration", "4"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    fx = None
    try:
        line = w.stderr.readline()
        assert re.match(r"dlscope: watching \d+ process(es)? named two_omp and those that start",
                        line), line
        fx = subprocess.Popen([fixture_path("two_omp")], stdout=subprocess.PIPE, text=True)
        pid = fx.pid
        out, err = w.communicate(timeout=30)
        assert w.returncode == 1, (out, err)
        assert re.search(rf"{pid}/{pid} two_omp exec ", out), out
        assert re.search(rf"{pid}/{pid} two_omp FINDING error dup-openmp", out), out
    finally:
        w.kill()
        w.wait()
        if fx:
            fx.kill()
            fx.wait()
    dlscope("watch", "--comm", "a-name-longer-than-15", check=2)


def test_two_watchers_at_once():
    """The first watcher's breakpoints are in every mapping of libc, ours included: the second
    still finds the ret instructions (it reads the code from the file)."""
    if not is_root():
        raise Skip("BPF tests need root")
    first = subprocess.Popen([dlscope_path(), "watch", "--comm", "no-such-name", "--duration",
                              "20"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stderr.readline().startswith("dlscope: watching"), "first watcher"
        p = watch("--duration", "1.5", "--", fixture_path("two_omp"), status=1)
        assert "cannot find" not in p.stderr, p.stderr
        assert re.search(r'dlopen\("libomp.so.5", RTLD_NOW\) = 0x[1-9a-f]', p.stdout), p.stdout
    finally:
        first.kill()
        first.wait()


def test_follow_forked_children():
    p = watch("--follow", "--", fixture_path("fork_tree"), fixture_path("libplain.so"),
              status=0)
    parent = int(re.search(r"(\d+)/\d+ fork_tree exec", p.stdout).group(1))
    children = {int(m) for m in re.findall(r"fork, child (\d+)", p.stdout)}
    assert len(children) == 2, p.stdout
    for c in children:
        assert re.search(rf'{c}/{c} fork_tree dlopen\("\S+libplain.so", RTLD_NOW\) = 0x[1-9a-f]',
                         p.stdout), p.stdout
        assert f"{c} + " in p.stdout
    assert parent not in children


def test_record_of_children_that_come_and_go_in_turn():
    """Each followed child's stack unwinder goes at its exit and the next child's starts: the
    namer they share kept its freed memo, and record -f of fork_tree aborted with "double
    free" in 4 of 6 runs."""
    if not is_root():
        raise Skip("BPF tests need root")
    for _ in range(4):
        with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
            p = dlscope("record", "-f", "-o", f.name, "--", fixture_path("fork_tree"),
                        fixture_path("libplain.so"), check=0, timeout=60)
            forks = [r for r in map(json.loads, open(f.name)) if r["type"] == "fork"]
        assert len(forks) == 2, (forks, p.stderr)


def test_usage_and_missing_capabilities():
    dlscope("watch", check=2)
    dlscope("record", "-p", "1", check=2)
    dlscope("watch", "--duration", "-1", "-p", "1", check=2)
    # --hot reports only the regions started inside dlopen: the help must not promise more.
    for cmd in ("watch", "ui"):
        hot = dlscope(cmd, "--help", check=0).stdout.split("--hot", 1)[1].split("\n  -")[0]
        assert "inside dlopen" in hot and "every parallel region" not in hot, (cmd, hot)
    if not is_root():
        raise Skip("needs root to compare with an unprivileged run")
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                        dlscope_path(), "watch", "-p", str(os.getpid())],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 3 and "needs CAP_BPF and CAP_PERFMON" in p.stderr and "still work" in p.stderr, p
    assert p.stderr.count("\n") == 1


def test_duration_ends_the_command_and_every_process_below_it():
    """A command still running when --duration ends goes, and so do its children and theirs:
    torchrun's ranks outlived their launcher. Processes dlscope did not start stay."""
    if not is_root():
        raise Skip("BPF tests need root")
    marker = f"301.{os.getpid()}"
    bystander = subprocess.Popen(["sleep", marker])
    script = (f"sleep {marker} >/dev/null 2>&1 & "
              f"(sleep {marker} >/dev/null 2>&1 & wait) >/dev/null 2>&1 & wait")

    def sleepers():
        out = subprocess.run(["pgrep", "-f", f"^sleep {marker}$"], capture_output=True,
                             text=True).stdout.split()
        return sorted(int(p) for p in out if int(p) != bystander.pid)

    try:
        p = dlscope("watch", "-q", "--duration", "2", "--", "sh", "-c", script, timeout=60)
        assert p.returncode == 0, p.stderr
        wait_until(lambda: sleepers() == [], 5, lambda: f"left running: {sleepers()}")
        assert bystander.poll() is None, "a process dlscope did not start was killed"
    finally:
        bystander.kill()
        bystander.wait()
        subprocess.run(["pkill", "-f", f"^sleep {marker}$"])


def test_a_killed_watch_or_record_ends_its_command_and_leaks_no_descriptor():
    # SIGKILL gives dlscope no chance to clean up: the command, held by PR_SET_PDEATHSIG,
    # ends with it instead of running on under init; and the trace, opened O_CLOEXEC, is not
    # among the command's descriptors.
    if not is_root():
        raise Skip("BPF tests need root")
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.jsonl")
        for cmd in (["watch"], ["record", "-o", trace]):
            p = subprocess.Popen([dlscope_path(), *cmd, "--", "sleep", "300"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            try:
                assert "watching 1 process" in p.stderr.readline()
                # The command is let go to exec after that line: wait for it to be sleep.
                child = int(wait_until(lambda: subprocess.run(
                    ["pgrep", "-P", str(p.pid), "sleep"], capture_output=True,
                    text=True).stdout.split(), 10, "the command exec'd")[0])
                fds = [os.readlink(f"/proc/{child}/fd/{n}") for n in os.listdir(
                    f"/proc/{child}/fd")]
                assert trace not in fds, fds
                p.kill()
                p.wait()
                wait_until(lambda: gone_or_zombie(child), 5, f"{cmd}: sleep {child} ended")
            finally:
                p.kill()
                p.wait()


def test_a_running_process_is_not_said_to_have_lost_nothing():
    """-p PID: what ran before the attach is not seen; the summary says so, not a bare 0 lost."""
    with Fixture(["two_omp"]) as fx:
        p = watch("--duration", "0.5", "-p", str(fx.pid))
        assert re.search(r"\d+ events, 0 lost since the attach \(what ran before it is not "
                         r"seen\)", p.stderr), p.stderr


def _verified_insns(pid):
    """Instructions the verifier processed for each BPF program process @pid holds, by name
    (bpf_prog_info.verified_insns, read through the program's id in the fd's fdinfo)."""
    import ctypes
    import struct
    libc = ctypes.CDLL(None, use_errno=True)
    sys_bpf, prog_get_fd_by_id, obj_get_info_by_fd = 321, 13, 15
    out = {}
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            info = open(f"/proc/{pid}/fdinfo/{fd}").read()
        except OSError:
            continue
        m = re.search(r"^prog_id:\s+(\d+)", info, re.M)
        if not m:
            continue
        attr = ctypes.create_string_buffer(struct.pack("I", int(m.group(1))), 128)
        pfd = libc.syscall(sys_bpf, prog_get_fd_by_id, attr, 128)
        assert pfd >= 0, ctypes.get_errno()
        buf = ctypes.create_string_buffer(256)
        attr = ctypes.create_string_buffer(struct.pack("IIQ", pfd, 256, ctypes.addressof(buf)),
                                           128)
        rc = libc.syscall(sys_bpf, obj_get_info_by_fd, attr, 128)
        os.close(pfd)
        assert rc == 0, ctypes.get_errno()
        name = buf.raw[64:80].split(b"\0")[0].decode()
        out[name] = struct.unpack_from("I", buf.raw, 216)[0]  # verified_insns
    return out


def test_bpf_programs_verify_in_few_instructions():
    """The start is mostly the verifier's walk: the whole object stays a few thousand
    instructions (it was 570 thousand, half a second, with loops walked once per count)."""
    if not is_root():
        raise Skip("BPF tests need root")
    with Fixture(["two_omp"]) as fx:
        for extra in ([], ["--hot"]):
            p = subprocess.Popen([dlscope_path(), "watch", *extra, "-p", str(fx.pid)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                first = p.stderr.readline()
                assert "probes attached in" in first, first
                insns = _verified_insns(p.pid)
            finally:
                p.send_signal(signal.SIGINT)
                p.communicate(timeout=30)
            assert {"dlopen_enter", "dlopen_exit", "handle_fork",
                    "linkmap_consist"} <= set(insns), insns
            assert sum(insns.values()) < 20000, insns
            assert max(insns.values()) < 8000, insns


@contextlib.contextmanager
def _busy_pools():
    """hot_regions with both pools busy for 60 s; killed at the end."""
    fx = subprocess.Popen([fixture_path("hot_regions"), fixture_path("libomp_regions.so"), "60"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert fx.stdout.readline().startswith("ready"), "fixture did not start"
        fx.stdin.write("go\n")
        fx.stdin.flush()
        yield fx
    finally:
        fx.kill()
        fx.wait()


def test_duration_ends_on_time_with_nothing_after_its_end():
    """--duration 1 -p PID: no activity record stamped past the end (1 s after the attach),
    while both pools stay busy throughout. (How long the run takes, start and detach included,
    is bench/stop_bench.py's: a wall-clock bound fails on a loaded machine.)"""
    if not is_root():
        raise Skip("BPF tests need root")
    with _busy_pools() as fx:
        for _ in range(3):
            with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
                p = subprocess.run([dlscope_path(), "record", "--hot", "--duration", "1", "-o",
                                    f.name, "-p", str(fx.pid)], capture_output=True, text=True,
                                   timeout=60)
                assert p.returncode in (0, 1), p.stderr
                recs = [json.loads(line) for line in open(f.name)]
            head = recs[0]
            acts = [r for r in recs if r["type"] == "activity"]
            assert acts, recs[-3:]
            # The end: 1 s after the attach, which ends at most "attached in" after t0.
            attach_ns = float(re.search(r"attached in ([\d.]+) ms", p.stderr).group(1)) * 1e6
            end = head["t0"] + 1_000_000_000 + attach_ns
            assert all(r["t"] <= end for r in acts), (head["t0"], end, acts)


def test_a_stop_leaves_no_link_behind():
    """The links' close is left to a reaper (user/proc/fdreaper.c) so that the stop is quick;
    every link, uprobe and tracepoint, is still gone soon after dlscope ends, and the run's
    counts are whole."""
    if not is_root():
        raise Skip("BPF tests need root")
    if not shutil.which("bpftool"):
        raise Skip("needs bpftool")
    with _busy_pools() as fx:
        p = subprocess.Popen([dlscope_path(), "watch", "--hot", "--duration", "1", "-p",
                              str(fx.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        assert "watching 1 process" in p.stderr.readline()
        links = harness.bpf_links_of(p.pid)
        out, err = p.communicate(timeout=60)
        assert p.returncode in (0, 1), err
        # Its uprobes (one link per object and program) and its four raw tracepoints.
        assert len(links) > 4, links
        assert re.search(r"\b0 lost\b", err), err
        wait_until(lambda: not harness.bpf_links_alive(links), 10, "every link of the run closed")


@serial  # --comm prefork: any prefork of the machine is watched
def test_comm_follows_workers_forked_without_exec():
    """--comm: the workers a server forks (and never execs) carry its name and are watched
    from their fork, their dlopens too, as Apache's prefork or PostgreSQL's backends."""
    if not is_root():
        raise Skip("BPF tests need root")
    lib = fixture_path("libplain.so")
    with Fixture([fixture_path("prefork"), "2", lib]) as fx:
        w = subprocess.Popen([dlscope_path(), "watch", "--comm", "prefork", "--duration", "4"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = w.stderr.readline()
            assert "named prefork" in line, line
            os.kill(fx.pid, signal.SIGUSR1)
            out, err = w.communicate(timeout=30)
        finally:
            w.kill()
            w.wait()
    forks = re.findall(rf"{fx.pid}/{fx.pid} prefork fork, child (\d+)", out)
    assert len(forks) == 2, out
    for child in forks:
        assert re.search(rf"{child}/{child} prefork dlopen\(\"{re.escape(lib)}\", RTLD_NOW\) "
                         r"= 0x", out), (child, out)


def test_a_static_program_with_glibcs_dlopen_is_watched_as_its_own_loader():
    # libc.a's dlopen lives in the program, with _dl_debug_state and _r_debug: no shared libc
    # or ld.so holds them. Probed before the command runs, its dlopens are all seen; before,
    # watch showed none of them and said "0 lost".
    lib = fixture_path("libplain.so")
    p = dlscope("watch", "--", fixture_path("static_dlopen"), lib, "20", check=0)
    assert p.returncode == 0, p.stderr
    opens = [ln for ln in p.stdout.splitlines() if f'dlopen("{lib}", RTLD_NOW) = 0x' in ln]
    closes = [ln for ln in p.stdout.splitlines() if " dlclose(0x" in ln]
    assert len(opens) == 20 and len(closes) == 20, p.stdout
    assert re.search(r"\b4[0-9] events, 0 lost, 0 findings", p.stderr), p.stderr
    # Started by a shell it follows, it is probed at its exec: the moments before are said.
    p = dlscope("watch", "-f", "--", "sh", "-c", f'"$0" {lib} 20', fixture_path("static_dlopen"),
                check=0)
    assert p.returncode == 0, p.stderr
    notes = [ln for ln in p.stdout.splitlines() if "a static program with glibc's dlopen, its "
             "own loader, not probed before it ran: its dlopen calls in the" in ln]
    assert len(notes) == 1, p.stdout
    assert re.search(r" 0 lost \(and 1 process began under a loader not probed yet", p.stderr), \
        p.stderr
    assert any(f'dlopen("{lib}", RTLD_NOW) = 0x' in ln for ln in p.stdout.splitlines()), p.stdout
