"""A refused process is refused for the kernel's real reason, and dlscope names it."""
import re
import shutil
import subprocess

from harness import Fixture, Skip, dlscope, dlscope_path, fixture_path, is_root

AS_NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# Root, with CAP_SYS_PTRACE dropped from the bounding set (as a container does).
NO_CAP_SYS_PTRACE = ["setpriv", "--bounding-set=-sys_ptrace"]


def need_root():
    if not is_root():
        raise Skip("needs root to run dlscope as another user")


def run_as(prefix, *args):
    return subprocess.run(prefix + [dlscope_path(), *map(str, args)], capture_output=True,
                          text=True, timeout=60)


def one_error(p):
    """Exit 3 and exactly one line, the permission error."""
    assert p.returncode == 3, (p.returncode, p.stderr)
    lines = p.stderr.splitlines()
    # "dlscope: CMD: permission denied ...": every error names its command.
    assert len(lines) == 1 and re.match(r"dlscope: \w+: permission denied ", lines[0]), lines
    return lines[0]


def proc_status(pid):
    with open(f"/proc/{pid}/status") as f:
        return dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)


def test_another_users_process_is_refused_with_the_uids_and_what_to_do():
    need_root()
    with Fixture(["two_omp"]) as fx:
        for cmd in ("libs", "stacks", "check"):
            line = one_error(run_as(AS_NOBODY, cmd, fx.pid))
            assert f"process {fx.pid} (two_omp): it belongs to another user, root (uid 0), and " \
                   "dlscope runs as nobody (uid 65534); run dlscope as root (or with " \
                   "CAP_SYS_PTRACE) or as that user" in line, (cmd, line)


def test_own_process_that_is_not_dumpable():
    """The user's own process, made non-dumpable with prctl: not 'another user'."""
    need_root()
    with Fixture(AS_NOBODY + [fixture_path("nodump")]) as fx:
        assert proc_status(fx.pid)["Uid"].split() == ["65534"] * 4
        for cmd in ("libs", "stacks"):
            line = one_error(run_as(AS_NOBODY, cmd, fx.pid))
            assert f"process {fx.pid} (nodump): it is not dumpable" in line, (cmd, line)
            assert "another user" not in line, line
        # With CAP_SYS_PTRACE it is readable.
        dlscope("libs", fx.pid, check=0)


def test_already_traced_names_the_tracer():
    """PTRACE_SEIZE of a process another tracer holds: the tracer is named, the target untouched."""
    with Fixture(["ptrace_holder"]) as fx:
        child = int(fx.output[-1].split()[1])
        assert proc_status(child)["TracerPid"] == str(fx.pid)
        p = dlscope("stacks", child, check=3)
        assert p.stderr == f"dlscope: stacks: permission denied stopping process {child} " \
                           f"(ptrace_holder): it is already traced by process {fx.pid} " \
                           "(ptrace_holder), and a process has one tracer at a time; detach " \
                           "that one (quit strace or gdb) and try again\n", p.stderr
        st = proc_status(child)
        assert st["TracerPid"] == str(fx.pid) and st["State"][0] == "S", st
        # Reading its memory needs no tracer of its own: libs works.
        dlscope("libs", child, check=0)
    if not shutil.which("strace"):
        return
    with Fixture(["strace", "-f", "-o", "/dev/null", fixture_path("two_omp")]) as fx:
        pid = int(fx.output[-1].split()[1])
        p = dlscope("stacks", pid, check=3)
        assert f"(two_omp): it is already traced by process {fx.pid} (strace)" in p.stderr, \
            p.stderr


def test_root_without_cap_sys_ptrace():
    """Root in a container without CAP_SYS_PTRACE: the missing capability is the reason."""
    need_root()
    with Fixture(AS_NOBODY + [fixture_path("two_omp")]) as fx:
        line = one_error(run_as(NO_CAP_SYS_PTRACE, "libs", fx.pid))
        assert "it belongs to another user, nobody (uid 65534), and dlscope runs as root but " \
               "without CAP_SYS_PTRACE" in line, line
    with Fixture(["two_omp"]) as fx:
        line = one_error(run_as(NO_CAP_SYS_PTRACE, "stacks", fx.pid))
        assert "(two_omp): it holds capabilities that dlscope lacks" in line, line
        assert "runs as root but without CAP_SYS_PTRACE" in line, line
