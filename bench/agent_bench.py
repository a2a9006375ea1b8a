#!/usr/bin/env python3
"""dlscope agent's cost on a node (docs/agent.md): a hundred idle processes and one loading and
unloading a library a thousand times a second, with the agent watching everything for a minute.
Prints the agent's CPU (percent of one CPU over the run, from /proc/PID/stat) and peak RSS, the
churning process's time per dlopen+dlclose pair without the agent and with it (what the probes
cost a process per call), and the events the agent saw and lost; then a dlsym's cost, and the
agent's CPU while a shell loop starts short commands. Needs root (BPF).

    agent_bench.py [--secs S] [--idle N] [--rate R] [--dlscope PATH]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "bench")

ap = argparse.ArgumentParser()
ap.add_argument("--secs", type=float, default=60)
ap.add_argument("--idle", type=int, default=100)
ap.add_argument("--rate", type=int, default=1000)
ap.add_argument("--dlscope", default=os.path.join(ROOT, "dlscope"))
args = ap.parse_args()
if os.geteuid() != 0:
    print("agent bench: needs root (BPF); skipped")
    sys.exit(0)
os.makedirs(OUT, exist_ok=True)
for prog in ("dlopen_rate", "dlsym_loop"):
    subprocess.run(["cc", "-O2", "-o", f"{OUT}/{prog}", f"{ROOT}/bench/{prog}.c", "-ldl"],
                   check=True)
with open(f"{OUT}/agent_churn.c", "w") as f:
    f.write("int agent_churn_value(void) { return 42; }\n")
subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", f"{OUT}/libagent_churn.so",
                f"{OUT}/agent_churn.c"], check=True)
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def churn(secs):
    p = subprocess.run([f"{OUT}/dlopen_rate", f"{OUT}/libagent_churn.so", str(args.rate),
                        str(secs)], capture_output=True, text=True, check=True)
    m = re.search(r"pairs (\d+) mean_us ([\d.]+) p99_us ([\d.]+)", p.stdout)
    return int(m.group(1)), float(m.group(2)), float(m.group(3))


def dlsym_us():
    """One dlsym's time in a process of its own (the agent probes dlsym's entry)."""
    p = subprocess.run([f"{OUT}/dlsym_loop", "200000"], capture_output=True, text=True,
                       check=True)
    return 1e6 / float(p.stdout.split()[0])


idle = [subprocess.Popen(["sleep", "100000"]) for _ in range(args.idle)]
try:
    short = max(5.0, args.secs / 6)
    base = churn(short)
    sym_base = dlsym_us()
    with tempfile.TemporaryDirectory() as tf:
        agent = subprocess.Popen([args.dlscope, "agent", "--textfile-dir", tf],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        line = agent.stderr.readline()
        if "watching" not in line:
            sys.exit(f"agent did not start: {line}{agent.stderr.read()}")
        time.sleep(1)
        c0, t0 = cpu_s(agent.pid), time.monotonic()
        watched = churn(args.secs)
        c1, t1 = cpu_s(agent.pid), time.monotonic()
        sym_watched = dlsym_us()
        # A node's other load: a shell loop starting short commands, each a fork, an exec and
        # an exit the agent sees.
        c2, t2 = cpu_s(agent.pid), time.monotonic()
        storm = subprocess.run(["bash", "-c", f"n=0; end=$((SECONDS + {int(short)})); "
                                "while [ $SECONDS -lt $end ]; do /bin/true; n=$((n+1)); "
                                "done; echo $n"], capture_output=True, text=True, check=True)
        c3, t3 = cpu_s(agent.pid), time.monotonic()
        spawned = int(storm.stdout.split()[-1])
        prom = open(f"{tf}/dlscope.prom").read()
        hwm = int(re.search(r"VmHWM:\s+(\d+)", open(f"/proc/{agent.pid}/status").read()).group(1))
        agent.terminate()
        _, err = agent.communicate(timeout=60)
    after = churn(short)
finally:
    for p in idle:
        p.kill()
        p.wait()

procs = re.search(r"^dlscope_agent_processes (\d+)", prom, re.M).group(1)
events = re.search(r"^dlscope_agent_events_total (\d+)", prom, re.M).group(1)
lost = re.search(r"^dlscope_agent_lost_events_total (\d+)", prom, re.M).group(1)
print(f"agent bench: {args.idle} idle processes, one dlopen+dlclose pair at {args.rate}/s, "
      f"{args.secs:.0f} s watched (this machine: {os.cpu_count()} CPUs)")
print(f"  agent CPU: {100 * (c1 - c0) / (t1 - t0):.2f}% of one CPU "
      f"({c1 - c0:.2f} s over {t1 - t0:.1f} s); peak RSS {hwm / 1024:.1f} MiB")
print(f"  its last file: {procs} processes, {events} events, {lost} lost")
print(f"  a pair without the agent: mean {base[1]:.1f} us, p99 {base[2]:.1f} us "
      f"(after it: {after[1]:.1f} / {after[2]:.1f}); with it: mean {watched[1]:.1f} us, "
      f"p99 {watched[2]:.1f} us ({watched[0]} pairs): +{watched[1] - base[1]:.1f} us a pair")
print(f"  a shell loop of /bin/true, {spawned / (t3 - t2):.0f} commands/s for {t3 - t2:.0f} s: "
      f"agent CPU {100 * (c3 - c2) / (t3 - t2):.2f}% of one CPU")
print(f"  a dlsym: {sym_base:.2f} us without the agent, {sym_watched:.2f} us with it "
      f"(+{sym_watched - sym_base:.2f} us: its entry probe)")
print("  " + err.strip().splitlines()[-1])
