"""dlscope merge: several nodes' traces as one. Two real traces of a fixture that loads two
OpenMP runtimes are recorded here; the second is made another node's by rewriting its header's
host, boot id and realtime offset (a known offset, so the merged times are known) and its PID to
the first trace's (another host's PID namespace reuses PIDs). The merged trace is then read by
check, report, export --perfetto and ui --replay. The Slurm script and the Kubernetes manifest
in deploy/ are checked too."""
import heapq
import json
import os
import re
import shutil
import subprocess
import tempfile

from harness import ROOT, Skip, dlscope, error_lines, dlscope_path, fixture_path, is_root, \
    serial
from test_export import check_format
from test_ui import Tui, have_tmux

STRIDE = 1 << 22  # a merged trace's Nth host's processes, in export and ui: N * 2^22 + PID


def load(path):
    return [json.loads(line) for line in open(path)]


def write(path, recs):
    with open(path, "w") as f:
        for r in recs:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")


def header(host, boot="b00t", offset=0, fmt="dlscope-trace/3"):
    return {"type": "header", "format": fmt, "dlscope": "0.1.0", "host": host, "boot_id": boot,
            "kernel": "6.1", "glibc": "2.36", "clock": "CLOCK_MONOTONIC", "t0": 1,
            "realtime_minus_monotonic_ns": offset, "targets": [], "follow": False, "hot": False}


def two_nodes(d):
    """Two real traces of two_omp; the second rewritten to be node-b's. Returns the paths, the
    records as written, node-b's offset and the PID both nodes' processes have."""
    if not is_root():
        raise Skip("recording a trace needs root")
    a, b = os.path.join(d, "trace-a.jsonl"), os.path.join(d, "trace-b.jsonl")
    for p in (a, b):
        dlscope("record", "-o", p, "--duration", "2", "--", fixture_path("two_omp"), check=1)
    A, B = load(a), load(b)
    exec_a = next(r for r in A if r["type"] == "exec")
    exec_b = next(r for r in B if r["type"] == "exec")
    pid, pid_b = exec_a["pid"], exec_b["pid"]
    # node-b's clock: its exec lands 1 us after node a's on the common (realtime) clock.
    off_a = A[0]["realtime_minus_monotonic_ns"]
    off_b = off_a + exec_a["t"] - exec_b["t"] + 1000
    B[0].update(host="node-b", boot_id="0b0b0b0b-1111-2222-3333-444455556666",
                realtime_minus_monotonic_ns=off_b)
    for r in B[1:]:
        for k in ("pid", "tid", "child"):
            if r.get(k) == pid_b:
                r[k] = pid
    write(b, B)
    return a, b, A, B, off_b, pid


def expected_merge(inputs):
    """The k-way merge by time on the realtime clock; a record without a time keeps its place."""
    streams = []
    for idx, (recs, label) in enumerate(inputs):
        off, last, out = recs[0]["realtime_minus_monotonic_ns"], 0, []
        for r in recs[1:]:
            if r["type"] == "summary":
                continue
            r = dict(r)
            if isinstance(r.get("t"), int):
                r["t"] = last = r["t"] + off
            r["host"] = label
            out.append((last, idx, r))
        streams.append(out)
    return [r for _, _, r in heapq.merge(*streams, key=lambda x: (x[0], x[1]))]


def test_merge_two_nodes_aligns_clocks_keeps_hosts_apart_and_every_reader_reads_it():
    with tempfile.TemporaryDirectory() as d:
        a, b, A, B, off_b, pid = two_nodes(d)
        host_a = A[0]["host"]
        assert A[0].get("boot_id") == open("/proc/sys/kernel/random/boot_id").read().strip()
        m = os.path.join(d, "job.jsonl")
        dlscope("merge", a, b, "-o", m, check=0)
        M = load(m)
        hdr = M[0]
        assert hdr["clock"] == "CLOCK_REALTIME" and hdr["realtime_minus_monotonic_ns"] == 0
        assert hdr["hosts"] == [host_a, "node-b"], hdr
        ins = hdr["inputs"]
        assert [(i["host"], i["path"], i["records"]) for i in ins] == \
            [(host_a, a, len(A) - 1), ("node-b", b, len(B) - 1)], ins
        assert ins[1]["realtime_minus_monotonic_ns"] == off_b and \
            ins[1]["boot_id"].startswith("0b0b0b0b") and ins[0]["kernel"] == A[0]["kernel"]
        assert hdr["t0"] == min(A[0]["t0"] + A[0]["realtime_minus_monotonic_ns"],
                                B[0]["t0"] + off_b)
        # Every record, in the order of a k-way merge by realtime, each with its host.
        body, summary = M[1:-1], M[-1]
        assert body == expected_merge([(A, host_a), (B, "node-b")])
        # The known offset: node-b's exec is node a's plus 1 us, the records interleave.
        ex = [r for r in body if r["type"] == "exec"]
        assert [r["host"] for r in ex] == [host_a, "node-b"], ex
        assert ex[0]["t"] == next(r for r in A if r["type"] == "exec")["t"] + \
            A[0]["realtime_minus_monotonic_ns"] and ex[1]["t"] == ex[0]["t"] + 1000, ex
        hosts = [r["host"] for r in body]
        assert hosts.index("node-b") < len(hosts) - 1 - hosts[::-1].index(host_a), hosts
        assert summary["type"] == "summary" and \
            summary["events"] == A[-1]["events"] + B[-1]["events"] and \
            summary["findings"] == 2, summary

        # check: both nodes' findings, the two processes of PID `pid` kept apart.
        doc = json.loads(dlscope("check", "--json", m, check=1).stdout)
        procs = {(p["host"], p["pid"]): p for p in doc["processes"]}
        assert set(procs) == {(host_a, pid), ("node-b", pid)}, procs
        assert all([f["id"] for f in p["findings"]] == ["dup-openmp"] for p in procs.values())
        text = dlscope("check", m, check=1).stdout
        assert f"host {host_a}: process {pid} (two_omp): 1 finding" in text and \
            f"host node-b: process {pid} (two_omp): 1 finding" in text, text

        # report: each node's runtimes under its own process.
        md = os.path.join(d, "report.md")
        dlscope("report", "-o", md, m, check=0)
        rep = open(md).read()
        for h in (host_a, "node-b"):
            assert re.search(rf"^\| {re.escape(h)}: {pid} \(.*\| GNU libgomp \|", rep, re.M), rep
            assert f"| {h} {pid} | finding dup-openmp" in rep, rep

        # export --perfetto: a valid trace with two processes, named with their host.
        out = os.path.join(d, "job.json")
        dlscope("export", "--perfetto", m, "-o", out, check=0)
        ev = json.load(open(out))
        by_ph = check_format(ev)
        names = {e["pid"]: e["args"]["name"] for e in by_ph["M"] if e["name"] == "process_name"}
        assert names == {pid: f"{host_a}: two_omp {pid}",
                         STRIDE + pid: f"node-b: two_omp {pid}"}, names
        assert sorted(e["pid"] for e in by_ph["i"] if e["cat"] == "finding") == \
            [pid, STRIDE + pid]

        # ui --replay: two processes, the second host's shown as 2^22 + PID.
        have_tmux()
        with Tui(["--replay", m]) as ui:
            ui.wait_for("replay")
            ui.keys("}")
            # All three on one capture: one can fall between the header and the rows.
            ui.wait_for((f"record {len(M)}/{len(M)}",
                         re.compile(rf"^{pid}\s.*two_omp", re.M),
                         re.compile(rf"^{STRIDE + pid}\s.*two_omp", re.M)))
            assert ui.quit_and_status()[0] == 0


def one_line_error(proc, *words):
    assert error_lines(proc) == 1 and proc.stderr.startswith("dlscope: merge: "), proc
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)


def test_merge_refuses_what_it_cannot_merge_with_one_line():
    with tempfile.TemporaryDirectory() as d:
        p = lambda n: os.path.join(d, n)  # noqa: E731
        write(p("n1.jsonl"), [header("n1", offset=10),
                              {"type": "exec", "t": 5, "pid": 1, "tid": 1, "comm": "x"}])
        write(p("n2.jsonl"), [header("n2", offset=20)])
        write(p("n1-again.jsonl"), [header("n1", offset=30)])
        write(p("n1-noboot.jsonl"), [dict(header("n1"), boot_id=None)])
        write(p("n1-reboot.jsonl"), [header("n1", boot="f00dfeed-2", offset=40),
                                     {"type": "exec", "t": 6, "pid": 1, "tid": 1, "comm": "y"}])
        write(p("future.jsonl"), [header("n3", fmt="dlscope-trace/99")])
        write(p("nooffset.jsonl"), [{k: v for k, v in header("n4").items()
                                     if k != "realtime_minus_monotonic_ns"}])
        with open(p("text.jsonl"), "w") as f:
            f.write("hello\n")
        open(p("empty.jsonl"), "w").close()
        out = p("out.jsonl")
        with open(out, "w") as f:
            f.write("keep me\n")
        n1, n2 = p("n1.jsonl"), p("n2.jsonl")
        one_line_error(dlscope("merge", n1, p("text.jsonl"), "-o", out, check=3),
                       "text.jsonl is not a dlscope trace")
        one_line_error(dlscope("merge", p("empty.jsonl"), n1, "-o", out, check=3), "empty")
        one_line_error(dlscope("merge", n1, p("future.jsonl"), "-o", out, check=3),
                       '"dlscope-trace/99"', "does not read")
        one_line_error(dlscope("merge", n1, p("nooffset.jsonl"), "-o", out, check=3),
                       "realtime_minus_monotonic_ns")
        one_line_error(dlscope("merge", n1, n2, p("n1-again.jsonl"), "-o", out, check=3),
                       "n1.jsonl and", "n1-again.jsonl are both from host n1")
        one_line_error(dlscope("merge", n1, p("n1-noboot.jsonl"), "-o", out, check=3),
                       "no boot id tells them apart")
        one_line_error(dlscope("merge", n1, n1, "-o", out, check=3), "both from host n1")
        one_line_error(dlscope("merge", n1, p("missing.jsonl"), "-o", out, check=3),
                       "cannot read", "No such file")
        one_line_error(dlscope("merge", n1, d, "-o", out, check=3), "is a directory")
        one_line_error(dlscope("merge", n1, n2, "-o", n2, check=3), "is the input", "overwrite")
        assert load(n2) == [header("n2", offset=20)]
        one_line_error(dlscope("merge", n1, check=2), "-o")
        # Every refusal left the existing output as it was, and no temporary file.
        assert open(out).read() == "keep me\n"
        assert sorted(os.listdir(d)) == sorted(
            ["n1.jsonl", "n2.jsonl", "n1-again.jsonl", "n1-noboot.jsonl", "n1-reboot.jsonl",
             "future.jsonl", "nooffset.jsonl", "text.jsonl", "empty.jsonl", "out.jsonl"])
        # A merged trace is no input: its nodes' traces are.
        dlscope("merge", n1, n2, "-o", out, check=0)
        one_line_error(dlscope("merge", out, p("n1-reboot.jsonl"), "-o", p("x.jsonl"), check=3),
                       "already a merged trace")
        # One host name with two boot ids: two hosts (their PIDs are unrelated), named apart.
        dlscope("merge", n1, p("n1-reboot.jsonl"), "-o", out, check=0)
        M = load(out)
        assert M[0]["hosts"] == ["n1/b00t", "n1/f00dfeed"], M[0]
        assert [(r["host"], r["t"]) for r in M[1:-1]] == [("n1/b00t", 15), ("n1/f00dfeed", 46)]


def test_check_reads_a_trace_and_refuses_what_is_none():
    with tempfile.TemporaryDirectory() as d:
        t = os.path.join(d, "t.jsonl")
        finding = {"type": "finding", "t": 5, "pid": 9, "tid": 9, "id": "dup-openmp",
                   "severity": "error", "title": "2 OpenMP runtimes", "evidence": ["a", "b"],
                   "why": "w", "remedy": "r", "stack": ["f+0x1 (x)"], "stack_pc": [1]}
        write(t, [header("n1"), {"type": "exec", "t": 4, "pid": 9, "tid": 9, "comm": "x"},
                  finding])
        s = dlscope("check", t, check=1).stdout
        assert "process 9 (x): 1 finding" in s and "error dup-openmp: 2 OpenMP runtimes" in s \
            and "#0  f+0x1 (x)" in s, s
        dlscope("check", "--fail-on", "error", "--only", "deadlock", t, check=0)
        proc = dlscope("check", os.path.join(d, "none.jsonl"), check=3)
        assert proc.stderr.count("\n") == 1 and "cannot read" in proc.stderr, proc.stderr
        with open(t, "w") as f:
            f.write("{}\n")
        proc = dlscope("check", t, check=3)
        assert proc.stderr.count("\n") == 1 and "is not a dlscope trace" in proc.stderr, proc


def yaml_docs(path):
    # Debian's python3-yaml, in /usr/bin/python3 (the runner's python may lack it).
    proc = subprocess.run(["/usr/bin/python3", "-c", "import json, sys, yaml; "
                           "print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
                           path], capture_output=True, text=True)
    if proc.returncode and "No module named 'yaml'" in proc.stderr:
        raise Skip("python3-yaml is not installed")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_record_names_its_trace_after_the_host():
    if not is_root():
        raise Skip("recording a trace needs root")
    host = os.uname().nodename
    with tempfile.TemporaryDirectory() as d:
        # The command's end ends the run (a --duration could end it before the second
        # runtime's arrival on a loaded machine, and the finding's status 1 with it).
        dlscope("record", "-o", os.path.join(d, "trace-%h-%%.jsonl"), "--duration", "60", "--",
                fixture_path("two_omp"), env={"FIXTURE_EXIT": "0"}, check=1)
        assert os.listdir(d) == [f"trace-{host}-%.jsonl"], os.listdir(d)
        assert load(os.path.join(d, f"trace-{host}-%.jsonl"))[0]["host"] == host
        p = dlscope("record", "-o", os.path.join(d, "t-%x.jsonl"), "--", "true", check=2)
        assert "-o" in p.stderr and "%" in p.stderr and len(p.stderr.splitlines()) <= 3, p.stderr
        assert os.listdir(d) == [f"trace-{host}-%.jsonl"], os.listdir(d)


def test_kubernetes_daemonset_has_what_record_needs():
    docs = yaml_docs(os.path.join(ROOT, "deploy", "k8s", "dlscope-daemonset.yaml"))
    ds = next(x for x in docs if x["kind"] == "DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    assert ds["apiVersion"] == "apps/v1" and \
        ds["spec"]["selector"]["matchLabels"].items() <= \
        ds["spec"]["template"]["metadata"]["labels"].items()
    assert spec["hostPID"] is True
    c = spec["containers"][0]
    sc = c["securityContext"]
    assert sc.get("privileged") is True or \
        {"BPF", "PERFMON", "SYS_PTRACE"} <= set(sc["capabilities"]["add"]), sc
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    host = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"]}
    for path in ("/sys/kernel/debug", "/sys/kernel/tracing", "/sys/fs/bpf"):
        assert path in mounts.values() and \
            host[next(n for n, p in mounts.items() if p == path)] == path, (path, mounts, host)
    traces = next(n for n, p in mounts.items() if p == "/traces")
    assert host[traces].startswith("/var/lib/dlscope")
    script = " ".join(c["command"] + c["args"])
    assert re.search(r"dlscope record --comm \S+ -o \"/traces/trace-\$NODE_NAME\.jsonl\"", script)
    assert any(e["name"] == "NODE_NAME" and
               e["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName" for e in c["env"])


def test_slurm_script_parses():
    """bash -n; the recipe itself runs on a real Slurm in test_slurm.py."""
    sbatch = os.path.join(ROOT, "deploy", "slurm", "dlscope-record.sbatch")
    subprocess.run(["bash", "-n", sbatch], check=True)


def test_every_reader_of_traces_says_the_same_of_a_file_that_is_none():
    """check, report, export, merge and ui --replay read traces through one reader: a file that
    is no trace, an empty one and one of a newer format get one line each, the same words from
    every command, and exit 3."""
    cases = {"not json\n": "is not a dlscope trace (its first line is no trace header; make "
                           "one with 'dlscope record')",
             "": "is not a dlscope trace (it is empty; make one with 'dlscope record')",
             '{"type":"header","format":"dlscope-trace/99"}\n':
                 'is a trace of format "dlscope-trace/99", which this dlscope does not read'}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.jsonl")
        for text, words in cases.items():
            with open(path, "w") as f:
                f.write(text)
            for cmd in (["check"], ["report"], ["export"], ["merge", "-o", path + ".m"]):
                p = dlscope(*cmd, path, check=3)
                assert p.stderr.count("\n") == 1 and \
                    p.stderr.startswith(f"dlscope: {cmd[0]}: {path} {words}"), (cmd, p.stderr)
            # The UI wants a terminal: script(1) gives it one.
            ui = subprocess.run(["script", "-qec", f"{dlscope_path()} ui --replay {path}",
                                 "/dev/null"], capture_output=True, text=True, timeout=30,
                                stdin=subprocess.DEVNULL)
            assert ui.returncode == 3 and f"dlscope: ui: {path} {words}" in ui.stdout, ui
