"""What the benches share: the median wall time of a command run several times, the children of
a process, and a synthetic trace in record's mix."""
import json
import os
import statistics
import subprocess
import time


# A CPython process of 64 threads, 63 of them a few calls deep in a sleep; "ready" once they are.
PYTHON_64_THREADS = r'''
import threading, time
def leaf(n):
    time.sleep(1000)
def deep(n):
    return deep(n - 1) if n else leaf(n)
for i in range(63):
    threading.Thread(target=deep, args=(i % 20,), daemon=True).start()
time.sleep(0.5)
print("ready", flush=True)
time.sleep(1000)
'''


def builds_and_runs(argv, default_runs):
    """The benches that compare builds: `[--runs N] [--dlscope PATH]...` out of @argv.
    Returns (the other arguments, runs, the binaries: each --dlscope, else ./dlscope)."""
    args, runs, builds = list(argv), default_runs, []
    while "--runs" in args or "--dlscope" in args:
        i = args.index("--runs") if "--runs" in args else args.index("--dlscope")
        if args[i] == "--runs":
            runs = int(args[i + 1])
        else:
            builds.append(os.path.abspath(args[i + 1]))
        del args[i:i + 2]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return args, runs, builds or [os.path.join(root, "dlscope")]


def tmux_screen(name):
    """The text on tmux session @name's screen."""
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True,
                          text=True).stdout


def tmux_wait(name, text, timeout=60):
    """Wait until @text is on session @name's screen; returns the monotonic time it was seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in tmux_screen(name):
            return time.monotonic()
        time.sleep(0.002)
    raise SystemExit(f"{text!r} never appeared:\n{tmux_screen(name)}")


def timed(argv, runs, ok=None):
    """Median seconds of @runs runs of @argv (output dropped); @ok: the exit codes allowed."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
        assert ok is None or p.returncode in ok, (argv, p.returncode)
    return statistics.median(times)


def children(pid):
    """The PIDs whose parent is @pid."""
    out = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                if d.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d))
        except (OSError, IndexError, ValueError):
            pass
    return out


def make_trace(path, n, host="bench", offset=0, pid=100, fmt="dlscope-trace/3"):
    """A trace of @n records in record's mix (a dlopen with its stack in ten, a futex wait in
    ten, dlsyms), on 8 threads of @pid, from @host whose clock is @offset ns off realtime."""
    hdr = {"type": "header", "format": fmt, "dlscope": "0.1.0", "host": host,
           "boot_id": host + "-boot", "clock": "CLOCK_MONOTONIC", "t0": 1_000_000,
           "realtime_minus_monotonic_ns": offset, "targets": [pid], "follow": False,
           "hot": False}
    stack = ["___dlopen+0x8a (libc.so.6)", "load+0x9 (bench)", "main+0x1ba (bench)"]
    with open(path, "w") as f:
        f.write(json.dumps(hdr) + "\n")
        t = 2_000_000
        for i in range(n):
            base = {"t": t, "pid": pid, "tid": pid + i % 8, "comm": "bench", "in_dlopen": 1}
            if i % 10 == 0:
                rec = dict(base, type="dlopen", path=f"libx{i % 97}.so",
                           file=f"/lib/libx{i % 97}.so", flags=2, handle=0x1000 + i,
                           duration_ns=500, stack=stack, stack_pc=[1, 2, 3], in_dlopen=0)
                t += 1000
            elif i % 10 == 9:
                rec = dict(base, type="futex_wait", futex=0x7000, duration_ns=300)
                t += 400
            else:
                rec = dict(base, type="dlsym", symbol=f"sym_{i % 1000}", handle=0x1000,
                           address=0x4000 + i)
                t += 50
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
        f.write(json.dumps({"type": "summary", "events": n, "lost": 0, "findings": 0}) + "\n")


def start_heartbeat(threads, prefix):
    """bench/heartbeat.c built in a new folder and started with @threads threads; it writes the
    longest gap its threads saw into a shared page. Returns (folder, exe, page path, process)."""
    import tempfile
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    work = tempfile.mkdtemp(prefix=prefix)
    exe = os.path.join(work, "heartbeat")
    subprocess.run(["cc", "-O2", "-g", "-pthread", "-o", exe, f"{root}/bench/heartbeat.c"],
                   check=True)
    shm = os.path.join(work, "gap")
    with open(shm, "wb") as f:
        f.write(bytes(4096))
    target = subprocess.Popen([exe, shm, str(threads)], stdout=subprocess.PIPE, text=True)
    return work, exe, shm, target
