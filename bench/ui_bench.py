#!/usr/bin/env python3
"""dlscope ui under a flood: a generated trace of 500,000 dlsym events a second replayed in real
time, while keys are sent through tmux. Reports the time from send-keys to the screen showing
the key's effect, and the redraws per second. Not part of make test."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import tmux_screen, tmux_wait  # noqa: E402

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope") if build.endswith("/build") else \
    os.path.join(build, "dlscope")
RATE = int(os.environ.get("UI_BENCH_RATE", "500000"))      # events per second of trace time
SECONDS = float(os.environ.get("UI_BENCH_SECONDS", "4"))
KEYS = int(os.environ.get("UI_BENCH_KEYS", "40"))


def make_trace(path):
    t0 = 1_000_000_000
    n = int(RATE * SECONDS)
    step = 1e9 / RATE
    with open(path, "w") as f:
        f.write(json.dumps({"type": "header", "format": "dlscope-trace/1", "t0": t0,
                            "targets": [42]}) + "\n")
        f.write(json.dumps({"type": "loaded", "t": t0, "pid": 42, "path": "/bin/app",
                            "soname": None, "namespace": 0, "origin": "executable",
                            "needed_by": [], "roles": []}) + "\n")
        head = '{"type":"dlsym","t":%d,"pid":42,"tid":42,"comm":"app","in_dlopen":0,' \
               '"symbol":"sym_%d","handle":1,"address":%d}\n'
        for i in range(n):
            f.write(head % (t0 + int(i * step), i % 1000, 4096 + i))
        f.write(json.dumps({"type": "summary", "events": n, "lost": 0, "findings": 0}) + "\n")
    return n


def main():
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "flood.jsonl")
        t = time.monotonic()
        n = make_trace(trace)
        print(f"ui bench: {n} events, {RATE}/s of trace time for {SECONDS:g} s "
              f"(trace written in {time.monotonic() - t:.1f} s)")
        name = f"uibench-{os.getpid()}"
        log = os.path.join(d, "stats")
        subprocess.run(["tmux", "new-session", "-d", "-x", "160", "-y", "50", "-s", name,
                        "sh", "-c", f"DLSCOPE_UI_STATS=1 {dlscope} ui --replay {trace} "
                        f"2>{log}; echo EXIT=$?; sleep 600"], check=True)
        try:
            t = time.monotonic()
            tmux_wait(name, "replay", timeout=120)
            print(f"trace loaded and first screen in {time.monotonic() - t:.2f} s")
            subprocess.run(["tmux", "send-keys", "-t", name, "4", "Space"], check=True)
            tmux_wait(name, "playing")
            lat = []
            views = ["1 Processes", "2 Libraries", "3 Threads", "4 Events", "5 Findings"]
            for k in range(KEYS):
                target = views[(k + 4) % 5]
                key = target[0]
                t = time.monotonic()
                subprocess.run(["tmux", "send-keys", "-t", name, key], check=True)
                tmux_wait(name, f"[{target}]", timeout=10)
                lat.append((time.monotonic() - t) * 1000)
                time.sleep(0.05)
            s = tmux_screen(name)
            playing = "playing" in s
            subprocess.run(["tmux", "send-keys", "-t", name, "q"], check=True)
            tmux_wait(name, "EXIT=")
            stats = open(log).read().strip()
        finally:
            subprocess.run(["tmux", "kill-session", "-t", name], capture_output=True)
        lat.sort()
        print(f"key -> screen over {len(lat)} keys (tmux send-keys to capture-pane showing it, "
              f"polling every 2 ms): median {statistics.median(lat):.1f} ms, "
              f"p90 {lat[int(len(lat) * 0.9) - 1]:.1f} ms, max {lat[-1]:.1f} ms")
        print(f"still replaying while the keys were measured: {playing}")
        print(stats)


if __name__ == "__main__":
    main()
