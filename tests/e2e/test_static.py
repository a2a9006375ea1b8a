"""The single binary (make static) as a user on a bare host runs it, and make install.

dlscope-static is copied alone into an empty directory and run chrooted there, with only /proc
and /sys (BTF and tracefs with it) mounted, against fixtures running outside: every file of the
target is reachable only through /proc/PID/root.
"""
import json
import os
import re
import shutil
import subprocess
import tempfile

import harness
from harness import Fixture, Skip, dlscope, fixture_path, is_root, wait_idle

PY = "/usr/bin/python3"
# The mounts live in a mount namespace of their own (unshare -m), gone when dlscope exits;
# exec: a timeout's kill reaches dlscope itself.
CHROOT_RUN = ('mount --rbind /proc "$0/proc" && mount --rbind /sys "$0/sys" && '
              'exec chroot "$0" /dlscope "$@"')


def static_binary():
    if not harness.BUILD.endswith("/build"):
        raise Skip("dlscope-static is linked from the plain build (build/) only")
    path = os.path.join(harness.ROOT, "dlscope-static")
    assert os.path.exists(path), "dlscope-static is missing: run 'make static'"
    return path


class BareRoot:
    """An empty directory holding dlscope-static alone, with mount points for /proc and /sys."""

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="dlscope-bare-")
        shutil.copy(static_binary(), os.path.join(self.dir, "dlscope"))
        for d in ("proc", "sys"):
            os.mkdir(os.path.join(self.dir, d))
        return self

    def run(self, *args, status=0, timeout=60):
        p = subprocess.run(["unshare", "-m", "sh", "-c", CHROOT_RUN, self.dir, *map(str, args)],
                           capture_output=True, text=True, timeout=timeout)
        if status is not None:
            assert p.returncode == status, \
                f"chrooted dlscope {args}: exit {p.returncode}\n{p.stdout}\n{p.stderr}"
        return p

    def __exit__(self, *exc):
        # rmdir, never a recursive removal: a mount left behind fails here instead.
        for d in ("proc", "sys"):
            path = os.path.join(self.dir, d)
            assert not os.path.ismount(path), f"{path} is still mounted"
            os.rmdir(path)
        os.unlink(os.path.join(self.dir, "dlscope"))
        # dlscope's caches (~/.cache/dlscope of the chroot's root user) are plain files.
        shutil.rmtree(os.path.join(self.dir, "root"), ignore_errors=True)
        os.rmdir(self.dir)


def test_static_binary_needs_no_shared_library():
    path = static_binary()
    p = subprocess.run(["ldd", path], capture_output=True, text=True)
    assert "not a dynamic executable" in p.stdout + p.stderr, p.stdout + p.stderr
    hdr = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
    assert "INTERP" not in hdr and "DYNAMIC" not in hdr, hdr
    v = subprocess.run([path, "--version"], capture_output=True, text=True)
    assert re.fullmatch(r"dlscope \S+ \(static\)\n", v.stdout), v.stdout


def test_static_binary_in_an_empty_chroot():
    if not is_root():
        raise Skip("chroot, mount namespaces and eBPF need root")
    with BareRoot() as bare:
        assert sorted(os.listdir(bare.dir)) == ["dlscope", "proc", "sys"]
        assert bare.run("--version").stdout.startswith("dlscope ")

        # libs: the same objects, build-ids, roles and packages as ./dlscope on the host.
        with Fixture(["two_omp"]) as fx:
            inside = json.loads(bare.run("libs", "--json", fx.pid).stdout)["processes"][0]
            host = json.loads(dlscope("libs", "--json", fx.pid, check=0).stdout)["processes"][0]

            def objects(g):
                return sorted((o["path"], o.get("build_id"), json.dumps(o["roles"]),
                               json.dumps(o.get("package"))) for o in g["objects"])
            assert objects(inside) == objects(host), (objects(inside), objects(host))
            assert any(o["path"].endswith("/libgomp.so.1") and o.get("build_id")
                       for o in inside["objects"]), inside["objects"]

        # check: libgomp's live nthreads-var, read from the main thread's TLS through glibc's
        # thread list (no libthread_db exists in the chroot, nor statically).
        # A team size no default (CPU count) gives.
        n = os.cpu_count() + 3
        code = (f"import ctypes, time; g = ctypes.CDLL('libgomp.so.1'); g.omp_set_num_threads({n})\n"
                "print('ready', flush=True); time.sleep(120)\n")
        with Fixture([PY, "-c", code], env={"OMP_NUM_THREADS": ""}) as fx:
            doc = json.loads(bare.run("check", "--json", fx.pid, status=None).stdout)
            rt = [r for r in doc["processes"][0]["runtimes"] if r["impl"] == "libgomp"]
            assert rt and rt[0]["num_threads"] == n, rt
            assert rt[0]["num_threads_from"] == "omp_get_max_threads() on the main thread", rt

        # stacks: the ABBA deadlock, both edges named from the fixture's symbols.
        with Fixture(["hang_abba"]) as fx:
            wait_idle(fx.pid)
            doc = json.loads(bare.run("stacks", "--json", fx.pid, status=1).stdout)["processes"][0]
            other = [int(t) for t in os.listdir(f"/proc/{fx.pid}/task") if int(t) != fx.pid][0]
            edges = {(e["from"], e["to"]): e["what"] for e in doc["edges"]}
            assert edges == {(fx.pid, other): "mutex lock_b in hang_abba",
                             (other, fx.pid): "mutex lock_a in hang_abba"}, edges
            frames = [f["function"] for t in doc["threads"] for f in t["frames"]]
            assert "take_b_then_a" in frames, frames
            # glibc's own frames named from its debug file, found under the target's root.
            libc = [f for t in doc["threads"] for f in t["frames"]
                    if (f["module"] or "").endswith("/libc.so.6")]
            assert libc and all(f["function"] and f["file"] for f in libc), libc
            assert "__libc_start_call_main" in frames, frames

        # watch: uprobes on the target's loader, attached through /proc/PID/root.
        lib = fixture_path("libplain.so")
        with Fixture(["churn", "dlopen", lib]) as fx:
            p = bare.run("watch", "--duration", "1.5", "-p", fx.pid)
            assert re.search(r'churn dlopen\("' + re.escape(lib) +
                             r'", (0x[0-9a-f]+|RTLD_[A-Z_|]+)\) = 0x[1-9a-f]',
                             p.stdout), p.stdout[:2000] + p.stderr


def test_make_install_with_prefix_and_destdir():
    if not harness.BUILD.endswith("/build"):
        raise Skip("make install copies ./dlscope, the plain build (build/)")
    with tempfile.TemporaryDirectory() as tmp:
        prefix, stage = os.path.join(tmp, "prefix"), os.path.join(tmp, "stage")
        for args in ([f"PREFIX={prefix}"], ["PREFIX=/usr/local", f"DESTDIR={stage}"]):
            p = subprocess.run(["make", "-s", "-C", harness.ROOT, "install", *args],
                               capture_output=True, text=True, timeout=300)
            assert p.returncode == 0, p.stdout + p.stderr
        for root in (prefix, os.path.join(stage, "usr/local")):
            exe = os.path.join(root, "bin/dlscope")
            page = os.path.join(root, "share/man/man1/dlscope.1")
            assert os.stat(exe).st_mode & 0o777 == 0o755 and os.stat(page).st_mode & 0o777 == 0o644
            comp = os.path.join(root, "share/bash-completion/completions/dlscope")
            assert os.stat(comp).st_mode & 0o777 == 0o644, "no bash completion installed"
            v = subprocess.run([exe, "--version"], capture_output=True, text=True)
            assert re.fullmatch(r"dlscope \d+\.\d+\.\d+\n", v.stdout), v.stdout
            for width in ("80", "120"):
                m = subprocess.run(["man", "--warnings", "-l", page], capture_output=True,
                                   text=True, env=dict(os.environ, MANWIDTH=width, MANPAGER="cat",
                                                       PAGER="cat"))
                assert m.returncode == 0 and not m.stderr, m.stderr
                out = m.stdout
                assert out.startswith("dlscope(1)") and v.stdout.split()[1] in out.splitlines()[-1]
                for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS"):
                    assert f"\n{section}\n" in out, (section, out[:3000])
                # Justified text: compared with its spaces collapsed.
                assert "dlscope - inspect the native libraries" in " ".join(out.split()), out[:500]
