#!/usr/bin/env python3
"""The second real-world corpus as a user would run it: `check -- CMD` on each program (wall
time, objects, findings at warning or above), and `lint` of the system trees (files, objects,
findings, cold-ish and warm time). Programs whose package is missing are skipped.

Usage: bench/corpus_bench.py [BUILD]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = sys.argv[1] if len(sys.argv) > 1 else "build"
# The build folder's own binary (another build's, to compare), else the checkout's ./dlscope.
dlscope = os.path.join(build, "dlscope") if os.path.exists(os.path.join(build, "dlscope")) \
    else os.path.join(ROOT, "dlscope")
PY = "/usr/bin/python3"
JAVA = "/usr/lib/jvm/java-17-openjdk-amd64/bin"

PROGRAMS = [
    ("numba, torch", [PY, "-c", "import numba, torch"]),
    ("numba, pyopencl", [PY, "-c", "import numba, pyopencl"]),
    ("numba, torch, numpy, scipy, sklearn",
     [PY, "-c", "import numba, torch, numpy, scipy.linalg, sklearn.ensemble"]),
    ("matplotlib Agg", [PY, "-c", "import matplotlib; matplotlib.use('Agg'); "
                        "import matplotlib.pyplot as p; p.plot([1, 2]); p.savefig('/dev/null', format='png')"]),
    ("gnuradio blocks", [PY, "-c", "from gnuradio import gr, blocks, analog, filter, fft"]),
    ("torch, vtk", [PY, "-c", "import torch, vtk"]),
    ("pandas, h5py", [PY, "-c", "import pandas, h5py"]),
    ("PyQt5 widgets", [PY, "-c", "import PyQt5.QtWidgets"]),
    ("astropy", [PY, "-c", "import astropy.units, astropy.io.fits"]),
    ("octave A*A", ["octave-cli", "--eval", "A = rand(400); B = A * A;"]),
    ("R data.table", ["Rscript", "-e", "library(data.table); d <- data.table(a = 1:1e5); "
                      "x <- d[, .N, by = a %% 10]"]),
    ("node", ["node", "-e", "require('zlib').gzipSync('x'); require('crypto').randomBytes(8)"]),
    ("clinfo", ["clinfo", "-l"]),
]
LINT_TREES = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/python3/dist-packages", "/usr/lib/jvm",
              "/usr/lib/llvm-14", "/usr/lib/llvm-15"]


def check(argv):
    t0 = time.perf_counter()
    p = subprocess.run([dlscope, "check", "--json", "--", *argv], capture_output=True,
                       text=True, timeout=600)
    wall = time.perf_counter() - t0
    try:
        proc = json.loads(p.stdout)["processes"][0]
    except (ValueError, KeyError, IndexError):
        return wall, None, None
    serious = [f for f in proc["findings"] if f["severity"] in ("warning", "error")]
    return wall, proc["objects"], serious


def main():
    programs = objects = 0
    findings = []
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "Hello.java"), "w") as f:
            f.write("public class Hello { public static void main(String[] a) "
                    "{ System.out.println(a.length); } }\n")
        if os.path.exists(f"{JAVA}/javac"):
            subprocess.run([f"{JAVA}/javac", "Hello.java"], cwd=d, check=True)
            PROGRAMS.append(("java Hello", [f"{JAVA}/java", "-cp", d, "Hello"]))
        print(f"{'program':40} {'wall s':>7} {'objects':>8} {'warn+err':>8}")
        for name, argv in PROGRAMS:
            if not shutil.which(argv[0]) and not os.path.exists(argv[0]):
                print(f"{name:40} skipped: {argv[0]} not installed")
                continue
            wall, n, serious = check(argv)
            if n is None:
                print(f"{name:40} {wall:7.2f} did not run")
                continue
            programs += 1
            objects += n
            findings += serious
            print(f"{name:40} {wall:7.2f} {n:8} {len(serious):8}")
    print(f"check: {programs} programs, {objects} objects, {len(findings)} findings at warning "
          f"or above")
    trees = [t for t in LINT_TREES if os.path.isdir(t)]
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        p = subprocess.run([dlscope, "lint", "--json", *trees], capture_output=True, text=True,
                           timeout=900)
        times.append(time.perf_counter() - t0)
    doc = json.loads(p.stdout)
    sev = {}
    for f in doc["findings"]:
        sev[f["severity"]] = sev.get(f["severity"], 0) + 1
    print(f"lint {' '.join(trees)}: {doc['files_seen']} files, {doc['objects_checked']} ELF "
          f"objects, {len(doc.get('skipped', []))} skipped, {len(doc['unreadable'])} unreadable; "
          f"findings {sev}; first run {times[0]:.2f} s, warm median "
          f"{statistics.median(times[1:]):.2f} s (exit {p.returncode})")


if __name__ == "__main__":
    main()
