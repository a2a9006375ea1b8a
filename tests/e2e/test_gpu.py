"""GPU runtimes: the inventory (check, libs --runtimes) on real runtimes that run without a GPU
(Debian's ocl-icd and PoCL under pyopencl, libamdhip64-5, libze1), and dup-gpu-runtime and
cuda-driver-too-old on gpu_lib.c's stand-ins for CUDA's libraries, which carry the SONAMEs,
version nodes, version getters and banners of the real ones."""
import json
import os
import subprocess

from harness import Skip, Fixture, dlscope, fixture_path, wait_idle

LIB = "/usr/lib/x86_64-linux-gnu"
PYTHON = "/usr/bin/python3"


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
