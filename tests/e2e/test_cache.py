"""The persistent ELF cache: never a change in what libs and check say, whatever the cache holds."""
import concurrent.futures
import difflib
import json
import os
import re
import shutil
import subprocess
import tempfile

from harness import ROOT, Fixture, dlscope, fixture_path

CACHE_FILE = os.path.join("dlscope", "elf-v1.cache")
PY = ("import numpy, scipy.linalg, torch, os, time; print('ready', os.getpid(), flush=True); "
      "time.sleep(600)")


def run(pid, home, *args, env=None, untrusted=False):
    """dlscope ARGS PID with XDG_CACHE_HOME=home; asserts success and a silent stderr, or
    (@untrusted) the one line that says a cache someone else could write is not used."""
    full = {"XDG_CACHE_HOME": home}
    full.update(env or {})
    p = dlscope(*args, pid, env=full, timeout=180)
    assert p.returncode in (0, 1), (args, p.returncode, p.stderr)
    if untrusted:
        lines = p.stderr.splitlines()
        assert len(lines) == 1 and "not using the cache" in lines[0], (args, p.stderr)
    else:
        assert p.stderr == "", (args, p.stderr)
    return p.stdout


def cache_id(home):
    st = os.stat(os.path.join(home, CACHE_FILE))
    return st.st_ino, st.st_mtime_ns


def assert_same_cold_warm_off(pid, commands):
    home = tempfile.mkdtemp(prefix="dlscope-cache-")
    try:
        for args in commands:
            shutil.rmtree(os.path.join(home, "dlscope"), ignore_errors=True)
            cold = run(pid, home, *args)
            assert os.path.exists(os.path.join(home, CACHE_FILE)), "no cache file written"
            warm = run(pid, home, *args)
            before = cache_id(home)
            warm2 = run(pid, home, *args)
            # Everything was found in the cache: nothing new to write.
            assert cache_id(home) == before, f"{args}: a warm run rewrote the cache"
            off = run(pid, home, "--no-cache", *args)
            env_off = run(pid, home, *args, env={"DLSCOPE_CACHE": "off"})
            outs = {"cold": cold, "warm": warm, "warm again": warm2, "--no-cache": off,
                    "DLSCOPE_CACHE=off": env_off}
            for name, out in outs.items():
                # The lines that differ, so a failure says which field moved.
                assert out == cold, f"{args}: {name} differs from cold:\n" + "\n".join(
                    difflib.unified_diff(cold.splitlines(), out.splitlines(), "cold", name,
                                         lineterm="", n=2))
    finally:
        shutil.rmtree(home)


def bench_libs():
    # The same objects for every build: made once (make test makes them beforehand).
    libdir = os.path.join(ROOT, "build", "bench", "libs")
    subprocess.run([os.path.join(ROOT, "bench", "gen_libs.sh"), libdir, "500"], check=True)
    return os.path.join(libdir, "list.txt")


COMMANDS = [("libs",), ("libs", "--json"), ("check", "--json")]


def test_cache_same_output_cold_warm_and_off_on_torch_numpy_scipy():
    with Fixture(["/usr/bin/python3", "-c", PY], ready_timeout=180) as fx:
        assert_same_cold_warm_off(fx.pid, COMMANDS + [("check",)])


def test_cache_same_output_cold_warm_and_off_on_500_objects():
    with Fixture(["dlopen_list", "@" + bench_libs()]) as fx:
        assert_same_cold_warm_off(fx.pid, COMMANDS)


def test_cache_same_output_with_two_openmp_runtimes():
    with Fixture(["two_omp"]) as fx:
        assert_same_cold_warm_off(fx.pid, COMMANDS)


SPLIT_FIXTURES = {
    "dup-library": ["dlopen_list", "--local", fixture_path("libvague_a.so"),
                    fixture_path("libvague_b.so")],
    "dup-library hidden": ["dlopen_list", fixture_path("libvague_hidden_a.so"),
                           fixture_path("libvague_hidden_b.so")],
    "abi-mismatch": ["dlopen_list", "--global", fixture_path("ver2/libver.so.1"), "--lazy",
                     fixture_path("cache/.cache/torch_extensions/libaddon.so")],
}


def test_symbol_digests_give_the_same_findings_cold_warm_corrupt_and_off():
    """check reads each object's symbols from its digest ($cache/dlscope/symbols-v1.cache) once warm:
    the findings of dup-library, abi-mismatch and elf-defects are the same cold, warm, with
    every digest damaged, and with the cache off."""
    tmp = tempfile.mkdtemp(prefix="dlscope-execstack-")
    execstack = os.path.join(tmp, "libexecstack.so")
    with open(os.path.join(tmp, "x.c"), "w") as f:
        f.write("int execstack_probe(void) { return 1; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-Wl,-z,execstack", "-o", execstack,
                    os.path.join(tmp, "x.c")], check=True)
    fixtures = dict(SPLIT_FIXTURES, **{"elf-defects": ["dlopen_list", execstack]})
    try:
        _same_findings_through_digests(fixtures)
    finally:
        shutil.rmtree(tmp)


def _same_findings_through_digests(fixtures):
    for what, argv in fixtures.items():
        home = tempfile.mkdtemp(prefix="dlscope-cache-")
        try:
            with Fixture(argv) as fx:
                cold = run(fx.pid, home, "check", "--json", "--fail-on", "warning")
                ids = {f["id"] for p in json.loads(cold)["processes"] for f in p["findings"]}
                assert what.split()[0] in ids, (what, cold)
                store = os.path.join(home, "dlscope", "symbols-v1.cache")
                assert os.path.getsize(store) > 1000, what
                stamp = os.stat(store).st_mtime_ns
                warm = run(fx.pid, home, "check", "--json", "--fail-on", "warning")
                assert os.stat(store).st_mtime_ns == stamp, f"{what}: a warm run rewrote it"
                with open(store, "rb") as f:
                    good = f.read()
                for damage in ("header", "middle", "truncated"):
                    data = {"header": good[:20] + bytes([good[20] ^ 0xff]) + good[21:],
                            "middle": good[:len(good) // 2] + bytes([good[len(good) // 2] ^ 0xff])
                            + good[len(good) // 2 + 1:],
                            "truncated": good[:len(good) // 2]}[damage]
                    with open(store, "wb") as f:
                        f.write(data)
                    damaged = run(fx.pid, home, "check", "--json", "--fail-on", "warning")
                    assert damaged == cold, f"{what}: a {damage} flaw changed the findings"
                    with open(store, "rb") as f:
                        assert len(f.read()) == len(good), f"{what}: {damage}: not rewritten"
                off = run(fx.pid, home, "--no-cache", "check", "--json", "--fail-on", "warning")
                assert cold == warm == off, f"{what}: output differs"
        finally:
            shutil.rmtree(home)


def _build_pair(tmp):
    """Two libraries of one size whose sonames (and so build-ids) differ."""
    src = os.path.join(tmp, "x.c")
    with open(src, "w") as f:
        f.write("int cache_probe(void) { return 42; }\n")
    out = []
    for tag in "ab":
        lib = os.path.join(tmp, f"libcache{tag}.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", f"-Wl,-soname,libcache{tag}.so",
                        "-o", lib, src], check=True)
        out.append(lib)
    with open(out[0], "rb") as a, open(out[1], "rb") as b:
        da, db = a.read(), b.read()
    assert len(da) == len(db) and da != db
    return da, db


def _soname(pid, home, path):
    doc = json.loads(run(pid, home, "libs", "--json"))
    hits = [o for o in doc["processes"][0]["objects"] if o["path"] == path]
    assert hits, path
    return hits[0]["soname"], hits[0]["build_id"]


def _overwrite(path, data, keep_mtime):
    st = os.stat(path)
    with open(path, "r+b") as f:  # in place: same inode, same size
        f.write(data)
    if keep_mtime:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    else:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def test_cache_file_rewritten_or_touched_is_read_again():
    tmp = tempfile.mkdtemp(prefix="dlscope-cache-")
    try:
        da, db = _build_pair(tmp)
        lib = os.path.join(tmp, "libx.so")
        with open(lib, "wb") as f:
            f.write(da)
        with Fixture(["dlopen_list", lib]) as fx:
            home = os.path.join(tmp, "home")
            assert _soname(fx.pid, home, lib)[0] == "libcachea.so"
            assert _soname(fx.pid, home, lib)[0] == "libcachea.so"  # warm
            # Same device, inode, size and mtime: only the build-id tells the files apart.
            _overwrite(lib, db, keep_mtime=True)
            soname, bid = _soname(fx.pid, home, lib)
            assert soname == "libcacheb.so", "a stale analysis was used"
            assert (soname, bid) == _soname(fx.pid, home + "-fresh", lib)
            # A new mtime alone (touch) is a new key as well.
            before = cache_id(home)
            os.utime(lib, ns=(os.stat(lib).st_atime_ns, os.stat(lib).st_mtime_ns + 5_000_000))
            assert _soname(fx.pid, home, lib)[0] == "libcacheb.so"
            assert cache_id(home) != before, "a touched file was not analysed again"
            _overwrite(lib, da, keep_mtime=False)
            assert _soname(fx.pid, home, lib)[0] == "libcachea.so"
    finally:
        shutil.rmtree(tmp)


def test_cache_corrupt_foreign_or_unsafe_file_is_ignored():
    tmp = tempfile.mkdtemp(prefix="dlscope-cache-")
    try:
        with Fixture(["two_omp"]) as fx:
            home = os.path.join(tmp, "home")
            want = run(fx.pid, home, "libs", "--json")
            path = os.path.join(home, CACHE_FILE)
            with open(path, "rb") as f:
                good = f.read()
            victim = os.path.join(tmp, "victim")

            def flip(b, at):
                return b[:at] + bytes([b[at] ^ 0xff]) + b[at + 1:]

            damaged = {
                "truncated": good[: len(good) // 2],
                "header only": good[:80],
                "empty": b"",
                "garbage": os.urandom(len(good)),
                "flipped byte": flip(good, len(good) // 2),
                "flipped magic": flip(good, 0),
                "flipped producer": flip(good, 10),
                "longer": good + b"\0" * 64,
            }
            for what, data in damaged.items():
                with open(path, "wb") as f:
                    f.write(data)
                assert run(fx.pid, home, "libs", "--json") == want, what
                with open(path, "rb") as f:
                    assert f.read() == good, f"{what}: not rewritten whole"

            # Not ours, or writable by others: never read (one line says so), replaced by a file
            # of our own. A link in our own folder is only damage: replaced silently.
            for what in ("other owner", "group-writable", "symlink"):
                with open(path, "wb") as f:
                    f.write(good)
                if what == "other owner":
                    if os.geteuid() != 0:
                        continue
                    os.chown(path, 65534, 65534)
                elif what == "group-writable":
                    os.chmod(path, 0o664)
                else:
                    with open(victim, "wb") as f:
                        f.write(good)
                    os.unlink(path)
                    os.symlink(victim, path)
                ino = os.lstat(path).st_ino
                assert run(fx.pid, home, "libs", "--json", untrusted=what != "symlink") == want, \
                    what
                st = os.lstat(path)
                assert st.st_ino != ino, f"{what}: the cache file was trusted"
                assert st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0, what
            with open(victim, "rb") as f:
                assert f.read() == good, "a symlink's target was written"
    finally:
        shutil.rmtree(tmp)


def test_cache_concurrent_runs_agree_and_leave_one_whole_file():
    with Fixture(["dlopen_list", "@" + bench_libs()]) as fx:
        home = tempfile.mkdtemp(prefix="dlscope-cache-")
        try:
            want = run(fx.pid, home, "--no-cache", "libs", "--json")
            with concurrent.futures.ThreadPoolExecutor(8) as ex:
                outs = list(ex.map(lambda _: run(fx.pid, home, "libs", "--json"), range(8)))
            assert all(o == want for o in outs)
            d = os.path.join(home, "dlscope")
            # No temporary left: the ELF cache and dpkg's answers, whole files only.
            left = sorted(os.listdir(d))
            assert left[-1] == "elf-v1.cache" and len(left) <= 2, left
            assert all(re.fullmatch(r"dpkg-[0-9a-f]+-[0-9a-f]+\.cache", f) for f in left[:-1]), left
            # Whole: a warm run finds every object in it and has nothing to write.
            before = cache_id(home)
            assert run(fx.pid, home, "libs", "--json") == want
            assert cache_id(home) == before
        finally:
            shutil.rmtree(home)


def test_cache_directory_not_writable_works_silently():
    tmp = tempfile.mkdtemp(prefix="dlscope-cache-")
    try:
        with Fixture(["two_omp"]) as fx:
            want = run(fx.pid, tmp, "--no-cache", "libs", "--json")
            with open(os.path.join(tmp, "dlscope"), "w") as f:  # a file where the dir should be
                f.write("not a directory\n")
            assert run(fx.pid, tmp, "libs", "--json") == want  # run() asserts stderr is empty
            assert run(fx.pid, tmp, "check", "--json") == run(fx.pid, tmp, "--no-cache", "check",
                                                               "--json")
            os.unlink(os.path.join(tmp, "dlscope"))
            os.mkdir(os.path.join(tmp, "dlscope"), 0o777)  # ours, but writable by all: said
            os.chmod(os.path.join(tmp, "dlscope"), 0o777)
            assert run(fx.pid, tmp, "libs", "--json", untrusted=True) == want
            assert os.listdir(os.path.join(tmp, "dlscope")) == [], "wrote into an unsafe dir"
    finally:
        shutil.rmtree(tmp)


def test_no_cache_writes_nothing():
    tmp = tempfile.mkdtemp(prefix="dlscope-cache-")
    try:
        with Fixture(["two_omp"]) as fx:
            run(fx.pid, tmp, "--no-cache", "libs")
            run(fx.pid, tmp, "libs", env={"DLSCOPE_CACHE": "off"})
            assert not os.path.exists(os.path.join(tmp, "dlscope"))
            run(fx.pid, tmp, "libs")
            assert os.path.exists(os.path.join(tmp, CACHE_FILE))
    finally:
        shutil.rmtree(tmp)
