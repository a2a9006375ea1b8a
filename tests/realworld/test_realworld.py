"""dlscope on real software from Debian's packages, not fixtures made to trigger a rule.

Each test runs a real stack (python3-torch, numpy, scipy, sklearn, Qt5, ICU, LLVM, Boost, TBB,
oneDNN, Debian's BLAS alternatives) and checks that dlscope reports no finding unless it is
true; each true finding is justified where it is asserted. The packages come from `make deps`.
A false alarm found on real software becomes a test here.
"""
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))

import harness  # noqa: E402
from harness import Fixture, Skip, dlscope, is_root  # noqa: E402

PY = "/usr/bin/python3"  # Debian's interpreter, with Debian's packages
LIB = "/usr/lib/x86_64-linux-gnu"
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def build(name, lang, flags):
    """Compile programs/NAME into the build folder once; returns the binary's path."""
    out_dir = os.path.join(harness.BUILD, "realworld")
    os.makedirs(out_dir, exist_ok=True)
    exe = os.path.join(out_dir, name)
    src = os.path.join(SRC, name + (".cpp" if lang == "c++" else ".c"))
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        cc = ["g++", "-std=c++17"] if lang == "c++" else ["cc"]
        # --no-as-needed: keep every library in DT_NEEDED even where main does not call it.
        subprocess.run([*cc, "-O1", "-o", exe, src, "-Wl,--no-as-needed", *flags], check=True,
                       capture_output=True, text=True)
    return exe


def pkg_flags(*pkgs):
    return subprocess.run(["pkg-config", "--cflags", "--libs", *pkgs], check=True,
                          capture_output=True, text=True).stdout.split()


def check_cmd(*argv, status=0):
    """dlscope check --json -- ARGV: the findings and the process document."""
    p = dlscope("check", "--json", "--", *argv, check=status, timeout=180)
    doc = json.loads(p.stdout)
    assert len(doc["processes"]) == 1, doc
    return doc["processes"][0]["findings"], doc["processes"][0]


def runtimes_by_impl(proc):
    out = {}
    for r in proc["runtimes"]:
        out.setdefault(r["impl"], []).append(r)
    return out


def assert_clean(findings, what):
    assert findings == [], f"{what}: false findings\n{json.dumps(findings, indent=1)}"


def test_python_torch_numpy_scipy_is_clean_and_inventoried():
    findings, proc = check_cmd(PY, "-c", "import torch, numpy, scipy.linalg")
    # Qt5 and ICU (pulled in by torch's dependencies) define typeinfo copies that libstdc++
    # compares by name: reported as a split before, they must not be.
    assert_clean(findings, "import torch, numpy, scipy.linalg")
    rt = runtimes_by_impl(proc)
    assert [r["kind"] for r in proc["runtimes"]].count("blas") == 1, proc["runtimes"]
    blas = rt["openblas"][0]
    assert blas["real_path"].endswith("/libopenblasp-r0.3.21.so"), blas
    fronts = sorted(os.path.basename(f) for f in blas["fronts"])
    assert fronts == ["libblas.so.3", "liblapack.so.3"], blas
    assert blas["threading_layer"] == "pthreads", blas
    assert rt["libgomp"][0]["real_path"] == f"{LIB}/libgomp.so.1.0.0", rt["libgomp"]
    assert rt["libstdc++"][0]["version"].startswith("3.4."), rt["libstdc++"]
    assert rt["tbb"][0]["version"] and rt["tbb"][0]["version"][0].isdigit(), rt["tbb"]
    assert rt["onednn"][0]["version"].count(".") == 2, rt["onednn"]


def test_text_check_lists_the_runtimes_with_the_front():
    p = dlscope("check", "--", PY, "-c", "import numpy", check=0, timeout=120)
    lines = [l for l in p.stdout.splitlines() if l.startswith("  BLAS/LAPACK")]
    assert len(lines) == 1, p.stdout
    assert "OpenBLAS" in lines[0] and "front: libblas.so.3" in lines[0], lines


def test_sklearn_is_clean():
    findings, proc = check_cmd(PY, "-c", "import sklearn.ensemble, sklearn.linear_model")
    assert_clean(findings, "import sklearn")
    assert {r["kind"] for r in proc["runtimes"]} >= {"openmp", "blas", "cxx-runtime"}, proc


def test_qt5_and_icu_program_is_clean():
    # The C program of the report: linked against Qt5 (Core, Gui, OpenGL) and ICU, no
    # RTLD_LOCAL anywhere. Each library carries weak typeinfo copies no relocation names.
    exe = build("qt_icu", "c", [*pkg_flags("Qt5Gui", "icu-i18n", "icu-uc"),
                                f"{LIB}/libQt5OpenGL.so.5"])
    findings, proc = check_cmd(exe)
    assert_clean(findings, "Qt5 + ICU program")
    assert runtimes_by_impl(proc)["libstdc++"], proc["runtimes"]


def test_qt5_widgets_application_is_clean():
    exe = build("qt_widgets", "c++", ["-fPIC", *pkg_flags("Qt5Widgets")])
    findings, _ = check_cmd(exe)
    assert_clean(findings, "Qt5 widgets program")


def test_llvm_clang_is_clean():
    # clang-14 links libLLVM-14 and libclang-cpp: thousands of C++ templates and statics.
    findings, proc = check_cmd("clang-14", "--version")
    assert_clean(findings, "clang-14 --version")
    assert proc["objects"] >= 10, proc
    assert runtimes_by_impl(proc)["libstdc++"], proc["runtimes"]


def test_boost_and_tbb_program_is_clean():
    exe = build("boost_tbb", "c++", ["-lboost_filesystem", "-lboost_thread", "-ltbb",
                                     "-lpthread"])
    findings, proc = check_cmd(exe)
    assert_clean(findings, "Boost + TBB program")
    assert runtimes_by_impl(proc)["tbb"], proc["runtimes"]


def test_onednn_program_is_clean():
    exe = build("onednn", "c", ["-ldnnl"])
    findings, proc = check_cmd(exe)
    assert_clean(findings, "oneDNN program")
    rt = runtimes_by_impl(proc)
    assert rt["onednn"][0]["version"].count(".") == 2, rt
    assert rt["libgomp"], rt  # Debian's oneDNN is built on OpenMP


def test_openblas_fronts_are_one_runtime():
    # Debian's openblas-pthread alternative: libblas.so.3 and liblapack.so.3 forward to
    # libopenblas.so.0. One BLAS, in check and in libs alike.
    exe = build("blas_user", "c", [f"{LIB}/libblas.so.3", f"{LIB}/liblapack.so.3",
                                   f"{LIB}/libopenblas.so.0"])
    findings, proc = check_cmd(exe)
    assert_clean(findings, "OpenBLAS with its fronts")
    with Fixture([exe, "--wait"]) as fx:
        p = dlscope("libs", fx.pid, check=0)
        assert "BLAS/LAPACK: front of libopenblas.so.0 (OpenBLAS" in p.stdout, p.stdout
        p = dlscope("libs", "--runtimes", "--json", fx.pid, check=0)
        rt = json.loads(p.stdout)["processes"][0]["runtimes"]
        assert [r["impl"] for r in rt] == ["openblas"], rt
        assert sorted(os.path.basename(f) for f in rt[0]["fronts"]) == \
            ["libblas.so.3", "liblapack.so.3"], rt
        p = dlscope("libs", "--runtimes", fx.pid, check=0)
        assert p.stdout.count("\n  BLAS/LAPACK") == 1, p.stdout


def test_reference_blas_beside_openblas_is_a_warning():
    # A real collision, but not a pool fight: the reference BLAS (blas/libblas.so.3) has no
    # threads; whichever of the two defines dgemm_ first serves every caller.
    exe = build("blas_user", "c", [f"{LIB}/libblas.so.3", f"{LIB}/liblapack.so.3",
                                   f"{LIB}/libopenblas.so.0"])
    env = {"LD_LIBRARY_PATH": f"{LIB}/blas"}  # the reference libblas.so.3 found first
    # A warning: check's default --fail-on is error, so the exit status stays 0.
    p = dlscope("check", "--json", "--", exe, check=0, env=env, timeout=120)
    findings = json.loads(p.stdout)["processes"][0]["findings"]
    dup = [f for f in findings if f["id"] == "dup-blas"]
    assert len(dup) == 1 and dup[0]["severity"] == "warning", findings
    assert "BLAS (reference or unknown)" in dup[0]["title"] and "OpenBLAS" in dup[0]["title"]
    assert [f["id"] for f in findings] == ["dup-blas"], findings


def dpkg_owners(paths):
    """{path: package} as dpkg -S says, in one call: each path's real file first, then the path
    itself, each also under its /usr-merge alias (bookworm lists libc6 under /lib)."""
    def names(p):
        real = os.path.realpath(p)
        for q in (real, p):
            yield q
            yield q[4:] if q.startswith("/usr/") else "/usr" + q
    queries = sorted({q for p in paths for q in names(p)})
    out = subprocess.run(["dpkg", "-S", *queries], capture_output=True, text=True).stdout
    listed = {}
    for line in out.splitlines():
        pkgs, _, path = line.partition(": ")
        if "," not in pkgs and not pkgs.startswith("diversion"):
            listed.setdefault(path, pkgs.split(":")[0])
    return {p: next((listed[q] for q in names(p) if q in listed), None) for p in paths}


def test_packages_of_numpy_scipy_torch_are_dpkgs():
    """libs and check name the Debian package of every object, as dpkg -S does."""
    code = ("import numpy, scipy.linalg, torch, time; print('ready', flush=True); "
            "time.sleep(120)")
    with Fixture([PY, "-c", code], ready_timeout=60) as fx:
        objs = [o for o in dlscope_json_libs(fx.pid) if o["origin"] != "vdso"]
        want = dpkg_owners([o["path"] for o in objs])
        wrong = [(o["path"], o["package"], want[o["path"]]) for o in objs
                 if (o["package"] or {}).get("name") != want[o["path"]]
                 or (o["package"] and o["package"]["manager"] != "deb")]
        assert not wrong, wrong
        assert all(o["package"] for o in objs), [o["path"] for o in objs if not o["package"]]
        by_base = {os.path.basename(o["path"]): o["package"]["name"] for o in objs}
        assert by_base["_multiarray_umath.cpython-311-x86_64-linux-gnu.so"] == "python3-numpy"
        assert by_base["_flapack.cpython-311-x86_64-linux-gnu.so"] == "python3-scipy"
        assert by_base["_C.cpython-311-x86_64-linux-gnu.so"] == "python3-torch"
        assert by_base["libopenblas.so.0"] == "libopenblas0-pthread", by_base
        _, proc = None, json.loads(dlscope("check", "--json", fx.pid, check=None).stdout)
        rt = runtimes_by_impl(proc["processes"][0])
        assert rt["openblas"][0]["package"]["name"] == "libopenblas0-pthread", rt["openblas"]
        assert rt["libgomp"][0]["package"]["name"] == "libgomp1", rt["libgomp"]
        ver = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "libgomp1"],
                             capture_output=True, text=True).stdout
        assert rt["libgomp"][0]["package"]["version"] == ver, (rt["libgomp"], ver)
        text = dlscope("check", fx.pid, check=None).stdout
        assert re.search(r"OpenMP runtime +GNU libgomp .*; package libgomp1 \S+ \(deb\)", text), \
            text


def dlscope_json_libs(pid):
    return json.loads(dlscope("libs", "--json", pid, check=0).stdout)["processes"][0]["objects"]


def test_threadpoolctl_agrees():
    """Every runtime threadpoolctl lists is in the inventory with its file, version, threads."""
    cases = [
        ("numpy, scipy.linalg, sklearn.ensemble", {}),
        ("numpy, scipy.linalg, sklearn.ensemble", {"OMP_NUM_THREADS": "3",
                                                   "OPENBLAS_NUM_THREADS": "1"}),
        # torch sizes libgomp's team itself (omp_set_num_threads in the main thread): only
        # the live nthreads-var, read from the thread's TLS, can agree.
        ("torch, numpy, scipy.linalg", {}),
        ("torch; torch.set_num_threads(3); import numpy", {}),
    ]
    for imports, env in cases:
        code = (f"import json, sys, time; import {imports}\n"
                "from threadpoolctl import threadpool_info\n"
                "print(json.dumps(threadpool_info())); print('ready', flush=True)\n"
                "time.sleep(120)\n")
        with Fixture([PY, "-c", code], env=env, ready_timeout=60) as fx:
            tp = json.loads(fx.output[0])
            p = dlscope("check", "--json", fx.pid, check=None)
            proc = json.loads(p.stdout)["processes"][0]
            assert_clean(proc["findings"], f"{imports} {env}")
            by_file = {r["real_path"]: r for r in proc["runtimes"]}
            assert tp, "threadpoolctl found nothing"
            for entry in tp:
                r = by_file.get(entry["filepath"])
                assert r, f"{entry} missing from {proc['runtimes']}"
                if entry.get("version"):
                    assert r["version"] == entry["version"], (entry, r)
                assert r["num_threads"] == entry["num_threads"], (env, entry, r)
                if entry.get("threading_layer"):
                    assert r["threading_layer"] == entry["threading_layer"], (entry, r)


def test_watch_import_torch_has_no_finding():
    if not is_root():
        raise Skip("watch needs root")
    p = dlscope("watch", "--duration", "60", "--", PY, "-c", "import torch, numpy, scipy.linalg",
                check=0, timeout=120)
    assert "FINDING" not in p.stdout, p.stdout
    assert "front of libopenblas.so.0" in p.stdout, p.stdout


def test_lint_finds_no_corrupt_file_among_debian_objects():
    # The integrity checks behind "corrupt: ..." must hold on every real object: the system's
    # libraries, Python's extensions (torch, scipy, numpy) and separate debug files.
    p = dlscope("lint", "--json", LIB, "/usr/lib/python3/dist-packages", "/usr/lib/debug",
                check=None, timeout=300)
    doc = json.loads(p.stdout)
    assert doc["objects_checked"] > 1000, doc["objects_checked"]
    corrupt = [u for u in doc["unreadable"] if u["error"].startswith("corrupt")]
    assert corrupt == [], corrupt


def _thread_states(pid):
    states = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                states[int(tid)] = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            pass
    return states


# Octave's A*A and R's %*% call Debian's OpenBLAS (pthreads): in a loop its pool threads compute
# (state R), after one multiply they sleep. The first multiply is done before "ready".
DGEMM_PROGRAMS = {
    "octave": ("/usr/bin/octave-cli",
               lambda loop: ["/usr/bin/octave-cli", "--norc", "--no-history", "--eval",
                             "crash_dumps_octave_core(false); A = rand(1000); B = A * A; "
                             "printf('ready %d\\n', getpid()); fflush(stdout); " +
                             ("while true, B = A * A; end" if loop else "pause(600)")]),
    "R": ("/usr/bin/Rscript",
          lambda loop: ["/usr/bin/Rscript", "-e",
                        "A <- matrix(runif(1000^2), 1000); B <- A %*% A; "
                        "cat('ready', Sys.getpid(), '\\n'); flush(stdout()); " +
                        ("repeat { B <- A %*% A }" if loop else "Sys.sleep(600)")]),
}


def _dgemm_pool(program, loop):
    exe, argv = DGEMM_PROGRAMS[program]
    if not os.path.exists(exe):
        raise Skip(f"{exe} is not installed")
    with Fixture(argv(loop), ready_timeout=60) as fx:
        if not loop:
            harness.wait_idle(fx.pid, timeout=10)
        before = _thread_states(fx.pid)
        p = dlscope("check", "--json", fx.pid, check=None, timeout=120)
        after = _thread_states(fx.pid)
        text = dlscope("check", fx.pid, check=None, timeout=120).stdout
    proc = json.loads(p.stdout)["processes"][0]
    blas = runtimes_by_impl(proc)["openblas"][0]
    if not blas["num_threads"] or blas["num_threads"] < 2:
        raise Skip("one CPU: OpenBLAS starts no pool threads")
    return blas, before, after, text, fx.pid


def _check_dgemm_pool(program):
    """Issue 4: `check` said 0 pool threads running while they computed, 1 once they slept."""
    blas, before, after, text, pid = _dgemm_pool(program, loop=True)
    # OpenBLAS's pool is its thread count less the caller, computing in every multiply.
    pool = blas["num_threads"] - 1
    assert blas["pool_threads"] == pool, (program, blas)
    assert blas["pool_threads_running"] == pool, (program, blas, before, after)
    for states in (before, after):
        assert sum(st == "R" for t, st in states.items() if t != pid) >= pool, (states, blas)
    assert f", {pool} pool thread{'' if pool == 1 else 's'} ({pool} running)" in text, text

    blas, before, after, text, pid = _dgemm_pool(program, loop=False)
    assert blas["pool_threads"] == pool and blas["pool_threads_running"] == 0, (program, blas)
    assert "R" not in before.values() and "R" not in after.values(), (before, after)
    assert f", {pool} pool thread{'' if pool == 1 else 's'} (0 running)" in text, text


def test_octave_dgemm_loop_pool_threads_running():
    _check_dgemm_pool("octave")


def test_r_matmul_loop_pool_threads_running():
    _check_dgemm_pool("R")


def test_lint_llvm_libs_crtbegin_is_no_defect_and_i386_is_skipped():
    """Issue 6: lint of LLVM's lib/ said clang_rt.crtbegin-x86_64.o had two conflicting .eh_frame
    sections (one is the empty __EH_FRAME_LIST__ marker) and called its i386 objects
    unreadable."""
    libs = [d for d in ("/usr/lib/llvm-15/lib", "/usr/lib/llvm-14/lib")
            if os.path.isdir(d) and subprocess.run(["find", d, "-name", "clang_rt.crtbegin-*"],
                                                   capture_output=True, text=True).stdout]
    if not libs:
        raise Skip("no LLVM lib/ with compiler-rt's crtbegin objects")
    for d in libs:
        elf32 = set()
        for root, _, files in os.walk(d, followlinks=False):
            for name in files:
                path = os.path.join(root, name)
                if os.path.islink(path) or not os.path.isfile(path):
                    continue
                with open(path, "rb") as f:
                    if f.read(5) == b"\x7fELF\x01":
                        elf32.add(os.path.realpath(path))
        p = dlscope("lint", "--json", d, check=None, timeout=120)
        doc = json.loads(p.stdout)
        defects = [f for f in doc["findings"] if f["id"] == "elf-defects"]
        assert defects == [], defects
        assert doc["unreadable"] == [], doc["unreadable"]
        assert {os.path.realpath(s["path"]) for s in doc["skipped"]} == elf32, doc["skipped"]
        assert all(s["reason"] == "not x86-64" for s in doc["skipped"]), doc["skipped"]
        errors = [f for f in doc["findings"] if f["severity"] == "error"]
        assert p.returncode == (1 if errors else 0), (p.returncode, doc["findings"])
        text = dlscope("lint", d, check=p.returncode, timeout=120).stdout
        assert f", {len(elf32)} skipped (not x86-64), 0 unreadable, " in text, text
