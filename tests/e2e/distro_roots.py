"""Other distributions' roots, for the tests of what production runs: debootstrap --variant=minbase
of a Debian suite with the packages a test names, made once and kept as a tarball outside the
repository (DLSCOPE_ROOT_CACHE/roots, /var/cache/dlscope-ci by default), unpacked afresh for each
test. A test skips, saying why, when debootstrap or the archive cannot be had."""
import fcntl
import os
import shutil
import signal
import subprocess
import tempfile

from harness import Skip

CACHE = os.path.join(os.environ.get("DLSCOPE_ROOT_CACHE", "/var/cache/dlscope-ci"), "roots")
MIRROR = "http://deb.debian.org/debian"


def tarball(suite, include):
    """The cached tarball of SUITE's minbase root with the packages INCLUDE; made under a lock
    (tests running at once make it once)."""
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, f"{suite}-minbase-{'-'.join(sorted(include))}.tar.gz")
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(path):
            return path
        if not shutil.which("debootstrap"):
            raise Skip("debootstrap is not installed (make deps installs it)")
        tmp = tempfile.mkdtemp(dir=CACHE, prefix=f"make-{suite}.")
        try:
            p = subprocess.run(["debootstrap", "--variant=minbase",
                                f"--include={','.join(sorted(include))}", suite,
                                os.path.join(tmp, "root"), MIRROR],
                               capture_output=True, text=True, timeout=900)
            if p.returncode:
                raise Skip(f"debootstrap of {suite} failed (is {MIRROR} reachable?): "
                           f"{p.stdout.strip().splitlines()[-1:]}")
            subprocess.run(["tar", "-C", os.path.join(tmp, "root"), "-czf",
                            os.path.join(tmp, "root.tar.gz"), "."], check=True)
            os.replace(os.path.join(tmp, "root.tar.gz"), path)
        finally:
            subprocess.run(["rm", "-rf", "--one-file-system", tmp])
    return path


class DistroRoot:
    """SUITE's root with INCLUDE, unpacked in a directory of its own (.dir); on exit every
    process whose root is in it is killed and the directory removed."""

    def __init__(self, suite, include):
        self.suite, self.include = suite, include

    def __enter__(self):
        if os.geteuid() != 0:
            raise Skip("debootstrap, chroot and mounts need root")
        src = tarball(self.suite, self.include)
        self.dir = tempfile.mkdtemp(prefix=f"dlscope-{self.suite}-", dir="/var/tmp")
        subprocess.run(["tar", "-C", self.dir, "-xzf", src], check=True)
        return self

    def chroot_argv(self, *argv):
        """ARGV run chroot-style in the root (bubblewrap's, Apptainer's way: the kernel names
        its files by our paths), with /proc, in a mount namespace of its own."""
        return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount --rbind /proc "$0/proc" && exec chroot "$0" "$@"', self.dir, *argv]

    def pivot_argv(self, *argv):
        """ARGV run as a container engine runs it: its own mount and PID namespaces, the root
        made / by pivot_root, the old root detached (the kernel names its files by its paths)."""
        script = ('mount --rbind "$0" "$0" && cd "$0" && mkdir -p .oldroot && '
                  'pivot_root . .oldroot && mount -t proc proc /proc && '
                  'umount -l /.oldroot && exec "$@"')
        return ["unshare", "--mount", "--pid", "--fork", "--propagation", "private", "sh", "-c",
                script, self.dir, *argv]

    def __exit__(self, *exc):
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                root = os.readlink(f"/proc/{pid}/root")
            except OSError:
                continue
            if root == self.dir or root.startswith(self.dir + "/"):
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        subprocess.run(["rm", "-rf", "--one-file-system", self.dir])
