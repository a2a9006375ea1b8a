"""The second real-world corpus: programs dlscope was not written against.

numba (its OpenMP and workqueue threading layers, and beside torch, scipy and sklearn), pyopencl
on pocl (a real OpenCL JIT on the CPU, and pocl's kernel cache), OpenJDK, Octave, R with
data.table, a program that loads AMD's HIP runtime, and `lint` over whole system trees. Each case
is a healthy run that must give no error or warning; where the case has a true finding, it is
asserted beside the reason it is true. A package that cannot be installed skips its case with
the reason; `make deps` installs them all.
"""
import json
import os
import re
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
sys.path.insert(0, HERE)

import harness  # noqa: E402
from harness import Fixture, Skip, dlscope  # noqa: E402
import test_realworld as rw  # noqa: E402

PY = rw.PY
JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"


def need(*packages):
    """Skip unless every Debian package is installed."""
    missing = []
    for p in packages:
        q = subprocess.run(["dpkg-query", "-W", "-f=${Status}", p], capture_output=True,
                           text=True)
        if "install ok installed" not in q.stdout:
            missing.append(p)
    if missing:
        raise Skip(f"not installed: {' '.join(missing)} (make deps installs them)")


def serious(findings):
    return [f for f in findings if f["severity"] in ("warning", "error")]


def assert_no_warning(findings, what):
    bad = serious(findings)
    assert bad == [], f"{what}: false findings\n{json.dumps(bad, indent=1)}"


def checked(out, exe_suffix):
    """The process of `check --json -- CMD`'s document (OUT) whose executable ends with
    EXE_SUFFIX; every process CMD ran (check follows them) must be clean as well."""
    doc = json.loads(out)
    for p in doc["processes"]:
        assert_no_warning(p["findings"], f"{p['comm']} ({p.get('cmdline', '')})")
    procs = [p for p in doc["processes"] if p.get("exe", "").endswith(exe_suffix)]
    assert len(procs) == 1, [(p["pid"], p.get("exe")) for p in doc["processes"]]
    return procs[0]


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


NUMBA_PARALLEL = """
import sys
import numba
numba.config.THREADING_LAYER = sys.argv[1]
import numpy as np
from numba import njit, prange

@njit(parallel=True)
def scaled_sum(a):
    s = 0.0
    for i in prange(a.shape[0]):
        s += a[i] * 2
    return s

assert scaled_sum(np.arange(100000.0)) == 9999900000.0
print(numba.threading_layer())
"""


def test_numba_threading_layers_are_clean():
    need("python3-numba")
    with tempfile.TemporaryDirectory() as d:
        script = write(os.path.join(d, "nb.py"), NUMBA_PARALLEL)
        for layer in ("omp", "workqueue"):
            p = dlscope("check", "--json", "--", PY, script, layer, check=0, timeout=180)
            proc = checked(p.stdout, "/python3.11")
            assert_no_warning(proc["findings"], f"numba {layer}")
            impls = [r["impl"] for r in proc["runtimes"]]
            # The omp layer is numba's omppool extension over Debian's libgomp; workqueue is
            # numba's own pthreads pool, no OpenMP runtime at all.
            if layer == "omp":
                assert impls.count("libgomp") == 1, proc["runtimes"]
            else:
                assert "libgomp" not in impls and "libomp" not in impls, proc["runtimes"]


def test_numba_torch_numpy_scipy_sklearn_agree_with_threadpoolctl():
    need("python3-numba", "python3-torch", "python3-sklearn", "python3-threadpoolctl")
    code = ("import json, time, numba, torch, numpy, scipy.linalg, sklearn.ensemble\n"
            "from numba import njit, prange\n"
            "numba.config.THREADING_LAYER = 'omp'\n"
            "@njit(parallel=True)\n"
            "def f(a):\n"
            "    s = 0.0\n"
            "    for i in prange(a.shape[0]): s += a[i]\n"
            "    return s\n"
            "f(numpy.ones(1000)); numpy.dot(numpy.ones((200, 200)), numpy.ones((200, 200)))\n"
            "from threadpoolctl import threadpool_info\n"
            "print(json.dumps(threadpool_info())); print('ready', flush=True)\n"
            "time.sleep(120)\n")
    with Fixture([PY, "-c", code], ready_timeout=90) as fx:
        tp = json.loads(fx.output[0])
        p = dlscope("check", "--json", fx.pid, check=None, timeout=120)
        proc = json.loads(p.stdout)["processes"][0]
        assert_no_warning(proc["findings"], "numba, torch, numpy, scipy, sklearn")
        rw.assert_agrees_with_threadpoolctl(tp, proc, "numba, torch, numpy, scipy, sklearn")
        # One OpenMP runtime shared by numba's omppool and torch: threadpoolctl saw one too.
        omp = [r for r in proc["runtimes"] if r["kind"] == "openmp"]
        assert len(omp) == len([e for e in tp if e["user_api"] == "openmp"]) == 1, omp


OPENCL_KERNEL = """
import numpy as np, pyopencl as cl
ctx = cl.Context(dev_type=cl.device_type.ALL)
q = cl.CommandQueue(ctx)
a = np.arange(1024, dtype=np.float32)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
prg = cl.Program(ctx, "__kernel void k(__global float *a) { a[get_global_id(0)] *= 2; }").build()
prg.k(q, a.shape, None, buf)
cl.enqueue_copy(q, a, buf)
q.finish()
assert a[3] == 6.0, a[:4]
print(ctx.devices[0].platform.name)
"""


def test_pyopencl_on_pocl_builds_a_kernel_and_its_cache_lints_clean():
    need("python3-pyopencl", "pocl-opencl-icd")
    with tempfile.TemporaryDirectory() as d:
        script = write(os.path.join(d, "ocl.py"), OPENCL_KERNEL)
        cache = os.path.join(d, "pocl-cache")
        env = {"POCL_CACHE_DIR": cache, "PYOPENCL_NO_CACHE": "1"}
        p = dlscope("check", "--json", "--", PY, script, check=0, timeout=240, env=env)
        proc = checked(p.stdout, "/python3.11")
        # pocl brings libLLVM-15 and libclang-cpp-15 beside pyopencl's own libstdc++ users:
        # their read-only constexpr tables are no split statics.
        assert_no_warning(proc["findings"], "pyopencl kernel build on pocl")
        # pocl's kernel cache holds the kernel it built (a shared object per kernel): lint of
        # the cache must find it and no defect in it.
        kernels = [os.path.join(r, f) for r, _, fs in os.walk(cache) for f in fs
                   if f.endswith(".so")]
        assert kernels, f"pocl wrote no kernel under {cache}"
        lp = dlscope("lint", "--json", cache, check=0, timeout=60)
        doc = json.loads(lp.stdout)
        assert doc["objects_checked"] >= len(kernels), doc
        assert_no_warning(doc["findings"], "lint of pocl's kernel cache")


HELLO_JAVA = """
public class Hello {
    public static void main(String[] args) throws Exception {
        long s = 0;
        for (int i = 0; i < 1000000; i++) s += i;
        System.out.println("sum " + s);
    }
}
"""


def test_java_command_is_clean():
    need("openjdk-17-jdk-headless")
    with tempfile.TemporaryDirectory() as d:
        write(os.path.join(d, "Hello.java"), HELLO_JAVA)
        subprocess.run([f"{JAVA_HOME}/bin/javac", "Hello.java"], cwd=d, check=True,
                       capture_output=True, timeout=120)
        p = dlscope("check", "--json", "--", f"{JAVA_HOME}/bin/java", "-cp", d, "Hello",
                    check=0, timeout=120)
        proc = checked(p.stdout, "/bin/java")
        # libjvm's many internal statics (one copy per translation unit, hidden in one
        # object) are what C++ defines, not a split.
        assert_no_warning(proc["findings"], "java Hello")
        assert proc["exe"] == f"{JAVA_HOME}/bin/java", proc["exe"]


def test_octave_matrix_multiply_is_clean():
    need("octave")
    # No history file and no octave-workspace dump left in the current directory (the
    # repository's): Octave 7 prints "error: ignoring const execution_exception& while
    # preparing to exit" and exits 0 on its own; dlscope reports the status it saw.
    p = dlscope("check", "--json", "--", "octave-cli", "--no-gui", "--no-history", "--eval",
                "crash_dumps_octave_core(false); A = rand(400); B = A * A; disp(size(B))",
                check=None, timeout=180)
    assert p.returncode in (0, 4), p.stderr
    proc = checked(p.stdout, "/octave-cli")
    kinds = [r["kind"] for r in proc["runtimes"]]
    assert kinds.count("blas") == 1 and kinds.count("openmp") == 1, proc["runtimes"]


def test_r_with_data_table_is_clean():
    need("r-base-core", "r-cran-data.table")
    code = ("library(data.table); d <- data.table(a = 1:200000, b = rnorm(200000)); "
            "x <- d[, .(m = mean(b)), by = a %% 10]; stopifnot(nrow(x) == 10); "
            "A <- matrix(runif(250000), 500); B <- A %*% A; cat('ok\\n')")
    p = dlscope("check", "--json", "--", "Rscript", "-e", code, check=0, timeout=180)
    proc = checked(p.stdout, "/bin/exec/R")
    assert_no_warning(proc["findings"], "R data.table")
    impls = [r["impl"] for r in proc["runtimes"]]
    # data.table's OpenMP is Debian's libgomp; R's BLAS is OpenBLAS behind libblas.so.3.
    assert impls.count("libgomp") == 1 and impls.count("openblas") == 1, proc["runtimes"]


HIP_LOAD = r"""
#include <dlfcn.h>
#include <stdio.h>

typedef int (*load_data_fn)(void **, const void *);

int main(void)
{
	static const unsigned char image[64] = { 0x7f, 'E', 'L', 'F' };
	void *h = dlopen("libamdhip64.so.5", RTLD_NOW);
	void *mod = NULL;

	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 2;
	}
	load_data_fn load = (load_data_fn)dlsym(h, "hipModuleLoadData");
	/* No AMD GPU here: the runtime answers hipErrorInvalidDevice (101) or another error. */
	printf("hipModuleLoadData %d\n", load(&mod, image));
	return 0;
}
"""


def test_hip_runtime_program_has_only_its_true_warning():
    need("libamdhip64-5")
    out_dir = os.path.join(harness.BUILD, "realworld")
    os.makedirs(out_dir, exist_ok=True)
    src = write(os.path.join(out_dir, "hip_load.c"), HIP_LOAD)
    exe = os.path.join(out_dir, "hip_load")
    subprocess.run(["cc", "-O1", "-o", exe, src, "-ldl"], check=True, capture_output=True)
    p = dlscope("check", "--json", "--", exe, check=None, timeout=120)
    assert p.returncode == 0, p.stderr
    proc = json.loads(p.stdout)["processes"][0]
    assert len(json.loads(p.stdout)["processes"]) == 1, p.stdout
    gpu = [r for r in proc["runtimes"] if r["impl"] == "hip"]
    assert [r["real_path"] for r in gpu] == [
        "/usr/lib/x86_64-linux-gnu/libamdhip64.so.5.2.21153"], proc["runtimes"]
    # True: Debian's libamdhip64 5.2.3 is linked with PT_GNU_STACK RWE (readelf -lW shows
    # it), so loading it makes every thread stack executable. Nothing else is reported.
    bad = serious(proc["findings"])
    assert [(f["id"], f["severity"]) for f in bad] == [("elf-defects", "warning")], bad
    assert "executable stack" in bad[0]["title"] and "libamdhip64" in bad[0]["title"], bad


def test_gnuradio_blocks_are_clean():
    # Each GNU Radio extension links Boost.System: its category holders and its std::
    # error_category bridge are one copy per extension, harmless (compared by id), and were
    # reported as an error-level split before.
    need("gnuradio")
    p = dlscope("check", "--json", "--", PY, "-c",
                "from gnuradio import gr, blocks, analog, filter, fft", check=0, timeout=180)
    checked(p.stdout, "/python3.11")


def test_torch_beside_vtk_is_clean():
    # 575 objects: torch's and VTK's C++ stacks (Qt, OpenMP, TBB, HDF5) in one process.
    need("python3-torch", "python3-vtk9")
    p = dlscope("check", "--json", "--", PY, "-c", "import torch, vtk", check=0, timeout=240)
    proc = checked(p.stdout, "/python3.11")
    assert_no_warning(proc["findings"], "torch, vtk")
    assert [r["kind"] for r in proc["runtimes"]].count("openmp") == 1, proc["runtimes"]


LINT_TREES = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/python3/dist-packages", "/usr/lib/jvm",
              "/usr/lib/llvm-14", "/usr/lib/llvm-15"]
EXPECTED_LINT = os.path.join(HERE, "expected-lint.txt")


def expected_lint():
    """(detector, title regex, evidence regex) of each warning expected-lint.txt justifies."""
    rules = []
    with open(EXPECTED_LINT) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            detector, title, evidence, reason = (s.strip() for s in line.split(" | ", 3))
            assert reason, f"expected-lint.txt: {line!r} gives no reason"
            rules.append((detector, re.compile(title), re.compile(evidence)))
    return rules


def justified(finding, rules):
    return any(d == finding["id"] and t.search(finding["title"]) and
               all(e.search(line) for line in finding["evidence"]) for d, t, e in rules)


def x86_64_objects(trees):
    """The x86-64 ELF files under TREES, counted as lint walks them: links followed, each
    directory and each file once by device and inode."""
    seen, count = set(), 0

    def once(st):
        key = (st.st_dev, st.st_ino)
        fresh = key not in seen
        seen.add(key)
        return fresh

    def walk(d):
        nonlocal count
        try:
            names = os.listdir(d)
        except OSError:
            return
        for name in names:
            path = os.path.join(d, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                if once(st):
                    walk(path)
            elif stat.S_ISREG(st.st_mode) and once(st):
                try:
                    with open(path, "rb") as f:
                        head = f.read(20)
                except OSError:
                    continue
                # ELF magic, ELFCLASS64, e_machine EM_X86_64 (62).
                count += head[:5] == b"\x7fELF\x02" and head[18:20] == b"\x3e\x00"

    for t in trees:
        if once(os.stat(t)):
            walk(t)
    return count


def test_whole_tree_lint_has_no_error_and_only_justified_warnings():
    trees = [t for t in LINT_TREES if os.path.isdir(t)]
    p = dlscope("lint", "--json", *trees, check=None, timeout=600)
    doc = json.loads(p.stdout)
    # Every object of what make deps installed, whatever else the machine holds: as many as a
    # walk of the same trees finds (2,518 on a fresh Debian 12 after make deps).
    assert doc["objects_checked"] == x86_64_objects(trees) > 2000, \
        (doc["objects_checked"], x86_64_objects(trees))
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    assert errors == [], json.dumps(errors, indent=1)[:4000]
    rules = expected_lint()
    unexplained = [f for f in doc["findings"]
                   if f["severity"] == "warning" and not justified(f, rules)]
    assert unexplained == [], json.dumps(unexplained, indent=1)[:4000]
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
