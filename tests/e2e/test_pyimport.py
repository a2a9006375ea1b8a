"""watch/record: the Python stack of each dlopen a CPython process makes (read in the kernel at
dlopen's entry), the module being imported and the user's line that started it."""
import json
import os
import re
import select
import subprocess
import tempfile
import time

from harness import Skip, dlscope, dlscope_path, is_root

DEBIAN_PY = "/usr/bin/python3"
PYENV = "/root/.pyenv/versions"


def _need_bpf():
    if not is_root():
        raise Skip("BPF tests need root")


def _script(folder, name, text):
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def _source_line(path, line):
    with open(path) as f:
        return f.read().splitlines()[line - 1]


# A training script goes on after its imports: it waits for a line on stdin, so that its frames
# can still be read when the collector names them (a process that has exited cannot be read).
WAIT = "import sys\nsys.stdin.readline()\n"


def _watch_until(args, done, timeout=120):
    """dlscope ARGS with stdin piped to the command; once done(stdout so far) holds, or at the
    deadline, the command gets its line and ends. Returns (exit status, stdout, stderr)."""
    w = subprocess.Popen([dlscope_path(), *args], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = b""
    try:
        # Raw reads: select() does not see what a buffered reader already holds.
        fd = w.stdout.fileno()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not done(out.decode(errors="replace")):
            r, _, _ = select.select([fd], [], [], min(0.2, deadline - time.monotonic()))
            if r:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                out += chunk
        try:
            w.stdin.write(b"\n")
            w.stdin.flush()
        except BrokenPipeError:
            pass
        rest, err = w.communicate(timeout=60)
    finally:
        w.kill()
        w.wait()
    return w.returncode, (out + rest).decode(errors="replace"), err.decode(errors="replace")


def _trace_has(path, pred):
    try:
        with open(path) as f:
            return any(pred(json.loads(l)) for l in f if l.endswith("\n"))
    except FileNotFoundError:
        return False


def test_record_numpy_import_names_the_import_and_the_line():
    """Debian's python3 running train.py, whose line 3 imports numpy: the dlopen of numpy's
    _multiarray_umath (which brings libopenblas) carries `import numpy` and train.py:3, and each
    named frame's line is an import statement in its source file."""
    _need_bpf()
    with tempfile.TemporaryDirectory() as d:
        train = _script(d, "train.py", "# a training script\nimport sys\nimport numpy\n"
                        "print('ok', numpy.__version__, flush=True)\n" + WAIT)
        trace = os.path.join(d, "t.jsonl")
        umath = lambda r: r["type"] == "dlopen" and "_multiarray_umath" in (r["path"] or "")
        status, out, err = _watch_until(["record", "-o", trace, "--", DEBIAN_PY, train],
                                        lambda _: _trace_has(trace, umath))
        assert status == 0 and "ok " in out, (status, out, err)
        recs = [json.loads(l) for l in open(trace)]
        _check_numpy_import(recs, umath, train)


def _check_numpy_import(recs, umath, train):
    opens = [r for r in recs if umath(r)]
    assert len(opens) == 1, [r.get("path") for r in recs if r["type"] == "dlopen"]
    py = opens[0].get("python")
    assert py, opens[0]
    assert py["import"] == "numpy", py
    frames = py["frames"]
    site = frames[py["site"]]
    assert site == {"function": "<module>", "file": train, "line": 3}, (site, py)
    # Innermost first: importlib's machinery that creates the extension module, then the
    # chain of imports up to the script, which is the outermost frame.
    assert frames[0]["file"].startswith("<frozen importlib."), frames
    assert frames[-1] == site, frames
    assert sum(f["function"] == "_find_and_load" for f in frames) >= 2, frames
    for f in frames:
        if f["line"] > 0 and f["file"].startswith("/"):
            text = _source_line(f["file"], f["line"])
            assert "import" in text, (f, text)
    # What the extension brought with it is announced under that dlopen.
    loaded = [r for r in recs if r["type"] == "loaded" and "openblas" in r["path"]]
    assert loaded and loaded[0]["t"] == opens[0]["t"], loaded
    assert recs[0]["format"] == "dlscope-trace/3", recs[0]


UMATH_LINE = (r'dlopen\("\S+_multiarray_umath\S+", RTLD_NOW\) = 0x[0-9a-f]+ \(\S+ ms\) '
              r'from `import numpy` at train.py:3\n((?:        .*\n)+)')


def test_watch_prints_the_import_chain():
    _need_bpf()
    with tempfile.TemporaryDirectory() as d:
        train = _script(d, "train.py", "# a training script\nimport sys\nimport numpy\n" + WAIT)
        status, out, err = _watch_until(["watch", "--", DEBIAN_PY, train],
                                        lambda o: re.search(UMATH_LINE + r"\[", o))
    assert status == 0, (status, out, err)
    line = re.search(UMATH_LINE, out)
    assert line, out
    chain = line.group(1)
    assert re.search(rf"py#\d+ <module> \({re.escape(train)}:3\)", chain), chain
    assert re.search(r"py#\d+ <module> \(/usr/lib/python3/dist-packages/numpy/__init__.py:\d+\)",
                     chain), chain
    assert "<frozen importlib" not in chain, chain


def _implausible_frames(out):
    """py#N lines of watch's output that name what a frame cannot be: a file that is no file
    (a docstring read where a freed file name was), or a function its file does not define."""
    bad = []
    for m in re.finditer(r"^\s+py#\d+ (\S+) \((.*):(\d+|\?)\)$", out, re.M):
        func, file, line = m.groups()
        if file == "?" or file.startswith("<"):
            continue
        if not (file.startswith("/") and os.path.isfile(file)):
            bad.append(m.group(0).strip())
            continue
        last = func.rsplit(".", 1)[-1]
        if func != "<module>" and not last.startswith("<"):
            with open(file, errors="replace") as f:
                if not re.search(rf"\b(def|class)\s+{re.escape(last)}\b", f.read()):
                    bad.append(m.group(0).strip())
    return bad


def test_frames_of_freed_code_are_never_named_from_reused_memory():
    """import numpy, scipy.linalg: the top-level code of the modules imported is freed, often
    before the collector reads it, and its memory reused (issue 5: `py#16 <module> (Issued by
    chebfit when the design matrix is rank deficient.:?)`). A file or function is named only from
    objects proven to be the ones captured: each named file is a file, each function in it."""
    _need_bpf()
    p = dlscope("watch", "--", DEBIAN_PY, "-c", "import numpy, scipy.linalg", check=0,
                timeout=120)
    frames = re.findall(r"^\s+py#\d+ ", p.stdout, re.M)
    assert len(frames) > 50, p.stdout[-3000:]
    assert _implausible_frames(p.stdout) == [], _implausible_frames(p.stdout)
    # Freed code is still told apart: its frames keep the kernel's name, the line unknown.
    assert re.search(r"^\s+py#\d+ <module> \(\S+:\?\)$", p.stdout, re.M), p.stdout[-3000:]


def _finding_done(out):
    """The finding is printed whole: its body, then the native stack of the event."""
    at = out.find("FINDING error dup-openmp")
    return at >= 0 and "\n        #0 " in out[at:]


def test_second_openmp_finding_names_the_import_and_line():
    """torch brings libgomp; a module imported at train.py:3 loads LLVM's libomp with ctypes:
    the live finding says through which import and line the second runtime arrived."""
    _need_bpf()
    finding = (r"FINDING error dup-openmp: 2 OpenMP runtimes in process \d+ \(python3\): "
               r"GNU libgomp[^\n]*LLVM libomp[^\n]*\n((?:        .*\n)+)")
    with tempfile.TemporaryDirectory() as d:
        _script(d, "omplib.py", "import ctypes\n\nOMP = ctypes.CDLL('libomp.so.5')\n")
        train = _script(d, "train.py", "import torch\n\nimport omplib\n" + WAIT)
        status, out, err = _watch_until(["watch", "--", DEBIAN_PY, train],
                                        lambda o: _finding_done(o), timeout=180)
    assert status == 1, (status, out, err)
    m = re.search(finding, out)
    assert m, out
    assert "- libomp.so.5 arrived through `import omplib` at train.py:3\n" in m.group(1), \
        m.group(1)


def _pyenv(version):
    exe = os.path.join(PYENV, version, "bin", "python" + version.rsplit(".", 1)[0])
    if not os.path.exists(exe):
        raise Skip(f"{exe} is not installed (pyenv)")
    return exe


CTYPES_LOOP = """import ctypes, select, sys
def load(name):
    return ctypes.CDLL(name)
def outer():
    return load("libm.so.6")
print("ready", flush=True)
while not select.select([sys.stdin], [], [], 0.01)[0]:
    outer()
"""


def _ctypes_frames(version):
    """watch on a pyenv interpreter whose script dlopens through ctypes until told to stop:
    the Python frames printed under its first dlopen of libm.so.6 that has them."""
    _need_bpf()
    exe = _pyenv(version)
    with tempfile.TemporaryDirectory() as d:
        script = _script(d, "s.py", CTYPES_LOOP)
        w = subprocess.Popen([dlscope_path(), "watch", "--", exe, script],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        frames, seen = [], []
        try:
            # The collector learns the process is Python from its objects (libpython is
            # mapped after exec): the loop dlopens until a dlopen carries the frames.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not frames:
                r, _, _ = select.select([w.stdout], [], [], deadline - time.monotonic())
                if not r:
                    break
                line = w.stdout.readline()
                if not line:
                    break
                seen.append(line)
                if len(seen) > 1 and 'dlopen("libm.so.6"' in seen[-2] and "py#0" in line:
                    frames.append(line.strip())
                    while True:
                        more = w.stdout.readline()
                        seen.append(more)
                        if not more.startswith("        "):
                            break
                        frames.append(more.strip())
            w.stdin.write("\n")
            w.stdin.flush()
            w.communicate(timeout=30)
        finally:
            w.kill()
            w.wait()
        assert frames, "".join(seen[-40:])
        return exe, script, frames


def _check_ctypes_frames(version, qualname):
    exe, script, frames = _ctypes_frames(version)
    lib = os.path.join(PYENV, version, "lib", "python" + version.rsplit(".", 1)[0],
                       "ctypes", "__init__.py")
    init = "CDLL.__init__" if qualname else "__init__"
    m = re.fullmatch(rf"py#0 {re.escape(init)} \({re.escape(lib)}:(\d+)\)", frames[0])
    assert m, frames
    assert "_dlopen(" in _source_line(lib, int(m.group(1))), frames
    assert frames[1:4] == [f"py#1 load ({script}:3)", f"py#2 outer ({script}:5)",
                           f"py#3 <module> ({script}:8)"], frames
    assert len(frames) == 4, frames


def test_ctypes_dlopen_frames_python312():
    """3.12's layout: interpreter frames with C-stack shim frames (skipped) and co_qualname."""
    _check_ctypes_frames("3.12.1", True)


def test_ctypes_dlopen_frames_python313():
    _check_ctypes_frames("3.13.0", True)


def test_ctypes_dlopen_frames_python39():
    """3.9's layout: PyFrameObject chain, f_lasti in bytes, co_name without the class."""
    _check_ctypes_frames("3.9.18", False)


def test_ctypes_dlopen_frames_python310():
    _check_ctypes_frames("3.10.13", False)
