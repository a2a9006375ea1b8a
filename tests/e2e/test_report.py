"""dlscope report: one Markdown file for a bug report, checked section by section on the seed
fixtures (two OpenMP runtimes, a deadlock, a crash, a trace), its size limit and --redact."""
import json
import os
import re
import shutil
import socket
import tempfile

from harness import Fixture, Skip, dlscope, fixture_path, is_root, wait_idle, \
    record_level_zero_module


def md_cells(row):
    """The cells of a Markdown table row: split at the pipes that no backslash escapes."""
    cells, cur, i = [], "", 0
    while i < len(row):
        if row[i] == "\\" and i + 1 < len(row):
            cur += row[i:i + 2]
            i += 2
            continue
        if row[i] == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += row[i]
        i += 1
    return cells[1:]


def assert_tables(md):
    """Every table of the report: each row has its header's cells, and every bold or code span
    opens and closes inside one cell (no literal asterisks on GitHub). Rendered too, when a
    GitHub's own renderer (cmark-gfm, its table extension) makes the same tables, each row with
    its header's number of cells, and no literal ** survives outside code."""
    lines, i, tables = md.splitlines(), 0, 0
    while i < len(lines):
        if not (lines[i].startswith("|") and i + 1 < len(lines) and
                re.match(r"^\|( *:?-+:? *\|)+$", lines[i + 1])):
            i += 1
            continue
        tables += 1
        n = len(md_cells(lines[i]))
        j = i + 1
        while j < len(lines) and lines[j].startswith("|"):
            cells = md_cells(lines[j])
            assert len(cells) == n, (n, lines[i], lines[j])
            for c in cells:
                plain = re.sub(r"\\.", "", c)
                plain = re.sub(r"(`+)(.+?)\1", "", plain)      # code spans
                assert plain.count("`") == 0, ("a code span across cells", lines[j])
                assert plain.count("**") % 2 == 0, ("bold across cells", lines[j])
            j += 1
        i = j
    html = render_gfm(md)
    rendered = re.findall(r"<table>.*?</table>", html, re.S)
    assert len(rendered) == tables, (tables, len(rendered), html)
    for table in rendered:
        rows = re.findall(r"<tr>.*?</tr>", table, re.S)
        widths = [len(re.findall(r"<t[hd][ >]", tr)) for tr in rows]
        assert len(set(widths)) == 1, table
    text = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", html, flags=re.S)
    assert "**" not in text, [l for l in text.splitlines() if "**" in l]
    return tables


def render_gfm(md):
    """@md as GitHub renders it: cmark-gfm with its table extension (make test installs it)."""
    import subprocess
    if not shutil.which("cmark-gfm"):
        raise AssertionError("cmark-gfm is needed (Debian package cmark-gfm; make test installs it)")
    return subprocess.run(["cmark-gfm", "--extension", "table", "--unsafe"], input=md,
                          capture_output=True, text=True, check=True).stdout


def runtime_rows(md, who):
    """The rows of the Runtimes table for process label @who: [cells]."""
    return [md_cells(l) for l in sections(md)["Runtimes"].splitlines()
            if l.startswith(f"| {who} ")]


def sections(md):
    """{heading: text} of the report's ## sections."""
    parts = re.split(r"^## ", md, flags=re.M)
    return {p.split("\n", 1)[0]: p.split("\n", 1)[1] if "\n" in p else "" for p in parts[1:]}


def test_report_on_two_openmp_runtimes():
    with Fixture(["two_omp"]) as fx:
        wait_idle(fx.pid)
        md = dlscope("report", fx.pid, check=0).stdout
    assert md.startswith(f"# dlscope report: process {fx.pid} (two_omp)\n"), md[:200]
    assert "**1 finding** (1 error, 0 warnings):\n- **error** `dup-openmp`" in md, md[:800]
    s = sections(md)
    assert list(s) == ["Environment", "Findings", "Runtimes", "Threads that matter",
                       "Reproduce"], list(s)
    assert re.search(r"\| Kernel \| \S+ \|\n\| glibc \| 2\.\d+ \|", s["Environment"])
    assert "libgomp1" in s["Environment"] and "(deb)" in s["Environment"], s["Environment"]
    f = s["Findings"]
    assert "### error `dup-openmp`" in f and "**Why:**" in f and "**Fix:**" in f, f
    bullets = [l for l in f.splitlines() if l.startswith("- ")]
    assert any("libgomp.so.1: GNU libgomp" in b for b in bullets) and \
        any("libomp.so.5: LLVM libomp" in b for b in bullets), f
    # The duplicates come first in the runtimes table, marked.
    rows = [l for l in s["Runtimes"].splitlines() if l.startswith(f"| {fx.pid} ")]
    assert len(rows) >= 2 and all("(duplicate)" in r for r in rows[:2]), rows
    assert "openmp" in rows[0] and "openmp" in rows[1], rows
    assert f"{fixture_path('two_omp')} &\ndlscope" not in s["Reproduce"]
    assert f"{fixture_path('two_omp')} &\n" in s["Reproduce"], s["Reproduce"]
    assert assert_tables(md) == 3   # program, environment, runtimes
    # The versions are named: the releases apart from the OpenMP levels, no KMP date.
    cells = {c[3].strip(): c[4].strip() for c in runtime_rows(md, f"{fx.pid} (two_omp)")}
    assert re.fullmatch(r"GCC \d+(\.\d+)*, OpenMP \d\.\d", cells["GNU libgomp"]), cells
    assert re.fullmatch(r"LLVM \d+\.\d+(\.\d+)?, OpenMP \d\.\d", cells["LLVM libomp"]), cells


def test_report_escapes_what_the_data_says():
    """A process named with Markdown's metacharacters: its name is escaped in every cell and
    line, and the tables keep their cells."""
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "md|*_x`")
        shutil.copy(fixture_path("two_omp"), exe)
        with Fixture([exe]) as fx:
            wait_idle(fx.pid)
            md = dlscope("report", fx.pid, check=0).stdout
    assert md.startswith(f"# dlscope report: process {fx.pid} (md\\|\\*\\_x\\`)\n"), md[:200]
    assert assert_tables(md) == 3
    rows = runtime_rows(md, f"{fx.pid} (md\\|\\*\\_x\\`)")
    assert len(rows) == 2 and all(r[1].strip() == "**openmp**" and
                                  r[2].strip() == "(duplicate)" for r in rows), rows
    assert f"In process {fx.pid} (md\\|\\*\\_x\\`)." in sections(md)["Findings"]


def test_report_on_a_trace_counts_runtimes_as_check_does():
    """numpy loads OpenBLAS through Debian's fronts libblas.so.3 and liblapack.so.3: the report
    of a trace of it lists one BLAS runtime with its two fronts, as check says of the same
    process, runtime by runtime, and names the process by the comm the trace has."""
    if not is_root():
        raise Skip("BPF tests need root")
    code = "import numpy, time; print('ready', flush=True); time.sleep(600)"
    with Fixture(["/usr/bin/python3", "-c", code]) as fx, tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "numpy.jsonl")
        # Attached to: the trace starts with the process's whole graph, and no event names it.
        dlscope("record", "-o", trace, "--duration", "1", "-p", fx.pid, check=0, timeout=60)
        live = json.loads(dlscope("check", "--json", fx.pid, check=None).stdout)
        # libs counts them as check does: one BLAS runtime and its fronts.
        assert "BLAS/LAPACK x1 (+2 fronts)" in dlscope("libs", fx.pid, check=0).stdout
        md = dlscope("report", trace, check=0).stdout
        doc = json.loads(dlscope("check", "--json", trace, check=0).stdout)
    s = sections(md)
    assert "(?)" not in md, md
    assert assert_tables(md) >= 2
    rows = [md_cells(l) for l in s["Runtimes"].splitlines() if re.match(r"\| \d", l)]
    assert rows and all(r[0] == f" {fx.pid} (python3) " for r in rows), rows
    blas = [r for r in rows if r[1].strip() == "blas"]
    assert len(blas) == 1 and blas[0][2].strip() == "" and "OpenBLAS" in blas[0][3], rows
    assert "fronts: `libblas.so.3`, `liblapack.so.3`" in blas[0][5], blas
    assert "(duplicate)" not in s["Runtimes"], s["Runtimes"]
    want = sorted((r["kind"], r["path"], sorted(os.path.basename(f) for f in r["fronts"]))
                  for r in live["processes"][0]["runtimes"])
    got = sorted((r[1].strip().strip("*"), re.match(r" `([^`]*)`", r[5]).group(1),
                  sorted(re.findall(r"`([^`]*)`", r[5].split("; fronts:")[1]))
                  if "; fronts:" in r[5] else []) for r in rows)
    assert got == want, (got, want)
    # check TRACE lists only processes with a finding: none here, but it saw this one.
    assert doc["processes_seen"] >= 1 and doc["processes"] == [], doc


def test_report_on_a_deadlock_shows_the_threads_and_the_verdict():
    with Fixture(["hang_abba"]) as fx:
        wait_idle(fx.pid)
        md = dlscope("report", fx.pid, check=0).stdout
    s = sections(md)
    t = s["Threads that matter"]
    assert "**Verdict:** Deadlock between 2 threads" in t and "**What to do:**" in t, t
    assert t.count("waits for mutex lock_") == 2, t
    # A frame as stacks prints it: the same line in every view.
    assert re.search(r"\n#\d+ +0x[0-9a-f]{16} in take_b_then_a\+0x[0-9a-f]+ from \S*/hang_abba "
                     r"at \S*hang_abba\.c:\d+\n", t), t
    assert "### error `deadlock`" in s["Findings"]


LIB = "/usr/lib/x86_64-linux-gnu"
# The seeds (../shared/seeds): each reported with its finding, evidence, why and fix.
SEEDS = {
    "dup-cxx-runtime": ["dlopen_list", "--global", f"{LIB}/libstdc++.so.6",
                        fixture_path("libcxx_ext_static.so")],
    "abi-mismatch": ["dlopen_list", "--global", fixture_path("ver2/libver.so.1"), "--lazy",
                     fixture_path("cache/.cache/torch_extensions/libaddon.so")],
    "dup-library": ["dlopen_list", "--local", fixture_path("libvague_a.so"),
                    fixture_path("libvague_b.so")],
    "deadlock": ["dlopen_list", fixture_path("libhang_ctor_omp_dlsym.so")],
}


def test_report_on_each_seed_names_its_finding():
    for fid, argv in SEEDS.items():
        with Fixture(argv) as fx:
            wait_idle(fx.pid)
            md = dlscope("report", fx.pid, check=0).stdout
        s = sections(md)
        f = s["Findings"]
        head = [l for l in f.splitlines() if l.startswith("### ")]
        assert any(f"`{fid}`" in l for l in head), (fid, head)
        block = f[f.index(f"`{fid}`"):]
        assert "**Why:**" in block and "**Fix:**" in block and "\n- " in block, (fid, block)
        assert f"`{fid}`" in md.split("## ")[0], (fid, "not in the summary")
        if fid == "deadlock":
            t = s["Threads that matter"]
            assert "holds the loader lock because it is inside dlopen" in t, t
            assert "___dlsym" in t and "hang_ctor_init._omp_fn.0" in t, t


def test_report_on_a_command_that_crashes():
    md = dlscope("report", "--", fixture_path("crash_cmd"), "lib", check=0).stdout
    s = sections(md)
    assert "### The command was killed by SIGSEGV" in s["Findings"], s["Findings"]
    assert "crash_lib_store" in s["Findings"] and "libcrash.so" in s["Findings"], s["Findings"]
    assert "dlscope report -- " in s["Reproduce"]


def module_base(pid, module):
    """The lowest address @module is mapped at in @pid: its load bias for a library."""
    starts = [int(line.split("-")[0], 16) for line in open(f"/proc/{pid}/maps")
              if line.rstrip().endswith(" " + module)]
    return min(starts)


def test_report_summary_names_the_program_and_reproduces_without_pids():
    """The top says what ran (executable, command line, build-ids) and what went wrong (the
    hung threads, the crash); a frame with no name is module+offset, as addr2line takes it;
    Reproduce gives the command line, quoted for the shell, and no PID of this machine."""
    with Fixture(["hang_abba", "x y"]) as fx:
        wait_idle(fx.pid)
        md = dlscope("report", fx.pid, check=0).stdout
        bid = [o["build_id"] for o in json.loads(dlscope("libs", "-j", fx.pid, check=0).stdout)
               ["processes"][0]["objects"] if o["path"] == fixture_path("hang_abba")][0]
    assert_tables(md)
    top = md.split("\n## ")[0]
    row = [l for l in top.splitlines() if l.startswith(f"| {fx.pid} (hang_abba) |")]
    assert row and md_cells(row[0])[1:] == [f" `{fixture_path('hang_abba')}` ",
                                            f" `{fixture_path('hang_abba')} x y` ",
                                            f" `{bid}` "], row
    assert "**Hung:** Deadlock between 2 threads" in top, top
    repro = sections(md)["Reproduce"]
    assert f"{fixture_path('hang_abba')} 'x y' &\n" in repro, repro
    assert "dlscope report $!" in repro and str(fx.pid) not in re.sub(r"#.*", "", repro), repro

    md = dlscope("report", "--", fixture_path("crash_cmd"), "lib", check=0).stdout
    assert_tables(md)
    top = md.split("\n## ")[0]
    assert re.search(r"\*\*Crash:\*\* SIGSEGV \(address not mapped\) in thread \d+ at "
                     r"`crash_lib_store\+0x[0-9a-f]+` in `libcrash.so`, `[^`]*crash_lib.c:\d+`",
                     top), top
    assert re.search(r"^\| \d+ \(crash_cmd\) \| `[^`]*crash_cmd` \| `[^`]*crash_cmd lib` \| "
                     r"`[0-9a-f]{40}` \|$", top, re.M), top

    # libgomp's pool thread waits in its stripped idle loop: frames with no name.
    with Fixture(["two_omp"]) as fx:
        wait_idle(fx.pid)
        md = dlscope("report", fx.pid, check=0).stdout
        gomp = [l for l in open(f"/proc/{fx.pid}/maps") if "libgomp" in l][0].split()[-1]
        base = module_base(fx.pid, gomp)
        doc = json.loads(dlscope("stacks", "-j", fx.pid, check=0).stdout)["processes"][0]
    unnamed = [f for t in doc["threads"] for f in t["frames"]
               if f["function"] is None and f["module"] == gomp]
    assert unnamed, doc["threads"]
    for f in unnamed:
        assert int(f["module_offset"], 16) == int(f["pc"], 16) - base, (f, hex(base))
        # As stacks prints it: gdb's "??", where addr2line finds it, and the object.
        line = f"?? ({os.path.basename(gomp)}+{f['module_offset']}) from {gomp}"
        assert line in sections(md)["Threads that matter"], (line, md)


def record_trace(path):
    if not is_root():
        raise Skip("BPF tests need root")
    dlscope("record", "-o", path, "--duration", "3", "--", fixture_path("dlopen_list"),
            "libgomp.so.1", fixture_path("libctor_dlopen.so"), check=1)


def test_report_on_a_trace_has_a_timeline():
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "run.jsonl")
        record_trace(trace)
        md = dlscope("report", trace, check=0).stdout
    s = sections(md)
    assert md.startswith(f"# dlscope report: trace {trace}\n")
    tl = s["Timeline"]
    assert re.search(r"\| [0-9.]+ \| \d+ \| GNU libgomp arrived: ", tl) or \
        "OpenMP" in tl, tl
    assert "finding dup-openmp" in tl, tl
    assert "### error `dup-openmp`" in s["Findings"]
    assert f"dlscope ui --replay {trace}" in s["Reproduce"]


def test_report_timeline_has_gpu_loads_in_their_runtime_terms():
    """A HIP module load and a CUDA one (on the stub libcuda) in the timeline, each with its
    runtime's result name: HIP is never called CUDA."""
    if not is_root():
        raise Skip("BPF tests need root")
    if not os.path.exists("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5"):
        raise Skip("libamdhip64-5 is not installed")
    cases = [((fixture_path("early_gpu"), "hip"),
              r"hipModuleLoadData\(image 0x[0-9a-f]+, size \d+\) = 101 \(hipErrorInvalidDevice\)"),
             ((fixture_path("early_gpu"), "cuda", fixture_path("stubcuda/libcuda.so.1")),
              r"cuModuleLoadData\(image 0x[0-9a-f]+, size \d+\) = 0 \(CUDA_SUCCESS\)")]
    for cmd, row in cases:
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "run.jsonl")
            dlscope("record", "-o", trace, "--", *cmd, check=0, timeout=120)
            tl = sections(dlscope("report", trace, check=0).stdout)["Timeline"]
        assert re.search(r"\| [0-9.]+ \| \d+ \| " + row + r" \(\d+\.\d{3} ms\) \|", tl), tl
        if cmd[1] == "hip":
            assert "HIP runtime" in tl and "CUDA" not in tl, tl


def test_report_timeline_has_level_zero_module_creates_by_name():
    """zeModuleCreate through Debian's libze1, no driver: the timeline row names its error in
    Level Zero's terms, with the module's format, size, flags and the call's duration."""
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "run.jsonl")
        record_level_zero_module(trace)
        tl = sections(dlscope("report", trace, check=0).stdout)["Timeline"]
    assert re.search(r'\| [0-9.]+ \| \d+ \| zeModuleCreate\(SPIR-V, 20 bytes, '
                     r'"-ze-opt-level=2"\) = 0x78000001 \(ZE_RESULT_ERROR_UNINITIALIZED\) '
                     r"\(\d+\.\d{3} ms\) \|", tl), tl
    assert "Level Zero loader" in tl and "CUDA" not in tl, tl


def test_report_limit_moves_sections_to_the_companion():
    with Fixture(["hang_abba"]) as fx, tempfile.TemporaryDirectory() as d:
        wait_idle(fx.pid)
        out = os.path.join(d, "r.md")
        proc = dlscope("report", "--limit", "2500", "-o", out, fx.pid, check=0)
        md, extra = open(out).read(), open(os.path.join(d, "r.extra.md")).read()
    assert len(md) <= 2500, len(md)
    assert "see " + os.path.join(d, "r.extra.md") in md and "Left out" in md, md
    assert "r.extra.md" in proc.stderr
    # The companion holds what was left out, in full.
    assert "## Threads that matter" in extra and "take_b_then_a" in extra, extra[:500]
    assert "65,536" in dlscope("report", "--help", check=0).stdout
    # The user's limit is called theirs, not GitHub's.
    assert "GitHub's" not in md and "under the 2500-character --limit" in md, md


def test_report_cut_inside_code_closes_the_block():
    """A report still too long after the sections moved out is cut at a line's end, and a code
    block cut open is closed: the cut note is not read as code."""
    cuts = closed = 0
    with Fixture(["hang_abba"]) as fx, tempfile.TemporaryDirectory() as d:
        wait_idle(fx.pid)
        out = os.path.join(d, "r.md")  # its companion beside it, not in the working folder
        for limit in range(1024, 2600, 53):
            dlscope("report", "--limit", str(limit), "-o", out, fx.pid, check=0)
            md = open(out).read()
            assert len(md) <= limit, (limit, len(md))
            if "cut here" not in md:
                continue
            cuts += 1
            body = md[:md.index("\n\n_(cut here")]
            fences = [ln for ln in body.splitlines() if ln.startswith("```")]
            assert len(fences) % 2 == 0, (limit, md)
            closed += body.endswith("```")
    # Some limits cut the report, some of them inside a code block.
    assert cuts >= 3 and closed >= 1, (cuts, closed)


def test_report_redact_leaves_no_home_user_host_or_address():
    """The target runs from a home directory, with an IP address in its arguments: none of
    them, nor this host's name, is left, and each value has one placeholder."""
    user = "dlscopereportuser"
    home = f"/home/{user}"
    if not os.access("/home", os.W_OK):
        raise Skip("cannot make a home directory here")
    os.makedirs(os.path.join(home, "bin"), exist_ok=True)
    try:
        exe = os.path.join(home, "bin", "dlopen_list")
        shutil.copy(fixture_path("dlopen_list"), exe)
        host = socket.gethostname()
        md = dlscope("report", "--redact", "--", exe, "10.20.30.40", check=0).stdout
        for secret in (home, user, "10.20.30.40"):
            assert secret not in md, (secret, md)
        if len(host) >= 2:
            assert not re.search(r"(^|[^A-Za-z0-9_.-])" + re.escape(host) + r"([^A-Za-z0-9_-]|$)",
                                 md), host
        assert "<ip1>" in md, md
        # One value, one placeholder: the user's home is one <homeN> wherever it appears. The
        # clone may live in another home (root's /root): that one gets a placeholder of its own.
        homes = set(re.findall(r"(<home\d+>)/bin/dlopen_list", md))
        assert len(homes) == 1, (homes, md)
        [ph] = homes
        assert md.count(ph) >= 2 and md.count(f"{ph}/bin/dlopen_list") == md.count(ph), md
        assert "/root/" not in md, md
        plain = dlscope("report", "--", exe, "10.20.30.40", check=0).stdout
        assert home in plain and "10.20.30.40" in plain
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_report_errors_are_one_line():
    # A usage error is one line and the hint (test_cli has the shape for every command).
    proc = dlscope("report", check=2)
    assert proc.stderr.count("\n") == 2 and "name what to report on" in proc.stderr
    assert proc.stderr.endswith("try 'dlscope report --help'\n")
    proc = dlscope("report", "notapid", check=2)
    assert "'notapid' is not a process ID" in proc.stderr
    proc = dlscope("report", "no/such.jsonl", check=3)
    assert "cannot read no/such.jsonl" in proc.stderr
    proc = dlscope("report", "999999999", check=3)
    assert proc.stderr == "dlscope: report: no process with PID 999999999\n", proc.stderr
    # A command that never ran is no report of "No findings" (it was, with exit 0).
    proc = dlscope("report", "--", "no-such-command-here", check=3)
    assert proc.stderr == ("dlscope: report: cannot run 'no-such-command-here': No such file "
                           "or directory\n"), proc.stderr
    assert proc.stdout == "", proc.stdout
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
        f.write("not json\n")
        f.flush()
        proc = dlscope("report", f.name, check=3)
        assert "is not a dlscope trace" in proc.stderr, proc.stderr


def test_libs_dot_marks_collisions_and_boxes_packages():
    with Fixture(["two_omp"]) as fx:
        wait_idle(fx.pid)
        dot = dlscope("libs", "--dot", fx.pid, check=0).stdout
    red = [l for l in dot.splitlines() if 'color="red"' in l]
    assert len(red) == 2 and any("libgomp.so.1" in l for l in red) and \
        any("libomp.so.5" in l for l in red), red
    assert not any("libc.so.6" in l for l in red)
    assert re.search(r'subgraph cluster_\d+_pkg\d+ \{\n\t+label="libgomp1 [^"]+ \(deb\)";', dot), dot
    assert re.search(r'label="libomp5-14 [^"]+ \(deb\)";(.|\n)*?libomp\.so\.5', dot), dot


def test_report_svg_draws_the_graph():
    if not shutil.which("dot"):
        raise Skip("graphviz is not installed")
    with Fixture(["two_omp"]) as fx, tempfile.TemporaryDirectory() as d:
        wait_idle(fx.pid)
        out = os.path.join(d, "r.md")
        dlscope("report", "--svg", "-o", out, fx.pid, check=0)
        md, svg = open(out).read(), open(os.path.join(d, "r.svg")).read()
    assert "<svg" in svg and "libomp.so.5" in svg and 'stroke="red"' in svg, svg[:300]
    assert "## Library graph" in md and os.path.join(d, "r.svg") in md
