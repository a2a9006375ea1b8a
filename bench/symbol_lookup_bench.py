#!/usr/bin/env python3
"""Naming an address (elfobj__symbol_at) in this build and, with --old BUILD, another one: the
same program (bench/symbol_lookup.c) linked against each build's libdlscope-core.a, run on
libc's debug file (libc6-dbg). Prints ns per query for each; the first query of the new index
includes building it."""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def libc_debug():
    out = subprocess.run(["readelf", "-n", "/lib/x86_64-linux-gnu/libc.so.6"],
                         capture_output=True, text=True).stdout
    bid = next(l.split()[-1] for l in out.splitlines() if "Build ID" in l)
    return f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug"


def build_for(build, out):
    layers = [d for d in os.listdir(os.path.join(ROOT, "user")) if os.path.isdir(os.path.join(ROOT, "user", d))]
    cmd = ["cc", "-O2", "-std=gnu11", "-D_GNU_SOURCE", "-o", out,
           os.path.join(ROOT, "bench", "symbol_lookup.c")]
    cmd += [f"-I{os.path.join(ROOT, 'user', d)}" for d in layers]
    cmd += [os.path.join(build, "libdlscope-core.a"), "-ldw", "-lelf", "-lz", "-ljansson",
            "-lpthread", "-lstdc++"]
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--old", help="another build to compare (its libdlscope-core.a)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    target = libc_debug()
    if not os.path.exists(target):
        print(f"skipped: {target} is missing (libc6-dbg)")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        rows = [("this build", args.build)] + ([("old build", args.old)] if args.old else [])
        for label, build in rows:
            exe = os.path.join(tmp, label.replace(" ", "_"))
            build_for(os.path.abspath(build), exe)
            best = None
            for _ in range(args.runs):
                syms, named, ns = subprocess.run([exe, target], capture_output=True, text=True,
                                                 check=True).stdout.split()
                best = int(ns) if best is None else min(best, int(ns))
            print(f"{label}: {best} ns per query ({named} queries, {syms} symbols, best of {args.runs})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
