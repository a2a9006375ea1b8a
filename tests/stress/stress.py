#!/usr/bin/env python3
"""The kill-and-race campaign (issue 15; `make stress`, a short run in CI).

Every subcommand runs against targets that change under it (churn: dlopen/dlclose, fork,
thread and exec loops, a target that exits) and is SIGKILLed at a random moment, or left to
finish. After every trial:
  - no target, and no command `check --` started, is left stopped or traced;
  - no dlscope process is left;
  - no BPF program of dlscope's stays loaded (watch, record);
  - a run that finished found nothing on these clean targets and exited with a documented code.
The figures go to stdout (and docs/reliability.md quotes them). Exit 1 on the first violation.

Then (root) the early GPU campaign: a GPU module load made right after its runtime arrives
(hipModuleLoadData at once after the dlopen of Debian's libamdhip64.so.5, and as the first call
of a program that links it; cuModuleLoadData the same on the stub libcuda), recorded with the
collector at nice 19 pinned to the program's CPU: seen in every run, nothing lost, no hold late.
--gpu-runs runs of each (default: a quarter of the trials, 200 for the default 800).

usage: stress.py [--build DIR] [--trials N] [--gpu-runs N] [--seed S]
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Program names of bpf/dlwatch.bpf.c as the kernel lists them (15 characters at most).
BPF_PROGS = {"dlopen_enter", "dlmopen_enter", "dlopen_exit", "dlclose_enter", "dlclose_exit",
             "dlsym_enter", "dlsym_exit", "omp_fork_enter", "blas_thread_ent", "cuda_load_enter",
             "cuda_load_exit", "gpu_build_enter", "handle_exec", "handle_fork", "handle_exit",
             "handle_signal", "handle_futex_en", "handle_futex_ex"}
DOCUMENTED_EXITS = {0, 1, 3, 4}  # fine, findings, could not inspect, the command failed


class Violation(Exception):
    pass


def proc_status(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return fields["State"].split()[0], int(fields["TracerPid"])
    except (OSError, KeyError, ValueError):
        return None, 0


def tree(pid):
    """@pid and its live descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def with_marker(marker):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if marker.encode() in f.read():
                        out.append(int(d))
            except OSError:
                pass
    return out


def our_bpf_progs():
    if not shutil.which("bpftool"):
        return 0
    p = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True)
    try:
        return sum(1 for prog in json.loads(p.stdout or "[]") if prog.get("name") in BPF_PROGS)
    except json.JSONDecodeError:
        return 0


def poll(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


class Target:
    def __init__(self, fixtures, argv):
        self.proc = subprocess.Popen([os.path.join(fixtures, argv[0]), *argv[1:]],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        if not line.startswith("ready"):
            raise RuntimeError(f"target {argv} did not start")
        self.pid = int(line.split()[1])

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


HIP = "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"


def gpu_campaign(dlscope, fixtures, runs, tmp):
    """Each early GPU case @runs times: {case: runs seen}; raises Violation on the first miss."""
    cpu = str(sorted(os.sched_getaffinity(0))[-1])
    stub = os.path.join(fixtures, "stubcuda", "libcuda.so.1")
    cases = [("hip after dlopen", ["early_gpu", "hip"], "hipModuleLoadData", 101),
             ("hip linked", ["early_hip_linked"], "hipModuleLoadData", 101),
             ("cuda stub after dlopen", ["early_gpu", "cuda", stub], "cuModuleLoadData", 0),
             ("cuda stub linked", ["early_cuda_linked"], "cuModuleLoadData", 0)]
    if not os.path.exists(HIP):
        print(f"  (the HIP cases are left out: {HIP} is not installed)")
        cases = cases[2:]
    trace = os.path.join(tmp, "gpu.jsonl")
    seen = {}
    for name, argv, fn, result in cases:
        seen[name] = 0
        for run in range(runs):
            cmd = ["nice", "-n", "19", "taskset", "-c", cpu, dlscope, "record", "-o", trace,
                   "--", "taskset", "-c", cpu, os.path.join(fixtures, argv[0]), *argv[1:]]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            if p.returncode not in (0, 4):
                raise Violation(f"gpu {name}: exit {p.returncode}: {p.stderr}")
            recs = [json.loads(line) for line in open(trace) if line.strip()]
            loads = [(r["function"], r["result"]) for r in recs if r["type"] == "gpu_load"]
            summary = [r for r in recs if r["type"] == "summary"]
            if loads != [(fn, result)]:
                raise Violation(f"gpu {name}: run {run}: loads {loads}, want {[(fn, result)]}")
            if not summary or summary[0]["lost"] or summary[0]["holds_late"]:
                raise Violation(f"gpu {name}: run {run}: {summary}")
            seen[name] += 1
    return seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--trials", type=int, default=300)
    ap.add_argument("--gpu-runs", type=int, default=None)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    args = ap.parse_args()
    build = os.path.abspath(os.path.join(ROOT, args.build))
    fixtures = os.path.join(build, "fixtures")
    dlscope = os.path.join(ROOT, "dlscope") if build.endswith("/build") else \
        os.path.join(build, "dlscope")
    root = os.geteuid() == 0
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="dlscope-stress-")
    plain = os.path.join(fixtures, "libplain.so")
    targets = [["churn", "dlopen", plain], ["churn", "fork"], ["churn", "threads"],
               ["churn", "exec", "30"], ["churn", "exit", "40"], ["dlopen_list", plain]]
    # (name, argv with {pid}, longest run before the kill in seconds)
    commands = [
        ("libs", ["libs", "{pid}"], 0.05),
        ("libs --json", ["libs", "--json", "{pid}"], 0.05),
        ("check", ["check", "--json", "{pid}"], 0.1),
        ("stacks", ["stacks", "--json", "{pid}"], 0.1),
        ("check --", ["check", "--json", "--", os.path.join(fixtures, "churn"), "exit", "40",
                      "stress-{marker}"], 0.1),
        ("lint", ["lint", fixtures], 0.2),
    ]
    if root:
        commands += [("watch", ["watch", "-q", "-p", "{pid}", "--duration", "1"], 0.6),
                     ("record", ["record", "-o", os.path.join(tmp, "t.jsonl"), "-p", "{pid}",
                                 "--duration", "1"], 0.6)]
    stats = {name: {"trials": 0, "killed": 0, "finished": 0} for name, _, _ in commands}
    progs_before = our_bpf_progs()
    live_target = [None]  # killed however the campaign ends
    start = time.monotonic()
    try:
        for trial in range(args.trials):
            name, argv, longest = commands[trial % len(commands)]
            target = Target(fixtures, rng.choice(targets))
            live_target[0] = target
            marker = f"{rng.randrange(10**6) + 1000}"
            full = [dlscope] + [a.format(pid=target.pid, marker=marker) for a in argv]
            kill = rng.random() < 0.75
            p = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True, start_new_session=True)
            try:
                if kill:
                    time.sleep(rng.uniform(0, longest))
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                raise Violation(f"{name}: still running after 120 s: {full}")
            err = p.stderr.read()
            s = stats[name]
            s["trials"] += 1
            s["killed" if p.returncode == -signal.SIGKILL else "finished"] += 1
            if p.returncode != -signal.SIGKILL and p.returncode not in DOCUMENTED_EXITS:
                raise Violation(f"{name}: exit {p.returncode} ({full}): {err}")
            # Nothing of the target's is stopped or traced once dlscope is gone.
            def released():
                return all(proc_status(t)[0] not in ("t", "T") and proc_status(t)[1] == 0
                           for t in tree(target.pid))
            if not poll(released):
                raise Violation(f"{name}: target {target.pid} left stopped or traced: "
                                f"{[(t, proc_status(t)) for t in tree(target.pid)]}")
            if name == "check --" and not poll(lambda: not with_marker(f"stress-{marker}")):
                raise Violation(f"check --: the command outlived the check: "
                                f"{with_marker('stress-' + marker)}")
            if not poll(lambda: not [q for q in tree(p.pid) if q != p.pid]):
                raise Violation(f"{name}: dlscope's children outlived it")
            if name in ("watch", "record") and not poll(
                    lambda: our_bpf_progs() <= progs_before, 10):
                raise Violation(f"{name}: BPF programs left loaded ({our_bpf_progs()})")
            if name == "check" and p.returncode == 1:
                raise Violation(f"check: a finding on a clean target ({full})")
            target.kill()
        gpu_runs = args.gpu_runs if args.gpu_runs is not None else args.trials // 4
        gpu_start = time.monotonic()
        gpu = gpu_campaign(dlscope, fixtures, gpu_runs, tmp) if root and gpu_runs else {}
        gpu_took = time.monotonic() - gpu_start
    except Violation as v:
        print(f"FAIL after {sum(s['trials'] for s in stats.values())} trials "
              f"(seed {args.seed}): {v}")
        return 1
    finally:
        if live_target[0]:
            live_target[0].kill()
        shutil.rmtree(tmp, ignore_errors=True)
    took = time.monotonic() - start
    total = sum(s["trials"] for s in stats.values())
    print(f"stress: {total} trials in {took:.0f} s (seed {args.seed}), 0 violations")
    for name, s in stats.items():
        print(f"  {name:12s} {s['trials']:4d} trials: {s['killed']:4d} SIGKILLed at a random "
              f"moment, {s['finished']:4d} ran to the end")
    print("  after each: no target stopped or traced, no command left behind, no dlscope "
          "child left" + (", no BPF program left" if root else "") +
          ", no finding on a clean target")
    if gpu:
        print(f"early GPU loads, collector at nice 19 on the program's CPU ({gpu_took:.0f} s):")
        for name, n in gpu.items():
            print(f"  {name:24s} seen in {n} of {gpu_runs} runs, 0 lost, no hold late")
    return 0


if __name__ == "__main__":
    sys.exit(main())
