"""dlscope export --perfetto: a recorded trace as Chrome trace-event JSON, checked against the
format (required fields per phase, time order per track, slices that nest) and opened by a real
consumer of the format, Chrome DevTools' trace engine (from npm)."""
import json
import os
import shutil
import subprocess
import tempfile

from harness import BUILD, Skip, dlscope, fixture_path, is_root, record_level_zero_module

HERE = os.path.dirname(os.path.abspath(__file__))
REQUIRED = {
    "X": ("name", "cat", "ph", "ts", "dur", "pid", "tid"),
    "i": ("name", "cat", "ph", "ts", "pid", "tid", "s"),
    "C": ("name", "ph", "ts", "pid", "args"),
    "M": ("name", "ph", "pid", "args"),
}


def record(*cmd, duration=3):
    """A trace of CMD; its second OpenMP runtime is a finding, so record exits 1."""
    if not is_root():
        raise Skip("BPF tests need root")
    f = tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False)
    f.close()
    dlscope("record", "-o", f.name, "--duration", duration, "--", *cmd, check=1)
    return f.name


def check_format(doc):
    """The trace-event rules a viewer relies on; returns the events by phase."""
    assert isinstance(doc["traceEvents"], list) and doc["displayTimeUnit"] == "ns"
    by_ph, last_ts, open_slices = {}, {}, {}
    for ev in doc["traceEvents"]:
        ph = ev["ph"]
        assert ph in REQUIRED, ev
        for k in REQUIRED[ph]:
            assert k in ev, (k, ev)
        by_ph.setdefault(ph, []).append(ev)
        if ph == "M":
            assert isinstance(ev["args"]["name"] if ev["name"].endswith("_name") else
                              ev["args"]["sort_index"], (str, int)), ev
            continue
        assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0, ev
        if ph == "C":
            assert all(isinstance(v, (int, float)) for v in ev["args"].values()), ev
            continue
        if ph == "i":
            assert ev["s"] in ("t", "p", "g"), ev
        track = (ev["pid"], ev["tid"])
        # Time order per track, and slices that nest: one opened inside another ends in it.
        assert ev["ts"] >= last_ts.get(track, 0), ("out of order", ev)
        last_ts[track] = ev["ts"]
        stack = open_slices.setdefault(track, [])
        while stack and stack[-1] <= ev["ts"]:
            stack.pop()
        if ph == "X":
            end = ev["ts"] + ev["dur"]
            assert ev["dur"] >= 0 and (not stack or end <= stack[-1] + 1e-3), \
                ("a slice that overlaps its parent's end", ev, stack)
            stack.append(end)
    return by_ph


def test_export_nests_dlopens_names_tracks_and_keeps_findings():
    trace = record(fixture_path("dlopen_list"), "libgomp.so.1",
                   fixture_path("libctor_dlopen.so"))
    try:
        recs = [json.loads(l) for l in open(trace)]
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "trace.json")
            proc = dlscope("export", "--perfetto", trace, "-o", out, "--stats", check=0)
            doc = json.load(open(out))
        by_ph = check_format(doc)
        opens = [r for r in recs if r["type"] == "dlopen"]
        slices = {e["name"]: e for e in by_ph["X"] if e["cat"] == "dlopen"}
        assert len(slices) == len(opens) == 3, (slices.keys(), opens)
        for r in opens:
            e = slices["dlopen " + os.path.basename(r["path"])]
            assert abs(e["dur"] - r["duration_ns"] / 1e3) < 1e-3 and e["tid"] == r["tid"], (e, r)
        # libomp.so.5 was opened by libctor_dlopen.so's constructor: its slice lies inside.
        outer, inner = slices["dlopen libctor_dlopen.so"], slices["dlopen libomp.so.5"]
        assert outer["ts"] < inner["ts"] and \
            inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"], (outer, inner)
        findings = [e for e in by_ph["i"] if e["cat"] == "finding"]
        assert [f["args"]["id"] for f in findings] == ["dup-openmp"], findings
        names = {e["pid"]: e["args"]["name"] for e in by_ph["M"] if e["name"] == "process_name"}
        pid = opens[0]["pid"]
        assert names[pid] == f"dlopen_list {pid}", names
        assert f"{len(recs)} records read" in proc.stderr, proc.stderr
    finally:
        os.unlink(trace)


def test_export_errors_are_one_line():
    proc = dlscope("export", "--perfetto", "/nonexistent.jsonl", check=3)
    assert proc.stderr.count("\n") == 1 and "cannot read /nonexistent.jsonl" in proc.stderr
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
        f.write('{"type":"header","format":"something-else/1"}\n')
        f.flush()
        proc = dlscope("export", "--perfetto", f.name, "-o", f.name + ".json", check=3)
        assert 'format "something-else/1", which this dlscope does not read' in proc.stderr, \
            proc.stderr
        assert not os.path.exists(f.name + ".json"), "a failed export left its file behind"
    # --perfetto is the default, the only format; one trace and no more.
    proc = dlscope("export", "/tmp/a.jsonl", "/tmp/b.jsonl", check=2)
    assert proc.stderr == "dlscope: export: give one trace\ntry 'dlscope export --help'\n"


def trace_engine():
    """Chrome DevTools' trace engine, installed from npm once into the build directory."""
    npm = shutil.which("npm")
    if not npm or not shutil.which("node"):
        raise Skip("node and npm are not installed (make deps installs them)")
    where = os.path.join(BUILD, "trace_engine")
    if not os.path.exists(os.path.join(where, "node_modules", "@paulirish", "trace_engine")):
        os.makedirs(where, exist_ok=True)
        shutil.copy(os.path.join(HERE, "trace_engine", "package.json"), where)
        proc = subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund"],
                              cwd=where, capture_output=True, text=True, timeout=300)
        if proc.returncode:
            raise Skip(f"npm could not install the trace engine: {proc.stderr[-300:]}")
    return where


def test_export_opens_in_chrome_devtools_trace_engine():
    where = trace_engine()
    trace = record(fixture_path("dlopen_list"), "libgomp.so.1",
                   fixture_path("libctor_dlopen.so"))
    try:
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "trace.json")
            dlscope("export", "--perfetto", trace, "-o", out, check=0)
            proc = subprocess.run(["node", os.path.join(HERE, "trace_engine", "check.mjs"), out,
                                   where], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        model = json.loads(proc.stdout.splitlines()[-1])
        pid = [json.loads(l) for l in open(trace) if '"dlopen"' in l][0]["pid"]
        thread = model["processes"][str(pid)][str(pid)]
        # Its slices are all there, and the nested dlopen is a child, not a root.
        for name in ("dlopen libgomp.so.1", "dlopen libctor_dlopen.so", "dlopen libomp.so.5"):
            assert name in thread["names"], thread
        assert thread["roots"] < thread["entries"], thread
    finally:
        os.unlink(trace)


def test_export_draws_hot_activity_as_counters():
    """record --hot's activity records become counter tracks whose samples add up to the
    regions the fixture ran (1000 in libgomp, 300 in libomp)."""
    from test_watch_runtimes import record_hot_regions

    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "hot.jsonl")
        pid, _ = record_hot_regions(trace)
        doc = json.loads(dlscope("export", "--perfetto", trace, check=0).stdout)
    by_ph = check_format(doc)
    sums = {}
    for c in by_ph["C"]:
        if c["pid"] == pid and c["name"].startswith("parallel regions/s "):
            lib = "libgomp" if "libgomp" in c["name"] else "libomp"
            sums[lib] = sums.get(lib, 0) + c["args"]["count"]
    assert sums == {"libgomp": 1000, "libomp": 300}, sums


def test_export_draws_gpu_loads_as_slices_on_a_gpu_load_track():
    """A Level Zero module creation (libze1, no driver: it fails) is a slice as long as the
    call, named by its function, on the GPU-load track of the thread that made it."""
    with tempfile.TemporaryDirectory() as d:
        trace, out = os.path.join(d, "ze.jsonl"), os.path.join(d, "ze.json")
        record_level_zero_module(trace)
        rec = [json.loads(line) for line in open(trace) if '"gpu_load"' in line][0]
        dlscope("export", "--perfetto", trace, "-o", out, check=0)
        doc = json.load(open(out))
    by_ph = check_format(doc)
    slices = [e for e in by_ph["X"] if e["cat"] == "gpu_load"]
    assert len(slices) == 1, slices
    s = slices[0]
    assert s["name"] == "zeModuleCreate" and s["pid"] == rec["pid"], s
    assert abs(s["dur"] - rec["duration_ns"] / 1e3) < 1e-3 and s["dur"] > 0, (s, rec)
    assert s["args"]["result_name"] == "ZE_RESULT_ERROR_UNINITIALIZED" and \
        s["args"]["runtime"] == "Level Zero" and s["args"]["thread"] == rec["tid"], s
    # Its own track, named for the thread, not the thread's track.
    names = {(e["pid"], e.get("tid")): e["args"]["name"] for e in by_ph["M"]
             if e["name"] == "thread_name"}
    assert s["tid"] != rec["tid"], s
    assert names[(s["pid"], s["tid"])] == f"GPU loads of thread {rec['tid']}", names
