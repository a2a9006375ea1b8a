#!/usr/bin/env python3
"""What watching costs the target and every process beside it, whatever happens to dlscope
(docs/reliability.md, "What it costs"). Each row is measured for every build given, interleaved
round by round, with the medians printed beside the untraced run and bpftrace's entry and return
pair on the same function (the floor). Needs root (BPF), bpftrace and the fixtures (make).

    harm_bench.py [--runs N] [--dlscope PATH]... [--only dlopen,steady,where,dlsym,twin,sigcost,torch,programs,kill,nice,attach,signals]

Rows:
  dlopen   a dlopen of an object not loaded yet, under `watch -- PROG` (held once: then known
           to need no probes, let go at once); of a runtime again (held once: then its probes
           are in place); of a new copy of a runtime each time (held every time); and of 200
           distinct objects the process never had, the ELF cache warm and off; and of a
           library loaded already (a reference counted, nothing mapped), by glibc and by musl
  steady   a dlopen's steady cost: 1,500 dlopens of an object not loaded yet (the first hold's
           milliseconds, which the dlopen row's 300 carry, spread thin), under watch, with
           --ring-mb 1, and with watch stopped once the loop runs (its probes and programs
           alone: nothing holds while it is stopped)
  where    where a watched dlopen's extra time goes: the loop's thread off its CPU (preempted,
           by whom; waiting, on what), by the scheduler's tracepoint; the rest is on its CPU
           (the probes' traps and programs)
  dlsym    a dlsym in a loop: watched (default, and --dlsym), and the floor
  twin     the same loop in a process nobody watches, while `watch -p` (and `-f -p`) runs
  sigcost  a signal a process nobody watches sends itself, while `watch -p` runs (dlscope's
           signal_generate program, which lets holds go when dlscope is stopped or killed)
  torch    `import torch` under `watch -- python3 -c 'import torch'` (Debian's python3-torch)
  programs real programs from Debian's archive that load modules by dlopen, timed whole
           (start to exit) untraced and under `watch -q --`: each one installed is measured
  kill     SIGKILL and SIGSTOP (1.2 s) of watch: how long the target's dlopen and dlsym went
           on after the signal, at most (and its longest of the run, holds before included)
  nice     watch at nice 19 on a CPU a busy loop takes: the target's longest mprotect
  attach   8 attaches of watch --hot to four threads always inside the loader: false findings
  signals  stacks in a loop on a thread a 5 kHz timer signals: slow runs, signals lost
The stop each thread of a 200-thread process sees is bench/scale_bench.py's "stop" part.
"""
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

from timing import builds_and_runs

args, RUNS, BUILDS = builds_and_runs(sys.argv[1:], 5)
ONLY = None
if "--only" in args:
    i = args.index("--only")
    ONLY = set(args[i + 1].split(","))
    del args[i:i + 2]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "bench")
FX = os.path.join(ROOT, "build", "fixtures")
LIBC = "/lib/x86_64-linux-gnu/libc.so.6"
# A runtime (a GPU module loader, a stand-in): a dlopen of it is held until its probes are in
# place, the first time (dlopen_new_loop's "fresh" maps a new copy each time).
HELD_LIB = f"{FX}/stubcuda/libcuda.so.1"
# hold_victim maps a new copy of its library for each dlopen, each held while it is analysed: a
# plain one, whose copies get no probes (a runtime's would each get theirs, hundreds a run).
VICTIM_LIB = f"{FX}/libplain.so"
os.makedirs(OUT, exist_ok=True)

if os.geteuid() != 0:
    print("harm bench: needs root (BPF); skipped")
    sys.exit(0)
for prog in ("dlopen_new_loop", "dlopen_each", "dlsym_loop", "signal_loop"):
    subprocess.run(["cc", "-O2", "-o", f"{OUT}/{prog}", f"{ROOT}/bench/{prog}.c", "-ldl"],
                   check=True)
# The same loop on musl (Debian's musl-tools), with a library built for it by the fixtures.
MUSL_LOOP = f"{OUT}/dlopen_new_loop_musl" if shutil.which("musl-gcc") else None
if MUSL_LOOP:
    subprocess.run(["musl-gcc", "-O2", "-o", MUSL_LOOP, f"{ROOT}/bench/dlopen_new_loop.c"],
                   check=True)


def name(build):
    return os.path.relpath(build, ROOT) if build.startswith(ROOT) else build


def wanted(row):
    return ONLY is None or row in ONLY


def number(pattern, text):
    m = re.search(pattern, text)
    assert m, (pattern, text[-2000:])
    return float(m.group(1))


def reapers_gone(timeout=30):
    """Until the reaper of the last watch has closed its links (fdreaper.h): each close waits
    for grace periods, for a second or two after watch ended, and a run started meanwhile
    pays for that teardown, not for its own watch (it made torch's row swing by 10 points)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and subprocess.run(["pgrep", "-x", "dlscope-reaper"],
                                                    capture_output=True).returncode == 0:
        time.sleep(0.05)


def interleaved(configs, runs, measure):
    """{config: median of measure(argv)} over @runs rounds, one run of each config a round."""
    vals = {k: [] for k in configs}
    order = list(configs)
    rng = random.Random(1)
    for _ in range(runs):
        # A new order each round: the first run after another's, whatever the machine keeps
        # between them (page cache, the kernel's reclaim), is not always one config's.
        rng.shuffle(order)
        for k in order:
            reapers_gone()
            vals[k].append(measure(configs[k]))
    return {k: statistics.median(v) for k, v in vals.items()}


def cache_env(argv):
    """Each build its own cache folder: a build does not trust another's ELF analyses, so
    builds run in turn would each find the cache cold (torch: +20% instead of +9%). The first
    run of each build warms it; the cold figure is the one with no cache at all."""
    if argv[0] not in BUILDS:
        return None
    d = os.path.join(OUT, "cache", str(abs(hash(os.path.realpath(argv[0])))))
    os.makedirs(d, exist_ok=True)
    return dict(os.environ, DLSCOPE_CACHE_DIR=d)


def run_out(argv, timeout=600):
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          env=cache_env(argv)).stdout


def floor_pair(fn, prog):
    """bpftrace's empty probes at entry and return of @fn in libc, around @prog."""
    return ["bpftrace", "-e", f"uprobe:{LIBC}:{fn} {{}} uretprobe:{LIBC}:{fn} {{}}", "-c",
            " ".join(prog)]


def under_watch(configs, prog, *opts):
    """@configs with `watch -q OPTS -- PROG` of each build added, named after it."""
    for b in BUILDS:
        configs[f"watch {' '.join(opts) + ' ' if opts else ''}({name(b)})"] = \
            [b, "watch", "-q", *opts, "--", *prog]
    return configs


def print_dlopens(title, configs):
    """The median of each config's "N us per dlopen", beside the untraced one's."""
    med = interleaved(configs, RUNS, lambda a: number(r"([\d.]+) us per dlopen", run_out(a)))
    base = med["untraced"]
    print(f"{title}, median of {RUNS}:")
    for k, v in med.items():
        print(f"  {k:34s} {v:8.1f} us  (+{v - base:.1f} us)")


def row_dlopen():
    prog = [f"{OUT}/dlopen_new_loop", "300", f"{FX}/libplain.so"]
    print_dlopens("dlopen of a new object (libplain.so, 300 a run)",
                  under_watch({"untraced": prog,
                               "bpftrace entry+uretprobe": floor_pair("dlopen", prog)}, prog))
    prog = [f"{OUT}/dlopen_new_loop", "300", HELD_LIB]
    print_dlopens("dlopen of a runtime again, its probes in place (a stand-in libcuda.so.1, "
                  "300 a run)",
                  under_watch({"untraced": prog,
                               "bpftrace entry+uretprobe": floor_pair("dlopen", prog)}, prog))
    prog = [f"{OUT}/dlopen_new_loop", "2000", f"{FX}/libplain.so", "held"]
    print_dlopens("dlopen of a library loaded already (each round only counts a reference, "
                  "2000 a run)",
                  under_watch({"untraced": prog,
                               "bpftrace entry+uretprobe": floor_pair("dlopen", prog)}, prog))
    if MUSL_LOOP and os.path.exists(f"{FX}/musl/libplain.so"):
        prog = [MUSL_LOOP, "2000", f"{FX}/musl/libplain.so", "held"]
        print_dlopens("a musl program's dlopen of a library loaded already (2000 a run)",
                      under_watch({"untraced": prog}, prog))
    prog = [f"{OUT}/dlopen_new_loop", "300", HELD_LIB, "fresh"]
    print_dlopens("dlopen of a runtime never seen, held each time (a new copy of it each "
                  "time, 300 a run)",
                  under_watch({"untraced": prog,
                               "bpftrace entry+uretprobe": floor_pair("dlopen", prog)}, prog))


def with_cache_off(configs, prog):
    """@configs with the newest build's watch without its ELF cache: the first watch on a
    machine, every object analysed in its hold."""
    configs[f"watch, cache off ({name(BUILDS[-1])})"] = \
        ["env", "DLSCOPE_CACHE=off", BUILDS[-1], "watch", "-q", "--", *prog]
    return configs


TRACING = "/sys/kernel/tracing"
LOOP_COMM = "dlopen_new_loop"  # the comm the kernel keeps: 15 characters


def tracefs(path, value):
    with open(os.path.join(TRACING, path), "w") as f:
        f.write(value)


def off_cpu(trace):
    """{why: (ms, times)} of the loop's thread off its CPU though not asleep by its own
    choice (a sleep or a futex wait), from sched_switch records with kernel stacks."""
    out, went, cur = {}, {}, None
    for line in trace.splitlines():
        m = re.search(r"(\d+\.\d+): sched_switch: prev_comm=(.*) prev_pid=(\d+) .*"
                      r"prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)", line)
        if m:
            t, pcomm, pid, state, ncomm, npid = m.groups()
            cur = None
            if pcomm == LOOP_COMM:
                cur = went[pid] = {"t": float(t), "state": state[0], "next": ncomm, "st": []}
            if ncomm == LOOP_COMM and npid in went:
                w = went.pop(npid)
                waited = " ".join(w["st"])
                if w["state"] == "S" and ("nanosleep" in waited or "futex" in waited):
                    continue
                if w["state"] == "R":
                    why = f"preempted by {w['next']}"
                else:
                    why = " < ".join([f.split("+")[0] for f in w["st"] if "schedule" not in f
                                      and "trace" not in f][:3])
                ms, n = out.get(why, (0.0, 0))
                out[why] = (ms + (float(t) - w["t"]) * 1e3, n + 1)
        elif line.startswith(" => ") and cur is not None:
            cur["st"].append(line[4:].strip())
    return out


def row_where():
    """The loop's time off its CPU while watched, per dlopen, against its whole extra time."""
    loops = 2000
    prog = [f"{OUT}/dlopen_new_loop", str(loops), f"{FX}/libplain.so"]
    if not os.path.isdir(os.path.join(TRACING, "events", "sched")):
        print("where: tracefs is not mounted at /sys/kernel/tracing; skipped")
        return
    base = statistics.median(number(r"([\d.]+) us per dlopen", run_out(prog))
                             for _ in range(RUNS))
    print(f"where a watched dlopen's extra time goes ({loops} dlopens and dlcloses of "
          f"libplain.so, one traced run a build; untraced {base:.1f} us, median of {RUNS}):")
    for b in BUILDS:
        reapers_gone()
        tracefs("buffer_size_kb", "30000")
        tracefs("trace", "")
        tracefs("events/sched/sched_switch/filter",
                f'prev_comm == "{LOOP_COMM}" || next_comm == "{LOOP_COMM}"')
        tracefs("events/sched/sched_switch/trigger", f'stacktrace if prev_comm == "{LOOP_COMM}"')
        tracefs("events/sched/sched_switch/enable", "1")
        try:
            per = number(r"([\d.]+) us per dlopen", run_out([b, "watch", "-q", "--", *prog]))
        finally:
            tracefs("events/sched/sched_switch/enable", "0")
            tracefs("events/sched/sched_switch/trigger",
                    f'!stacktrace if prev_comm == "{LOOP_COMM}"')
            tracefs("events/sched/sched_switch/filter", "0")
        with open(os.path.join(TRACING, "trace")) as f:
            waits = off_cpu(f.read())
        off = sum(ms for ms, _ in waits.values()) * 1e3 / loops
        print(f"  ({name(b)}): {per:.1f} us per dlopen (+{per - base:.1f} us), of which off "
              f"its CPU {off:.1f} us, on it {per - base - off:.1f} us")
        for why, (ms, n) in sorted(waits.items(), key=lambda kv: -kv[1][0])[:5]:
            print(f"      {ms * 1e3 / loops:7.1f} us  {n:6d}x  {why}")
        on_cpu_parts(b, prog)


def on_cpu_parts(build, prog):
    """The loop's CPU time in the kernel's uprobe paths, by perf's samples of the loop alone:
    int3 traps (with the programs they run), the programs alone, and single-steps (a probed
    instruction the kernel cannot emulate, such as a ret)."""
    if not shutil.which("perf"):
        print("      (perf is not installed: the on-CPU part is not split)")
        return
    data = os.path.join(OUT, "where.perf")
    ran = subprocess.run(["perf", "record", "-q", "-g", "-o", data, "--", build, "watch", "-q",
                          "--", *prog], capture_output=True, text=True, env=cache_env([build]))
    # The shares are of the sampled run, which perf slows: its own time a dlopen.
    per = number(r"([\d.]+) us per dlopen", ran.stdout)
    rep = subprocess.run(["perf", "report", "-i", data, "--comms", LOOP_COMM, "--children",
                          "--sort", "sym", "-g", "none", "--percentage", "relative", "-q"],
                         capture_output=True, text=True).stdout
    share = {}
    for line in rep.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+[\d.]+%\s+\[k\] (\S+)", line)
        if m:
            share.setdefault(m.group(2), float(m.group(1)))
    for what, sym in (("int3 traps, with their programs", "asm_exc_int3"),
                      ("the BPF programs alone", "uprobe_prog_run"),
                      ("single-steps (debug traps)", "asm_exc_debug")):
        print(f"      {share.get(sym, 0.0) * per / 100:7.1f} us  {what}: {share.get(sym, 0.0):.1f}% "
              f"of the loop's samples, of {per:.0f} us a dlopen under perf")


def row_steady():
    loops, wait_ms = 1500, 400
    prog = [f"{OUT}/dlopen_new_loop", str(loops), f"{FX}/libplain.so"]
    env = dict(os.environ, DLOPEN_NEW_LOOP_WAIT_MS=str(wait_ms))
    configs = {"untraced": prog}
    for b in BUILDS:
        configs[f"watch ({name(b)})"] = [b, "watch", "-q", "--", *prog]
        configs[f"watch --ring-mb 1 ({name(b)})"] = [b, "watch", "-q", "--ring-mb", "1", "--",
                                                    *prog]
        configs[f"watch, stopped ({name(b)})"] = ["stopped", b, "watch", "-q", "--", *prog]

    def measure(argv):
        stop = argv[0] == "stopped"
        argv = argv[1:] if stop else argv
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=dict(cache_env(argv) or os.environ, **env))
        if stop:
            # Attached (about 0.15 s) and the loop still asleep: stopped for the whole loop.
            time.sleep(wait_ms / 1000 - 0.05)
            p.send_signal(signal.SIGSTOP)
            time.sleep(loops * 1.2e-3 + 0.5)
            p.send_signal(signal.SIGCONT)
        return number(r"([\d.]+) us per dlopen", p.communicate(timeout=600)[0])

    med = interleaved(configs, RUNS, measure)
    base = med["untraced"]
    print(f"a dlopen's steady cost ({loops} dlopens of libplain.so a run), median of {RUNS}:")
    for k, v in med.items():
        print(f"  {k:40s} {v:8.1f} us  (+{v - base:.1f} us)")


def row_dlopen_distinct():
    libdir = os.path.join(OUT, "libs200")
    subprocess.run([os.path.join(ROOT, "bench", "gen_libs.sh"), libdir, "200"], check=True)
    prog = [f"{OUT}/dlopen_each", os.path.join(libdir, "list.txt")]
    print_dlopens("dlopen of 200 objects the process never had (gen_libs.sh)",
                  with_cache_off(under_watch({"untraced": prog}, prog), prog))


def row_dlsym():
    prog = [f"{OUT}/dlsym_loop", "200000"]
    configs = {"untraced": prog, "bpftrace entry+uretprobe": floor_pair("dlsym", prog)}
    for b in BUILDS:
        configs[f"watch ({name(b)})"] = [b, "watch", "-q", "--", *prog]
        if "--dlsym" in run_out([b, "watch", "--help"]):
            configs[f"watch --dlsym ({name(b)})"] = [b, "watch", "-q", "--dlsym", "--", *prog]
    med = interleaved(configs, RUNS, lambda a: 1e6 / number(r"(\d+) calls/s", run_out(a)))
    print(f"dlsym in a loop, a watched process, median of {RUNS}:")
    for k, v in med.items():
        print(f"  {k:34s} {v:8.3f} us per call")


def beside_watch(build, follow, measure):
    """measure() while `watch -p` (with -f: probes in every process) watches an idle process:
    what a process nobody watches pays beside it."""
    idle = subprocess.Popen(["sleep", "60"])
    w = subprocess.Popen([build, "watch", "-q", *(["-f"] if follow else []), "-p",
                          str(idle.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert w.stderr.readline().startswith("dlscope: watching")
        return measure()
    finally:
        w.send_signal(signal.SIGINT)
        w.communicate(timeout=60)
        idle.kill()
        idle.wait()


def dlsym_cost():
    return 1e6 / number(r"(\d+) calls/s", run_out([f"{OUT}/dlsym_loop", "300000"]))


def row_twin():
    vals = {"untraced": []}
    for _ in range(RUNS):
        vals["untraced"].append(dlsym_cost())
        for b in BUILDS:
            for follow in (False, True):
                k = f"watch {'-f ' if follow else ''}-p other ({name(b)})"
                vals.setdefault(k, []).append(beside_watch(b, follow, dlsym_cost))
    print(f"dlsym in a loop in a process nobody watches, while another is watched, "
          f"median of {RUNS}:")
    for k, v in vals.items():
        print(f"  {k:34s} {statistics.median(v):8.3f} us per call")


def signal_cost():
    """A signal's cost to a process nobody watches: beside a watch, the collector's
    signal_generate program (holds.bpf.h) runs for every signal sent on the host."""
    return number(r"([\d.]+) ns per signal", run_out([f"{OUT}/signal_loop", "300000"]))


def row_sigcost():
    vals = {"untraced": []}
    for _ in range(RUNS):
        vals["untraced"].append(signal_cost())
        for b in BUILDS:
            vals.setdefault(f"watch -p other ({name(b)})", []).append(
                beside_watch(b, False, signal_cost))
    print(f"a signal a process nobody watches sends itself, while another is watched, "
          f"median of {RUNS}:")
    for k, v in vals.items():
        print(f"  {k:34s} {statistics.median(v):8.1f} ns per signal")


def row_torch():
    py = "/usr/bin/python3"
    if subprocess.run([py, "-c", "import torch"], capture_output=True).returncode:
        print("import torch: python3-torch is not installed; skipped")
        return
    prog = [py, "-c", "import time; t = time.monotonic(); import torch; "
            "print(f'import {time.monotonic() - t:.3f} s')"]
    configs = with_cache_off(under_watch({"untraced": prog}, prog), prog)
    med = interleaved(configs, RUNS, lambda a: number(r"import ([\d.]+) s", run_out(a)))
    base = med["untraced"]
    print(f"import torch, median of {RUNS}:")
    for k, v in med.items():
        print(f"  {k:34s} {v:8.3f} s  ({100 * (v / base - 1):+.0f}%)")


# Each loads its modules with dlopen (Python's extension modules, Perl's XS by DynaLoader, Tcl's
# `load`, R's packages) and times that part itself, as the torch row does: watch's own start
# (its probes attached before the command runs) and end are not the command's time.
PROGRAMS = (
    ("python3: import matplotlib.pyplot, lxml.etree",
     ["/usr/bin/python3", "-c", "import time; t = time.monotonic(); "
      "import matplotlib.pyplot, lxml.etree; print(f'elapsed {time.monotonic() - t:.6f}')"]),
    ("perl: DBI, DBD::SQLite and a query",
     ["perl", "-MTime::HiRes=time", "-e", 'BEGIN { $t = time } use DBI; '
      'DBI->connect("dbi:SQLite::memory:")->selectrow_array("select 1"); '
      'printf("elapsed %.6f\\n", time - $t)']),
    ("tclsh: package require sqlite3 and a query",
     ["tclsh8.6", "/dev/stdin"]),
    ("Rscript: library(data.table)",
     ["Rscript", "-e", "t <- proc.time()[['elapsed']]; library(data.table); "
      "cat(sprintf('elapsed %.6f\\n', proc.time()[['elapsed']] - t))"]),
)
TCL_SCRIPT = ("set t [clock microseconds]; package require sqlite3; sqlite3 db :memory:; "
              "db eval {select 1}; puts \"elapsed [expr {([clock microseconds] - $t) / 1e6}]\"\n")


def row_programs():
    def measure(argv):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=600,
                           env=cache_env(argv),
                           input=TCL_SCRIPT if "tclsh8.6" in argv else None)
        return number(r"elapsed ([\d.]+)", r.stdout)

    print(f"real programs' loading, timed by each program itself, median of {RUNS}:")
    for label, prog in PROGRAMS:
        if not shutil.which(prog[0]):
            print(f"  {label}: {prog[0]} is not installed; skipped")
            continue
        med = interleaved(under_watch({"untraced": prog}, prog), RUNS, measure)
        base = med["untraced"]
        print(f"  {label}:")
        for k, v in med.items():
            print(f"    {k:32s} {v * 1e3:8.1f} ms  ({100 * (v / base - 1):+.0f}%)")


def victim(build, sig):
    """(after the signal: the longest dlopen, dlsym; the run's longest dlopen; watch's time to
    die) of hold_victim while watch gets @sig."""
    marks = os.path.join(OUT, "hold_victim.marks")
    if os.path.exists(marks):
        os.unlink(marks)

    def mark():
        with open(marks, "a") as f:
            f.write(f"{time.monotonic() * 1e3:.3f}\n")
    v = subprocess.Popen([f"{FX}/hold_victim", VICTIM_LIB, "3", marks],
                         stdout=subprocess.PIPE, text=True)
    v.stdout.readline()
    w = subprocess.Popen([build, "watch", "-q", "-p", str(v.pid)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    w.stderr.readline()
    time.sleep(1)
    t = time.monotonic()
    mark()
    w.send_signal(sig)
    if sig == signal.SIGKILL:
        w.wait()
        gone = time.monotonic() - t
    else:
        time.sleep(1.2)
        mark()
        w.send_signal(signal.SIGCONT)
        w.send_signal(signal.SIGINT)
        w.wait()
        gone = 0
    out = v.communicate(timeout=30)[0]
    return (number(r"after the mark: longest dlopen ([\d.]+) ms", out),
            number(r"after the mark: .*longest dlsym ([\d.]+) ms", out),
            number(r"longest dlopen ([\d.]+) ms of", out), gone)


def row_kill():
    print(f"how long the target's dlopen / another thread's dlsym went on after watch was "
          f"killed or stopped for 1.2 s, at most; the run's longest dlopen, holds included; "
          f"median of {RUNS}:")
    for sig in (signal.SIGKILL, signal.SIGSTOP):
        for b in BUILDS:
            got = [victim(b, sig) for _ in range(RUNS)]
            med = [statistics.median(x[i] for x in got) for i in range(4)]
            worst = max(max(x[0], x[1]) for x in got)
            print(f"  {signal.Signals(sig).name:8s} ({name(b)}): dlopen {med[0]:7.1f} ms, "
                  f"dlsym {med[1]:7.1f} ms, worst {worst:7.1f} ms; longest of the run "
                  f"{med[2]:7.1f} ms"
                  + (f"; watch gone in {med[3]:.2f} s" if sig == signal.SIGKILL else ""))


def mprotect_worst(build):
    """The longest mprotect of a target loading objects, while watch runs at nice 19 on the
    CPU of a busy loop (both pinned to CPU 0); None: no watch."""
    busy = subprocess.Popen(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"])
    v = subprocess.Popen(["taskset", "-c", "0", f"{FX}/hold_victim", VICTIM_LIB, "4"],
                         stdout=subprocess.PIPE, text=True)
    v.stdout.readline()
    w = None
    if build:
        w = subprocess.Popen(["taskset", "-c", "0", "nice", "-n", "19", build, "watch", "-q",
                              "-p", str(v.pid)], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    out = v.communicate(timeout=60)[0]
    if w:
        w.send_signal(signal.SIGINT)
        w.wait()
    busy.kill()
    busy.wait()
    return number(r"longest dlopen ([\d.]+) ms", out)


def row_nice():
    vals = {"untraced": []}
    for _ in range(RUNS):
        vals["untraced"].append(mprotect_worst(None))
        for b in BUILDS:
            vals.setdefault(f"watch at nice 19 ({name(b)})", []).append(mprotect_worst(b))
    print(f"the target's longest dlopen (mmap, mprotect) on a CPU a busy loop shares, median "
          f"of {RUNS}:")
    for k, v in vals.items():
        print(f"  {k:34s} {statistics.median(v):8.1f} ms (worst {max(v):.1f} ms)")


def row_attach():
    print("8 attaches of watch --hot to dlopen_spin (four threads always in the loader):")
    for b in BUILDS:
        spin = subprocess.Popen([f"{FX}/dlopen_spin", f"{FX}/libplain.so"],
                                stdout=subprocess.PIPE, text=True)
        spin.stdout.readline()
        false, held = 0, 0
        for _ in range(8):
            p = subprocess.run([b, "watch", "--hot", "-p", str(spin.pid), "--duration", "0.7"],
                               capture_output=True, text=True, timeout=60)
            false += "loader-lock-hazard" in p.stdout
            held += "arrivals held" in p.stderr
        spin.kill()
        spin.wait()
        print(f"  ({name(b)}): {false} of 8 with a false loader-lock-hazard, {held} of 8 "
              f"holding dlcloses")


def row_signals():
    print("stacks again and again for 3 s on signal_storm (a 5 kHz timer signal):")
    for b in BUILDS:
        v = subprocess.Popen([f"{FX}/signal_storm", "5000", "3"], stdout=subprocess.PIPE,
                             text=True)
        v.stdout.readline()
        runs, slow = 0, 0
        while v.poll() is None:
            t = time.monotonic()
            subprocess.run([b, "stacks", str(v.pid)], capture_output=True)
            runs += 1
            slow += time.monotonic() - t > 1
        out = v.stdout.read()
        m = re.search(r"handled (\d+) overruns (\d+) due (\d+)", out)
        print(f"  ({name(b)}): {runs} runs, {slow} over 1 s; expirations handled or overrun "
              f"{int(m.group(1)) + int(m.group(2))} of {m.group(3)}")


for row, fn in (("dlopen", row_dlopen), ("dlopen", row_dlopen_distinct), ("steady", row_steady),
                ("where", row_where),
                ("dlsym", row_dlsym), ("twin", row_twin), ("sigcost", row_sigcost),
                ("torch", row_torch), ("programs", row_programs), ("kill", row_kill), ("nice", row_nice),
                ("attach", row_attach), ("signals", row_signals)):
    if wanted(row):
        fn()
        sys.stdout.flush()
