#!/usr/bin/env python3
"""What watch sees of programs whose loader it had not probed before they ran, and what a dlopen
that maps nothing costs on glibc 2.41, for one or more builds, interleaved run by run:

- another root, cold: `watch -- chroot <Debian 11> python3` with an empty ELF cache, its python
  making 100 ctypes.CDLL("libm.so.6") calls at once: the window from its exec to its loader's
  probes (the note's figure), the dlopens seen (102: _ctypes', ctypes' dlopen(NULL) and the
  100), whether the summary says so
- glibc 2.41: the same loop in Debian 13's root: the loop's own time per call (measured by the
  python), holds, reads of the process, against the loop run unwatched
- static: a static glibc program that dlopens 20 times from the start of main: dlopens seen

    bench/late_start_bench.py [--runs N] [--dlscope PATH]...   (needs root and the CI roots)
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "tests", "e2e"), os.path.join(HERE, "..", "tests")]

from distro_roots import NUMPY_ROOT, DistroRoot  # noqa: E402
from harness import fixture_path  # noqa: E402

# Its figure on stderr: watch's own stdout is block-buffered and may cut into it.
LOOP = """import ctypes, sys, time
t = time.perf_counter()
for i in range(100):
    ctypes.CDLL("libm.so.6")
print("per-call-us", (time.perf_counter() - t) * 1e4, file=sys.stderr, flush=True)
"""


def watch(dlscope, argv, env=None):
    return subprocess.run([dlscope, "watch", "--", *argv], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, **(env or {})))


def window(out):
    """The note's window in ms: this build's wording, or an older one's ("until it was read")."""
    m = re.search(r"in the ([0-9.]+) ms from its exec to its probes", out) or \
        re.search(r"until it was read, ([0-9.]+) ms after its exec", out)
    return float(m[1]) if m else None


def summary_says(err):
    return "loader not probed yet" in err or "probes late" in err


def cold_root(dlscope, root):
    with tempfile.TemporaryDirectory() as cache:
        p = watch(dlscope, root.chroot_argv("python3", "-c", LOOP), {"DLSCOPE_CACHE_DIR": cache})
    seen = sum(" dlopen(" in ln for ln in p.stdout.splitlines())
    return window(p.stdout), seen, summary_says(p.stderr)


def count(pattern, text):
    m = re.search(pattern, text)
    return int(m[1]) if m else 0


def glibc241(dlscope, root):
    p = watch(dlscope, root.chroot_argv("python3", "-c", LOOP))
    m = re.search(r"per-call-us ([0-9.]+)", p.stderr)
    if not m:
        sys.exit(f"{dlscope}: the loop said nothing (exit {p.returncode}): {p.stderr[-400:]}")
    us = float(m[1])
    return (us, count(r"(\d+) library loads? paused", p.stderr),
            count(r"processes read (\d+) time", p.stderr))


def static(dlscope):
    p = watch(dlscope, [fixture_path("static_dlopen"), fixture_path("libplain.so"), "20"])
    return sum(" dlopen(" in ln for ln in p.stdout.splitlines())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dlscope", action="append",
                    help="a dlscope binary (repeat to compare builds); default ./dlscope")
    a = ap.parse_args()
    builds = a.dlscope or [os.path.join(HERE, "..", "dlscope")]
    res = {b: {"cold": [], "241": [], "static": []} for b in builds}
    bare = []
    with DistroRoot("bullseye", ["python3"]) as old, DistroRoot("trixie", NUMPY_ROOT) as new:
        for _ in range(a.runs):
            p = subprocess.run(new.chroot_argv("python3", "-c", LOOP), capture_output=True,
                               text=True, timeout=60)
            bare.append(float(re.search(r"per-call-us ([0-9.]+)", p.stderr)[1]))
            for b in builds:
                res[b]["cold"].append(cold_root(b, old))
                res[b]["241"].append(glibc241(b, new))
                res[b]["static"].append(static(b))
    print(f"Debian 13 loop unwatched: {statistics.median(bare):.1f} us a call (median of "
          f"{a.runs})")
    for b in builds:
        r = res[b]
        wins = [w for w, _, _ in r["cold"] if w is not None]
        print(f"\n{b}")
        print(f"  another root, cold cache: window {min(wins, default=0):.1f}-"
              f"{max(wins, default=0):.1f} ms ({len(wins)} of {a.runs} said); dlopens seen "
              f"{sorted(s for _, s, _ in r['cold'])} of 102; summary says it in "
              f"{sum(x for _, _, x in r['cold'])} of {a.runs}")
        print(f"  glibc 2.41 loaded library: {statistics.median(u for u, _, _ in r['241']):.1f} "
              f"us a call; holds {sorted(h for _, h, _ in r['241'])}; reads "
              f"{sorted(n for _, _, n in r['241'])}")
        print(f"  static program: dlopens seen {sorted(r['static'])} of 20")


if __name__ == "__main__":
    main()
