"""Other distributions' roots, for the tests of what production runs: debootstrap --variant=minbase
of a Debian suite with the packages a test names, made once and kept as a tarball outside the
repository (scripts/root-tarball.sh), unpacked afresh for each test. A test skips, saying why,
when debootstrap or the archive cannot be had."""
import os
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from harness import ROOT, Skip

TARBALL = os.path.join(ROOT, "scripts", "root-tarball.sh")

# Debian 13's root has NumPy and OpenBLAS for every test of it: one tarball, not two.
NUMPY_ROOT = ["python3", "python3-numpy", "libopenblas0-pthread"]
# Every root the tests use, made before the suite starts (--prepare, two at a time): made
# while the suite runs, debootstrap's load delayed timing-sensitive tests beside it.
ROOTS_USED = [("bullseye", ["python3"]), ("trixie", NUMPY_ROOT),
              ("sid", ["python3.14", "python3.15"]), ("jammy", ["python3"]),
              ("noble", ["python3"])]


def tarball(suite, include):
    """The cached tarball of SUITE's minbase root with the packages INCLUDE
    (scripts/root-tarball.sh, as the fresh-root CI's)."""
    p = subprocess.run([TARBALL, suite, ",".join(include)], capture_output=True, text=True,
                       timeout=900)
    if p.returncode:
        raise Skip(p.stderr.strip().splitlines()[-1])
    return p.stdout.strip()


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


if __name__ == "__main__" and sys.argv[1:] == ["--prepare"]:
    # Each tarball made now if it is not cached; one that cannot be made is left to its tests
    # to skip with the reason.
    # Two at a time: each debootstrap waits on the network and the disk as much as on a CPU.
    if os.geteuid() == 0:
        def make(root):
            subprocess.run([TARBALL, root[0], ",".join(root[1])], stdout=subprocess.DEVNULL,
                           timeout=1800)
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(make, ROOTS_USED))
