"""dlscope as a user without root, on the user's own processes: what works with no privilege at
all (libs, check, stacks), what watch needs (CAP_BPF and CAP_PERFMON, said with the setcap line
that gives them), and watch working with those capabilities alone, given to a copy of the
binary with setcap as bpftrace and py-spy users do."""
import os
import re
import shutil
import subprocess
import tempfile

from harness import Skip, dlscope_path, is_root

USER = "nobody"
PROGRAM = "import time; time.sleep(0.5); import json; time.sleep(1.5)"


def as_user(argv, timeout=60):
    """ARGV run as USER (no capability of ours: setpriv drops them), HOME in a scratch dir."""
    return subprocess.run(["setpriv", f"--reuid={USER}", "--regid=nogroup", "--clear-groups",
                           "--inh-caps=-all", "env", "HOME=/tmp", "XDG_CACHE_HOME=/tmp/nocache",
                           *argv], capture_output=True, text=True, timeout=timeout)


def user_copy(d):
    """A copy of dlscope USER can run: the tree may lie where USER cannot reach (/root)."""
    exe = os.path.join(d, "dlscope")
    shutil.copy(dlscope_path(), exe)
    os.chmod(d, 0o755)
    os.chmod(exe, 0o755)
    return exe


def capable_copy(d):
    """A copy of dlscope with CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE, runnable by USER."""
    if not shutil.which("setcap"):
        raise Skip("setcap is missing (Debian's libcap2-bin, which make deps installs)")
    exe = user_copy(d)
    p = subprocess.run(["setcap", "cap_bpf,cap_perfmon,cap_sys_ptrace+ep", exe],
                       capture_output=True, text=True)
    if p.returncode:
        raise Skip(f"setcap failed here: {p.stderr.strip()}")
    return exe


def test_watch_without_capabilities_says_which_and_how():
    if not is_root():
        raise Skip("needs root to drop to another user")
    with tempfile.TemporaryDirectory() as d:
        exe = user_copy(d)
        proc = as_user([exe, "watch", "--", "/usr/bin/true"])
    assert proc.returncode == 3, proc
    line = proc.stderr.strip()
    assert "needs CAP_BPF and CAP_PERFMON, and this dlscope has neither" in line, line
    assert "setcap cap_bpf,cap_perfmon,cap_sys_ptrace+ep" in line and \
        "libs, check, lint and stacks still work" in line and "\n" not in line, line


def test_libs_check_stacks_need_no_privilege_for_ones_own_process():
    if not is_root():
        raise Skip("needs root to drop to another user")
    with tempfile.TemporaryDirectory() as d:
        exe = user_copy(d)
        code = (f"import subprocess, sys; p = subprocess.Popen(['python3', '-c', {PROGRAM!r}]);"
                " import time; time.sleep(0.3); "
                f"rc = [subprocess.run([{exe!r}, c, str(p.pid)], "
                "capture_output=True).returncode for c in ('libs', 'check', 'stacks')]; "
                "p.kill(); print(rc)")
        proc = as_user(["python3", "-c", code])
    assert proc.stdout.strip() == "[0, 0, 0]", proc


def test_watch_works_with_capabilities_alone():
    if not is_root():
        raise Skip("needs root to give capabilities and drop to another user")
    with tempfile.TemporaryDirectory() as d:
        exe = capable_copy(d)
        proc = as_user([exe, "watch", "--", "/usr/bin/python3", "-c", PROGRAM])
    assert proc.returncode == 0, proc.stderr
    # The same probes as root's: none refused.
    root = subprocess.run([dlscope_path(), "watch", "--", "/usr/bin/true"], capture_output=True,
                          text=True, timeout=60).stderr
    count = re.search(r"\(\d+ uprobes\)", root).group(0)
    assert "watching 1 process" in proc.stderr and count in proc.stderr and \
        "cannot attach" not in proc.stderr, (proc.stderr, count)
    opens = [ln for ln in proc.stdout.splitlines() if "dlopen(" in ln and "_json" in ln]
    assert len(opens) == 1 and "from `import json` at <string>:1" in opens[0], proc.stdout
