"""dlscope stacks on real CPython processes: Python frames checked against the interpreter's own
account (faulthandler) and gdb's py-bt, the GIL and Python locks in the lock-wait graph, and
the per-version layouts checked against each interpreter's DWARF."""
import glob
import json
import os
import re
import signal
import subprocess
import tempfile

from harness import BUILD, Fixture, Skip, dlscope, fixture_path, wait_idle, wait_until

# Alone, after the parallel part: these wait for interpreter threads to reach known places
# (a sleep, a lock, a BLAS loop), which beside three other workers under ASan they sometimes
# had not (a matmul thread not yet in its loop, a thread not yet settled).
SERIAL = True

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python")
DEBIAN = "/usr/bin/python3.11"


def pyenv(minor):
    found = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/3.{minor}.*/bin/python3.{minor}")))
    return found[-1] if found else None


def interpreters():
    """Debian's 3.11 and every pyenv CPython 3.6-3.13 this machine has."""
    out = [DEBIAN]
    out += [p for p in (pyenv(m) for m in range(6, 14)) if p]
    return out


def stacks_json(pid, *extra, status=0):
    """stacks --json's one process."""
    return json.loads(dlscope("stacks", "--json", *extra, pid,
                              check=status).stdout)["processes"][0]


def faulthandler_frames(path, pid):
    """{thread ident: [(name, file, line)]} from faulthandler's dump, innermost first."""
    os.kill(pid, signal.SIGUSR1)

    def dumped():
        text = open(path).read()
        return text if (text.count("Thread 0x") >= 5 and text.endswith("\n\n") or
                        text.count("File ") >= 12 and text.rstrip().endswith(">")) else None

    text = wait_until(dumped, 10, lambda: f"faulthandler's dump: {open(path).read()}",
                      interval=0.05)
    threads, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"(?:Current thread|Thread) (0x[0-9a-f]+)", line)
        if m:
            cur = threads.setdefault(int(m.group(1), 16), [])
            continue
        m = re.match(r'\s+File "(.*)", line (\d+) in (\S+)', line)
        if m and cur is not None:
            cur.append((m.group(3), m.group(1), int(m.group(2))))
    return threads


def ours(thread):
    return [(f["function"].split(".")[-1], f["file"], f["line"])
            for f in thread["python"]["frames"]]


def check_against_faulthandler(python):
    with tempfile.TemporaryDirectory() as d:
        dump = os.path.join(d, "dump")
        with Fixture([python, os.path.join(HERE, "threads.py"), dump]) as fx:
            wait_idle(fx.pid)
            doc = stacks_json(fx.pid)
            truth = faulthandler_frames(dump, fx.pid)
            pythreads = [t for t in doc["threads"] if t["python"]]
            assert len(pythreads) == 5, (python, doc["python"])
            for t in pythreads:
                ident = t["python"]["thread_id"]
                assert ident in truth, (python, ident, truth.keys())
                assert ours(t) == truth[ident], (python, t["tid"], ours(t), truth[ident])
            names = {ours(t)[0][0]: t["python"]["name"] for t in pythreads}
            assert names == {"<module>": "Main-\u00fc", "nap": "run", "wait_lock": "wait_lock",
                             "hold_rlock": "hold_rlock", "wait_rlock": "wait_rlock"}, \
                (python, names)
            by_fn = {ours(t)[0][0]: t for t in pythreads}
            assert by_fn["nap"]["wait"] == "syscall" and not by_fn["nap"]["python"]["holds_gil"]
            lockw = by_fn["wait_lock"]
            assert lockw["wait"] == "python-lock" and "holder is unknown" in lockw["waits_for"], \
                (python, lockw["waits_for"])
            assert "No thread waits for another one" not in doc["verdicts"][0]["text"]
            # The RLock records its owner: an edge to the thread holding it.
            waiter = [t for t in pythreads if ours(t)[0][0] == "wait_rlock"][0]
            holder = [t for t in pythreads if ours(t)[-4:][0][0] == "hold_rlock"
                      or any(f[0] == "hold_rlock" for f in ours(t))][0]
            edges = {(e["from"], e["to"]): e["kind"] for e in doc["edges"]}
            assert edges.get((waiter["tid"], holder["tid"])) == "python-lock", (python, edges)
            # Every eval frame's Python frames are placed under a native frame.
            for t in pythreads:
                for f in t["python"]["frames"]:
                    k = f["native_frame"]
                    assert k is not None and t["frames"][k]["function"] == \
                        "_PyEval_EvalFrameDefault", (python, t["tid"], f)
            return doc


def test_debian_python_frames_match_faulthandler():
    doc = check_against_faulthandler(DEBIAN)
    assert doc["python"]["version"].startswith("3.11.") and doc["python"]["error"] is None


def test_every_pyenv_version_matches_faulthandler():
    versions = [p for p in interpreters() if p != DEBIAN]
    if not versions:
        raise Skip("no pyenv CPython 3.6-3.13 on this machine")
    for python in versions:
        check_against_faulthandler(python)


def test_python_only_view_and_text():
    with tempfile.TemporaryDirectory() as d:
        with Fixture([DEBIAN, os.path.join(HERE, "threads.py"), os.path.join(d, "x")]) as fx:
            wait_idle(fx.pid)
            text = dlscope("stacks", "--python", fx.pid, check=0).stdout
            assert text.startswith("Python 3.11."), text[:200]
            assert re.search(r"\n    nap \(.*threads\.py:19\)\n    Worker\.run \(.*threads\.py:24\)",
                             text), text
            assert "#0" not in text and "[py]" not in text
            full = dlscope("stacks", fx.pid, check=0).stdout
            assert re.search(r"in _PyEval_EvalFrameDefault.*\n        \[py\] nap \(", full), full
    with Fixture(["dlopen_list"]) as fx:
        proc = dlscope("stacks", "--python", fx.pid, check=3)
        assert "runs no Python interpreter" in proc.stderr


def test_gil_against_mutex_deadlock_is_a_cycle_with_a_verdict():
    ext = fixture_path("python")
    with Fixture([DEBIAN, os.path.join(HERE, "gil_mutex.py"), ext]) as fx:
        # The worker sleeps 200 ms holding the mutex before it wants the GIL: poll.
        def cycle():
            wait_idle(fx.pid)
            proc = dlscope("stacks", "--json", fx.pid)
            return proc if proc.returncode == 1 else None

        proc = wait_until(cycle, 20, "stacks exits 1 (a deadlock)", interval=0.1)
        doc = json.loads(proc.stdout)["processes"][0]
        worker = [t["tid"] for t in doc["threads"] if t["tid"] != fx.pid][0]
        edges = {(e["from"], e["to"]): e["kind"] for e in doc["edges"]}
        assert edges == {(fx.pid, worker): "mutex", (worker, fx.pid): "gil"}, edges
        main = [t for t in doc["threads"] if t["tid"] == fx.pid][0]
        assert main["python"]["holds_gil"] and main["python"]["frames"][0]["line"] == 10
        assert "Py_BEGIN_ALLOW_THREADS" in doc["verdicts"][0]["remedy"]
        text = dlscope("stacks", fx.pid, check=1).stdout
        assert "holds the GIL" in text and f"{worker} -> {fx.pid}  gil: the GIL" in text


def test_threads_inside_numpy_and_torch_matmuls():
    try:
        subprocess.run([DEBIAN, "-c", "import numpy, torch"], check=True, capture_output=True,
                       timeout=120)
    except (subprocess.CalledProcessError, FileNotFoundError):
        raise Skip("Debian's python3-numpy and python3-torch are not installed")
    src = open(os.path.join(HERE, "matmul.py")).read().splitlines()
    np_line = 1 + next(i for i, s in enumerate(src) if "numpy matmul line" in s)
    torch_line = 1 + next(i for i, s in enumerate(src) if "torch matmul line" in s)
    with Fixture([DEBIAN, os.path.join(HERE, "matmul.py"), "torch"], ready_timeout=120) as fx:
        # Several samples: a thread caught in one of OpenBLAS's assembly kernels (no CFI, rbp
        # holding data) is unwound past it by scanning its stack (1 sample in 4 or so). Between
        # two products a thread may be in the interpreter alone (numpy's: 1 sample in 600).
        inside = {"numpy_loop": 0, "torch_loop": 0}
        for _ in range(8):
            doc = stacks_json(fx.pid)
            seen = {}
            for t in doc["threads"]:
                if t["python"] and t["python"]["frames"]:
                    f = t["python"]["frames"][0]
                    seen[f["function"]] = (f["line"], [g["module"] or "" for g in t["frames"]],
                                           t["error"])
            assert seen["numpy_loop"][0] == np_line, seen
            assert seen["torch_loop"][0] == torch_line, seen
            # Under the Python line, the native frames of the library doing the product.
            inside["numpy_loop"] += any("blas" in m for m in seen["numpy_loop"][1])
            inside["torch_loop"] += any("torch" in m for m in seen["torch_loop"][1])
            assert seen["torch_loop"][2] is None and seen["numpy_loop"][2] is None, seen
        assert min(inside.values()) >= 7, inside


def test_gdb_py_bt_on_the_debug_interpreter_agrees():
    python = "/usr/bin/python3.11d"
    if not os.path.exists(python):
        raise Skip("python3.11-dbg is not installed")
    with tempfile.TemporaryDirectory() as d:
        with Fixture([python, os.path.join(HERE, "threads.py"), os.path.join(d, "x")]) as fx:
            wait_idle(fx.pid)
            doc = stacks_json(fx.pid)
            gdb = subprocess.run(["gdb", "-p", str(fx.pid), "-batch", "-nx", "-ex",
                                  "source /usr/share/gdb/auto-load/usr/bin/python3.11d-gdb.py",
                                  "-ex", "thread apply all py-bt"],
                                 capture_output=True, text=True, timeout=120).stdout
    theirs, cur = {}, None
    for line in gdb.splitlines():
        m = re.match(r"Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)", line)
        if m:
            cur = theirs.setdefault(int(m.group(1)), [])
            continue
        m = re.match(r'\s+File "(.*)", line (\d+), in (\S+)', line)
        if m and cur is not None:
            cur.append((m.group(3), m.group(1), int(m.group(2))))
    assert len(theirs) == 5, gdb[-2000:]
    for t in doc["threads"]:
        assert ours(t) == theirs[t["tid"]], (t["tid"], ours(t), theirs[t["tid"]])


# Each layout field, as a gdb expression on the interpreter's DWARF.
DWARF = {
    "rt_finalizing": ["&((_PyRuntimeState*)0)->_finalizing",
                      "&((_PyRuntimeState*)0)->finalizing"],
    "rt_interp_head": "&((_PyRuntimeState*)0)->interpreters.head",
    "rt_gil": "&((_PyRuntimeState*)0)->ceval.gil",
    "is_next": "&((PyInterpreterState*)0)->next",
    "is_tstate_head": ["&((PyInterpreterState*)0)->tstate_head",
                       "&((PyInterpreterState*)0)->threads.head"],
    "is_gil_ptr": "&((PyInterpreterState*)0)->ceval.gil",
    "ts_next": "&((PyThreadState*)0)->next",
    "ts_interp": "&((PyThreadState*)0)->interp",
    "ts_thread_id": "&((PyThreadState*)0)->thread_id",
    "ts_native_thread_id": "&((PyThreadState*)0)->native_thread_id",
    "ts_frame": "&((PyThreadState*)0)->frame",
    "ts_cframe": "&((PyThreadState*)0)->cframe",
    "cframe_current": "&((_PyCFrame*)0)->current_frame",
    "ts_current_frame": "&((PyThreadState*)0)->current_frame",
    # 3.11+ have both frame types: the interpreter frame, which they walk, comes first.
    "fr_code": ["&((struct _PyInterpreterFrame*)0)->f_code",
                "&((struct _PyInterpreterFrame*)0)->f_executable", "&((PyFrameObject*)0)->f_code"],
    "fr_previous": ["&((struct _PyInterpreterFrame*)0)->previous", "&((PyFrameObject*)0)->f_back"],
    "fr_lasti": "&((PyFrameObject*)0)->f_lasti",
    "fr_instr": ["&((struct _PyInterpreterFrame*)0)->prev_instr",
                 "&((struct _PyInterpreterFrame*)0)->instr_ptr"],
    "fr_owner": "&((struct _PyInterpreterFrame*)0)->owner",
    "fr_is_entry": "&((struct _PyInterpreterFrame*)0)->is_entry",
    "fr_localsplus": ["&((struct _PyInterpreterFrame*)0)->localsplus",
                      "&((PyFrameObject*)0)->f_localsplus"],
    "co_filename": "&((PyCodeObject*)0)->co_filename",
    "co_name": "&((PyCodeObject*)0)->co_name",
    "co_qualname": "&((PyCodeObject*)0)->co_qualname",
    "co_firstlineno": "&((PyCodeObject*)0)->co_firstlineno",
    "co_linetable": ["&((PyCodeObject*)0)->co_linetable", "&((PyCodeObject*)0)->co_lnotab"],
    "co_code_adaptive": "&((PyCodeObject*)0)->co_code_adaptive",
    "gil_last_holder": "&((struct _gil_runtime_state*)0)->last_holder",
    "gil_locked": "&((struct _gil_runtime_state*)0)->locked",
    "gil_cond": "&((struct _gil_runtime_state*)0)->cond",
    "gil_switch": "&((struct _gil_runtime_state*)0)->switch_cond",
    "gil_size": "sizeof(struct _gil_runtime_state)",
    "str_length": "&((PyASCIIObject*)0)->length",
    "str_state": "&((PyASCIIObject*)0)->state",
    "str_ascii_size": "sizeof(PyASCIIObject)",
    "str_compact_size": "sizeof(PyCompactUnicodeObject)",
    "bytes_size": "&((PyVarObject*)0)->ob_size",
    "bytes_data": "&((PyBytesObject*)0)->ob_sval",
    "ob_type": "&((PyObject*)0)->ob_type",
    "tp_name": "&((PyTypeObject*)0)->tp_name",
    "tp_basicsize": "&((PyTypeObject*)0)->tp_basicsize",
    "tp_flags": "&((PyTypeObject*)0)->tp_flags",
    "tp_dictoffset": "&((PyTypeObject*)0)->tp_dictoffset",
    "ht_cached_keys": "&((PyHeapTypeObject*)0)->ht_cached_keys",
    "is_modules": ["&((PyInterpreterState*)0)->modules",
                   "&((PyInterpreterState*)0)->imports.modules"],
    "dict_keys": "&((PyDictObject*)0)->ma_keys",
    "dict_values": "&((PyDictObject*)0)->ma_values",
    "dk_nentries": "&((PyDictKeysObject*)0)->dk_nentries",
    "dk_indices": "&((PyDictKeysObject*)0)->dk_indices",
    "dict_values_array": "&((PyDictValues*)0)->values",
    "long_digits": ["&((PyLongObject*)0)->ob_digit", "&((PyLongObject*)0)->long_value.ob_digit"],
    "module_dict": "&((PyModuleObject*)0)->md_dict",
}


def dwarf_offsets(binary):
    exprs = []
    for field, e in DWARF.items():
        for i, alt in enumerate(e if isinstance(e, list) else [e]):
            exprs += ["-ex", f'printf "{field} {i} %ld\\n", (long)({alt})']
    out = subprocess.run(["gdb", "-batch", "-nx", *exprs, binary], capture_output=True,
                         text=True, timeout=300).stdout
    got = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in DWARF:
            got.setdefault(parts[0], int(parts[2]))
    return got


def test_layouts_match_each_interpreters_dwarf():
    """Each field of the layout dlscope takes for an interpreter (a table up to 3.12, its
    _Py_DebugOffsets from 3.13) equals the DWARF's offset, or is -1 where the field does not
    exist."""
    checked = 0
    for python in interpreters():
        lib = glob.glob(os.path.join(os.path.dirname(os.path.dirname(python)), "lib",
                                     "libpython3.*.so.1.0"))
        binary = lib[0] if lib else python
        version = "3." + re.search(r"python3\.(\d+)", python).group(1)
        dump = subprocess.run([os.path.join(BUILD, "tests", "test_pystate"), "--dump", binary],
                              capture_output=True, text=True, check=True).stdout
        table = {k: int(v) for k, v in (line.split("=") for line in dump.splitlines())}
        dwarf = dwarf_offsets(binary)
        if "ts_interp" not in dwarf:
            continue  # no debug info for this one
        for field, off in table.items():
            if version == "3.6" and (field == "rt_interp_head" or field.startswith("gil_")):
                # 3.6 has no runtime (its "runtime" is the list head itself), and its GIL is
                # static variables, not read.
                continue
            if field == "rt_gil" and off >= 0:
                assert dwarf.get(field) == off, (version, field, off, dwarf.get(field))
            elif off >= 0:
                assert dwarf.get(field) == off, (version, binary, field, off, dwarf.get(field))
            # 3.10 has a cframe too, but walks PyFrameObjects from tstate->frame.
            elif field not in ("is_gil_ptr", "rt_gil") and (version, field) != ("3.10", "ts_cframe"):
                assert field not in dwarf, (version, field, "exists in DWARF", dwarf[field])
        checked += 1
    assert checked >= 1, "no interpreter with DWARF to check against"


def test_interpreter_embedded_in_another_program():
    """Found through libpython3.11.so, and in a program with libpython linked in statically
    whose _PyRuntime is in .symtab only."""
    for name, holder in (("embed_python_shared", "libpython3.11.so.1.0"),
                         ("embed_python_static", "embed_python_static")):
        with Fixture([os.path.join(fixture_path("python"), name)]) as fx:
            wait_idle(fx.pid)
            doc = stacks_json(fx.pid)
            assert doc["python"]["object"] == holder, (name, doc["python"])
            main = doc["threads"][0]
            got = [(f["function"], f["file"], f["line"]) for f in main["python"]["frames"]]
            assert got == [("embedded_wait", "<string>", 3), ("<module>", "<string>", 5)], got


def test_unknown_version_keeps_native_frames_and_says_why():
    # Python 2.7 plays the unknown version: its interpreter is named, its frames not read.
    python = glob.glob(os.path.expanduser("~/.pyenv/versions/2.7.*/bin/python2.7"))
    if not python:
        raise Skip("no pyenv CPython 2.7 here to play an unknown version")
    code = "import sys, time\nprint('ready')\nsys.stdout.flush()\ntime.sleep(1000)\n"
    with Fixture([python[0], "-c", code]) as fx:
        wait_idle(fx.pid)
        proc = dlscope("stacks", fx.pid, check=0)
        assert proc.stdout.startswith("Python: no Python frames: Python 2.7 (in "
                                      "libpython2.7.so.1.0): dlscope knows the frames of "
                                      "3.6 to 3.15 only\n"), proc.stdout[:300]
        assert "PyEval_EvalFrameEx" in proc.stdout and "[py]" not in proc.stdout
        doc = stacks_json(fx.pid)
        assert doc["python"]["version"] is None and "3.6 to 3.15" in doc["python"]["error"]
        assert all(t["python"] is None and t["frames"] for t in doc["threads"])
