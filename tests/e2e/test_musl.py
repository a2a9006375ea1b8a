"""dlscope on programs built on musl (Debian's musl-tools), dynamic and static: their C library
named as musl, musl's mutexes read in the lock-wait graph (an owner where musl records one, a
wait whose holder is unknown where it does not, never "no thread waits"), stacks through a libc
built without unwind tables (frames found by scanning the stack, marked so), and their dlopens
seen by watch."""
import json
import os
import re
import subprocess

from harness import Fixture, Skip, dlscope, dlscope_path, fixture_path, wait_until
from watchlib import watch_past_pause


def musl(name):
    path = fixture_path(os.path.join("musl", name))
    if not os.path.exists(path):
        raise Skip("musl fixtures not built: musl-gcc missing (Debian's musl-tools, which "
                   "make deps installs)")
    return path


def asleep(pid):
    """Every thread of PID blocked (state S): the deadlock reached."""
    def all_s():
        tasks = os.listdir(f"/proc/{pid}/task")
        return len(tasks) >= 2 and all(
            open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()[0] == "S"
            for t in tasks)
    wait_until(all_s, 10, "both threads asleep on their second mutex")


def stacks_of(name, status):
    with Fixture([musl(name)]) as fx:
        asleep(fx.pid)
        doc = json.loads(dlscope("stacks", "--json", fx.pid, check=status).stdout)
        text = dlscope("stacks", fx.pid, check=status).stdout
    return doc["processes"][0], text


def frame_names(thread):
    return [f["function"] for f in thread["frames"]]


def check_scanned_frames(doc):
    """Each thread's stack reaches its own code through musl's libc, which has no CFI: the
    frames past the first are found by scanning the stack, and say so."""
    main, other = doc["threads"][0], doc["threads"][1]
    assert "main" in frame_names(main), frame_names(main)
    assert "take_b_then_a" in frame_names(other), frame_names(other)
    for t in (main, other):
        mine = [f for f in t["frames"] if f["function"] in ("main", "take_b_then_a")][0]
        assert mine.get("scanned") is True and mine["file"].endswith("hang_abba.c"), mine
        assert not t["frames"][0].get("scanned"), t["frames"][0]
        # The scan above musl's __clone (no CFI) runs off the top of the thread's stack:
        # that is the stack's end, not a scan that found nothing.
        assert t["error"] is None, t["error"]


def check_unowned(doc, text):
    """musl's default mutexes keep no owner: each wait says so, and the verdict says the
    threads are stuck for good rather than that nobody waits."""
    kinds = [t["waits_for"] for t in doc["threads"]]
    assert all("whose holder is unknown (musl's default mutex type does not record its "
               "owner)" in k for k in kinds), kinds
    assert not doc["edges"] and not doc["cycles"], doc["edges"]
    verdict = doc["verdicts"][0]["text"]
    assert verdict.startswith("No deadlock cycle can be drawn."), verdict
    assert "stuck for good" in verdict and "No thread waits" not in verdict, verdict
    assert "[found by stack scan]" in text


def check_cycle(doc):
    """Error-checking mutexes record their owner: the ABBA cycle, as with glibc."""
    tids = [t["tid"] for t in doc["threads"]]
    edges = sorted((e["from"], e["to"], e["kind"]) for e in doc["edges"])
    assert edges == sorted([(tids[0], tids[1], "mutex"), (tids[1], tids[0], "mutex")]), edges
    assert len(doc["cycles"]) == 1, doc["cycles"]
    assert doc["verdicts"][0]["text"].startswith("Deadlock between 2 threads"), doc["verdicts"]


def test_dynamic_default_mutexes_are_waits_without_a_holder():
    check_unowned(*stacks_of("abba", 0))


def test_static_default_mutexes_are_waits_without_a_holder():
    doc, text = stacks_of("abba_static", 0)
    check_unowned(doc, text)
    check_scanned_frames(doc)


def test_dynamic_errorcheck_mutexes_make_the_abba_cycle():
    doc, _ = stacks_of("abba_errorcheck", 1)
    check_cycle(doc)
    check_scanned_frames(doc)


def test_static_errorcheck_mutexes_make_the_abba_cycle():
    check_cycle(stacks_of("abba_errorcheck_static", 1)[0])


def test_libs_names_musl_and_its_libc_so():
    with Fixture([musl("abba")]) as fx:
        doc = json.loads(dlscope("libs", "--json", fx.pid, check=0).stdout)
    objs = doc["processes"][0]["objects"] if "processes" in doc else doc["objects"]
    exe = objs[0]
    assert exe["origin"] == "executable" and exe["path"] == musl("abba"), exe
    ldso = [o for o in objs if o["origin"] == "interpreter"][0]
    impls = sorted(r["impl"] for r in ldso["roles"])
    assert impls == ["ld-musl", "musl"], ldso["roles"]
    # musl-gcc links libc.so, which the loader answers itself.
    assert all(not o.get("unresolved") for o in objs), [o.get("unresolved") for o in objs]


def test_static_musl_program_is_one_object_and_check_finds_nothing():
    with Fixture([musl("static_exe")]) as fx:
        doc = json.loads(dlscope("libs", "--json", fx.pid, check=0).stdout)
        objs = doc["processes"][0]["objects"] if "processes" in doc else doc["objects"]
        assert [o["path"] for o in objs if o["origin"] != "vdso"] == [musl("static_exe")], objs
        dlscope("check", fx.pid, check=0)
    proc = dlscope("check", "--", musl("static_exe"), check=0, env={"FIXTURE_EXIT": "0"})
    assert "0 findings" in proc.stdout, proc.stdout


def test_watch_sees_a_musl_dlopen_and_its_result():
    # The program waits a second after its dlopen ("--pause"): a 3 ms program could be gone
    # before a loaded machine's collector read its start-up (CI's fresh root once; 2 runs in 5
    # under two CPU burners, before this work too), which is not what this test is about.
    lib = musl("libplain.so")
    proc = watch_past_pause([], [musl("dlopen_list"), lib, "--pause"], 1)
    assert proc.returncode == 0, proc.stderr
    opens = [ln for ln in proc.stdout.splitlines() if f'dlopen("{lib}", RTLD_NOW) = 0x' in ln]
    assert len(opens) == 1, proc.stdout
    assert f"+ {lib} (dlopen)" in proc.stdout, proc.stdout
    assert "musl C library" in proc.stdout, proc.stdout
    # dlsym's return is not probed on musl, and watch says why once.
    assert proc.stderr.count("musl's dlsym finds its caller by its return address") == 1, \
        proc.stderr


def test_a_musl_dlopen_of_a_loaded_library_is_neither_held_nor_read_for():
    # musl signals RT_ADD at the start of every dlopen, mapping or not: each of these 200 was
    # held twice (at RT_ADD and RT_CONSISTENT) and the process read for it (401 holds, 202
    # reads). Its struct debug, found through _dl_debug_addr, now tells the two apart, and a
    # dlopen that added nothing to its only list goes on at once.
    lib = musl("libplain.so")
    proc = subprocess.run([dlscope_path(), "watch", "--", musl("dlopen_list"), "--cycle", "200",
                           lib], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, FIXTURE_EXIT="0"))
    assert proc.returncode == 0, proc.stderr
    opens = [ln for ln in proc.stdout.splitlines() if f'dlopen("{lib}", RTLD_NOW) = 0x' in ln]
    assert len(opens) == 200, proc.stdout[-3000:]
    reads = int(re.search(r"processes read (\d+) time", proc.stderr)[1])
    held = re.search(r"(\d+) library loads? paused", proc.stderr)
    unheld = re.search(r"(\d+) library loads? not paused", proc.stderr)
    assert reads <= 10 and (not held or int(held[1]) <= 5), proc.stderr
    assert unheld and int(unheld[1]) >= 195, proc.stderr
