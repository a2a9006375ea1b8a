"""Helpers of the security tests: a second, unprivileged user, and root-only files."""
import fcntl
import os
import pwd
import subprocess
import tempfile

from harness import Skip, is_root

USER = "dlscope-sec"


def other_user():
    """The unprivileged user the tests act as (made once); Skip when not root."""
    if not is_root():
        raise Skip("the security tests run as root, with a second user they make")
    # One test at a time makes it: tests run in parallel (tests/run_tests.py -j).
    with open("/run/dlscope-sec-user.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return pwd.getpwnam(USER)
        except KeyError:
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/sh",
                            USER], check=True, capture_output=True)
            return pwd.getpwnam(USER)


def as_user(argv, **kw):
    """Run ARGV as the other user; returns CompletedProcess (check=True)."""
    u = other_user()
    return subprocess.run(["setpriv", f"--reuid={u.pw_uid}", f"--regid={u.pw_gid}",
                           "--clear-groups", *argv], check=True, capture_output=True,
                          text=True, **kw)


def root_only_file(text):
    """A file only root may read or write, holding TEXT."""
    d = tempfile.mkdtemp(prefix="dlscope-root-")
    os.chmod(d, 0o700)
    path = os.path.join(d, "secret")
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path
