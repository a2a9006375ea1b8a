"""Root's dlscope on a shared host and its persistent caches (docs/reliability.md, "Running as
root on a shared host"): a cache file or folder another user owns or can write is never read
(one line on stderr says so) and never written through; a damaged cache (a FIFO, a link to
/dev/zero, a huge sparse file, an emptied or cut file) gives the answer --no-cache gives, in
bounded time and memory, and is written again whole.

Run as root, with a second, unprivileged user (made when absent)."""
import hashlib
import json
import os
import pwd
import resource
import shutil
import subprocess
import tempfile
import threading

import harness
from harness import Fixture, Skip, dlscope, plain, wait_idle

USER = "dlscope-sec"
BID = "5ec0ca7e" * 5  # both programs of build_pair claim this build-id

PROG = r"""
#include <stdio.h>
#include <unistd.h>
static void __attribute__((noinline)) NAME(void) { for (;;) pause(); }
int main(void) { printf("ready %d\n", getpid()); fflush(stdout); NAME(); return 0; }
"""


def other_user():
    if os.geteuid() != 0:
        raise Skip("needs root: these cases are root's dlscope meeting another user's files")
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", USER], check=True)
        pw = pwd.getpwnam(USER)
    return pw.pw_uid, pw.pw_gid


def cache_env(cache):
    return {"DLSCOPE_CACHE_DIR": cache, "XDG_CACHE_HOME": "", "DLSCOPE_CACHE": "on"}


def home_env(home):
    return {"HOME": home, "DLSCOPE_CACHE_DIR": "", "XDG_CACHE_HOME": "", "DLSCOPE_CACHE": "on"}


def run(*args, env, timeout=60):
    for _ in range(3):
        p = dlscope(*args, env=env, timeout=timeout)
        assert p.returncode in (0, 1), (args, p.returncode, p.stderr)
        # Not what these tests look at: a thread of an idle fixture now and then reported
        # gone at its seize on this loaded VM (ECHILD), before any cache is opened.
        if "stacks" not in args or "exited before it could be stopped" not in p.stdout:
            break
    return p


def frames(out):
    """What stacks --json names: every thread's frames (not its state or cpu, which move)."""
    return [(t["tid"], t.get("error"),
             [(f["pc"], f["inlined"], f["function"], f["offset"], f["module"], f["file"],
               f["line"]) for f in t["frames"]])
            for t in json.loads(out)["processes"][0]["threads"]]


def functions(answer):
    return {f[2] for _, _, fs in answer for f in fs}


def warnings(p):
    return [line for line in p.stderr.splitlines() if line.strip()]


def assert_one_warning(p, *words):
    lines = warnings(p)
    assert len(lines) == 1 and "not using the cache" in lines[0], lines
    for w in words:
        assert w in lines[0], (w, lines)


def mkdir(path, mode=0o700, owner=None):
    os.makedirs(path, exist_ok=True)
    os.chmod(path, mode)
    if owner:
        os.chown(path, *owner)
    return path


def tree(path):
    """Every name under @path with its type and size: to see that nothing was written."""
    out = []
    for d, dirs, files in os.walk(path):
        for n in sorted(dirs + files):
            st = os.lstat(os.path.join(d, n))
            out.append((os.path.relpath(os.path.join(d, n), path), st.st_mode, st.st_size,
                        st.st_mtime_ns))
    return sorted(out)


def build_pair(tmp):
    """Two programs of the same code and build-id, split debug info (compressed) beside each:
    a/prog names its waiting function genuine_wait, b/prog forged_xwait."""
    progs = {}
    for tag, name in (("a", "genuine_wait"), ("b", "forged_xwait")):
        d = mkdir(os.path.join(tmp, tag), 0o755)
        src, full = os.path.join(d, "prog.c"), os.path.join(d, "prog.full")
        with open(src, "w") as f:
            f.write(PROG)
        subprocess.run(["cc", "-g", "-O0", "-gz=zlib", f"-DNAME={name}",
                        f"-Wl,--build-id=0x{BID}", "-o", full, src], check=True)
        subprocess.run(["objcopy", "--only-keep-debug", full, os.path.join(d, "prog.debug")],
                       check=True)
        subprocess.run(["objcopy", "--strip-debug",
                        f"--add-gnu-debuglink={os.path.join(d, 'prog.debug')}", full,
                        os.path.join(d, "prog")], check=True)
        progs[tag] = os.path.join(d, "prog")
    return progs


def forge(tmp, prog):
    """A cache as dlscope writes it after a stacks of @prog (b/prog: forged names under BID)."""
    scratch = mkdir(os.path.join(tmp, "scratch"))
    with Fixture([prog]) as fx:
        wait_idle(fx.pid)
        run("stacks", "--json", fx.pid, env=cache_env(scratch))
    for rel in (os.path.join("frames", BID), os.path.join("debuginfo", BID + ".debug")):
        with open(os.path.join(scratch, rel), "rb") as f:
            assert b"forged_xwait" in f.read(), rel
    return scratch


def plant(src, dst, owner, mode=0o600):
    mkdir(os.path.dirname(dst))
    shutil.copyfile(src, dst)
    os.chmod(dst, mode)
    os.chown(dst, *owner)


def _foreign_file(what):
    owner = other_user()
    tmp = tempfile.mkdtemp(prefix="dlscope-sec-")
    try:
        os.chmod(tmp, 0o755)
        progs = build_pair(tmp)
        scratch = forge(tmp, progs["b"])
        cache = mkdir(os.path.join(tmp, "cache"))
        name = {"frames": BID, "debuginfo": BID + ".debug"}[what]
        plant(os.path.join(scratch, what, name), os.path.join(cache, what, name), owner)
        with Fixture([progs["a"]]) as fx:
            wait_idle(fx.pid)
            p = run("stacks", "--json", fx.pid, env=cache_env(cache))
            got = frames(p.stdout)
            assert "forged_xwait" not in functions(got), f"{what}: another user's cache used"
            want = frames(run("--no-cache", "stacks", "--json", fx.pid,
                              env=cache_env(cache)).stdout)
            assert "genuine_wait" in functions(want) and got == want, (got, want)
            assert_one_warning(p, USER, os.path.join(cache, what, name))
            # The cache folder is root's: the file is replaced by one of root's own.
            st = os.lstat(os.path.join(cache, what, name))
            assert st.st_uid == 0 and st.st_mode & 0o077 == 0, what
            again = run("stacks", "--json", fx.pid, env=cache_env(cache))
            assert frames(again.stdout) == want and not warnings(again)
    finally:
        shutil.rmtree(tmp)


def test_frames_cache_file_of_another_user_is_ignored_with_one_line():
    _foreign_file("frames")


def test_debuginfo_cache_file_of_another_user_is_ignored_with_one_line():
    _foreign_file("debuginfo")


def test_names_from_another_users_files_are_not_kept_under_the_build_id_they_claim():
    """A build-id is what a file says of itself: b/prog, another user's, claims a/prog's (as it
    could claim libc's). Root's stacks of b/prog names it from b's files, and keeps none of
    that: a later stacks of a/prog, root's, shows a's names."""
    owner = other_user()
    tmp = tempfile.mkdtemp(prefix="dlscope-sec-")
    try:
        os.chmod(tmp, 0o755)
        progs = build_pair(tmp)
        theirs = os.path.dirname(progs["b"])
        for name in os.listdir(theirs):
            os.chown(os.path.join(theirs, name), *owner)
        os.chown(theirs, *owner)
        cache = mkdir(os.path.join(tmp, "cache"))
        with Fixture([progs["b"]]) as fx:
            wait_idle(fx.pid)
            p = run("stacks", "--json", fx.pid, env=cache_env(cache))
            assert "forged_xwait" in functions(frames(p.stdout)) and not warnings(p)
        with Fixture([progs["a"]]) as fx:
            wait_idle(fx.pid)
            got = frames(run("stacks", "--json", fx.pid, env=cache_env(cache)).stdout)
            want = frames(run("--no-cache", "stacks", "--json", fx.pid,
                              env=cache_env(cache)).stdout)
            assert "forged_xwait" not in functions(got), "another user's names were kept"
            assert "genuine_wait" in functions(want) and got == want
    finally:
        shutil.rmtree(tmp)


def test_cache_folders_another_user_owns_or_can_write_are_neither_read_nor_written():
    owner = other_user()
    tmp = tempfile.mkdtemp(prefix="dlscope-sec-")
    try:
        os.chmod(tmp, 0o755)
        progs = build_pair(tmp)
        scratch = forge(tmp, progs["b"])
        frames_src = os.path.join(scratch, "frames", BID)
        debug_src = os.path.join(scratch, "debuginfo", BID + ".debug")
        every = (("stacks", "--json"), ("libs", "--json"), ("check", "--json"))
        layouts = {}  # what: (cache folder, what the line names, commands, folder watched)
        # The cache folder itself is theirs.
        theirs = mkdir(os.path.join(tmp, "theirs"), 0o755, owner)
        plant(frames_src, os.path.join(theirs, "frames", BID), owner)
        os.chown(os.path.join(theirs, "frames"), *owner)
        layouts["cache folder theirs"] = (theirs, theirs, every, [theirs])
        # root's cache, but frames/ is theirs and debuginfo/ writable by anyone: only stacks
        # uses those.
        mixed = mkdir(os.path.join(tmp, "mixed"))
        plant(frames_src, os.path.join(mixed, "frames", BID), owner)
        os.chown(os.path.join(mixed, "frames"), *owner)
        plant(debug_src, os.path.join(mixed, "debuginfo", BID + ".debug"), (0, 0))
        os.chmod(os.path.join(mixed, "debuginfo"), 0o777)
        layouts["subfolders theirs or open"] = (mixed, mixed, every[:1],
                                                [os.path.join(mixed, "frames"),
                                                 os.path.join(mixed, "debuginfo")])
        # root's cache folder inside a folder of theirs (they can rename it away).
        parent = mkdir(os.path.join(tmp, "parent"), 0o755, owner)
        inner = mkdir(os.path.join(parent, "cache"))
        plant(frames_src, os.path.join(inner, "frames", BID), (0, 0))
        layouts["a folder above theirs"] = (inner, parent, every, [parent])
        with Fixture([progs["a"]]) as fx:
            wait_idle(fx.pid)
            want = frames(run("--no-cache", "stacks", "--json", fx.pid,
                              env=cache_env(tmp)).stdout)
            assert "genuine_wait" in functions(want)
            for what, (cache, culprit, commands, watched) in layouts.items():
                before = [tree(w) for w in watched]
                for args in commands:
                    p = run(*args, fx.pid, env=cache_env(cache))
                    if args[0] == "stacks":
                        assert frames(p.stdout) == want, what
                    assert_one_warning(p, culprit)
                assert [tree(w) for w in watched] == before, f"{what}: written into"
    finally:
        shutil.rmtree(tmp)


def test_caches_are_not_written_through_links_another_user_planted():
    owner = other_user()
    tmp = tempfile.mkdtemp(prefix="dlscope-sec-")
    try:
        os.chmod(tmp, 0o755)
        victim = mkdir(os.path.join(tmp, "victim"))  # root's: where the links point
        victim_file = os.path.join(victim, "precious")
        with open(victim_file, "w") as f:
            f.write("precious\n")
        home = mkdir(os.path.join(tmp, "home", "theirs"), 0o755, owner)
        cases = {}
        # HOME=theirs, ~/.cache a link to root's folder.
        h1 = mkdir(os.path.join(home, "h1"), 0o755, owner)
        os.symlink(victim, os.path.join(h1, ".cache"))
        os.lchown(os.path.join(h1, ".cache"), *owner)
        cases["HOME, .cache a link"] = home_env(h1)
        # HOME=theirs, a real ~/.cache/dlscope of theirs whose entries are links.
        h2 = mkdir(os.path.join(home, "h2"), 0o755, owner)
        d2 = mkdir(os.path.join(h2, ".cache", "dlscope"), 0o755, owner)
        os.chown(os.path.join(h2, ".cache"), *owner)
        for name, target in (("frames", victim), ("debuginfo", victim),
                             ("elf-v1.cache", victim_file),
                             ("symbols-v1.cache", victim_file)):
            os.symlink(target, os.path.join(d2, name))
            os.lchown(os.path.join(d2, name), *owner)
        cases["HOME, links in the cache"] = home_env(h2)
        # DLSCOPE_CACHE_DIR inside their tree, a link to root's folder.
        os.symlink(victim, os.path.join(home, "cachelink"))
        os.lchown(os.path.join(home, "cachelink"), *owner)
        cases["DLSCOPE_CACHE_DIR a link of theirs"] = cache_env(os.path.join(home, "cachelink"))
        with Fixture(["busy_threads", "2", "idle"]) as fx:
            wait_idle(fx.pid)
            want = {a: run("--no-cache", *a, fx.pid, env=cache_env(tmp)).stdout
                    for a in (("libs", "--json"), ("check", "--json"))}
            want_stacks = frames(run("--no-cache", "stacks", "--json", fx.pid,
                                     env=cache_env(tmp)).stdout)
            before = tree(victim)
            for what, env in cases.items():
                for args in (("libs", "--json"), ("check", "--json"), ("stacks", "--json")):
                    p = run(*args, fx.pid, env=env)
                    assert tree(victim) == before, f"{what}: {args[0]} wrote through a link"
                    if args[0] == "stacks":
                        assert frames(p.stdout) == want_stacks, what
                    else:
                        assert p.stdout == want[args], (what, args)
                    assert_one_warning(p)
            with open(victim_file) as f:
                assert f.read() == "precious\n"
    finally:
        shutil.rmtree(tmp)


def _populated(tmp, pid):
    """A cache of root's after libs, check and stacks of @pid, and those commands' answers."""
    cache = mkdir(os.path.join(tmp, "cache"))
    for args in (("libs", "--json"), ("check", "--json"), ("stacks", "--json")):
        run(*args, pid, env=cache_env(cache))
    files = [os.path.join(d, f) for d, _, fs in os.walk(cache) for f in fs]
    names = {os.path.basename(f) for f in files}
    assert {"elf-v1.cache", "symbols-v1.cache"} <= names, names
    assert any(n.startswith("dpkg-") for n in names), names
    assert os.listdir(os.path.join(cache, "frames")), "no frames cached"
    assert os.listdir(os.path.join(cache, "debuginfo")), "no debug info cached (libc6-dbg?)"
    fresh = mkdir(os.path.join(tmp, "fresh"))
    want = {a: run("--no-cache", *a, pid, env=cache_env(fresh)).stdout
            for a in (("libs", "--json"), ("check", "--json"))}
    want["stacks"] = frames(run("--no-cache", "stacks", "--json", pid,
                                env=cache_env(fresh)).stdout)
    return cache, sorted(files), want


def _answers(pid, cache, want, timeout=30):
    for args in (("libs", "--json"), ("check", "--json"), ("stacks", "--json")):
        try:
            p = run(*args, pid, env=cache_env(cache), timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{args[0]} still running after {timeout} s") from None
        got = frames(p.stdout) if args[0] == "stacks" else p.stdout
        assert got == want[args[0] if args[0] == "stacks" else args], args
        assert not warnings(p), p.stderr


def test_a_fifo_as_any_cache_file_neither_hangs_nor_changes_an_answer():
    other_user()
    tmp = tempfile.mkdtemp(prefix="dlscope-sec-")
    try:
        with Fixture(["busy_threads", "2", "idle"]) as fx:
            wait_idle(fx.pid)
            cache, files, want = _populated(tmp, fx.pid)
            for f in files:
                os.unlink(f)
                os.mkfifo(f, 0o600)
            _answers(fx.pid, cache, want)
            # Each was written again, a regular file.
            for f in files:
                assert os.path.isfile(f) and not os.path.islink(f), f
    finally:
        shutil.rmtree(tmp)


def _run_measured(args, env, timeout=60):
    """stdout, stderr and peak RSS (KiB) of one dlscope run, under a 1 GiB address-space limit
    (none in a sanitizer build: its shadow memory is reserved up front)."""
    san = "san" in os.path.basename(harness.BUILD)
    full = dict(os.environ, **env)

    def limit():
        if not san:
            resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen([harness.dlscope_path(), *map(str, args)], stdout=out, stderr=err,
                             env=full, preexec_fn=limit)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        assert p.returncode in (0, 1), (args, p.returncode, err.read())
        return out.read().decode(), err.read().decode(), ru.ru_maxrss


@plain  # a peak RSS under a 1 GiB address-space limit: the sanitizer build has neither
def test_frames_cache_linked_to_dev_zero_or_huge_reads_in_bounded_memory():
    other_user()
    tmp = tempfile.mkdtemp(prefix="dlscope-sec-")
    try:
        with Fixture(["busy_threads", "2", "idle"]) as fx:
            wait_idle(fx.pid)
            cache, files, want = _populated(tmp, fx.pid)
            _, _, base_rss = _run_measured(["--no-cache", "stacks", "--json", fx.pid],
                                           cache_env(cache))
            frames_files = sorted(os.listdir(os.path.join(cache, "frames")))
            damaged = []
            for i, name in enumerate(frames_files):
                path = os.path.join(cache, "frames", name)
                os.unlink(path)
                if i % 2 == 0:
                    os.symlink("/dev/zero", path)
                else:  # a sparse file of 4 GiB
                    with open(path, "wb") as f:
                        f.truncate(4 << 30)
                damaged.append(path)
            for _ in range(3):  # see run()
                out, err, rss = _run_measured(["stacks", "--json", fx.pid], cache_env(cache))
                if "exited before it could be stopped" not in out:
                    break
            assert frames(out) == want["stacks"] and err == "", err
            assert rss < base_rss + 64 * 1024, f"peak RSS {rss} KiB, {base_rss} without cache"
            for path in damaged:
                assert os.path.isfile(path) and not os.path.islink(path), path
                assert os.path.getsize(path) < 1 << 20, path
    finally:
        shutil.rmtree(tmp)


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_an_emptied_debuginfo_cache_file_is_not_used_and_is_written_again_whole():
    other_user()
    tmp = tempfile.mkdtemp(prefix="dlscope-sec-")
    try:
        with Fixture(["busy_threads", "2", "idle"]) as fx:
            wait_idle(fx.pid)
            cache, _, want = _populated(tmp, fx.pid)
            ddir = os.path.join(cache, "debuginfo")
            good = {n: _digest(os.path.join(ddir, n)) for n in os.listdir(ddir)}
            for n in good:
                open(os.path.join(ddir, n), "w").close()
            # Without the frames cache every pc is named from DWARF, through these files.
            shutil.rmtree(os.path.join(cache, "frames"))
            p = run("stacks", "--json", fx.pid, env=cache_env(cache))
            assert frames(p.stdout) == want["stacks"], "an emptied debug file was used"
            assert not warnings(p), p.stderr
            assert {n: _digest(os.path.join(ddir, n)) for n in good} == good, "not rewritten"
    finally:
        shutil.rmtree(tmp)


def test_a_frames_cache_cut_mid_line_is_not_used_and_is_written_again_whole():
    other_user()
    tmp = tempfile.mkdtemp(prefix="dlscope-sec-")
    try:
        with Fixture(["busy_threads", "2", "idle"]) as fx:
            wait_idle(fx.pid)
            cache, _, want = _populated(tmp, fx.pid)
            fdir = os.path.join(cache, "frames")
            cut = None
            for n in os.listdir(fdir):
                with open(os.path.join(fdir, n), "rb") as f:
                    good = f.read()
                at = good.rfind(b"busy_threads.c")
                if at > 0:
                    cut = os.path.join(fdir, n)
                    break
            assert cut, "no frame of the fixture's own source cached"
            with open(cut, "wb") as f:
                f.write(good[:at + len(b"busy_")])  # the file name cut short
            p = run("stacks", "--json", fx.pid, env=cache_env(cache))
            got = frames(p.stdout)
            assert got == want["stacks"], "a cut cache file was used"
            assert not any(f[5] and f[5].endswith("busy_") for _, _, fs in got for f in fs)
            with open(cut, "rb") as f:
                assert f.read() == good, "not written again whole"
    finally:
        shutil.rmtree(tmp)


def test_a_changed_byte_in_dpkgs_answers_is_not_used_and_is_written_again():
    """dpkg's answers are lines of text: a package name changed in them must show."""
    other_user()
    tmp = tempfile.mkdtemp(prefix="dlscope-sec-")
    try:
        with Fixture(["busy_threads", "2", "idle"]) as fx:
            wait_idle(fx.pid)
            cache, files, want = _populated(tmp, fx.pid)
            answers = [f for f in files if os.path.basename(f).startswith("dpkg-")][0]
            with open(answers, "rb") as f:
                good = f.read()
            assert b"\tlibc6\t" in good, good[:200]
            with open(answers, "wb") as f:
                f.write(good.replace(b"\tlibc6\t", b"\tlibc7\t"))
            _answers(fx.pid, cache, want)
            with open(answers, "rb") as f:
                assert b"\tlibc7\t" not in f.read(), "not written again"
    finally:
        shutil.rmtree(tmp)
