"""dlscope on other distributions' processes, inspected from the host as production has them:
Debian 11's glibc 2.31 (dlopen, dlsym and dlclose in libdl.so.2) and Python 3.9, in roots made
by debootstrap (distro_roots), run chroot-style and as a container engine runs them."""
import json
import os
import signal
import subprocess
import tempfile

from distro_roots import DistroRoot
from harness import Fixture, dlscope_path, wait_until

# Python in the root: ready, then at the test's word (a file) it imports decimal, whose
# extension _decimal and its libmpdec are dlopened after the attach; then it waits.
IMPORT_LATER = """import os, time
print('ready', os.getpid(), flush=True)
while not os.path.exists('/tmp/go'):
    time.sleep(0.01)
import decimal
h = __import__('_ctypes').dlopen('libm.so.6')
__import__('_ctypes').dlclose(h)
print('imported', flush=True)
time.sleep(60)
"""


def record_import(root, argv):
    """record -p of the python ARGV runs in ROOT while it imports decimal; the records."""
    with tempfile.TemporaryDirectory() as d, Fixture(argv) as fx:
        # The host's PID: under --pid the script's own is 1.
        pid = fx.pid if "--pid" not in argv else wait_until(
            lambda: [int(c) for c in open(f"/proc/{fx.pid}/task/{fx.pid}/children").read()
                     .split()], 10, "the container's first process")[0]
        trace = os.path.join(d, "t.jsonl")
        rec = subprocess.Popen([dlscope_path(), "record", "-o", trace, "-p", str(pid)],
                               stderr=subprocess.PIPE, text=True)
        try:
            line = rec.stderr.readline()
            assert "watching 1 process" in line, line + rec.stderr.read()
            open(os.path.join(root.dir, "tmp", "go"), "w").close()
            assert fx.proc.stdout.readline() == "imported\n"
            wait_until(lambda: '"dlclose"' in open(trace).read(), 20, "the dlclose recorded")
        finally:
            rec.send_signal(signal.SIGINT)
            err = rec.communicate(timeout=30)[1]
        assert rec.returncode == 0, err
        return [json.loads(ln) for ln in open(trace)]


def check_import(recs):
    opens = [r for r in recs if r["type"] == "dlopen" and "_decimal" in (r["path"] or "")]
    assert len(opens) == 1 and opens[0]["handle"], opens or [r["type"] for r in recs]
    # glibc 2.31's loader calls are in libdl.so.2: each one seen with its result.
    assert opens[0]["path"] == "/usr/lib/python3.9/lib-dynload/_decimal.cpython-39-x86_64-" \
        "linux-gnu.so", opens[0]
    py = opens[0].get("python")
    assert py and py["import"] == "decimal", opens[0]
    loaded = [r["path"] for r in recs if r["type"] == "loaded"]
    assert "/lib/x86_64-linux-gnu/libmpdec.so.3" in loaded, loaded
    closes = [r for r in recs if r["type"] == "dlclose"]
    assert closes and closes[-1]["result"] == 0, closes


def test_debian11_loads_are_seen_chroot_style():
    with DistroRoot("bullseye", ["python3"]) as root:
        check_import(record_import(root, root.chroot_argv("python3", "-c", IMPORT_LATER)))


def test_debian11_loads_are_seen_in_a_container():
    with DistroRoot("bullseye", ["python3"]) as root:
        check_import(record_import(root, root.pivot_argv("python3", "-c", IMPORT_LATER)))
