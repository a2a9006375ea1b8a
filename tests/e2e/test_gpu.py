"""GPU runtimes: the inventory (check, libs --runtimes) on real runtimes that run without a GPU
(Debian's ocl-icd and PoCL under pyopencl, libamdhip64-5, libze1), and dup-gpu-runtime and
cuda-driver-too-old on gpu_lib.c's stand-ins for CUDA's libraries, which carry the SONAMEs,
version nodes, version getters and banners of the real ones."""
import json
import os
import re
import subprocess
import tempfile

from harness import Skip, Fixture, dlscope, fixture_path, is_root, wait_idle

LIB = "/usr/lib/x86_64-linux-gnu"
PYTHON = "/usr/bin/python3"

# A kernel built by pyopencl on PoCL (OpenCL on the CPU), run, and its result printed.
CL_KERNEL = "__kernel void twice(__global float *a) { int i = get_global_id(0); a[i] *= 2; }"
CL_SCRIPT = f"""
import numpy as np, pyopencl as cl
ctx = cl.create_some_context(interactive=False)
queue = cl.CommandQueue(ctx)
prg = cl.Program(ctx, "{CL_KERNEL}").build()
a = np.arange(8, dtype=np.float32)
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
prg.twice(queue, a.shape, None, buf)
cl.enqueue_copy(queue, a, buf)
print("kernel", [int(x) for x in a], flush=True)
try:
    cl.Program(ctx, "__kernel void broken(__global float *a) {{ a[0] = ; }}").build()
except cl.RuntimeError:
    print("the broken kernel did not build", flush=True)
"""


def gpu(*names):
    return [fixture_path(os.path.join("gpu", n)) for n in names]


def check(pid, status):
    doc = json.loads(dlscope("check", "--json", pid, check=status).stdout)
    proc = doc["processes"][0]
    return proc["findings"], [r for r in proc["runtimes"] if r["kind"] == "cuda"]


def by_impl(runtimes, impl):
    hits = [r for r in runtimes if r["impl"] == impl]
    assert hits, f"no {impl} in {json.dumps(runtimes, indent=1)}"
    return hits


def package_version(pkg):
    """The installed upstream version of a Debian package, as dpkg says ("3.1" of 3.1-3)."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True,
                         text=True).stdout
    return out.split(":")[-1].rsplit("-", 1)[0]


def gpu_ids(findings):
    return [f["id"] for f in findings if f["id"] in ("dup-gpu-runtime", "cuda-driver-too-old")]


def test_pyopencl_on_pocl_names_the_icd_loader_and_pocl_with_their_vendor_file():
    if not os.path.exists("/etc/OpenCL/vendors/pocl.icd"):
        raise Skip("pocl-opencl-icd is not installed")
    code = ("import os, pyopencl as cl; ctx = cl.create_some_context(interactive=False); "
            "print('ready', os.getpid(), flush=True); import time; time.sleep(600)")
    with Fixture([PYTHON, "-c", code], env={"PYOPENCL_CTX": "0"}) as fx:
        wait_idle(fx.pid)
        findings, rts = check(fx.pid, 0)
        assert gpu_ids(findings) == [], findings
        loader = by_impl(rts, "opencl-loader")[0]
        # ocl-icd's release from its own .rodata, the same the package was built from.
        assert loader["package"]["name"] == "ocl-icd-libopencl1", loader
        assert loader["release"] == package_version("ocl-icd-libopencl1"), loader
        assert loader["release_from"] == "rodata"
        assert loader["label"].startswith("OpenCL ICD loader ") and "OpenCL 3.0" in loader["label"]
        pocl = by_impl(rts, "pocl")[0]
        assert pocl["package"]["name"] == "libpocl2", pocl
        assert package_version("libpocl2") == pocl["release"], pocl
        assert pocl["vendor_file"] == "/etc/OpenCL/vendors/pocl.icd", pocl
        with open(pocl["vendor_file"]) as f:
            assert os.path.basename(pocl["real_path"]) == f.read().strip()
        text = dlscope("libs", "--runtimes", fx.pid).stdout
        assert f"PoCL OpenCL driver {pocl['release']}:" in text, text
        assert "named by /etc/OpenCL/vendors/pocl.icd; package libpocl2" in text, text


def test_hip_and_level_zero_loaders_are_named_with_versions():
    hip, ze = f"{LIB}/libamdhip64.so.5", f"{LIB}/libze_loader.so.1"
    if not os.path.exists(hip) or not os.path.exists(ze):
        raise Skip("libamdhip64-5 or libze1 is not installed")
    with Fixture(["gpu_stack", hip, ze]) as fx:
        findings, rts = check(fx.pid, None)
        assert gpu_ids(findings) == [], findings
        h = by_impl(rts, "hip")[0]
        # HIP's newest hip_ version node is its ROCm release: 5.2 for Debian's 5.2.3.
        assert h["package"]["name"] == "libamdhip64-5", h
        assert package_version("libamdhip64-5").startswith(h["release"] + "."), h
        assert h["release_from"] == "symbol-versions" and h["version"] == h["release"]
        z = by_impl(rts, "level-zero")[0]
        assert z["package"]["name"] == "libze1" and z["release"] == "1", z
        assert z["label"] == "Level Zero loader 1", z


def test_coherent_cuda_12_set_is_inventoried_and_silent():
    libs = gpu("cu12/libcudart.so.12", "cu12/libcudnn.so.9", "cu12/libnccl.so.2",
               "cu12/libcublas.so.12", "driver122/libcuda.so.1")
    with Fixture(["gpu_stack", *libs]) as fx:
        findings, rts = check(fx.pid, 0)
        assert gpu_ids(findings) == [], findings
        labels = sorted(r["label"] for r in rts)
        assert labels == ["CUDA driver (CUDA 12.2)", "CUDA runtime (CUDA 12.1)", "NCCL 2.18.1 "
                          "(built for CUDA 12.1)", "cuBLAS 12", "cuDNN 9.1.0"], labels
        rt = by_impl(rts, "cuda-runtime")[0]
        assert rt["release_from"] == "function", rt   # cudaRuntimeGetVersion's constant
        assert by_impl(rts, "cudnn")[0]["release_from"] == "function"
        assert by_impl(rts, "nccl")[0]["release_from"] == "rodata"


def test_cuda_11_wheel_beside_cuda_12_is_two_runtimes_and_two_cudnns():
    # The CUDA 11 runtime is a wheel's renamed copy: named by its symbols, not its file name.
    libs = gpu("cu12/libcudart.so.12", "cu12/libcudnn.so.9", "wheel/libcudart-3f4a2b1c.so.11.0",
               "cu11/libcudnn.so.8")
    with Fixture(["gpu_stack", *libs]) as fx:
        findings, rts = check(fx.pid, 1)
        assert gpu_ids(findings) == ["dup-gpu-runtime", "dup-gpu-runtime"], findings
        cudart, cudnn = [f for f in findings if f["id"] == "dup-gpu-runtime"]
        assert cudart["severity"] == "error" and cudart["why"] and cudart["remedy"]
        assert "2 versions of CUDA runtime" in cudart["title"], cudart
        ev = "\n".join(cudart["evidence"])
        assert "libcudart-3f4a2b1c.so.11.0: CUDA runtime (CUDA 11.8)" in ev, ev
        assert "libcudart.so.12: CUDA runtime (CUDA 12.1)" in ev, ev
        assert "cuDNN 9.1.0; cuDNN 8.9.2" in cudnn["title"], cudnn


def test_two_cuda_12_minors_are_no_dup_gpu_runtime():
    # A wheel's CUDA 12.4 runtime beside the system's 12.1: one major (minor version
    # compatibility), so no finding; both are in the inventory.
    with Fixture(["gpu_stack", *gpu("cu12/libcudart.so.12", "wheel/libcudart-8a0bfc3c.so.12",
                                    "cu12/libcudnn.so.9")]) as fx:
        findings, rts = check(fx.pid, 0)
        assert gpu_ids(findings) == [], findings
        assert sorted(r["release"] for r in by_impl(rts, "cuda-runtime")) == ["12.1", "12.4"]


def test_cuda_12_libraries_on_a_cuda_11_8_driver_are_an_error():
    libs = gpu("cu12/libcudart.so.12", "cu12/libnccl.so.2", "driver118/libcuda.so.1")
    with Fixture(["gpu_stack", *libs]) as fx:
        findings, _ = check(fx.pid, 1)
        hits = [f for f in findings if f["id"] == "cuda-driver-too-old"]
        assert sorted(f["title"] for f in hits) == [
            "libcudart.so.12 is built for CUDA 12.1; the driver provides CUDA 11.8",
            "libnccl.so.2 is built for CUDA 12.1; the driver provides CUDA 11.8"], hits
        assert all(f["severity"] == "error" for f in hits)
        assert "CUDA driver (CUDA 11.8)" in "\n".join(hits[0]["evidence"])


def test_stacks_names_ncclS_threads_and_the_collective_main_waits_in():
    # ncclCommInitRank starts two proxy threads: one named "NCCL Service  0" as NCCL names it,
    # one left with the process's name, placed by its start routine in libnccl.so.2.
    libs = gpu("cu12/libcudart.so.12", "cu12/libnccl.so.2")
    with Fixture(["gpu_stack", *libs], env={"GPU_NCCL": "1"}) as fx:
        wait_idle(fx.pid)
        doc = json.loads(dlscope("stacks", "--json", fx.pid, check=0).stdout)["processes"][0]
        named = {t["name"]: t["gpu_thread"] for t in doc["threads"]}
        assert named["NCCL Service  0"] == "NCCL's proxy service thread", named
        main = [t for t in doc["threads"] if t["tid"] == fx.pid][0]
        assert main["gpu_thread"] is None, main
        assert [f["function"] for f in main["frames"]][1] == "ncclAllReduce", main["frames"]
        others = [t for t in doc["threads"] if t["tid"] != fx.pid and t["name"] == "gpu_stack"]
        assert [t["gpu_thread"] for t in others] == [
            "started by NCCL 2.18.1 (built for CUDA 12.1) (libnccl.so.2)"], others
        text = dlscope("stacks", fx.pid, check=0).stdout
        assert '"NCCL Service  0", NCCL\'s proxy service thread)' in text, text


def cl_env(cache):
    """pyopencl on PoCL with PoCL's kernel cache in @cache, pyopencl's own cache off (it would
    serve the second run a binary, not the source PoCL's cache is keyed by)."""
    if not is_root():
        raise Skip("BPF tests need root")
    if not os.path.exists("/etc/OpenCL/vendors/pocl.icd") or subprocess.run(
            [PYTHON, "-c", "import pyopencl"], capture_output=True).returncode:
        raise Skip("python3-pyopencl or pocl-opencl-icd is not installed")
    return {"POCL_CACHE_DIR": cache, "PYOPENCL_NO_CACHE": "1", "PYOPENCL_CTX": "0"}


def test_pyopencl_program_build_on_pocl_cold_then_from_its_cache():
    """watch shows clCreateProgramWithSource and clBuildProgram (in the ICD loader) with the
    build's duration; a second run, recorded, is served from PoCL's kernel cache: its build is
    shown too, shorter; report's timeline has it."""
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "cl_kernel.py")
        with open(script, "w") as f:
            f.write(CL_SCRIPT)
        env = cl_env(os.path.join(d, "pocl-cache"))
        p = dlscope("watch", "--", PYTHON, script, env=env, check=0, timeout=120)
        out = p.stdout
        assert "kernel [0, 2, 4, 6, 8, 10, 12, 14]" in out, out[-3000:]
        create = re.search(r"python3 clCreateProgramWithSource\(1 string, (\d+) bytes\) = "
                           r"program (0x[0-9a-f]+), errcode 0 \(CL_SUCCESS\) \([\d.]+ ms\)", out)
        assert create and int(create.group(1)) == len(CL_KERNEL), out[-3000:]
        build = re.search(rf"python3 clBuildProgram\(program {create.group(2)}, all devices, "
                          r'"[^"]*"\) = 0 \(CL_SUCCESS\) \(([\d.]+) ms\)', out)
        assert build, out[-3000:]
        cold_ms = float(build.group(1))
        assert "CUDA" not in create.group(0) + build.group(0)
        # A kernel that does not compile: its build's result by name.
        assert "the broken kernel did not build" in out, out[-3000:]
        assert re.search(r'python3 clBuildProgram\(program 0x[0-9a-f]+, all devices, "[^"]*"\) = '
                         r"-11 \(CL_BUILD_PROGRAM_FAILURE\) \([\d.]+ ms\)", out), out[-3000:]
        # The second run: PoCL's cache has the kernel, the build is a lookup.
        trace = os.path.join(d, "warm.jsonl")
        dlscope("record", "-o", trace, "--", PYTHON, script, env=env, check=0, timeout=120)
        recs = [json.loads(line) for line in open(trace)]
        loads = [r for r in recs if r["type"] == "gpu_load"]
        assert [r["function"] for r in loads] == ["clCreateProgramWithSource", "clBuildProgram"] \
            * 2, loads
        made, built = loads[:2]
        assert loads[3]["result_name"] == "CL_BUILD_PROGRAM_FAILURE", loads
        assert made["runtime"] == built["runtime"] == "OpenCL", loads
        assert made["result_name"] == built["result_name"] == "CL_SUCCESS", loads
        assert made["program"] == built["program"] != 0 and made["count"] == 1, loads
        assert made["image_size"] == len(CL_KERNEL) and "-I" in built["options"], loads
        warm_ms = built["duration_ns"] / 1e6
        assert 0 < warm_ms < cold_ms, (cold_ms, warm_ms)
        print(f"clBuildProgram on PoCL: {cold_ms:.1f} ms cold, {warm_ms:.1f} ms from its cache")
        timeline = dlscope("report", trace, check=None).stdout
        assert re.search(r"clBuildProgram\(program 0x[0-9a-f]+, all devices, \"[^\"]*\"\) = 0 "
                         rf"\(CL_SUCCESS\) \({warm_ms:.3f} ms\)", timeline), timeline[-3000:]


def test_level_zero_module_create_without_a_device_fails_by_name():
    """zeModuleCreate through Debian's libze1 loader, no driver: the stream names the error
    (ze_result_t), the module's format, size and build flags; in watch and record."""
    if not is_root():
        raise Skip("BPF tests need root")
    if not os.path.exists(f"{LIB}/libze_loader.so.1"):
        raise Skip("libze1 is not installed")
    p = dlscope("watch", "--", fixture_path("ze_module"), check=0)
    assert "zeModuleCreate 0x78000001" in p.stdout, p.stdout
    line = re.search(r'ze_module zeModuleCreate\(SPIR-V, 20 bytes, "-ze-opt-level=2"\) = '
                     r"0x78000001 \(ZE_RESULT_ERROR_UNINITIALIZED\) \([\d.]+ ms\)", p.stdout)
    assert line and p.stdout.count("zeModuleCreate(") == 1, p.stdout
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        dlscope("record", "-o", f.name, "--", fixture_path("ze_module"), check=0)
        loads = [json.loads(line) for line in open(f.name) if '"gpu_load"' in line]
    assert len(loads) == 1, loads
    z = loads[0]
    assert (z["function"], z["runtime"], z["result"], z["result_name"], z["options"],
            z["image_size"]) == ("zeModuleCreate", "Level Zero", 0x78000001,
                                 "ZE_RESULT_ERROR_UNINITIALIZED", "-ze-opt-level=2", 20), z
    assert z["image"] > 0 and z["duration_ns"] > 0 and z["stack"][0].startswith("main+"), z
