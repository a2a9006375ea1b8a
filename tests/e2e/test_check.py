"""dlscope check and lint: each detector on a fixture that reproduces its seed."""
import json
import os
import random
import re
import shutil
import struct
import subprocess
import tempfile
import time

import harness
from harness import Skip, Fixture, dlscope, dlscope_path, fixture_path, is_root, wait_idle, \
    wait_until

LIB = "/usr/lib/x86_64-linux-gnu"


def check_json(*args, status=1):
    p = dlscope("check", "--json", *args, check=status)
    doc = json.loads(p.stdout)
    return [f for proc in doc["processes"] for f in proc["findings"]], doc


def only(findings, fid):
    hits = [f for f in findings if f["id"] == fid]
    assert hits, f"no {fid} finding in {json.dumps(findings, indent=1)}"
    return hits


def test_two_openmp_runtimes_are_an_error_with_both_named():
    with Fixture(["two_omp"]) as fx:
        wait_idle(fx.pid)
        findings, _ = check_json(fx.pid)
        assert [f["id"] for f in findings] == ["dup-openmp"], findings
        f = findings[0]
        assert f["severity"] == "error" and f["why"] and f["remedy"]
        ev = "\n".join(f["evidence"])
        assert "libgomp.so.1: GNU libgomp" in ev and "DT_NEEDED of two_omp" in ev
        assert "libomp.so.5: LLVM libomp" in ev and "loaded by dlopen" in ev
        # libgomp ran a region with two threads: its pool has one worker.
        assert "1 pool thread" in f["evidence"][0], f["evidence"]
        text = dlscope("check", fx.pid, check=1).stdout
        assert "error dup-openmp: 2 OpenMP runtimes" in text and "  fix: " in text


def _pool_counts(pid, impl):
    """check --json's pool threads of runtime IMPL, with /proc's states of the pool's threads read
    before and after (every thread but the main one is a pool thread in these fixtures): taken
    again until both reads agree, so that a thread that changed state meanwhile cannot count."""
    for _ in range(10):
        before = harness.thread_states(pid)
        doc = json.loads(dlscope("check", "--json", pid, check=None).stdout)
        after = harness.thread_states(pid)
        if before == after:
            break
    else:
        raise AssertionError(f"the states of {pid}'s threads never held still: {before} {after}")
    rts = [r for r in doc["processes"][0]["runtimes"] if r["impl"] == impl]
    assert len(rts) == 1, doc["processes"][0]["runtimes"]
    workers = {t: st for t, st in before.items() if t != pid}
    return rts[0], workers


def test_running_pool_threads_are_the_threads_proc_says_run():
    """Pool threads computing (state R) are running pool threads, and sleeping ones are not:
    OpenBLAS (pthreads) and libgomp, each busy and idle. A running thread has no stack pointer
    to scan, so the pool is known from its start routine (issue 4: inverted counts)."""
    cases = [("openblas", ["pool_threads", "blas", "busy"], {}, True),
             ("openblas", ["pool_threads", "blas", "idle"], {}, False),
             ("libgomp", ["pool_threads", "omp", "busy", "4"], {}, True),
             ("libgomp", ["pool_threads", "omp", "idle", "4"], {"OMP_WAIT_POLICY": "passive"},
              False)]
    for impl, argv, env, busy in cases:
        with Fixture(argv, env=env) as fx:
            if not busy:
                wait_idle(fx.pid)
            rt, workers = _pool_counts(fx.pid, impl)
            if impl == "openblas" and not workers:
                raise Skip("one CPU: OpenBLAS starts no pool threads")
            running = sum(st == "R" for st in workers.values())
            assert rt["pool_threads"] == len(workers), (argv, rt, workers)
            assert rt["pool_threads_running"] == running, (argv, rt, workers)
            assert running == (len(workers) if busy else 0), (argv, workers)
            if impl == "libgomp":
                assert len(workers) == 3, workers
            text = dlscope("check", fx.pid, check=None).stdout
            n = len(workers)
            want = f", {n} pool thread{'' if n == 1 else 's'} ({n if busy else 0} running)"
            assert want in text, (want, text)


def deb_version(pkg):
    return subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg], capture_output=True,
                          text=True).stdout


def test_versions_name_releases_apart_from_openmp_levels():
    """libgomp's 5.1 is its OpenMP version node and libomp's 5.0.20140926 its KMP banner, not
    releases: each runtime names the release it belongs to (read from the object, here Debian's
    GCC and LLVM packages) apart from the OpenMP level, and libstdc++ its GLIBCXX_ node with the
    GCC it came with. JSON keeps "version" as it was (threadpoolctl compares it)."""
    gcc = deb_version("libgomp1").split(".")[0]
    llvm = ".".join(deb_version("libomp5-14").split(":")[-1].split(".")[:2])
    if not gcc or not llvm:
        raise Skip("libgomp1 or libomp5-14 is not installed")
    with Fixture(["dlopen_list", "libgomp.so.1", "libomp.so.5", f"{LIB}/libstdc++.so.6"]) as fx:
        wait_idle(fx.pid)
        text = dlscope("check", fx.pid, check=1).stdout
        _, doc = check_json(fx.pid)
    rt = {r["impl"]: r for r in doc["processes"][0]["runtimes"]}
    gomp, omp, cxx = rt["libgomp"], rt["libomp"], rt["libstdc++"]
    assert gomp["version"] == "5.1" and gomp["version_kind"] == "symbol-version", gomp
    assert (gomp["release_of"], gomp["release"], gomp["openmp_version"]) == \
        ("GCC", gcc, "5.1"), gomp
    assert omp["version"] == "5.0.20140926" and omp["version_kind"] == "kmp", omp
    assert (omp["release_of"], omp["release"], omp["openmp_version"]) == \
        ("LLVM", llvm, "5.0"), omp
    assert cxx["version"] == "3.4.30" and (cxx["release_of"], cxx["release"]) == ("GCC", gcc)
    for label in (f"GNU libgomp (GCC {gcc}), OpenMP 5.1", f"LLVM libomp (LLVM {llvm}), OpenMP 5.0",
                  f"GNU libstdc++ GLIBCXX_3.4.30 (GCC {gcc})"):
        assert label in text, (label, text)
        assert any(r["label"] == label for r in rt.values()), (label, rt)
    # No OpenMP level or banner date reads as a release anywhere in the text.
    assert "libgomp 5.1" not in text and "20140926" not in text, text


def test_two_openblas_builds_are_a_second_blas():
    with Fixture(["two_blas"]) as fx:
        f = only(check_json(fx.pid)[0], "dup-blas")[0]
        ev = "\n".join(f["evidence"])
        assert "openblas-pthread/libopenblas.so.0: OpenBLAS 0.3.21" in ev, ev
        assert "openblas64-pthread/libopenblas64.so.0: OpenBLAS 0.3.21" in ev, ev


def test_two_files_of_one_openblas_build_are_told_apart():
    # A wheel's renamed copy of the system's OpenBLAS: one label twice, so the title names
    # the files, and the evidence says they are one build.
    real = os.path.realpath("/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0")
    with tempfile.TemporaryDirectory() as d:
        copy = os.path.join(d, "libopenblas-5a3f2b1c.so")
        shutil.copy(real, copy)
        code = (f"import ctypes, os, time; ctypes.CDLL({real!r}); ctypes.CDLL({copy!r}); "
                "print('ready', os.getpid(), flush=True); time.sleep(600)")
        with Fixture(["/usr/bin/python3", "-c", code]) as fx:
            f = only(check_json(fx.pid)[0], "dup-blas")[0]
    assert ("OpenBLAS 0.3.21 (libopenblasp-r0.3.21.so); OpenBLAS 0.3.21 "
            "(libopenblas-5a3f2b1c.so)") in f["title"], f
    ev = "\n".join(f["evidence"])
    assert re.search(r"libopenblasp-r0.3.21.so and \S+/libopenblas-5a3f2b1c.so are one build "
                     r"\(build-id [0-9a-f]+\) in two files", ev), ev
    # The 32- and 64-bit builds: their labels differ already, and so do their integers.
    with Fixture(["two_blas"]) as fx:
        f = only(check_json(fx.pid)[0], "dup-blas")[0]
    assert "OpenBLAS 0.3.21; OpenBLAS 0.3.21 (64-bit integers)" in f["title"], f
    assert ("the builds differ: libopenblas.so.0: 32-bit integers; libopenblas64.so.0: 64-bit "
            "integers") in f["evidence"], f


def test_openmp_code_that_calls_pthreads_openblas_is_named_as_a_hazard():
    # From the files alone, calls inside a region and calls between regions look the same:
    # info, naming the code that does both; watch --hot sees the calls themselves.
    for where in ("inside", "outside"):
        with Fixture(["blas_omp", "600", where]) as fx:
            findings, _ = check_json("--fail-on", "info", fx.pid, status=1)
        f = only(findings, "blas-in-parallel")[0]
        ev = "\n".join(f["evidence"])
        # Inside regions, the read may catch a pool thread in the act: then it says so, and
        # it is a warning (seen on a loaded VM); between regions it never can.
        caught = "of libgomp.so.1's pool, is inside libopenblas.so.0" in ev
        assert f["severity"] == ("warning" if caught else "info"), f
        assert where == "inside" or not caught, f
        assert "blas_omp starts OpenMP regions and calls BLAS (cblas_dgemm)" in ev, f
        assert "libopenblas0-openmp" in f["remedy"], f


def test_numpy_with_second_openblas_through_ctypes():
    code = ("import numpy, ctypes, os, time; numpy.ones((64, 64)) @ numpy.ones((64, 64)); "
            "ctypes.CDLL('libopenblas64.so.0'); print('ready', os.getpid(), flush=True); "
            "time.sleep(600)")
    with Fixture(["/usr/bin/python3", "-c", code]) as fx:
        findings, _ = check_json(fx.pid)
        assert [f["id"] for f in findings] == ["dup-blas"], findings
        ev = "\n".join(findings[0]["evidence"])
        assert "libopenblas.so.0: OpenBLAS 0.3.21" in ev, ev
        assert "libopenblas64.so.0: OpenBLAS 0.3.21" in ev, ev
        assert "DT_NEEDED of libblas.so.3 <- _multiarray_umath" in ev, ev


def test_python_numpy_is_clean():
    code = "import numpy, os, time; print('ready', os.getpid(), flush=True); time.sleep(600)"
    with Fixture(["/usr/bin/python3", "-c", code]) as fx:
        findings, _ = check_json(fx.pid, status=0)
        assert findings == []
    p = dlscope("check", "--fail-on", "info", "--", "/usr/bin/python3", "-c", "import numpy",
                check=0)
    assert "0 findings" in p.stdout and "exited with status 0" in p.stdout, p.stdout


def test_clean_fixtures_have_no_findings():
    with Fixture(["dlopen_list", fixture_path("libplain.so"),
                  fixture_path("libcxx_ext_shared.so"), fixture_path("libvague_a.so")]) as fx:
        findings, _ = check_json("--fail-on", "info", fx.pid, status=0)
        assert findings == [], findings
    with Fixture(["dlmopen_ns", fixture_path("libplain.so")]) as fx:
        assert check_json("--fail-on", "info", fx.pid, status=0)[0] == []


def test_static_libstdcxx_beside_shared():
    with Fixture(["dlopen_list", "--global", f"{LIB}/libstdc++.so.6",
                  fixture_path("libcxx_ext_static.so")]) as fx:
        f = only(check_json(fx.pid)[0], "dup-cxx-runtime")[0]
        ev = "\n".join(f["evidence"])
        assert "libstdc++.so.6: GNU libstdc++ GLIBCXX_3.4.30 (GCC 12), shared" in ev, ev
        assert "libcxx_ext_static.so: a statically linked libstdc++ (GCC 12" in ev, ev
        assert "with hidden symbols" in ev


def test_a_dlscope_process_is_not_its_own_libstdcxx_copy():
    """dlscope keeps libstdc++'s own messages to recognise a copy linked into an object; a
    running dlscope (a recorder, an agent) is not one, though it links the shared one."""
    if not is_root():
        raise Skip("record needs root")
    with tempfile.TemporaryDirectory() as d:
        rec = subprocess.Popen([dlscope_path(), "record", "-q", "--comm", "dlscope-none", "-o",
                                os.path.join(d, "t.jsonl"), "-d", "30"],
                               stderr=subprocess.PIPE, text=True)
        try:
            assert "watching" in rec.stderr.readline()
            findings = check_json(rec.pid, status=0)[0]
            assert not findings, findings
        finally:
            rec.terminate()
            rec.communicate(timeout=30)


def test_vague_statics_split_when_local():
    libs = [fixture_path("libvague_a.so"), fixture_path("libvague_b.so")]
    with Fixture(["dlopen_list", "--local", *libs]) as fx:
        f = only(check_json(fx.pid)[0], "dup-library")[0]
        assert f["severity"] == "error"
        assert "TypeID<Dialect>::id: 2 copies" in f["evidence"][0], f
        assert "RTLD_LOCAL" in f["title"]
        # What shows it matters and that one definition could serve both.
        assert "[writable at run time, compared by address: TypeID idiom; unversioned]" in \
            f["evidence"][0], f
    # Loaded RTLD_GLOBAL, the loader unifies them: the GOTs agree and nothing is reported.
    with Fixture(["dlopen_list", "--global", *libs]) as fx:
        assert check_json("--fail-on", "info", fx.pid, status=0)[0] == []


def test_vague_statics_hidden_copies():
    libs = [fixture_path("libvague_hidden_a.so"), fixture_path("libvague_hidden_b.so")]
    with Fixture(["dlopen_list", *libs]) as fx:
        findings, _ = check_json("--fail-on", "warning", fx.pid)
        hidden = [f for f in findings if "hidden copies" in f["title"]]
        assert hidden and hidden[0]["severity"] == "warning", findings
        assert "TypeID<Dialect>::id" in hidden[0]["evidence"][0]
    p = dlscope("lint", *libs, check=0)
    assert "TypeID<Dialect>::id: a hidden copy in" in p.stdout, p.stdout


def test_vague_statics_harmless_copies_are_no_finding():
    # Two objects dlopen'ed RTLD_LOCAL, each using its own copy of a constexpr table in
    # .rodata (libstdc++'s __digits), of a constant table of pointers under RELRO, and of
    # internal-linkage statics (_ZL10tu_counter, _ZZL7countervE5calls): no program can tell.
    libs = [fixture_path("libvague_ro_a.so"), fixture_path("libvague_ro_b.so")]
    with Fixture(["dlopen_list", "--local", *libs]) as fx:
        assert check_json("--fail-on", "info", fx.pid, status=0)[0] == []
    # Two translation units' statics inside one object, one of them under a name that shows no
    # internal linkage (TypeID<Local>::id, renamed): the linker would have merged vague copies.
    two = fixture_path("libvague_twotu.so")
    with Fixture(["dlopen_list", two, fixture_path("libvague_hidden_a.so")]) as fx:
        assert check_json("--fail-on", "info", fx.pid, status=0)[0] == []
    p = dlscope("lint", *libs, two, check=0)
    assert "dup-library" not in p.stdout, p.stdout


def test_vague_statics_versions_decide_whether_copies_can_be_one():
    v14, v15 = fixture_path("libvague_ver_14.so"), fixture_path("libvague_ver_15.so")
    unversioned = fixture_path("libvague_b.so")
    # @@LLVM_14 and @@LLVM_15 never bind to each other: two libraries by design, no split.
    with Fixture(["dlopen_list", "--local", v14, v15]) as fx:
        assert check_json("--fail-on", "info", fx.pid, status=0)[0] == []
    # A default version and an unversioned definition do: loaded RTLD_GLOBAL first, either one
    # serves the other (the GOTs agree) ...
    for first, second in ((v14, unversioned), (unversioned, v14)):
        with Fixture(["dlopen_list", "--global", first, "--local", second]) as fx:
            assert check_json("--fail-on", "info", fx.pid, status=0)[0] == []
    # ... so RTLD_LOCAL apart, they are a split the suggested fix mends.
    with Fixture(["dlopen_list", "--local", v14, unversioned]) as fx:
        f = only(check_json(fx.pid)[0], "dup-library")[0]
        assert f["severity"] == "error" and "RTLD_GLOBAL" in f["remedy"], f
        assert "versions LLVM_14, unversioned]" in f["evidence"][0], f


def test_jit_cache_addon_built_against_another_version():
    addon = fixture_path("cache/.cache/torch_extensions/libaddon.so")
    with Fixture(["dlopen_list", "--global", fixture_path("ver2/libver.so.1"), "--lazy",
                  addon]) as fx:
        f = only(check_json(fx.pid)[0], "abi-mismatch")[0]
        assert f["title"].startswith("JIT-cache object libaddon.so needs 1 symbol"), f
        assert "needs ver_old_api: defined by no loaded object" in f["evidence"]
        assert "cache" in f["remedy"] and "build identity" in f["remedy"]
    # Beside the version it was built for, the addon is fine.
    with Fixture(["dlopen_list", "--global", fixture_path("ver1/libver.so.1"), "--lazy",
                  addon]) as fx:
        assert check_json("--fail-on", "info", fx.pid, status=0)[0] == []


def test_parallel_region_from_a_constructor_inside_dlopen_is_flagged():
    with Fixture(["dlopen_list", fixture_path("libctor_omp.so")]) as fx:
        # "ready" is printed before main sleeps in pause(): a thread still running has no
        # stack read, and under load that window is long enough to be seen.
        wait_idle(fx.pid)
        f = only(check_json(fx.pid)[0], "loader-lock-hazard")[0]
        assert f"thread {fx.pid}" in f["title"] and "GNU libgomp" in f["title"], f
        ev = f["evidence"][0]
        assert "ld-linux-x86-64.so.2 (loader)" in ev and "libctor_omp.so" in ev, ev
        assert "import" in f["remedy"] and "OMP_NUM_THREADS=1" in f["remedy"]


def test_loader_lock_fix_names_the_worker_call_and_skips_env_when_code_sets_threads():
    # The region asks num_threads(2): with OMP_NUM_THREADS=1 it still runs two threads, so the
    # code sizes its team itself and the environment variable cannot be the fix.
    lib = fixture_path("libhang_ctor_omp_dlsym.so")
    with Fixture(["dlopen_list", lib], env={"OMP_NUM_THREADS": "1"}, wait_ready=False) as fx:
        def hazard_with_worker_call():
            findings = check_json("--only", "loader-lock-hazard", fx.pid, status=None)[0]
            return findings if findings and len(findings[0]["evidence"]) > 1 else None

        findings = wait_until(hazard_with_worker_call, 10, "the hazard names the worker call",
                              interval=0.1)
        f = only(findings, "loader-lock-hazard")[0]
        assert "from hang_ctor_init._omp_fn.0 (libhang_ctor_omp_dlsym.so)" in f["evidence"][1], f
        assert "OMP_NUM_THREADS=1" not in f["remedy"], f["remedy"]
        assert "sets its team size itself" in f["remedy"], f["remedy"]


def test_process_caught_mid_exec_has_no_abi_mismatch():
    # Stopped at its exec, python3 has only itself and ld.so mapped: its symbols are
    # "provided by nothing" only because libc is not loaded yet.
    with Fixture(["exec_stopped", "/usr/bin/python3", "-c", "pass"]) as fx:
        child = int(fx.output[-1].split()[1])
        findings, _ = check_json("--fail-on", "info", child, status=0)
        assert [f for f in findings if f["id"] == "abi-mismatch"] == [], findings


def _procs_with_arg(marker):
    """(pid, state) of every process whose command line contains @marker."""
    out = []
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                if marker.encode() not in f.read():
                    continue
            with open(f"/proc/{d}/stat") as f:
                out.append((int(d), f.read().rsplit(")", 1)[1].split()[0]))
        except (OSError, ValueError):
            pass
    return out


def test_check_command_killed_early_never_leaves_the_command_behind():
    # SIGKILL dlscope at random moments around the command's start: the command is killed
    # with it (PR_SET_PDEATHSIG, then PTRACE_O_EXITKILL), never left stopped or running.
    rng = random.Random(7)
    for trial in range(40):
        marker = f"{1000 + trial}.{rng.randrange(10**6)}"
        p = subprocess.Popen([harness.dlscope_path(), "check", "--", "sleep", marker],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, 0.02))
        p.kill()
        p.wait()
        wait_until(lambda: not _procs_with_arg(marker), 5,
                   lambda: f"trial {trial}: left behind {_procs_with_arg(marker)}")


def test_check_command_under_strace_says_why():
    if not shutil.which("strace"):
        raise Skip("strace is not installed")
    # LeakSanitizer cannot run under a tracer: the sanitizer build checks leaks elsewhere.
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
    p = subprocess.run(["strace", "-f", "-o", "/dev/null", harness.dlscope_path(), "check", "--",
                        "/bin/true"], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 3, p
    assert "cannot trace '/bin/true'" in p.stderr and "strace" in p.stderr, p.stderr


def _sections(d):
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    entsize, num = struct.unpack_from("<HH", d, 0x3a)
    return [(shoff + i * entsize, struct.unpack_from("<I", d, shoff + i * entsize + 4)[0])
            for i in range(num)]


def _relink(d, sh_type, link):
    for off, t in _sections(d):
        if t == sh_type:
            struct.pack_into("<I", d, off + 40, link)


def _garble_versions(d):
    for off, t in _sections(d):
        if t == 0x6ffffffe:  # SHT_GNU_verneed: a chain of 0xff bytes
            start, size = struct.unpack_from("<QQ", d, off + 24)
            d[start:start + size] = b"\xff" * size


def _unterminate_dynstr(d):
    secs = _sections(d)
    for off, t in secs:
        if t == 11:  # SHT_DYNSYM: fill its string table with text and no NUL
            strtab = secs[struct.unpack_from("<I", d, off + 40)[0]][0]
            start, size = struct.unpack_from("<QQ", d, strtab + 24)
            d[start:start + size] = b"A" * size


def _phdr_past_end(d):
    struct.pack_into("<Q", d, struct.unpack_from("<Q", d, 0x20)[0] + 8, 0x7fffffff)


def test_lint_says_which_table_of_a_corrupt_file_is_broken():
    # One line per corrupt file naming the table, never "checked" in silence (issue 15).
    good = open(fixture_path("libplain.so"), "rb").read()
    cases = {
        "dyn_link.so": (lambda d: _relink(d, 6, 999), ".dynamic links to no string table"),
        "dynsym_link.so": (lambda d: _relink(d, 11, 999), ".dynsym links to no string table"),
        "versions.so": (_garble_versions, ".gnu.version_r has a version chain that leaves"),
        "dynstr.so": (_unterminate_dynstr, "whose last string is not terminated"),
        "phdr.so": (_phdr_past_end, "program header 0 (type 0x1) covers bytes past the end"),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, (mutate, _) in cases.items():
            d = bytearray(good)
            mutate(d)
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(d)
        open(os.path.join(tmp, "empty.so"), "wb").close()
        with open(os.path.join(tmp, "text.so"), "w") as f:
            f.write("not elf\n")
        for name, (_, why) in cases.items():
            p = dlscope("lint", os.path.join(tmp, name), check=3)
            assert f"{name}: corrupt: " in p.stderr and why in p.stderr, (name, p.stderr)
        for name, why in (("empty.so", "empty file"), ("text.so", "no ELF magic")):
            p = dlscope("lint", os.path.join(tmp, name), check=3)
            assert f"{name}: not an ELF object ({why})" in p.stderr, p.stderr
        # In a tree the corrupt ones are skipped with a line each; the others still count.
        shutil.copy(fixture_path("libplain.so"), os.path.join(tmp, "good.so"))
        p = dlscope("lint", "--json", tmp, check=0)
        doc = json.loads(p.stdout)
        assert doc["objects_checked"] == 1, doc
        assert sorted(u["path"].rsplit("/", 1)[1] for u in doc["unreadable"]) == \
            sorted(cases), doc["unreadable"]


def test_lint_kernel_cache_duplicate_text():
    p = dlscope("lint", "--json", fixture_path("kcache"), check=1)
    doc = json.loads(p.stdout)
    assert doc["objects_checked"] == 2
    defects = [f for f in doc["findings"] if f["id"] == "elf-defects"]
    assert len(defects) == 1 and "kernel_dup_text.o: two .text sections" in defects[0]["title"]
    assert "flags AX" in defects[0]["evidence"][0] and "flags AW" in defects[0]["evidence"][0]


def test_lint_an_empty_section_conflicts_with_nothing():
    """compiler-rt's crtbegin.o: an empty writable .eh_frame (the __EH_FRAME_LIST__ marker) beside
    the real read-only one is no defect; the same marker holding a word is two conflicting
    .eh_frame sections, as the kernel cache's two .text sections are."""
    p = dlscope("lint", "--json", fixture_path("ehlist"), check=1)
    doc = json.loads(p.stdout)
    assert doc["objects_checked"] == 2, doc
    titles = [f["title"] for f in doc["findings"] if f["id"] == "elf-defects"]
    assert titles == [f"{fixture_path('ehlist/filled/crtbegin_filled.o')}: two .eh_frame "
                      "sections with conflicting flags"], titles
    p = dlscope("lint", fixture_path("ehlist/crtbegin_like.o"), check=0)
    assert "1 ELF object checked, 0 unreadable, 0 findings" in p.stdout, p.stdout


def _elf32(path, machine=3):
    """A 32-bit ELF header (i386 by default): enough for lint to know it is not x86-64."""
    hdr = bytearray(52)
    hdr[0:4] = b"\x7fELF"
    hdr[4], hdr[5], hdr[6] = 1, 1, 1          # ELFCLASS32, little-endian, version 1
    struct.pack_into("<HHI", hdr, 16, 1, machine, 1)  # ET_REL, e_machine, e_version
    struct.pack_into("<H", hdr, 40, 52)        # e_ehsize
    with open(path, "wb") as f:
        f.write(hdr)


def test_lint_skips_32_bit_objects_without_calling_them_unreadable():
    """A multilib tree's i386 objects are skipped and counted as such; only files that could not
    be read are unreadable, and the exit status follows the summary line."""
    d = tempfile.mkdtemp(prefix="dlscope-lint32-")
    try:
        shutil.copy(fixture_path("libplain.so"), f"{d}/libplain.so")
        _elf32(f"{d}/crtbegin-i386.o")
        _elf32(f"{d}/libarm.so", machine=40)
        p = dlscope("lint", d, check=0)
        assert p.stdout == "lint: 3 files, 1 ELF object checked, 2 skipped (not x86-64), " \
                           "0 unreadable, 0 findings\n", p.stdout
        assert p.stderr == "", p.stderr  # normal in a tree: counted, not warned about
        doc = json.loads(dlscope("lint", "--json", d, check=0).stdout)
        assert doc["unreadable"] == [], doc
        assert sorted((os.path.basename(x["path"]), x["machine"]) for x in doc["skipped"]) == \
            [("crtbegin-i386.o", "i386"), ("libarm.so", "ARM")], doc["skipped"]
        # Named, it is said in a line, and is no error beside an object that was checked.
        p = dlscope("lint", f"{d}/crtbegin-i386.o", f"{d}/libplain.so", check=0)
        assert "crtbegin-i386.o: a 32-bit i386 object, not x86-64; skipped" in p.stderr, p.stderr
        assert "1 skipped (not x86-64), 0 unreadable" in p.stdout, p.stdout
        # Alone, nothing was checked: exit 3, saying why.
        p = dlscope("lint", f"{d}/crtbegin-i386.o", check=3)
        assert "nothing checked: the 1 ELF object found is not x86-64" in p.stderr, p.stderr
        # A file that really cannot be read is still unreadable.
        with open(f"{d}/broken.so", "wb") as f:
            f.write(b"\x7fELF\x02\x01\x01" + bytes(9))
        p = dlscope("lint", d, check=0)
        assert "1 ELF object checked, 2 skipped (not x86-64), 1 unreadable, 0 findings" \
            in p.stdout, p.stdout
        assert "broken.so" in p.stderr and "crtbegin" not in p.stderr, p.stderr
    finally:
        shutil.rmtree(d)


def test_lint_static_libstdcxx():
    p = dlscope("lint", fixture_path("libcxx_ext_static.so"),
                fixture_path("libcxx_ext_shared.so"), check=0)
    assert "1 object carries a statically linked libstdc++" in p.stdout, p.stdout
    assert "libcxx_ext_static.so: libstdc++ (GCC 12" in p.stdout


def test_lint_hostile_files():
    """Truncated and corrupted objects: one line each, never a crash, the rest still checked."""
    rng = random.Random(7)
    d = tempfile.mkdtemp(prefix="dlscope-lint-")
    try:
        src = open(f"{LIB}/libgomp.so.1", "rb").read()
        for i, cut in enumerate([0x10, 0x40, 0x300, len(src) // 3, len(src) - 100]):
            open(os.path.join(d, f"trunc{i}.so"), "wb").write(src[:cut])
        for i in range(40):
            b = bytearray(src)
            for _ in range(rng.randint(1, 8)):
                pos = rng.choice([rng.randrange(0, 64), rng.randrange(len(b) - 4096, len(b)),
                                  rng.randrange(0, len(b))])
                b[pos] = rng.randrange(256)
            open(os.path.join(d, f"flip{i}.so"), "wb").write(bytes(b))
        hdr = bytearray(src)
        hdr[0x3c:0x3e] = (0xffff).to_bytes(2, "little")   # e_shnum
        hdr[0x28:0x30] = (len(src) - 8).to_bytes(8, "little")  # e_shoff near the end
        open(os.path.join(d, "shnum.so"), "wb").write(bytes(hdr))
        shutil.copy(fixture_path("kcache/kernel_dup_text.o"), d)
        p = dlscope("lint", "--fail-on", "error", d, timeout=120)
        assert p.returncode in (0, 1), (p.returncode, p.stderr[-2000:])
        assert "kernel_dup_text.o: two .text sections" in p.stdout
        for line in p.stderr.splitlines():
            assert line.startswith("dlscope: warning: lint: ") and line.endswith("skipped"), line
        assert "trunc0.so" in p.stderr and "trunc1.so" in p.stderr
    finally:
        shutil.rmtree(d)


def test_check_command_errors_and_usage():
    p = dlscope("check", "--", "/nonexistent/program", check=3)
    assert "cannot run '/nonexistent/program'" in p.stderr, p.stderr
    p = dlscope("check", "--", "/bin/sh", "-c", "exit 7", check=4)
    assert "exited with status 7" in p.stdout
    assert "unknown detector 'nope'" in dlscope("check", "--only", "nope", "1", check=2).stderr
    assert "--fail-on" in dlscope("check", "--fail-on", "fatal", "1", check=2).stderr
    assert "not a process ID" in dlscope("check", "abc", check=2).stderr
    dlscope("lint", check=2)
    assert "cannot read /nonexistent" in dlscope("lint", "/nonexistent", check=3).stderr
    listing = dlscope("check", "--list", check=0).stdout
    for det in ("dup-openmp", "dup-blas", "dup-cxx-runtime", "dup-library", "abi-mismatch",
                "loader-lock-hazard", "elf-defects"):
        assert det in listing


def test_check_runs_command_to_its_exit():
    """check -- CMD sees what CMD had loaded when it exited, then lets it exit."""
    p = dlscope("check", "--json", "--", fixture_path("two_omp"), check=1, timeout=30,
                env={"FIXTURE_EXIT": "0"})
    doc = json.loads(p.stdout)
    assert [f["id"] for proc in doc["processes"] for f in proc["findings"]] == ["dup-openmp"]
    assert doc["command_status"] == 0
    # A crash is an exit too: the graph it crashed with is checked, and the crash (exit 4)
    # wins over the findings (1), which are still printed.
    p = dlscope("check", "--", fixture_path("two_blas"), check=4, timeout=30,
                env={"FIXTURE_EXIT": "segv"})
    assert "error dup-blas" in p.stdout and "was killed by SIGSEGV" in p.stdout, p.stdout


def crash_json(*cmd, env=None):
    """check --json -- CMD for a command that fails: exit 4, and the document."""
    p = dlscope("check", "--json", "--", *cmd, check=4, timeout=60, env=env)
    doc = json.loads(p.stdout)
    assert len(doc["processes"]) == 1, doc
    return doc, doc["command"], doc["command"]["crash"]


def functions(crash):
    return [f["function"] for f in crash["stack"]]


def assert_gone(pid):
    """The command was not left stopped or traced: it is gone, reaped."""
    assert not os.path.exists(f"/proc/{pid}"), open(f"/proc/{pid}/status").read()


def test_check_command_crash_in_a_library_function():
    """A fault inside a function of a shared library the command loaded: signal, object, function."""
    lib = fixture_path("libcrash.so")
    direct = subprocess.run([fixture_path("crash_cmd"), "lib"], capture_output=True)
    assert direct.returncode == -11, direct  # how it dies without dlscope
    doc, cmd, crash = crash_json(fixture_path("crash_cmd"), "lib")
    pid = doc["processes"][0]["pid"]
    assert_gone(pid)
    # It died of the same signal: dlscope passed it on.
    assert cmd["signal"] == "SIGSEGV" and cmd["exit_status"] is None, cmd
    assert doc["command_status"] == 139
    assert crash["signal"] == "SIGSEGV" and crash["code_name"] == "SEGV_MAPERR", crash
    assert crash["tid"] == pid and crash["sender_pid"] is None
    assert crash["pc"]["object"] == lib and crash["pc"]["symbol"] == "crash_lib_store", crash
    assert crash["pc"]["perms"] == "r-xp"
    fa = crash["fault_address"]
    assert fa["address"] == "0x10" and not fa["mapped"] and fa["object"] is None, fa
    fns = functions(crash)
    assert fns[:3] == ["crash_lib_store", "crash_lib_run", "main"], fns
    assert crash["stack"][0]["module"] == lib and crash["stack"][0]["pc"] == crash["pc"]["address"]
    assert crash["stack"][0]["file"].endswith("crash_lib.c") and crash["stack_error"] is None
    # The checks still ran on what it had loaded.
    assert doc["processes"][0]["object_count"] >= 4 and doc["processes"][0]["findings"] == []

    text = dlscope("check", "--", fixture_path("crash_cmd"), "lib", check=4).stdout
    assert "crash_cmd was killed by SIGSEGV (Segmentation fault)" in text, text
    assert f"crash_lib_store+0x" in text and f"in {lib} (r-xp)" in text, text
    assert "address 0x10: nothing is mapped there (SEGV_MAPERR: address not mapped)" in text
    assert "#1 " in text and "crash_lib_run" in text


def test_check_command_crash_in_a_second_thread():
    """Every thread is traced: a fault in a thread other than the first is described too."""
    doc, cmd, crash = crash_json(fixture_path("crash_cmd"), "thread-lib")
    pid = doc["processes"][0]["pid"]
    assert_gone(pid)
    assert cmd["signal"] == "SIGSEGV" and crash["tid"] != pid, (pid, crash["tid"])
    assert crash["pc"]["symbol"] == "crash_lib_store"
    assert functions(crash)[:3] == ["crash_lib_store", "crash_lib_run", "crash_thread"]


def test_check_command_fault_address_named():
    """A write to a library's read-only data: the address is named as object + data symbol."""
    lib = fixture_path("libcrash.so")
    doc, cmd, crash = crash_json(fixture_path("crash_cmd"), "rodata")
    assert crash["code_name"] == "SEGV_ACCERR", crash
    fa = crash["fault_address"]
    assert fa["mapped"] and fa["perms"] == "r--p" and fa["object"] == lib, fa
    assert fa["symbol"] == "crash_lib_table" and fa["offset"] == 8, fa
    assert crash["pc"]["symbol"] == "crash_lib_store"
    assert functions(crash)[:2] == ["crash_lib_store", "crash_lib_write_table"]
    text = dlscope("check", "--", fixture_path("crash_cmd"), "rodata", check=4).stdout
    assert f": crash_lib_table+0x8 in {lib} (r--p) (SEGV_ACCERR: no permission for this " \
           "access to the mapping)" in text, text


def test_check_command_exit_status():
    """A command that exits 3: exit 4, with its status; exit 0 stays 0."""
    p = dlscope("check", "--", fixture_path("crash_cmd"), "exit", "3", check=4)
    assert "crash_cmd exited with status 3" in p.stdout and "killed" not in p.stdout, p.stdout
    doc, cmd, crash = crash_json(fixture_path("crash_cmd"), "exit", "3")
    assert cmd == {"exit_status": 3, "signal": None, "core_dumped": False, "crash": None}, cmd
    assert doc["command_status"] == 3
    doc = json.loads(dlscope("check", "--json", "--", fixture_path("crash_cmd"), "exit", "0",
                             check=0).stdout)
    assert doc["command"]["exit_status"] == 0 and doc["command"]["crash"] is None


def test_check_command_abort():
    """abort(): SIGABRT sent by the process itself, with the stack through abort to main."""
    doc, cmd, crash = crash_json(fixture_path("crash_cmd"), "abort")
    pid = doc["processes"][0]["pid"]
    assert_gone(pid)
    assert cmd["signal"] == "SIGABRT" and crash["signal"] == "SIGABRT", cmd
    assert crash["code_name"] == "SI_TKILL" and crash["sender_pid"] == pid, crash
    assert crash["fault_address"] is None
    assert crash["pc"]["object"].endswith("/libc.so.6"), crash["pc"]
    fns = functions(crash)
    assert any(f and "abort" in f for f in fns) and "main" in fns, fns
    text = dlscope("check", "--", fixture_path("crash_cmd"), "abort", check=4).stdout
    assert "was killed by SIGABRT (Aborted)" in text
    assert "sent with tgkill() (raise, abort, pthread_kill) by the process itself" in text, text


def test_check_command_python_killed_by_its_own_signal():
    """A real program: Debian's python3 sending itself SIGSEGV."""
    doc, cmd, crash = crash_json("/usr/bin/python3", "-c", "import os; os.kill(os.getpid(), 11)")
    pid = doc["processes"][0]["pid"]
    assert_gone(pid)
    assert cmd["signal"] == "SIGSEGV" and crash["code_name"] == "SI_USER", crash
    assert crash["sender_pid"] == pid and crash["fault_address"] is None
    assert crash["pc"]["object"].endswith("/libc.so.6") and "kill" in crash["pc"]["symbol"]
    fns = functions(crash)
    assert "kill" in fns[0] and "PyEval_EvalCode" in fns, fns
    assert crash["stack"][-1]["function"] == "_start", crash["stack"][-1]


def test_check_command_fault_behind_a_handler():
    """faulthandler catches the fault and raises SIGSEGV again: the caught fault's address is kept."""
    doc, cmd, crash = crash_json("/usr/bin/python3", "-X", "faulthandler", "-c",
                                 "import ctypes; ctypes.string_at(8)")
    assert cmd["signal"] == "SIGSEGV" and crash["code_name"] == "SI_TKILL", crash
    assert crash["caught_fault"]["code_name"] == "SEGV_MAPERR", crash["caught_fault"]
    assert crash["fault_address"]["address"] == "0x8" and not crash["fault_address"]["mapped"]
    # Through the signal frame down to the faulting strlen.
    fns = functions(crash)
    assert "__restore_rt" in fns and "strlen" in fns[fns.index("__restore_rt") + 1], fns


def test_check_command_signals_are_passed_on():
    """A signal the program handles or ignores is delivered and is no failure."""
    code = ("import signal, os; got = []; signal.signal(signal.SIGUSR1, lambda *a: got.append(1)); "
            "signal.signal(signal.SIGTERM, signal.SIG_IGN); os.kill(os.getpid(), signal.SIGUSR1); "
            "os.kill(os.getpid(), signal.SIGTERM); print('handled', got)")
    p = dlscope("check", "--", "/usr/bin/python3", "-c", code, check=0)
    assert "handled [1]" in p.stdout and "exited with status 0" in p.stdout, p.stdout
    # Killed from outside with SIGKILL: no delivery stop, the signal alone is reported.
    p = dlscope("check", "--json", "--", "/bin/sh", "-c", "kill -KILL $$", check=4)
    cmd = json.loads(p.stdout)["command"]
    assert cmd["signal"] == "SIGKILL" and cmd["crash"] is None, cmd


def test_check_command_leaves_no_process_traced():
    """A child the command leaves behind runs on untraced and unstopped."""
    script = "sleep 30 </dev/null >/dev/null 2>&1 & echo child $!; kill -SEGV $$"
    p = dlscope("check", "--", "/bin/sh", "-c", script, check=4)
    child = int(next(line.split()[1] for line in p.stdout.splitlines()
                     if line.startswith("child ")))
    try:
        status = open(f"/proc/{child}/status").read()
        assert "\nTracerPid:\t0\n" in status, status
        # Unstopped: asleep in sleep(1), or still starting on a loaded machine (R), never in
        # a stop (T) or a trace stop (t).
        assert re.search(r"\nState:\t[SR] ", status), status
    finally:
        os.kill(child, 9)


def test_lint_version_node_missing_from_the_provider_beside_it():
    wheel = fixture_path("newapi/wheel")
    doc = json.loads(dlscope("lint", "--json", wheel, check=1).stdout)
    f = only(doc["findings"], "abi-mismatch")[0]
    assert f["title"].endswith("libconsumer.so needs versions its libraries lack here"), f
    assert f["evidence"] == [f"needs NEWAPI_2.0 of libnewapi.so.1; {wheel}/libnewapi.so.1 "
                             "provides up to NEWAPI_1.0"], f
    # Beside the build it was made for, nothing is missing.
    dlscope("lint", fixture_path("newapi/new"), f"{wheel}/libconsumer.so", check=0)


def elf_targets(paths):
    """(dev, ino) of the ELF files the paths lead to, links followed; and the dangling links."""
    ids, dangling = set(), []
    for p in paths:
        if not os.path.exists(p):
            dangling.append(p)
            continue
        with open(p, "rb") as f:
            if f.read(4) == b"\x7fELF":
                st = os.stat(p)
                ids.add((st.st_dev, st.st_ino))
    return ids, dangling


def test_lint_follows_links_to_the_real_torch_objects():
    """Debian's torch/lib holds only links (three of them dangling): the real objects are checked."""
    d = "/usr/lib/python3/dist-packages/torch/lib"
    entries = [os.path.join(d, n) for n in sorted(os.listdir(d))]
    assert entries and all(os.path.islink(p) for p in entries), entries
    ids, dangling = elf_targets(entries)
    assert len(ids) >= 5, ids
    p = dlscope("lint", "--json", d, timeout=120)
    assert p.returncode in (0, 1), (p.returncode, p.stderr)
    doc = json.loads(p.stdout)
    assert doc["objects_checked"] == len(ids) and doc["files_seen"] == len(ids), doc
    assert sorted(u["path"] for u in doc["unreadable"]) == dangling, doc["unreadable"]
    for u in doc["unreadable"]:
        assert u["error"] == f"dangling symbolic link to '{os.readlink(u['path'])}'", u
    # One link named on the command line is followed too.
    p = dlscope("lint", "--json", os.path.join(d, "libtorch.so"), timeout=120)
    assert json.loads(p.stdout)["objects_checked"] == 1, p.stdout


def test_lint_links_in_a_tree():
    """Two links to one file and the file: checked once. Dangling links and loops: one line each."""
    d = tempfile.mkdtemp(prefix="dlscope-links-")
    try:
        os.makedirs(f"{d}/t/sub")
        shutil.copy(fixture_path("libplain.so"), f"{d}/t/sub/libplain.so")
        os.symlink("sub/libplain.so", f"{d}/t/a.so")
        os.symlink("sub/libplain.so", f"{d}/t/b.so")
        os.symlink("..", f"{d}/t/sub/up")          # back up the tree: no endless walk
        os.symlink("nowhere.so", f"{d}/t/dangling.so")
        os.symlink("l2", f"{d}/t/l1")
        os.symlink("l1", f"{d}/t/l2")
        open(f"{d}/t/readme.txt", "w").write("not an object\n")
        p = dlscope("lint", "--json", f"{d}/t", check=0, timeout=60)
        doc = json.loads(p.stdout)
        assert doc["objects_checked"] == 1 and doc["files_seen"] == 2, doc
        assert doc["reached_again"] == 2, doc  # a.so and b.so after sub/libplain.so
        errors = {u["path"]: u["error"] for u in doc["unreadable"]}
        assert errors == {
            f"{d}/t/dangling.so": "dangling symbolic link to 'nowhere.so'",
            f"{d}/t/l1": "symbolic link to 'l2' is part of a loop of links",
            f"{d}/t/l2": "symbolic link to 'l1' is part of a loop of links",
        }, errors
        lines = p.stderr.splitlines()
        assert lines == [f"dlscope: warning: lint: {d}/t/dangling.so: dangling symbolic link to "
                         "'nowhere.so'; skipped",
                         f"dlscope: warning: lint: {d}/t/l1: symbolic link to 'l2' is part of a "
                         "loop of links; skipped",
                         f"dlscope: warning: lint: {d}/t/l2: symbolic link to 'l1' is part of a "
                         "loop of links; skipped"], lines
        # A link and its file on the command line: one object, under the first path.
        p = dlscope("lint", "--json", "--fail-on", "info", f"{d}/t/a.so",
                    f"{d}/t/sub/libplain.so", check=0)
        doc = json.loads(p.stdout)
        assert doc["objects_checked"] == 1 and doc["reached_again"] == 1, doc
        text = dlscope("lint", f"{d}/t/a.so", f"{d}/t/b.so", check=0).stdout
        assert text == "lint: 1 file (and 1 more path to them), 1 ELF object checked, " \
                       "0 unreadable, 0 findings\n", text
        # A dangling link named on the command line is an error.
        p = dlscope("lint", f"{d}/t/dangling.so", check=3)
        assert p.stderr == f"dlscope: lint: cannot read {d}/t/dangling.so: dangling symbolic " \
                           "link to 'nowhere.so'\n", p.stderr
    finally:
        shutil.rmtree(d)


def test_lint_that_checked_nothing_fails():
    """No ELF object found (empty directory, only other files): one line, exit 3."""
    d = tempfile.mkdtemp(prefix="dlscope-empty-")
    try:
        p = dlscope("lint", d, check=3)
        assert p.stdout == "" and p.stderr == "dlscope: lint: nothing checked: no files found\n"
        open(f"{d}/notes.txt", "w").write("text\n")
        open(f"{d}/script.py", "w").write("print(1)\n")
        p = dlscope("lint", d, check=3)
        assert p.stdout == "" and p.stderr == \
            "dlscope: lint: nothing checked: no ELF object among the 2 files found\n", p.stderr
        # Named on its own, a file that is not ELF is said as such, in one line.
        p = dlscope("lint", "--json", f"{d}/notes.txt", check=3)
        assert json.loads(p.stdout)["objects_checked"] == 0
        assert p.stderr.count("\n") == 1 and "not an ELF object" in p.stderr, p.stderr
    finally:
        shutil.rmtree(d)


# Live and batch: one detector table. What watch/record reports as it happens is the finding
# check makes of the same process: id, severity, title, why and fix.
SAME = ("id", "severity", "title", "why", "remedy")


def _trace_findings(path):
    with open(path) as f:
        lines = [json.loads(l) for l in f]
    assert lines[0]["format"] == "dlscope-trace/3", lines[0]
    return [r for r in lines if r["type"] == "finding"]


def _assert_same(live, batch):
    assert {k: live[k] for k in SAME} == {k: batch[k] for k in SAME}, (live, batch)
    assert live["t"] > 0 and live["stack"] and live["evidence"], live


def test_live_second_openmp_runtime_is_the_finding_check_makes():
    if not is_root():
        raise Skip("BPF tests need root")
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as tr:
        rec = subprocess.Popen([dlscope_path(), "record", "-o", tr.name, "--duration", "4",
                                "--", fixture_path("two_omp")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        try:
            line = ""
            while not line.startswith("ready "):  # "ready PID": both runtimes loaded
                line = rec.stdout.readline()
                assert line, "the fixture ended before it was ready"
            pid = int(line.split()[1])
            wait_idle(pid)
            batch = only(check_json(pid)[0], "dup-openmp")[0]
            _, err = rec.communicate(timeout=30)
        finally:
            rec.kill()
            rec.wait()
        live = _trace_findings(tr.name)
    assert [f["id"] for f in live] == ["dup-openmp"], (live, err)
    _assert_same(live[0], batch)
    assert live[0]["pid"] == pid and live[0]["severity"] == "error", live[0]


def test_live_parallel_region_inside_dlopen_is_the_finding_check_makes():
    if not is_root():
        raise Skip("BPF tests need root")
    fx = subprocess.Popen([fixture_path("dlopen_list"), "--global", f"{LIB}/libgomp.so.1",
                           "--pause", fixture_path("libctor_omp.so")],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    tr = tempfile.NamedTemporaryFile(suffix=".jsonl")
    rec = None
    try:
        assert fx.stdout.readline().startswith("paused")
        rec = subprocess.Popen([dlscope_path(), "record", "--hot", "-o", tr.name, "--duration",
                                "3", "-p", str(fx.pid)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        assert rec.stderr.readline().startswith("dlscope: watching")
        fx.stdin.write("go\n")
        fx.stdin.flush()
        assert fx.stdout.readline().startswith("ready")  # inside the constructor's region
        wait_idle(fx.pid)
        batch = only(check_json("--only", "loader-lock-hazard", fx.pid)[0],
                     "loader-lock-hazard")[0]
        _, err = rec.communicate(timeout=30)
        live = [f for f in _trace_findings(tr.name) if f["id"] == "loader-lock-hazard"]
    finally:
        for p in (rec, fx):
            if p:
                p.kill()
                p.wait()
        tr.close()
    assert len(live) == 1, (live, err)
    _assert_same(live[0], batch)
    assert live[0]["tid"] == fx.pid, live[0]


def test_check_follows_the_commands_descendants():
    """check -- CMD checks each process CMD runs (fork and exec) at its exit, by PID and command
    line: a CI job's wrapper (sh, make, pytest) is not what loads the runtimes."""
    two = fixture_path("two_omp")
    env = {"FIXTURE_EXIT": "0"}
    p = dlscope("check", "--json", "--", "/bin/sh", "-c", f"{two} one; true", check=1,
                timeout=60, env=env)
    doc = json.loads(p.stdout)
    by_cmd = {proc.get("cmdline"): proc for proc in doc["processes"]}
    assert by_cmd.get(f"{two} one"), list(by_cmd)
    assert [f["id"] for f in by_cmd[f"{two} one"]["findings"]] == ["dup-openmp"], by_cmd
    assert doc["processes"][-1]["comm"] == "sh" and doc["command_status"] == 0, doc
    text = dlscope("check", "--", "/bin/sh", "-c", f"{two}; true", check=1, timeout=60,
                   env=env).stdout
    assert re.search(rf"process \d+, run by the command: {re.escape(two)}\n", text), text
    assert "error dup-openmp" in text, text
    # --no-follow: the command only, as before.
    doc = json.loads(dlscope("check", "--json", "--no-follow", "--", "/bin/sh", "-c",
                             f"{two}; true", check=0, timeout=60, env=env).stdout)
    assert [proc["comm"] for proc in doc["processes"]] == ["sh"], doc
    # Real software: the Python a shell runs, with its OpenBLAS.
    doc = json.loads(dlscope("check", "--json", "--", "/bin/sh", "-c",
                             "/usr/bin/python3 -c 'import numpy'; true", check=0,
                             timeout=120).stdout)
    py = [proc for proc in doc["processes"] if proc["comm"].startswith("python")]
    assert py and py[0]["cmdline"] == "/usr/bin/python3 -c import numpy", doc["processes"]
    assert any(r["kind"] == "blas" for r in py[0]["runtimes"]), py[0]["runtimes"]
