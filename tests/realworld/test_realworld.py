"""dlscope on real software from Debian's packages, not fixtures made to trigger a rule.

Each test runs a real stack (python3-torch, numpy, scipy, sklearn, Qt5, ICU, LLVM, Boost, TBB,
oneDNN, Debian's BLAS alternatives) and checks that dlscope reports no finding unless it is
true; each true finding is justified where it is asserted. The packages come from `make deps`.
A false alarm found on real software becomes a test here.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "e2e"))

import harness  # noqa: E402
from harness import Fixture, Skip, dlscope, is_root  # noqa: E402

PY = "/usr/bin/python3"  # Debian's interpreter, with Debian's packages
LIB = "/usr/lib/x86_64-linux-gnu"
SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def build(name, lang, flags, out=None):
    """Compile programs/NAME into the build folder once (as OUT); returns the binary's path."""
    out_dir = os.path.join(harness.BUILD, "realworld")
    os.makedirs(out_dir, exist_ok=True)
    exe = os.path.join(out_dir, out or name)
    src = os.path.join(SRC, name + (".cpp" if lang == "c++" else ".c"))
    cc = ["g++", "-std=c++17"] if lang == "c++" else ["cc"]
    # --no-as-needed: keep every library in DT_NEEDED even where main does not call it.
    return harness.build_once(exe, [*cc, "-O1", "-o", exe, src, "-Wl,--no-as-needed", *flags],
                              [src])


def pkg_flags(*pkgs):
    return subprocess.run(["pkg-config", "--cflags", "--libs", *pkgs], check=True,
                          capture_output=True, text=True).stdout.split()


def check_cmd(*argv, status=0):
    """dlscope check --json -- ARGV: the findings and the process document."""
    p = dlscope("check", "--json", "--", *argv, check=status, timeout=180)
    doc = json.loads(p.stdout)
    assert len(doc["processes"]) == 1, doc
    return doc["processes"][0]["findings"], doc["processes"][0]


def need_packages(*pkgs):
    """Skip, naming them, when Debian packages the test runs are not installed."""
    missing = [p for p in pkgs
               if subprocess.run(["dpkg-query", "-W", "-f", "${Status}", p], capture_output=True,
                                 text=True).stdout != "install ok installed"]
    if missing:
        raise Skip(f"not installed: {' '.join(missing)} (make deps)")


def dup_library(findings):
    return [f for f in findings if f["id"] == "dup-library"]


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
    assert proc["object_count"] >= 10, proc
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
    # The harm, read: OpenBLAS's own LAPACK and its front will call the reference dgemm_.
    ev = "\n".join(dup[0]["evidence"])
    assert re.search(r"libopenblas.so.0, itself, will call \w+_ in libblas.so.3 \(the first "
                     r"definition in the global scope", ev), ev
    assert re.search(r"liblapack.so.3, a front of libopenblas.so.0, will call \w+_ in "
                     r"libblas.so.3", ev), ev


GSL_NUMPY = ("import ctypes, numpy, os, sys, time\n"
             "a = numpy.ones((64, 64)); a @ a\n"
             "if sys.argv[1:] == ['gsl']:\n"
             "    ctypes.CDLL('libgslcblas.so.0', mode=ctypes.RTLD_GLOBAL)\n"
             "    ctypes.CDLL('libgsl.so.27', mode=ctypes.RTLD_GLOBAL).gsl_blas_ddot\n"
             "print('ready', os.getpid(), flush=True)\n"
             "time.sleep(600)\n")


def test_gsl_cblas_that_serves_numpys_calls_is_a_warning():
    # GSL's own CBLAS preloaded: numpy, linked against OpenBLAS, runs GSL's reference
    # cblas_sgemm, as its GOT shows once it has called it.
    env = dict(os.environ, LD_PRELOAD="libgslcblas.so.0")
    with Fixture(["/usr/bin/python3", "-c", GSL_NUMPY], env=env) as fx:
        p = dlscope("check", "--json", "--fail-on", "warning", fx.pid, check=1)
    dup = [f for f in json.loads(p.stdout)["processes"][0]["findings"] if f["id"] == "dup-blas"]
    assert len(dup) == 1 and dup[0]["severity"] == "warning", dup
    ev = "\n".join(dup[0]["evidence"])
    assert re.search(r"_multiarray_umath\S+, linked against libopenblas.so.0, calls cblas_\w+ in "
                     r"libgslcblas.so.0 \(its GOT says so\)", ev), ev


def test_gsl_beside_numpys_openblas_is_silent():
    # QGIS's and Inkscape's case: GSL and its CBLAS beside OpenBLAS, each serving its own
    # callers (GSL's may run on OpenBLAS: faster, and what GSL is built to allow).
    with Fixture(["/usr/bin/python3", "-c", GSL_NUMPY, "gsl"]) as fx:
        maps = open(f"/proc/{fx.pid}/maps").read()
        assert "libgslcblas.so.0" in maps and "libopenblas" in maps, maps
        p = dlscope("check", "--json", "--fail-on", "warning", fx.pid, check=0)
    assert json.loads(p.stdout)["processes"][0]["findings"] == [], p.stdout


TWO_LIBOMP = ("import ctypes, os, sys, time\n"
              "if sys.argv[1] == 'threadpoolctl':\n"
              "    import threadpoolctl\n"
              "ctypes.CDLL('libomp.so.5').omp_get_max_threads()\n"
              "ctypes.CDLL(sys.argv[2]).omp_get_max_threads()\n"
              "print('ready', os.getpid(), flush=True)\n"
              "time.sleep(600)\n")


def test_kmp_duplicate_lib_ok_that_threadpoolctl_set_is_shown():
    # A wheel's renamed copy of LLVM's libomp beside the system's: the second one aborts at
    # its start (OMP: Error #15) unless KMP_DUPLICATE_LIB_OK is set, which threadpoolctl does
    # at import, in os.environ only: /proc/PID/environ never shows it.
    with tempfile.TemporaryDirectory() as d:
        copy = os.path.join(d, "libomp-6a1b2c3d.so.5")
        shutil.copy(os.path.realpath("/usr/lib/x86_64-linux-gnu/libomp.so.5"), copy)
        p = subprocess.run(["/usr/bin/python3", "-c", TWO_LIBOMP, "plain", copy],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode < 0 and "OMP: Error #15" in p.stderr, (p.returncode, p.stderr)
        # threadpoolctl sets it; a user sets it, with OMP_NUM_THREADS, before the start.
        for argv, env in (("threadpoolctl", {}),
                          ("plain", {"KMP_DUPLICATE_LIB_OK": "TRUE", "OMP_NUM_THREADS": "2"})):
            with Fixture(["/usr/bin/python3", "-c", TWO_LIBOMP, argv, copy], env=env) as fx:
                initial = open(f"/proc/{fx.pid}/environ").read()
                assert ("KMP_DUPLICATE_LIB_OK" in initial) == (argv == "plain"), initial
                p = dlscope("check", "--json", fx.pid, check=1)
            f = [f for f in json.loads(p.stdout)["processes"][0]["findings"]
                 if f["id"] == "dup-openmp"][0]
            ev = "\n".join(f["evidence"])
            if argv == "threadpoolctl":
                assert ("KMP_DUPLICATE_LIB_OK=True (set by the process after it started): the "
                        "runtimes' own check for a second copy (OMP: Error #15) is off") in ev, ev
                assert ("OMP_NUM_THREADS is not set: each pool is sized to every CPU the "
                        "process may run on") in ev, ev
            else:
                assert "KMP_DUPLICATE_LIB_OK=TRUE: the runtimes' own check" in ev, ev
                assert "OMP_NUM_THREADS=2: it bounds every OpenMP pool" in ev, ev
            assert ("(libomp.so.5); LLVM libomp" in f["title"] and
                    "(libomp-6a1b2c3d.so.5)" in f["title"]), f


SHADOW = ("import ctypes, os, sys, time\n"
          "order, ext = sys.argv[1:3]\n"
          "if order == 'numpy-first':\n"
          "    import numpy\n"
          "    try:\n"
          "        ctypes.CDLL(ext, mode=os.RTLD_NOW)\n"
          "    except OSError as e:\n"
          "        print('py:', e, flush=True)\n"
          "ctypes.CDLL(ext, mode=os.RTLD_LAZY)\n"
          "import numpy\n"
          "print('ready', os.getpid(), flush=True)\n"
          "time.sleep(float(sys.argv[3]))\n")


def ref_blas_ext():
    """An extension built against the reference BLAS, found through its RUNPATH, that calls
    cblas_dcabs1 (which OpenBLAS's libblas.so.3 lacks), bound lazily."""
    return build("ref_blas_ext", "c", ["-shared", "-fPIC", "-Wl,--enable-new-dtags",
                                       f"-Wl,-rpath,{LIB}/blas", "-Wl,-z,lazy",
                                       f"{LIB}/blas/libblas.so.3"], out="ref_blas_ext.so")


def test_a_soname_shadowed_by_an_earlier_import_is_named():
    # cugraph #4465's story on Debian's BLAS alternatives: numpy, imported first, brought
    # OpenBLAS's libblas.so.3; the extension's RUNPATH names the reference one, which it never
    # gets. dlopen fails on the symbol only the reference one has; watch says why as it fails.
    ext = ref_blas_ext()
    # Alive a second after: the files are read through its root.
    p = dlscope("watch", "--", "/usr/bin/python3", "-c", SHADOW, "numpy-first", ext, "1",
                check=1, timeout=120)
    assert "py: " + ext + ": undefined symbol: cblas_dcabs1" in p.stdout, p.stdout
    assert re.search(r'FINDING error shadowed-soname: dlopen\("\S+ref_blas_ext.so"\) failed: '
                     r'undefined symbol cblas_dcabs1, defined by the libblas.so.3 its RUNPATH '
                     rf'names \({LIB}/blas/libblas.so.3\), not by the one the process had loaded '
                     r'first \(/\S+/libblas.so.3\)', p.stdout), p.stdout
    # Loaded lazily, it runs until its first call: check names the symbol it will miss.
    with Fixture(["/usr/bin/python3", "-c", SHADOW, "numpy-first", ext, "600"]) as fx:
        p = dlscope("check", "--json", fx.pid, check=1)
    f = [f for f in json.loads(p.stdout)["processes"][0]["findings"]
         if f["id"] == "shadowed-soname"]
    assert len(f) == 1 and f[0]["severity"] == "error", f
    assert f[0]["title"].startswith("ref_blas_ext.so is given the libblas.so.3 the process had "
                                    "loaded first"), f
    ev = "\n".join(f[0]["evidence"])
    assert f"its RUNPATH ({LIB}/blas) finds {LIB}/blas/libblas.so.3" in ev, ev
    assert "openblas-pthread/libblas.so.3), loaded by DT_NEEDED of _multiarray_umath" in ev, ev
    assert re.search(r"1 symbol it uses is defined by \S+ and not by \S+: cblas_dcabs1", ev), ev


def test_an_executables_runpath_shadowed_by_a_preload_is_a_warning():
    # The executable's own RUNPATH (its $ORIGIN is its file's directory) names the reference
    # BLAS; LD_PRELOAD brings OpenBLAS's libblas.so.3 first. Nothing it calls is missing: it
    # runs another build's code, a warning.
    exe = build("blas_user", "c", ["-Wl,--enable-new-dtags", f"-Wl,-rpath,{LIB}/blas",
                                   f"{LIB}/blas/libblas.so.3"], out="blas_user_runpath")
    env = {"LD_PRELOAD": f"{LIB}/openblas-pthread/libblas.so.3"}
    with Fixture([exe, "--wait"], env=env) as fx:
        p = dlscope("check", "--json", "--fail-on", "warning", fx.pid, check=1)
    f = [f for f in json.loads(p.stdout)["processes"][0]["findings"]
         if f["id"] == "shadowed-soname"]
    assert len(f) == 1 and f[0]["severity"] == "warning", f
    assert f[0]["title"] == (f"blas_user_runpath is given the libblas.so.3 the process had "
                             f"loaded first ({LIB}/openblas-pthread/libblas.so.3), not the one "
                             f"its RUNPATH names ({LIB}/blas/libblas.so.3)"), f
    assert f"{exe} needs libblas.so.3; its RUNPATH ({LIB}/blas) finds" in f[0]["evidence"][0], f


def test_a_soname_that_arrived_through_its_own_runpath_is_silent():
    # The other import order: the extension brings the reference libblas.so.3 its RUNPATH
    # names, and numpy (no RUNPATH) takes it: nobody is given a file its own search path
    # would not find.
    with Fixture(["/usr/bin/python3", "-c", SHADOW, "ext-first", ref_blas_ext(), "600"]) as fx:
        p = dlscope("check", "--json", fx.pid, check=0)
    findings = json.loads(p.stdout)["processes"][0]["findings"]
    assert "shadowed-soname" not in [f["id"] for f in findings], p.stdout
    # This order has its own harm, which dup-blas reads: numpy's LAPACK (OpenBLAS, reached
    # through its liblapack.so.3) was given the reference libblas.so.3 and calls it.
    dup = [f for f in findings if f["id"] == "dup-blas"]
    assert len(dup) == 1 and dup[0]["severity"] == "warning", findings
    assert re.search(r"libopenblas.so.0, itself, calls \w+_ in libblas.so.3 \(its GOT says so\)",
                     "\n".join(dup[0]["evidence"])), dup


LOAD_EACH = ("import ctypes, os, sys, time\n"
             "for n in sys.argv[1:]:\n"
             "    try:\n"
             "        ctypes.CDLL(n)\n"
             "    except OSError as e:\n"
             "        print('py:', e, flush=True)\n"
             "print('ready', os.getpid(), flush=True)\n"
             "time.sleep(float(os.environ.get('HOLD', '0')))\n")
# The static TLS surplus cut to what one small object needs (glibc's own tunables).
TIGHT_TLS = {"GLIBC_TUNABLES": "glibc.rtld.nns=1:glibc.rtld.optional_static_tls=0"}


def watch_held(argv, env, done, timeout=120):
    """`dlscope watch -- ARGV` of LOAD_EACH with HOLD long, the command ended by the test once a
    line of dlscope's matches DONE: what the collector reads of the live process is then there
    however late a loaded machine lets it run. Returns (stdout, stderr, exit status)."""
    with tempfile.TemporaryFile(mode="w+") as err:
        w = subprocess.Popen([harness.dlscope_path(), "watch", "--", *argv], text=True,
                             stdout=subprocess.PIPE, stderr=err, env=dict(os.environ, **env))
        late = threading.Timer(timeout, w.kill)
        late.start()
        out, pid = [], None
        try:
            for line in w.stdout:
                out.append(line)
                ready = re.fullmatch(r"ready (\d+)\n", line)
                pid = int(ready.group(1)) if ready else pid
                if pid and re.search(done, line):
                    os.kill(pid, signal.SIGTERM)
            w.wait()
        finally:
            late.cancel()
        err.seek(0)
        return "".join(out), err.read(), w.returncode


def test_a_dlopen_with_no_static_tls_left_is_explained():
    # scikit-learn #17231's libgomp, with Debian's libgomp and AMD's HIP runtime: whichever is
    # loaded second finds no room, depending on the import order.
    gomp, hip = f"{LIB}/libgomp.so.1", f"{LIB}/libamdhip64.so.5"
    for first, second, size in ((hip, gomp, 144), (gomp, hip, 272)):
        # Alive until the finding's room is out: the room left is read from the process.
        out, err, status = watch_held([PY, "-c", LOAD_EACH, first, second],
                                      dict(TIGHT_TLS, HOLD="120"), r"^\s+- the process has ")
        assert status == 1, (status, out, err)
        assert f"py: {second}: cannot allocate memory in static TLS block" in out, out
        assert (f'FINDING error static-tls: dlopen("{second}") failed: no room left in the '
                "static TLS block") in out, out
        assert f"- {second}: {size} bytes of initial-exec TLS (DF_STATIC_TLS)" in out, out
        left = re.search(r"- the process has (\d+) of 448 bytes left \(2 objects took (\d+), "
                         r"the thread descriptor \d+\)", out)
        assert left and int(left.group(1)) < size, out
    # Without the tunables: a sanitizer runtime's 56 KiB never fit after start-up.
    out, err, status = watch_held([PY, "-c", LOAD_EACH, f"{LIB}/liblsan.so.0"], {"HOLD": "120"},
                                  r"^\s+- the process has ")
    assert status == 1, (status, out, err)
    assert re.search(r"- /\S+/liblsan.so.0: 56240 bytes of initial-exec TLS \(DF_STATIC_TLS\)\n"
                     r"\s+- the process has \d+ of 1856 bytes left", out), out
    # A command gone before its record is read: the finding all the same.
    p = dlscope("watch", "--", PY, "-c", LOAD_EACH, f"{LIB}/liblsan.so.0",
                check=1, timeout=120)
    assert f'FINDING error static-tls: dlopen("{LIB}/liblsan.so.0") failed' in p.stdout, \
        p.stdout


def test_check_says_how_much_static_tls_is_left():
    with Fixture(["/usr/bin/python3", "-c", LOAD_EACH, f"{LIB}/libgomp.so.1"],
                 env=dict(TIGHT_TLS, HOLD="600")) as fx:
        p = dlscope("check", fx.pid, check=0)
        doc = json.loads(dlscope("check", "--json", fx.pid, check=0).stdout)
    # libc's 144 bytes and libgomp's 144 of the 448 the tunables leave.
    assert "static TLS: 160 of 448 bytes left for objects loaded later (2 objects in it, 288 " \
        "bytes taken)" in p.stdout, p.stdout
    st = doc["processes"][0]["static_tls"]
    assert st["left"] == 160 and st["used"] == 288 and st["size"] - st["descriptor"] == 448, st


def test_lint_names_objects_with_static_tls():
    p = dlscope("lint", f"{LIB}/libgomp.so.1", f"{LIB}/liblsan.so.0", f"{LIB}/libm.so.6",
                check=0)
    assert "info static-tls: 1 object takes static TLS when dlopened (DF_STATIC_TLS)" in \
        p.stdout, p.stdout
    assert f"- {LIB}/libgomp.so.1: 144 bytes of initial-exec TLS" in p.stdout, p.stdout
    assert (f"warning static-tls: {LIB}/liblsan.so.0: 56240 bytes of initial-exec TLS, more than "
            "glibc sets aside for objects loaded later (1664)") in p.stdout, p.stdout
    assert "libm.so.6" not in p.stdout.split("static-tls", 1)[1], p.stdout


def proto_extensions():
    """Two extensions that each compile point.proto (protoc of Debian's protobuf-compiler,
    libprotobuf-dev) into themselves, linked against the shared libprotobuf: two builds."""
    src = os.path.join(SRC, "proto")
    out = os.path.join(harness.BUILD, "realworld", "proto")
    pb = harness.build_once(os.path.join(out, "point.pb.cc"),
                            ["sh", "-c", f"protoc -I{src} --cpp_out={out} point.proto && "
                                         f"mv {out}/point.pb.cc $0", os.path.join(out, "point.pb.cc")],
                            [os.path.join(src, "point.proto")])
    exts = []
    for ext in ("proto_a", "proto_b"):
        so = os.path.join(out, f"lib{ext}.so")
        exts.append(harness.build_once(so, ["g++", "-O1", "-shared", "-fPIC", f"-DEXT={ext}_size",
                                            f"-I{out}", "-o", so, os.path.join(src, "point_ext.cc"),
                                            pb, "-lprotobuf"],
                                       [pb, os.path.join(src, "point_ext.cc")]))
    return exts


LOAD_PROTO = ("import ctypes, os, sys, time\n"
              "for n in sys.argv[1:]:\n"
              "    getattr(ctypes.CDLL(n), os.path.basename(n)[3:-3] + '_size')()\n"
              "print('ready', os.getpid(), flush=True)\n"
              "time.sleep(float(os.environ.get('HOLD', '0')))\n")


def test_one_proto_file_registered_by_two_extensions_is_named_at_the_abort():
    # protobuf #1489's story: the second import aborts in libprotobuf ("File already exists in
    # database: point.proto"); check -- CMD reads the process at that exit.
    a, b = proto_extensions()
    p = dlscope("check", "--json", "--", "/usr/bin/python3", "-c", LOAD_PROTO, a, b, check=4,
                timeout=120)
    doc = json.loads(p.stdout)
    assert doc["command"]["signal"] == "SIGABRT", doc["command"]
    f = [f for f in doc["processes"][0]["findings"] if f["id"] == "dup-proto"]
    assert len(f) == 1 and f[0]["severity"] == "error", doc["processes"][0]["findings"]
    assert f[0]["title"] == ("point.proto is registered by 2 objects with one libprotobuf "
                             "(libprotobuf.so.32): the second registration aborts (\"File already "
                             "exists in database: point.proto\")"), f
    ev = "\n".join(f[0]["evidence"])
    assert re.search(r"libproto_a.so defines its own descriptor_table_point_2eproto, loaded by "
                     r"dlopen\n.*libproto_b.so defines its own", ev), ev
    # lint sees it in the files; each extension alone, and Debian's own protobuf users
    # (gRPC's reflection and channelz, ONNX's protos, libprotoc), are silent.
    p = dlscope("lint", a, b, check=0)
    assert "warning dup-proto: point.proto is compiled into 2 objects" in p.stdout, p.stdout
    with Fixture(["/usr/bin/python3", "-c", LOAD_PROTO, a], env={"HOLD": "600"}) as fx:
        p = dlscope("check", "--json", fx.pid, check=0)
        assert json.loads(p.stdout)["processes"][0]["findings"] == [], p.stdout
    p = dlscope("lint", *[f"{LIB}/{n}" for n in ("libgrpc++_reflection.so.1.51",
                                                "libgrpcpp_channelz.so.1.51",
                                                "libonnx_proto.so.1", "libprotobuf.so.32",
                                                "libprotoc.so.32")
                          if os.path.exists(f"{LIB}/{n}")], check=0)
    assert "dup-proto" not in p.stdout, p.stdout


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


def need_python_module(module, package):
    """Skip, naming the Debian package, when Debian's python3 cannot import @module."""
    if subprocess.run([PY, "-c", f"import {module}"], capture_output=True).returncode:
        raise Skip(f"{PY} cannot import {module} (install {package})")


def named(objs, base):
    hits = [o for o in objs if os.path.basename(o["path"]) == base and not o["gone"]]
    assert len(hits) == 1, (base, [o["path"] for o in objs])
    return hits[0]


def assert_forest_follows_the_link_map(objs):
    """Who loaded each object (libs --json's loaded_by) came before it in the link map and needs
    it; a root (loaded_by null) has no parent before it, except the program for a preload."""
    by_id = {o["id"]: o for o in objs}
    for o in objs:
        if o["gone"] or o["origin"] in ("mapped", "vdso"):
            continue
        earlier = [p for p in o["parents"] if p < o["id"] and by_id[p]["namespace"] == o["namespace"]]
        if o["loaded_by"] is None:
            assert o["origin"] != "needed" and (not earlier or o["origin"] == "preload"), o
        else:
            assert o["loaded_by"] == min(earlier), (o, earlier)
            assert o["origin"] in ("needed", "interpreter"), o


def test_ctypes_libgfortran_before_numpy_is_its_own_dlopen():
    """ctypes.CDLL("libgfortran.so.5") before numpy: libgfortran is link-map entry 9, OpenBLAS
    (which needs it) arrives later with numpy. It came by the dlopen, not under libopenblas."""
    need_python_module("numpy", "python3-numpy")
    code = ("import ctypes, time; ctypes.CDLL('libgfortran.so.5'); import numpy; "
            "print('ready', flush=True); time.sleep(120)")
    with Fixture([PY, "-c", code], ready_timeout=60) as fx:
        objs = dlscope_json_libs(fx.pid)
        gfortran, openblas = named(objs, "libgfortran.so.5"), named(objs, "libopenblas.so.0")
        assert gfortran["id"] < openblas["id"] and openblas["id"] in gfortran["parents"], \
            (gfortran, openblas)
        assert gfortran["origin"] == "dlopen" and gfortran["loaded_by"] is None, gfortran
        assert named(objs, "libquadmath.so.0")["loaded_by"] == gfortran["id"]
        assert_forest_follows_the_link_map(objs)
        text = dlscope("libs", fx.pid, check=0).stdout
        line = next(l for l in text.splitlines() if f"#{gfortran['id']} libgfortran.so.5" in l)
        assert line.startswith("#") and "(dlopen)" in line, text


def test_libgomp_dlopened_before_torch_is_not_blamed_on_torch():
    """ctypes loads libgomp, then libomp, then torch, whose libtorch_global_deps needs libgomp:
    dup-openmp names the dlopen, not "DT_NEEDED of libtorch_global_deps.so", and no package
    it was "loaded for"."""
    need_python_module("torch", "python3-torch")
    code = ("import ctypes; ctypes.CDLL('libgomp.so.1'); ctypes.CDLL('libomp.so.5'); "
            "import torch")
    findings, proc = check_cmd(PY, "-c", code, status=1)
    assert [f["id"] for f in findings] == ["dup-openmp"], findings
    f = findings[0]
    ev = [e for e in f["evidence"] if "libgomp.so.1: GNU libgomp" in e]
    assert len(ev) == 1 and "loaded by dlopen" in ev[0], f["evidence"]
    assert "libtorch" not in ev[0] and "loaded for" not in ev[0], ev
    gomp = [p for p in f["data"]["packages"] if p["path"].endswith("/libgomp.so.1")]
    assert gomp and gomp[0]["loaded_for"] is None, f["data"]
    assert "libgomp.so.1 from libgomp1" in f["remedy"] and "loaded for" not in f["remedy"], f


JAVA_SLEEP = """public class Sleep {
    public static void main(String[] args) throws Exception {
        System.out.println("ready " + ProcessHandle.current().pid());
        Thread.sleep(120000);
    }
}
"""


def test_jvm_libjvm_is_the_launchers_dlopen_not_under_libjimage():
    """java's launcher (libjli) dlopens libjvm; libjvm then dlopens libjimage, whose DT_NEEDED
    names libjvm. libjvm is a root, libjimage came after it."""
    java = shutil.which("java")
    if not java:
        raise Skip("no java (install openjdk-17-jdk-headless)")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "Sleep.java")
        with open(src, "w") as f:
            f.write(JAVA_SLEEP)
        with Fixture([java, src], ready_timeout=120) as fx:
            objs = dlscope_json_libs(fx.pid)
            jvm, jimage = named(objs, "libjvm.so"), named(objs, "libjimage.so")
            assert jvm["id"] < jimage["id"] and jimage["id"] in jvm["parents"], (jvm, jimage)
            assert jvm["origin"] == "dlopen" and jvm["loaded_by"] is None, jvm
            assert jimage["origin"] == "dlopen" and jimage["below"] == 0, jimage
            assert_forest_follows_the_link_map(objs)
            tree = dlscope("libs", fx.pid, check=0).stdout
            line = next(l for l in tree.splitlines() if f"#{jvm['id']} libjvm.so" in l)
            assert line.startswith("#") and "(dlopen)" in line, tree


def test_pocl_is_the_icd_loaders_dlopen_not_under_its_device_plugin():
    """The OpenCL ICD loader dlopens libpocl, which dlopens its device plugins; each plugin's
    DT_NEEDED names libpocl. libpocl is a root, not drawn under a plugin."""
    need_python_module("pyopencl", "python3-pyopencl")
    code = ("import pyopencl as cl, time; ctx = cl.create_some_context(interactive=False); "
            "print('ready', flush=True); time.sleep(120)")
    probe = subprocess.run([PY, "-c", "import pyopencl as cl; print(cl.get_platforms())"],
                           capture_output=True, text=True)
    if probe.returncode or "Portable Computing Language" not in probe.stdout:
        raise Skip(f"no pocl OpenCL platform (install pocl-opencl-icd): {probe.stderr[-200:]}")
    with Fixture([PY, "-c", code], env={"PYOPENCL_CTX": ""}, ready_timeout=60) as fx:
        objs = dlscope_json_libs(fx.pid)
        pocl = [o for o in objs if os.path.basename(o["path"]).startswith("libpocl.so")]
        plugins = [o for o in objs if "libpocl-devices-" in o["path"]]
        assert len(pocl) == 1 and plugins, [o["path"] for o in objs]
        pocl = pocl[0]
        assert any(pocl["id"] in p["children"] for p in plugins), (pocl, plugins)
        assert pocl["origin"] == "dlopen" and pocl["loaded_by"] is None, pocl
        assert all(p["id"] > pocl["id"] and p["origin"] == "dlopen" for p in plugins), plugins
        assert_forest_follows_the_link_map(objs)


def assert_agrees_with_threadpoolctl(tp, proc, what=""):
    """Every runtime threadpoolctl lists (TP) is in check's inventory (PROC) with its file,
    version, thread count and threading layer."""
    by_file = {r["real_path"]: r for r in proc["runtimes"]}
    assert tp, "threadpoolctl found nothing"
    for entry in tp:
        r = by_file.get(entry["filepath"])
        assert r, f"{entry} missing from {proc['runtimes']}"
        if entry.get("version"):
            assert r["version"] == entry["version"], (entry, r)
        assert r["num_threads"] == entry["num_threads"], (what, entry, r)
        if entry.get("threading_layer"):
            assert r["threading_layer"] == entry["threading_layer"], (entry, r)


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
            assert_agrees_with_threadpoolctl(tp, proc, env)


def test_torch_beside_numba_is_clean():
    # libLLVM-14 (under numba's llvmlite) and libtorch_python each use their own copy of
    # libstdc++'s __to_chars_10_impl<unsigned>::__digits and _Sp_make_shared_tag::_S_ti()::__tag:
    # both constexpr tables in .rodata (and _M_get_deleter also accepts the tag's typeid), so
    # the split changes nothing. Reported as an error before, which failed the check.
    need_packages("python3-torch", "python3-numba")
    findings, _ = check_cmd(PY, "-c", "import torch, numba")
    assert_clean(findings, "import torch, numba")


def test_numba_beside_pyopencl_is_clean():
    # pyopencl's _cl extension and libLLVM-14: the same read-only __digits table.
    need_packages("python3-numba", "python3-pyopencl")
    findings, _ = check_cmd(PY, "-c", "import numba, pyopencl")
    assert_clean(findings, "import numba, pyopencl")


def test_matplotlib_agg_is_clean():
    # Four extensions, each with its own static PyModuleDef (_ZL9moduledef: internal linkage),
    # numpy's _ZN5numpyL5zerosE and agg's sRGB_conv_base<T>::lut, hidden in each: private to
    # each object by the linker's choice, nothing shows they cross.
    # An empty MPLCONFIGDIR is matplotlib's first run on a machine: it builds its font cache and
    # runs fc-list for it, which check -- CMD follows. Every process it ran is checked, and
    # every one must be clean: the first run is tested on every machine, not only a fresh one.
    need_packages("python3-matplotlib")
    with tempfile.TemporaryDirectory() as mpl:
        p = dlscope("check", "--json", "--", PY, "-c",
                    "import matplotlib; matplotlib.use('Agg'); "
                    "import matplotlib.pyplot as plt; plt.plot([1, 2]); "
                    "import io; plt.savefig(io.BytesIO(), format='png')",
                    check=0, timeout=180, env={"MPLCONFIGDIR": mpl})
        # The font cache it built: this was a first run.
        assert any(re.fullmatch(r"fontlist-v\d+\.json", n) for n in os.listdir(mpl)), \
            os.listdir(mpl)
    procs = json.loads(p.stdout)["processes"]
    comms = sorted(proc["comm"] for proc in procs)
    assert "python3" in comms and "fc-list" in comms, comms
    for proc in procs:
        assert_clean(proc["findings"], f"matplotlib Agg: {proc['comm']}")


def test_live_jvm_has_no_dup_library_finding():
    # libjvm.so keeps internal-linkage statics of many translation units (_ZL11initialized
    # twice, _ZL22log_stream_initializer seven times): one object, one copy per TU by the
    # language, never a split.
    need_packages("openjdk-17-jdk-headless")
    out_dir = os.path.join(harness.BUILD, "realworld")
    os.makedirs(out_dir, exist_ok=True)
    src = os.path.join(SRC, "Sleep.java")
    cls = os.path.join(out_dir, "Sleep.class")
    if not os.path.exists(cls) or os.path.getmtime(cls) < os.path.getmtime(src):
        subprocess.run(["javac", "-d", out_dir, src], check=True, capture_output=True)
    with Fixture(["java", "-cp", out_dir, "Sleep"], ready_timeout=30) as fx:
        p = dlscope("check", "--json", "--fail-on", "info", fx.pid, check=None, timeout=60)
        proc = json.loads(p.stdout)["processes"][0]
        assert any(o.endswith("/libjvm.so") for o in
                   (x["path"] for x in dlscope_json_libs(fx.pid))), "no libjvm.so"
        assert dup_library(proc["findings"]) == [], proc["findings"]


def test_live_node_is_clean():
    # node links V8 and ICU statically: 174 names of internal-linkage statics
    # (_ZN2v88internalL3rspE, _ZN6icu_78L5gLockE) defined in several of its translation units.
    need_packages("nodejs")
    code = "console.log('ready', process.pid); setTimeout(() => {}, 120000)"
    with Fixture(["node", "-e", code], ready_timeout=30) as fx:
        p = dlscope("check", "--json", "--fail-on", "info", fx.pid, check=0, timeout=60)
        assert_clean(json.loads(p.stdout)["processes"][0]["findings"], "node")


def test_lint_gcc_runtimes_has_no_split_statics():
    # The sanitizer runtimes each link their own sanitizer_common, its symbols localized:
    # internal-linkage tables (_ZL11ioctl_table) and each runtime's private state, reported as
    # 1,100 split statics before. Each runtime is built to keep its own.
    need_packages("libgcc-12-dev")
    p = dlscope("lint", "--json", "/usr/lib/gcc/x86_64-linux-gnu/12/", check=None, timeout=60)
    doc = json.loads(p.stdout)
    assert doc["objects_checked"] >= 10, doc["objects_checked"]
    assert dup_library(doc["findings"]) == [], doc["findings"]


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
        before = harness.thread_states(fx.pid)
        p = dlscope("check", "--json", fx.pid, check=None, timeout=120)
        after = harness.thread_states(fx.pid)
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
    # The pool's threads sleep. The main thread is left out, as in the loop: Octave's pause()
    # wakes it every 100 ms to look for events (seen running once, under ASan in CI).
    for states in (before, after):
        assert "R" not in [st for t, st in states.items() if t != pid], (before, after)
    assert f", {pool} pool thread{'' if pool == 1 else 's'} (0 running)" in text, text


# Alone: the pool threads run only while the main thread feeds them. With other tests on the
# 2 CPUs the main thread waits for a CPU between multiplies and the pool sleeps meanwhile:
# check, reading then, rightly saw 0 running (the fresh root's suite, once).
@harness.serial
def test_octave_dgemm_loop_pool_threads_running():
    _check_dgemm_pool("octave")


@harness.serial
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
