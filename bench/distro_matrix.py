#!/usr/bin/env python3
"""What dlscope reads on each interpreter and C library production runs, measured, not assumed:
for every root made by debootstrap (Debian 11, 13, unstable; Ubuntu 22.04, 24.04: python3,
NumPy, OpenBLAS) and every interpreter on this machine (Debian 12's, pyenv's 3.6 to 3.13), a
table row per interpreter and per C library, each cell the outcome of a real run:

- frames: stacks' Python frames (function, file, line) equal faulthandler's dump, every thread
- GIL: the spinning thread is the one stacks says holds the GIL
- import: watch's record of `import decimal` names the import behind the dlopen
- loads: the dlopen of the extension is recorded; held: start-up and dlopen arrivals were held
  until their probes were in place; pool threads: check counts OpenBLAS's pool threads through
  glibc's thread list

    bench/distro_matrix.py [SUITE...]    (default: all; needs root and Debian's/Ubuntu's archive)
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests", "e2e"), os.path.join(HERE, "..", "tests")]

from distro_roots import DistroRoot  # noqa: E402
from harness import Fixture, Skip, dlscope, dlscope_path  # noqa: E402
import test_distros as td  # noqa: E402
import test_python as tp  # noqa: E402

ROOTS = {  # suite: the Pythons it has
    "bullseye": ["python3"], "trixie": ["python3"], "sid": ["python3"],
    "jammy": ["python3"], "noble": ["python3"],
}
PACKAGES = ["python3", "python3-numpy", "libopenblas0-pthread"]
SPIN = """import os, threading, time
def spin():
    while True:
        pass
threading.Thread(target=spin, name="spinner", daemon=True).start()
time.sleep(0.3)
print("ready", os.getpid(), flush=True)
time.sleep(1000)
"""
POOL = """import os, time, numpy
a = numpy.ones((400, 400)); a @ a
print("ready", os.getpid(), flush=True)
time.sleep(1000)
"""


def outcome(fn):
    try:
        fn()
        return "yes"
    except (AssertionError, Skip) as e:
        return "no: " + str(e).splitlines()[0][:60] if str(e) else "no"


def pid_of(fx, argv):
    return td.first_child(fx.pid) if "--pid" in argv else fx.pid


def gil(argv):
    def check():
        with Fixture(argv) as fx:
            doc = json.loads(dlscope("stacks", "--json", pid_of(fx, argv), check=0).stdout)
        holders = [t["python"]["name"] for t in doc["processes"][0]["threads"]
                   if t["python"] and t["python"]["holds_gil"]]
        assert holders == ["spinner"], holders
    return outcome(check)


def version_of(argv):
    with Fixture(argv) as fx:
        doc = json.loads(dlscope("stacks", "--json", pid_of(fx, argv), check=0).stdout)
    return doc["processes"][0]["python"]["version"]


def glibc_row(root, suite):
    argv = root.pivot_argv("python3", "-c", POOL)
    with Fixture(argv) as fx:
        pid = pid_of(fx, argv)
        libs = json.loads(dlscope("libs", "--json", pid, check=0).stdout)
        check = dlscope("check", pid, check=0).stdout
    objs = libs["processes"][0]["objects"] if "processes" in libs else libs["objects"]
    glibc = [r.get("label", "") for o in objs for r in o.get("roles", [])
             if r["impl"] == "glibc"]
    pool = re.search(r"(\d+) pool threads?", check)
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.jsonl")
        err = subprocess.run(
            [dlscope_path(), "record", "-f", "-o", trace, "--duration", "4", "--",
             *root.pivot_argv("python3", "-c",
                              "import time; time.sleep(0.5); import decimal; time.sleep(1)")],
            capture_output=True, text=True, timeout=120).stderr
        recs = [json.loads(ln) for ln in open(trace)]
    loads = any(r["type"] == "dlopen" and "_decimal" in (r.get("path") or "") and r["handle"]
                for r in recs)
    held = re.search(r"(\d+) arrivals held", err)
    return (f"| {suite} | {glibc[0] if glibc else '?'} | {'yes' if loads else 'no'} | "
            f"{held.group(1) + ' holds' if held else 'no'} | "
            f"{pool.group(1) if pool else 'none found'} |")


def host_import(python):
    """record of PYTHON importing decimal: the dlopen's import named."""
    def check():
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "t.jsonl")
            subprocess.run([dlscope_path(), "record", "-o", trace, "--", python, "-c",
                            "import time; time.sleep(0.3); import decimal; time.sleep(0.3)"],
                           capture_output=True, timeout=120, check=True)
            opens = [json.loads(ln) for ln in open(trace) if '"dlopen"' in ln]
        ours = [o for o in opens if "_decimal" in (o.get("path") or "")]
        assert ours and (ours[0].get("python") or {}).get("import") == "decimal", ours
    return outcome(check)


def host_rows():
    rows = []
    for python in tp.interpreters():
        version = version_of([python, "-c", SPIN])
        frames = outcome(lambda: tp.check_against_faulthandler(python))
        rows.append(f"| this machine: {python} | {version} | {frames} | "
                    f"{gil([python, '-c', SPIN])} | {host_import(python)} |")
    return rows


def main():
    suites = sys.argv[1:] or list(ROOTS)
    py, libc = host_rows() if not sys.argv[1:] else [], []
    for suite in suites:
        try:
            with DistroRoot(suite, PACKAGES) as root:
                argv_of = lambda code: root.pivot_argv("python3", "-c", code)  # noqa: E731
                version = version_of(argv_of(SPIN))
                minor = ".".join(version.split(".")[:2])
                frames = outcome(lambda: td.check_frames_as_faulthandler(
                    root, argv_of(td.THREADS_DUMPED), minor))
                imp = outcome(lambda: td.check_import(
                    td.record_import(root, argv_of(td.IMPORT_LATER)), minor))
                py.append(f"| {suite} | {version} | {frames} | {gil(argv_of(SPIN))} | {imp} |")
                libc.append(glibc_row(root, suite))
        except Skip as e:
            py.append(f"| {suite} | skipped: {e} | | | |")
    print("| root | Python | frames and lines = faulthandler | GIL holder | import |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(py))
    print()
    print("| root | C library | loads seen | held | OpenBLAS pool threads |")
    print("| --- | --- | --- | --- | --- |")
    print("\n".join(libc))


if __name__ == "__main__":
    main()
