#!/usr/bin/env python3
"""dlscope's test runner: the C unit tests, then the end-to-end tests against live fixtures,
real software (tests/realworld) and another user's files (tests/security: as root).

Each unit test binary prints TAP lines ("ok N - name" / "not ok N - name"). Each e2e module in
tests/e2e/ defines test_* functions; a function that raises fails, one that raises Skip is
skipped (BPF tests when not root). The last line is "N passed, N failed[, N skipped]".
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "tests", "security"))

import harness  # noqa: E402


def run_unit(build, counts, only):
    tdir = os.path.join(build, "tests")
    if not os.path.isdir(tdir):
        return
    for name in sorted(os.listdir(tdir)):
        path = os.path.join(tdir, name)
        if not name.startswith("test_") or not os.access(path, os.X_OK):
            continue
        if only and not any(o in name for o in only):
            continue
        proc = subprocess.run([path], capture_output=True, text=True, timeout=300)
        seen = 0
        for line in proc.stdout.splitlines():
            if line.startswith("ok "):
                counts["passed"] += 1
                seen += 1
            elif line.startswith("not ok "):
                counts["failed"] += 1
                seen += 1
                print(f"FAIL unit {name}: {line}")
        if proc.returncode != 0 or seen == 0:
            counts["failed"] += 1
            print(f"FAIL unit {name}: exit {proc.returncode}, {seen} results\n{proc.stderr}")
        else:
            print(f"ok   unit {name} ({seen} checks)")


def run_e2e(counts, only):
    # e2e: dlscope against fixtures; realworld: against Debian's real software; security:
    # root on a shared host, against a second user's links, caches and names.
    modules = [(d, f) for d in (os.path.join(ROOT, "tests", "e2e"),
                                os.path.join(ROOT, "tests", "realworld"),
                                os.path.join(ROOT, "tests", "security"))
               for f in sorted(os.listdir(d))]
    for edir, fname in modules:
        if not (fname.startswith("test_") and fname.endswith(".py")):
            continue
        spec = importlib.util.spec_from_file_location(fname[:-3], os.path.join(edir, fname))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name in sorted(n for n in dir(mod) if n.startswith("test_")):
            full = f"{fname[:-3]}.{name}"
            if only and not any(o in full for o in only):
                continue
            start = time.monotonic()
            try:
                getattr(mod, name)()
            except harness.Skip as e:
                counts["skipped"] += 1
                print(f"skip {full}: {e}")
            except Exception:
                counts["failed"] += 1
                print(f"FAIL {full}\n{traceback.format_exc()}")
            else:
                counts["passed"] += 1
                print(f"ok   {full} ({time.monotonic() - start:.2f}s)")
            finally:
                harness.reap_all()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("only", nargs="*", help="run only tests whose name contains one of these")
    args = ap.parse_args()
    harness.BUILD = os.path.abspath(os.path.join(ROOT, args.build))
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    run_unit(harness.BUILD, counts, args.only)
    run_e2e(counts, args.only)
    line = f"{counts['passed']} passed, {counts['failed']} failed"
    if counts["skipped"]:
        line += f", {counts['skipped']} skipped"
    print(line)
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
