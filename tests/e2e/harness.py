"""Helpers shared by the end-to-end tests: live fixture processes and the dlscope binary."""
import fcntl
import json
import os
import re
import signal
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "build")
_live = []


class Skip(Exception):
    """Raised by a test that cannot run here (e.g. needs root)."""


def serial(test):
    """Marks a test that must run alone (tests/run_tests.py runs it after the parallel ones):
    one that measures time or memory, or sees every process of the machine (--comm NAME)."""
    test.serial = True
    return test


def plain(test):
    """Marks a test that says something of the plain build the sanitizer build cannot (a time,
    a memory figure): skipped against a sanitizer build, CI runs it against build/."""
    test.plain = True
    return test


def wait_until(pred, timeout, what, interval=0.02):
    """Polls PRED until it returns a true value, which is returned; AssertionError naming WHAT
    (a string, or a function of nothing giving one) after TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"not after {timeout}s: {what() if callable(what) else what}")
        time.sleep(interval)


def build_once(out, argv, sources):
    """Runs ARGV, which writes OUT, unless OUT is newer than every one of SOURCES; under a lock
    and through a temporary name (ARGV holds OUT), so that tests running at once never run a
    half-written file or build it twice. Returns OUT."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(out) and \
                all(os.path.getmtime(out) >= os.path.getmtime(s) for s in sources):
            return out
        tmp = f"{out}.tmp{os.getpid()}"
        subprocess.run([tmp if a == out else a for a in argv], check=True, capture_output=True,
                       text=True)
        os.replace(tmp, out)
    return out


def bench_prog(name):
    """bench/NAME.c (a loop the benchmarks time), built once into the build folder."""
    out = os.path.join(BUILD, name)
    src = os.path.join(ROOT, "bench", name + ".c")
    return build_once(out, ["cc", "-O2", "-o", out, src, "-ldl"], [src])


def fixture_path(name):
    """A fixture by the path the kernel gives it (/proc/PID/exe, maps), which is what dlscope
    prints: build-san/fixtures is a link to build/fixtures (one set for every build)."""
    return os.path.join(os.path.realpath(os.path.join(BUILD, "fixtures")), name)


def dlscope_path():
    return os.path.join(ROOT, "dlscope") if BUILD.endswith("/build") else \
        os.path.join(BUILD, "dlscope")


class Fixture:
    """A fixture process started for one test; waits for its "ready PID" line."""

    def __init__(self, argv, env=None, ready_timeout=20.0, wait_ready=True, preexec_fn=None):
        if not os.path.isabs(argv[0]) and os.path.exists(fixture_path(argv[0])):
            argv = [fixture_path(argv[0])] + list(argv[1:])
        full_env = dict(os.environ)
        if env:
            full_env.update(env)
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=full_env, text=True, start_new_session=True,
                                     preexec_fn=preexec_fn)
        _live.append(self)
        self.pid = self.proc.pid
        self.output = []
        if wait_ready:
            self._wait_ready(ready_timeout)

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                err = self.proc.stderr.read()
                raise AssertionError(f"fixture {self.proc.args} exited early: {err}")
            self.output.append(line)
            if line.startswith("ready"):
                return
        raise AssertionError(f"fixture {self.proc.args} not ready after {timeout}s")

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()


def reap_all():
    while _live:
        _live.pop().kill()


def dlscope(*args, check=None, timeout=60, env=None):
    """Run ./dlscope; returns CompletedProcess. check=N asserts the exit status."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    proc = subprocess.run([dlscope_path(), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=full_env)
    if check is not None and proc.returncode != check:
        raise AssertionError(f"dlscope {' '.join(map(str, args))}: exit {proc.returncode}, "
                             f"wanted {check}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def error_lines(proc):
    """The lines of stderr, less the "try 'dlscope CMD --help'" that ends a usage error."""
    lines = proc.stderr.splitlines()
    if proc.returncode == 2 and lines and re.fullmatch(r"try 'dlscope \w+ --help'", lines[-1]):
        lines.pop()
    return len(lines)


def dlscope_json(*args, check=0, env=None):
    proc = dlscope(*args, "--json", check=check, env=env)
    return json.loads(proc.stdout)


def mapped_objects(pid):
    """(inode, path) of every ELF file mapped at offset 0 in /proc/PID/maps."""
    seen = {}
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) < 6 or not parts[5].startswith("/"):
                continue
            path = parts[5].strip()
            if path.endswith(" (deleted)"):
                path = path[:-10]
            inode = int(parts[4])
            if inode == 0 or int(parts[2], 16) != 0:
                continue
            try:
                with open(f"/proc/{pid}/root{path}", "rb") as ef:
                    if ef.read(4) != b"\x7fELF":
                        continue
            except OSError:
                continue
            seen[inode] = path
    return seen


def is_root():
    return os.geteuid() == 0


def thread_states(pid):
    """{tid: state letter} of every thread of PID, from /proc."""
    states = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                states[int(tid)] = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            pass
    return states


def wait_idle(pid, timeout=5.0):
    """Wait until no thread of PID is running (spinning pool threads go to sleep)."""
    def idle():
        states = list(thread_states(pid).values())
        return states and "R" not in states

    wait_until(idle, timeout, lambda: f"threads of {pid} idle: {thread_states(pid)}")


def record_level_zero_module(trace):
    """Record the ze_module fixture (zeModuleCreate through Debian's libze1, no driver) into
    @trace; Skip where it cannot run (not root, libze1 not installed)."""
    if not is_root():
        raise Skip("BPF tests need root")
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/libze_loader.so.1"):
        raise Skip("libze1 is not installed")
    dlscope("record", "-o", trace, "--", fixture_path("ze_module"), check=0)


def gdb_backtraces(*gdb_args):
    """{tid: [(function, has_address)]} from gdb's 'thread apply all bt' on @gdb_args (a live
    process: "-p", PID; a core: EXE, CORE), for comparing dlscope's frames with gdb's."""
    out = subprocess.run(["gdb", "-nx", "-batch", *gdb_args, "-ex", "thread apply all bt"],
                         capture_output=True, text=True, timeout=120).stdout
    threads, cur = {}, None
    for line in out.splitlines():
        m = re.match(r'^Thread \d+ \(.*LWP (\d+)\)', line)
        if m:
            cur = threads.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r'^#\d+\s+(0x[0-9a-f]+ in )?(\S+) \(', line)
        if m and cur is not None:
            cur.append((m.group(2), bool(m.group(1))))
    return threads


def norm_function(name):
    """A function's name as both debuggers can agree on it: no @version, no leading _."""
    return re.sub(r"@.*$", "", name or "??").lstrip("_")


# libdwfl 0.188 (eu-stack too) unwinds glibc's futex wait in pthread_join one frame too far
# at two places where gdb does not: the frames of these two functions are missing on our side.
LIBDWFL_SKIPS = {"__GI___futex_abstimed_wait_cancelable64", "___pthread_join"}


def bpf_links_of(pid):
    """The ids of the BPF links @pid holds, from its descriptors' fdinfo."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                m = re.search(r"^link_id:\s*(\d+)", f.read(), re.M)
        except OSError:
            continue
        if m:
            ids.add(int(m.group(1)))
    return ids


def bpf_links_alive(ids):
    """Which of the link IDS the kernel still has."""
    # bpftool lists by id, then opens each: a link closed in between (the reaper's, which this
    # waits for, or another test's) fails the whole listing (exit 255, seen in a fresh root).
    for _ in range(20):
        p = subprocess.run(["bpftool", "-j", "link", "show"], capture_output=True, text=True)
        if p.returncode == 0:
            return {link["id"] for link in json.loads(p.stdout or "[]")} & ids
        time.sleep(0.05)
    raise AssertionError(f"bpftool link show failed 20 times: {p.stderr}")


def first_child(pid):
    """The host's PID of @pid's first child: a PID namespace's first process under unshare
    --fork, whose own PID is 1."""
    return wait_until(lambda: [int(c) for c in open(f"/proc/{pid}/task/{pid}/children")
                               .read().split()], 10, "the namespace's first process")[0]
