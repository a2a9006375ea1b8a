"""Names a target gives itself (comm, thread names, Python thread names) and strings from
files never reach the terminal raw: no escape sequence, and no newline that fakes a line of
dlscope's output, in libs, check, stacks and report text."""
import json
import os
import shutil
import tempfile

from harness import Fixture, Skip, dlscope, is_root

PY = "/usr/bin/python3"
# Clear the screen, set the window title, colour, and a newline that starts a fake line.
EVIL_COMM = "\x1b[2J\x1b]0;pwn\x07\nFAKE"
EVIL_THREAD = "\x1b[31mred\nline"
EVIL_PYNAME = "py\x1b[5m\nFAKE finding"
TARGET = f"""
import ctypes, threading, time
libc = ctypes.CDLL(None)
libc.prctl(15, {EVIL_COMM.encode()!r}, 0, 0, 0)
def worker():
    with open(f"/proc/self/task/{{threading.get_native_id()}}/comm", "w") as f:
        f.write({EVIL_THREAD!r})
    time.sleep(600)
threading.Thread(target=worker, name={EVIL_PYNAME!r}, daemon=True).start()
time.sleep(0.2)
print("ready", flush=True)
time.sleep(600)
"""


def assert_inert(text, what):
    """No control character but newline and tab, and no line the target made."""
    bad = sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c not in "\n\t") or
                  ord(c) == 0x7f})
    assert not bad, f"{what}: control characters {bad} reach the terminal:\n{text[:800]!r}"
    for line in text.splitlines():
        assert not line.startswith(("FAKE", "line")), f"{what}: a line made by the target: {line!r}"


def test_names_a_target_gives_itself_are_escaped_in_text_output():
    with Fixture([PY, "-c", TARGET]) as fx:
        for cmd in (["libs"], ["check"], ["stacks"], ["stacks", "--python"]):
            p = dlscope(*cmd, fx.pid, check=None, timeout=60)
            assert p.returncode in (0, 1), (cmd, p.stderr)
            assert_inert(p.stdout + p.stderr, " ".join(cmd))
        out = dlscope("stacks", fx.pid, check=0).stdout
        # Shown escaped, so that the user still sees what the process called itself.
        assert "\\x1b[2J\\x1b]0;pwn\\x07\\x0aFA" in out, out[:600]
        assert "\\x1b[31mred\\x0aline" in out, out[:600]
        assert "py\\x1b[5m\\x0aFAKE finding" in out, out[:2000]
        with tempfile.TemporaryDirectory() as d:
            dlscope("report", "-o", os.path.join(d, "r.md"), fx.pid, check=0)
            assert_inert(open(os.path.join(d, "r.md")).read(), "report")
        # JSON keeps the names as data: valid, and its escapes are JSON's own.
        doc = json.loads(dlscope("stacks", "--json", fx.pid, check=0).stdout)
        assert doc, doc


def test_watch_and_a_recorded_trace_escape_names_and_paths():
    if not is_root():
        raise Skip("watch needs root")
    with tempfile.TemporaryDirectory() as d:
        # A library reached through a directory whose name is an escape sequence.
        evil_dir = os.path.join(d, "\x1b[2Jlibs")
        os.mkdir(evil_dir)
        shutil.copy("/lib/x86_64-linux-gnu/libz.so.1", os.path.join(evil_dir, "libz.so.1"))
        code = (f"import ctypes, time; ctypes.CDLL(None).prctl(15, {EVIL_COMM.encode()!r}, 0, 0, 0); "
                f"time.sleep(0.3); ctypes.CDLL({os.path.join(evil_dir, 'libz.so.1')!r})")
        trace = os.path.join(d, "t.jsonl")
        p = dlscope("record", "-o", trace, "--", PY, "-c", code, check=0, timeout=60)
        assert_inert(p.stdout + p.stderr, "record")
        assert "libz.so.1" in open(trace).read()
        p = dlscope("watch", "--", PY, "-c", code, check=0, timeout=60)
        assert_inert(p.stdout + p.stderr, "watch")
        assert "\\x1b[2Jlibs/libz.so.1" in p.stdout, p.stdout
        for cmd in (["check", trace], ["report", trace], ["export", "--perfetto", trace]):
            p = dlscope(*cmd, check=None, timeout=60)
            assert p.returncode in (0, 1), (cmd, p.stderr)
            assert_inert(p.stdout + p.stderr, " ".join(cmd))
