"""dlscope watch: the stacks events carry (a dlopen's, a fatal signal's, a blocked dlsym's)."""
import json
import os
import re
import signal
import subprocess
import tempfile

from harness import Skip, dlscope, dlscope_path, fixture_path, is_root
from watchlib import watch


def test_fatal_signal_with_faulting_object():
    p = watch("--", fixture_path("two_blas"), env={"FIXTURE_EXIT": "fault"}, status=1)
    # The faulting pc is named from the last model of the process: through its stack, else
    # from the symbol tables; when the process died before the collector read it again, the
    # bare address is all there is.
    assert re.search(r"two_blas fatal signal SIGSEGV, fault address 0x10 \(null pointer \+ 0x10\), at "
                     r"(fixture_wait \(two_blas, inlined\) in main\+0x[0-9a-f]+ \(two_blas\)|"
                     r"main\+0x[0-9a-f]+ \(two_blas\)|0x[0-9a-f]+)", p.stdout), p.stdout
    assert "exit, killed by SIGSEGV" in p.stdout


def test_a_signal_a_handler_takes_is_not_fatal():
    """The JVM serves its null checks and safepoints with a SIGSEGV handler (four in `java
    -version`'s start): a signal that a handler takes is no fatal signal."""
    p = watch("--", fixture_path("handled_faults"), "5", status=0)
    assert "recovered 5" in p.stdout and "exit, status 0" in p.stdout, p.stdout
    assert "fatal signal" not in p.stdout, p.stdout


def test_a_signal_sent_names_its_sender_not_a_fault_address():
    """Python's faulthandler takes the SIGSEGV, then raises it again with the default action:
    that second one is the fatal one, sent by the process itself, with no fault address (its
    siginfo holds the sender's PID where a fault's holds the address)."""
    if not is_root():
        raise Skip("BPF tests need root")
    code = "import ctypes; ctypes.string_at(0)"
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.jsonl")
        dlscope("record", "-o", trace, "--", "/usr/bin/python3", "-X", "faulthandler", "-c",
                code, check=0, timeout=60)
        recs = [json.loads(line) for line in open(trace)]
    sig = [r for r in recs if r["type"] == "signal"]
    assert len(sig) == 1, sig
    assert sig[0]["signal"] == 11 and sig[0]["sent_by"] == sig[0]["pid"], sig
    assert sig[0]["address"] == 0 and sig[0]["where"] == "none", sig
    p = watch("--", "/usr/bin/python3", "-X", "faulthandler", "-c", code, status=0)
    assert len(re.findall(r"python3 fatal signal SIGSEGV, sent by PID (\d+) \(itself; not a "
                          r"fault\), at ", p.stdout)) == 1, p.stdout
    # A fault keeps its address.
    p = watch("--", "/usr/bin/python3", "-c", code, status=0)
    assert "fatal signal SIGSEGV, fault address 0x0 (null pointer)" in p.stdout, p.stdout


def _exec_mappings(pid):
    """(start, end) of every executable mapping of @pid."""
    out = []
    for line in open(f"/proc/{pid}/maps"):
        rng, perms = line.split()[:2]
        if "x" in perms:
            lo, hi = (int(x, 16) for x in rng.split("-"))
            out.append((lo, hi))
    return out


def _check_frames(rec, pid_maps):
    """Every frame names its object and lies in an executable mapping (a return address:
    pc - 1, inside its call)."""
    stack, pcs = rec["stack"], rec["stack_pc"]
    assert stack and len(stack) == len(pcs), rec
    for i, (text, pc) in enumerate(zip(stack, pcs)):
        assert re.fullmatch(r"\S.* \([^()]+\)", text), (i, text, stack)
        where = pc if i == 0 else pc - 1
        assert any(lo <= where < hi for lo, hi in pid_maps), (i, hex(pc), stack)


# Prints the address of _imp.create_dynamic's C function (_imp_create_dynamic, static: in no
# symbol table of Debian's python3.11) from its PyMethodDef, then waits for a line.
NUMPY_SCRIPT = """
import numpy, ctypes, os, sys, _imp
ml = ctypes.c_void_p.from_address(id(_imp.create_dynamic) + 16).value
print("ready", os.getpid(), ctypes.c_void_p.from_address(ml + 8).value, flush=True)
sys.stdin.readline()
"""


def _fde_range(path, addr):
    """The [start, end) of the .eh_frame FDE of @path that covers file address @addr."""
    # -wN: the file's own .eh_frame, not its separate debug file's (python3.11-dbg installs
    # one, whose .eh_frame is NOBITS: readelf fails on it).
    out = subprocess.run(["readelf", "-wN", "--debug-dump=frames", path], capture_output=True,
                         text=True, check=True).stdout
    for lo, hi in re.findall(r"FDE cie=\S+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", out):
        if int(lo, 16) <= addr < int(hi, 16):
            return int(lo, 16), int(hi, 16)
    raise AssertionError(f"no FDE of {path} covers {addr:#x}")


def test_dlopen_stack_of_a_numpy_import():
    """The stack of the dlopen that loads numpy's _multiarray_umath: CFI-unwound through
    libc's dlopen, CPython's import machinery (no frame pointers, static functions with no
    symbol) and its eval loop, down to _start."""
    if not is_root():
        raise Skip("BPF tests need root")
    py = "/usr/bin/python3.11"
    assert "EXEC" in subprocess.run(["readelf", "-h", py], capture_output=True,
                                    text=True).stdout, "python3.11 is not a fixed-address build"
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        w = subprocess.Popen([dlscope_path(), "record", "-o", f.name, "--", py, "-c",
                              NUMPY_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            line = w.stdout.readline()
            m = re.match(r"ready (\d+) (\d+)", line)
            assert m, (line, w.stderr.read() if w.poll() is not None else "")
            pid, create_dynamic = int(m.group(1)), int(m.group(2))
            maps = _exec_mappings(pid)
            w.stdin.write("\n")
            w.stdin.flush()
            out, err = w.communicate(timeout=60)
        finally:
            w.kill()
            w.wait()
        assert w.returncode == 0, (out, err)
        recs = [json.loads(l) for l in open(f.name)]
    umath = [r for r in recs if r["type"] == "dlopen" and r["path"] and
             "_multiarray_umath" in r["path"]]
    assert len(umath) == 1, [r.get("path") for r in recs if r["type"] == "dlopen"]
    rec = umath[0]
    stack = rec["stack"]
    _check_frames(rec, maps)
    assert "stack_end" not in rec, rec
    assert re.fullmatch(r"_*dlopen\+0x[0-9a-f]+ \(libc\.so\.6\)", stack[0]), stack
    assert stack[-1].startswith("_start+0x") and stack[-1].endswith("(python3.11)"), stack
    # _imp_create_dynamic has no symbol: find its frame by address, between libc's dlopen
    # and the eval loop that ran `import numpy`.
    lo, hi = _fde_range(py, create_dynamic)
    at = [i for i, pc in enumerate(rec["stack_pc"]) if i and lo <= pc - 1 < hi]
    evals = [i for i, t in enumerate(stack) if t.startswith("_PyEval_EvalFrameDefault+")]
    assert at and evals and 0 < at[0] < evals[0], (hex(lo), stack, rec["stack_pc"])
    assert all(t.endswith("(python3.11)") for t in stack[1:at[0] + 1]), stack
    # ctypes' dlopen(NULL) is the main program, not a file named "".
    opens = [r["path"] for r in recs if r["type"] == "dlopen"]
    assert None in opens and "" not in opens, opens


def test_dlopen_three_calls_deep_without_frame_pointers():
    """libdeep.so is built with -fomit-frame-pointer: every one of its three frames is there,
    in order, between libc's dlopen and main."""
    if not is_root():
        raise Skip("BPF tests need root")
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        dlscope("record", "-o", f.name, "--duration", "1.5", "--",
                fixture_path("deep_dlopen"), fixture_path("libplain.so"), check=0)
        recs = [json.loads(l) for l in open(f.name)]
    opens = [r for r in recs if r["type"] == "dlopen" and r["path"].endswith("libplain.so")]
    assert len(opens) == 1, recs
    stack = opens[0]["stack"]
    want = [r"_*dlopen\+0x[0-9a-f]+ \(libc\.so\.6\)", r"deep_level3\+0x[0-9a-f]+ \(libdeep\.so\)",
            r"deep_level2\+0x[0-9a-f]+ \(libdeep\.so\)",
            r"deep_level1\+0x[0-9a-f]+ \(libdeep\.so\)", r"main\+0x[0-9a-f]+ \(deep_dlopen\)"]
    assert len(stack) >= len(want), stack
    for pat, frame in zip(want, stack):
        assert re.fullmatch(pat, frame), (pat, stack)
    assert stack[-1].startswith("_start+"), stack


def test_blocked_dlsym_names_a_symbol_on_an_untouched_page():
    """The worker's dlsym name lies on a page nothing has touched, and dlsym blocks on the
    loader lock before it reads it: the probe cannot read it, the collector must."""
    p = watch("--duration", "2", "--", fixture_path("dlopen_list"),
              fixture_path("libhang_dlsym_cold.so"), status=1)
    out = p.stdout
    assert 'dlsym("")' not in out, out
    assert re.search(r'blocked in a futex wait on 0x[0-9a-f]+ inside dlsym\("printf"\)', out), out
    assert re.search(r'waits in dlsym\("printf"\) for the loader lock: a deadlock', out), out
