"""A loss is never passed as success: a trace that cannot be written is an error that counts
what did not reach the file, and a reader of a cut trace says it is cut."""
import json
import os
import subprocess
import tempfile

import harness
from harness import Skip, dlscope, is_root

PY = "/usr/bin/python3"
DLOPENS = "import ctypes\nfor i in range(400): ctypes.CDLL('libm.so.6')\n"


def test_record_to_a_full_device_is_an_error():
    if not is_root():
        raise Skip("record needs root")
    p = dlscope("record", "-o", "/dev/full", "--", "/bin/true", timeout=60)
    assert p.returncode == 3, (p.returncode, p.stderr)
    assert "cannot write /dev/full: No space left on device" in p.stderr, p.stderr
    assert "records not written" in p.stderr, p.stderr


def test_record_on_a_full_filesystem_counts_what_was_not_written_and_check_says_cut():
    if not is_root():
        raise Skip("record and mount need root")
    d = tempfile.mkdtemp()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", d]).returncode:
        raise Skip("cannot mount a tmpfs here")
    try:
        trace = os.path.join(d, "t.jsonl")
        p = dlscope("record", "-o", trace, "--", PY, "-c", DLOPENS, timeout=120)
        assert p.returncode == 3, (p.returncode, p.stderr)
        line = [l for l in p.stderr.splitlines() if "cannot write" in l]
        assert line, p.stderr
        # "N of M records not written; the trace is cut after record W": W lines are whole.
        words = line[0].split()
        n, m = int(words[words.index("of") - 1]), int(words[words.index("of") + 1])
        w = int(line[0].rsplit(" ", 1)[1])
        assert 0 < n <= m and w == m - n, line
        with open(trace, "rb") as f:
            assert f.read().count(b"\n") == w, line
        c = dlscope("check", trace, timeout=60)
        assert "the trace is cut: no summary record" in c.stdout, c.stdout
        doc = json.loads(dlscope("check", "--json", trace, timeout=60).stdout)
        assert doc["complete"] is False and doc["cut"].startswith("the trace is cut"), doc
        md = dlscope("report", trace, check=0, timeout=60).stdout
        assert "**Incomplete:** the trace is cut: no summary record" in md, md[:1000]
    finally:
        subprocess.run(["umount", "-l", d])


def test_a_whole_trace_is_complete():
    if not is_root():
        raise Skip("record needs root")
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.jsonl")
        dlscope("record", "-o", trace, "--", "/bin/true", check=0, timeout=60)
        doc = json.loads(dlscope("check", "--json", trace, check=0).stdout)
        assert doc["complete"] is True and "cut" not in doc and doc["lost"] == 0, doc
        # The same trace without its last line (the summary) is cut.
        lines = open(trace).read().splitlines(True)
        with open(trace, "w") as f:
            f.writelines(lines[:-1])
        doc = json.loads(dlscope("check", "--json", trace, check=0).stdout)
        assert doc["complete"] is False and "no summary record" in doc["cut"], doc


def test_watch_inside_a_pid_namespace_sees_its_processes_not_nothing():
    # In a container's PID namespace the kernel's PIDs are the host's, which match no target
    # there: the stream would be empty and "0 lost". The probes report the namespace's PIDs
    # instead: every dlopen is there.
    if not is_root():
        raise Skip("watch needs root")
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.jsonl")
        for cmd in (["watch"], ["record", "-o", trace]):
            p = subprocess.run(["unshare", "-fpm", "--mount-proc", harness.dlscope_path(), *cmd,
                                "--", PY, "-c", DLOPENS], capture_output=True, text=True,
                               timeout=60)
            assert p.returncode == 0, (cmd, p.returncode, p.stderr)
            text = p.stdout if cmd == ["watch"] else open(trace).read()
            # The trace's dlopen records (a "loaded" record of libm says "dlopen" too when a
            # held start let go under load had not read it yet).
            opens = text.count('dlopen("libm.so.6"') if cmd == ["watch"] else \
                sum(1 for ln in text.splitlines()
                    if json.loads(ln).get("type") == "dlopen" and "libm.so.6" in ln)
            assert opens == 400 and ", 0 lost" in p.stderr, (cmd, opens, p.stderr)
