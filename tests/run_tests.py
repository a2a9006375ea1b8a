#!/usr/bin/env python3
"""dlscope's test runner: the C unit tests, the end-to-end tests against live fixtures, real
software (tests/realworld) and another user's files (tests/security: as root).

Each unit test binary prints TAP lines ("ok N - name" / "not ok N - name"; "1..0 # SKIP why" is
a binary with nothing it can check here). Each e2e module in tests/e2e/ defines test_*
functions; a function that raises fails, one that raises Skip is skipped (BPF tests when not
root). The last line is "N passed, N failed[, N skipped]".

Tests run in parallel (-j, 2 per CPU by default: most of them wait on the processes they
inspect), each e2e test in one of -j worker processes (tests/run_tests.py --worker), which kill
the fixtures a test left after it. A test that must run alone says so (harness.serial, or
SERIAL = True in its module: figures of time or of the whole machine, processes found by
name); those run one at a time after the others. The slowest tests are listed before the last
line, and their times kept in BUILD/test-times.json to start the long ones first next time.
"""
import argparse
import importlib.util
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "tests", "security"))

import harness  # noqa: E402

E2E_DIRS = [os.path.join(ROOT, "tests", d) for d in ("e2e", "realworld", "security")]
UNIT_TIMEOUT = 300
# A test still running after this long is failed and its worker replaced (the suite never hangs).
TEST_TIMEOUT = 600
# Seconds of the tests seen slowest on the reference machine, for a fresh build's first run.
TIMES_SEED = os.path.join(ROOT, "tests", "test-times.json")


def load_modules():
    """{module name: module} of every test_*.py, in tests/e2e, tests/realworld, tests/security."""
    mods = {}
    for edir in E2E_DIRS:
        for fname in sorted(os.listdir(edir)):
            if fname.startswith("test_") and fname.endswith(".py"):
                spec = importlib.util.spec_from_file_location(fname[:-3],
                                                              os.path.join(edir, fname))
                mod = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(mod)
                mods[fname[:-3]] = mod
    return mods


def e2e_tests(mods, only):
    """[(full name, serial, plain)] of the e2e tests selected."""
    out = []
    for mname, mod in mods.items():
        for name in sorted(n for n in dir(mod) if n.startswith("test_")):
            full = f"{mname}.{name}"
            if only and not any(o in full for o in only):
                continue
            fn = getattr(mod, name)
            serial = bool(getattr(mod, "SERIAL", False) or getattr(fn, "serial", False))
            plain = bool(getattr(mod, "PLAIN", False) or getattr(fn, "plain", False))
            out.append((full, serial, plain))
    return out


def unit_tests(build, only):
    tdir = os.path.join(build, "tests")
    if not os.path.isdir(tdir):
        return []
    return [os.path.join(tdir, n) for n in sorted(os.listdir(tdir))
            if n.startswith("test_") and os.access(os.path.join(tdir, n), os.X_OK)
            and not (only and not any(o in n for o in only))]


def run_unit(path):
    """Runs one unit binary; returns a result dict (kind, name, passed, failed, skipped, text)."""
    name = os.path.basename(path)
    start = time.monotonic()
    res = {"name": f"unit {name}", "passed": 0, "failed": 0, "skipped": 0, "lines": []}
    try:
        proc = subprocess.run([path], capture_output=True, text=True, timeout=UNIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        res["failed"] = 1
        res["lines"].append(f"FAIL unit {name}: still running after {UNIT_TIMEOUT}s")
        return res
    seen = 0
    skip_all = None
    for line in proc.stdout.splitlines():
        if line.startswith("ok ") and "# SKIP" in line:
            res["skipped"] += 1
            seen += 1
        elif line.startswith("ok "):
            res["passed"] += 1
            seen += 1
        elif line.startswith("not ok "):
            res["failed"] += 1
            seen += 1
            res["lines"].append(f"FAIL unit {name}: {line}")
        elif line.startswith("1..0") and "# SKIP" in line:
            skip_all = line.split("# SKIP", 1)[1].strip()
    secs = time.monotonic() - start
    res["secs"] = secs
    if skip_all is not None and seen == 0 and proc.returncode == 0:
        res["skipped"] += 1
        res["lines"].append(f"skip unit {name}: {skip_all}")
    elif proc.returncode != 0 or seen == 0:
        res["failed"] += 1
        res["lines"].append(f"FAIL unit {name}: exit {proc.returncode}, {seen} results\n"
                            f"{proc.stderr}")
    else:
        res["lines"].append(f"ok   unit {name} ({seen} checks, {secs:.2f}s)")
    return res


def why_in_short(e):
    """A failure in a few hundred characters, for the summary at the end of the output: the test
    file's line that raised it, and the head and tail of its message (an assertion's message is
    most often a whole dlscope output)."""
    where = ""
    for fs in traceback.extract_tb(e.__traceback__):
        if os.path.abspath(fs.filename).startswith(os.path.join(ROOT, "tests")):
            where = f"{os.path.basename(fs.filename)}:{fs.lineno}: {fs.line} -- "
    msg = " | ".join(line.strip() for line in str(e).splitlines() if line.strip())
    msg = f"{type(e).__name__}: {msg}"
    if len(msg) > 900:
        msg = f"{msg[:300]} [...] {msg[-600:]}"
    return where + msg


def run_one(mods, full):
    """Runs one e2e test here; returns a result dict."""
    mname, name = full.split(".", 1)
    start = time.monotonic()
    res = {"name": full, "passed": 0, "failed": 0, "skipped": 0, "lines": []}
    try:
        fn = getattr(mods[mname], name)
        if (getattr(fn, "plain", False) or getattr(mods[mname], "PLAIN", False)) and \
                "san" in os.path.basename(harness.BUILD):
            raise harness.Skip("measures what the sanitizer build distorts (a time, a peak "
                               "RSS): run against the plain build")
        fn()
    except harness.Skip as e:
        res["skipped"] = 1
        res["lines"].append(f"skip {full}: {e}")
    except Exception as e:
        res["failed"] = 1
        res["lines"].append(f"FAIL {full}\n{traceback.format_exc()}")
        res["why"] = why_in_short(e)
    else:
        res["passed"] = 1
        res["lines"].append(f"ok   {full} ({time.monotonic() - start:.2f}s)")
    finally:
        harness.reap_all()
    res["secs"] = time.monotonic() - start
    return res


def worker_main():
    """--worker: reads test names on stdin, one a line; answers one JSON line each on the
    stdout it was given (the tests' own output goes to stderr)."""
    answer = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    parent = os.getppid()

    def orphaned():
        # The runner was killed: end the test's fixtures, then this worker's process group
        # (the dlscope runs of the test), instead of running on under init.
        while os.getppid() == parent:
            time.sleep(1)
        harness.reap_all()
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=orphaned, daemon=True).start()
    mods = load_modules()
    for line in sys.stdin:
        res = run_one(mods, line.strip())
        answer.write(json.dumps(res) + "\n")
        answer.flush()


class Worker:
    """A tests/run_tests.py --worker process, in its own process group."""

    def __init__(self, build):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker",
                                      "--build", build], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, start_new_session=True)

    def run(self, full):
        """The test's result, or a failure when the worker died or ran past TEST_TIMEOUT."""
        self.proc.stdin.write(full + "\n")
        self.proc.stdin.flush()
        got = []
        reader = threading.Thread(target=lambda: got.append(self.proc.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(TEST_TIMEOUT)
        if got and got[0]:
            return json.loads(got[0])
        why = (f"still running after {TEST_TIMEOUT}s" if not got else
               f"its worker died (exit {self.proc.poll()})")
        self.stop()
        return {"name": full, "passed": 0, "failed": 1, "skipped": 0, "secs": TEST_TIMEOUT,
                "lines": [f"FAIL {full}\n{why}"]}

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def run_pool(build, tasks, jobs, report):
    """Runs TASKS (("unit", path) or ("e2e", name)) on JOBS threads, each with its worker."""
    todo = queue.Queue()
    for t in tasks:
        todo.put(t)

    def thread():
        worker = None
        while True:
            try:
                kind, what = todo.get_nowait()
            except queue.Empty:
                break
            if kind == "unit":
                report(run_unit(what))
                continue
            if worker is None or not worker.alive():
                worker = Worker(build)
            report(worker.run(what))
        if worker:
            worker.stop()

    threads = [threading.Thread(target=thread) for _ in range(max(1, jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def read_json(path, default):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def write_json(path, what):
    try:
        with open(path + ".tmp", "w") as f:
            json.dump(what, f, indent=0)
        os.replace(path + ".tmp", path)
    except OSError:
        pass


def load_times(build):
    times = read_json(TIMES_SEED, {})
    times.update(read_json(os.path.join(build, "test-times.json"), {}))
    return times


def main():
    # The tests' Python programs as a fresh machine runs them: unbuffered (PYTHONUNBUFFERED, set
    # on this host), print() writes each of its pieces alone, and a line the test looks for
    # ("py: ...") came cut by the watch's own lines on the output they share.
    os.environ.pop("PYTHONUNBUFFERED", None)
    if "--worker" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--worker", action="store_true")
        ap.add_argument("--build", required=True)
        harness.BUILD = ap.parse_args().build
        return worker_main()
    ncpu = len(os.sched_getaffinity(0))
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("-j", "--jobs", type=int, default=int(os.environ.get("TEST_JOBS") or 0)
                    or 2 * ncpu, help="tests at once (default: TEST_JOBS, or 2 per CPU)")
    ap.add_argument("--serial-only", action="store_true",
                    help="run only the tests that must run alone")
    ap.add_argument("--parallel-only", action="store_true",
                    help="leave out the tests that must run alone (CI's sanitizer run: they "
                    "are timing-bound, and run plain in the fresh root)")
    ap.add_argument("--plain-after", metavar="DIR",
                    help="after the suite ran against the sanitizer build DIR: only what differs "
                    "in this build (the unit binaries, tests marked harness.plain, the tests "
                    "DIR's run skipped)")
    ap.add_argument("--slowest", type=int, default=10, help="list the N slowest tests")
    ap.add_argument("only", nargs="*", help="run only tests whose name contains one of these")
    args = ap.parse_args()
    build = os.path.abspath(os.path.join(ROOT, args.build))
    harness.BUILD = build
    times = load_times(build)

    units = [] if args.serial_only else unit_tests(build, args.only)
    tests = e2e_tests(load_modules(), args.only)
    if args.plain_after:
        skipped = set(read_json(os.path.join(ROOT, args.plain_after, "test-skipped.json"), []))
        tests = [t for t in tests if t[2] or t[0] in skipped]
    parallel = [("unit", u) for u in units] + [("e2e", n) for n, s, _ in tests
                                                if not s and not args.serial_only]
    serial = [] if args.parallel_only else [("e2e", n) for n, s, _ in tests if s]
    # The longest first: the last to finish is then a short one.
    parallel.sort(key=lambda t: -times.get(t[1] if t[0] == "e2e" else
                                           f"unit {os.path.basename(t[1])}", 1.0))

    counts = {"passed": 0, "failed": 0, "skipped": 0}
    seen, skipped, failed = {}, [], []
    lock = threading.Lock()

    def report(res):
        with lock:
            for k in counts:
                counts[k] += res[k]
            seen[res["name"]] = res.get("secs", 0.0)
            if res["skipped"] and not res["name"].startswith("unit "):
                skipped.append(res["name"])
            if res["failed"]:
                # A unit binary's or a worker's failure has no exception: its last line.
                why = res.get("why") or res["lines"][-1][-600:].replace("\n", " | ")
                failed.append((res["name"], why))
            for line in res["lines"]:
                print(line, flush=True)

    start = time.monotonic()
    run_pool(build, parallel, args.jobs, report)
    par_secs = time.monotonic() - start
    run_pool(build, serial, 1, report)
    wall = time.monotonic() - start

    # A run of some tests adds to what the last ones said.
    times = read_json(os.path.join(build, "test-times.json"), {})
    times.update({k: round(v, 2) for k, v in seen.items()})
    write_json(os.path.join(build, "test-times.json"), dict(sorted(times.items())))
    if not args.only and not args.plain_after and not args.serial_only and \
            not args.parallel_only:
        write_json(os.path.join(build, "test-skipped.json"), sorted(skipped))
    if args.slowest and seen:
        slow = sorted(seen.items(), key=lambda kv: -kv[1])[:args.slowest]
        print(f"{len(seen)} tests in {wall:.0f}s ({len(parallel)} on {args.jobs} workers: "
              f"{par_secs:.0f}s; {len(serial)} alone: {wall - par_secs:.0f}s); the slowest:")
        for name, secs in slow:
            print(f"  {secs:7.2f}s {name}")
    # Named again last, each with why in short: CI shows a log's tail, and the failures are far
    # above it.
    for name, why in failed:
        print(f"failed: {name}\n    {why}")
    line = f"{counts['passed']} passed, {counts['failed']} failed"
    if counts["skipped"]:
        line += f", {counts['skipped']} skipped"
    print(line)
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
