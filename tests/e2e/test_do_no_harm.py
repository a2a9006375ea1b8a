"""What watching costs the target and the processes beside it, whatever happens to dlscope
(docs/reliability.md; issue: do no harm)."""
import json
import os
import re
import signal
import subprocess
import tempfile
import time

from harness import Fixture, Skip, bench_prog, dlscope, dlscope_path, fixture_path, is_root, \
    plain, serial, wait_until
from test_ui import Tui, ui_pid
from watchlib import gone_or_zombie


# hold_victim maps a new copy of this library for each dlopen: a file dlscope has not seen, so
# each is held while it is analysed. A plain library: a runtime's copies would each get their
# probes, hundreds in a run, which a killed watch must all take out as it dies.
HELD_EVERY_TIME = fixture_path("libplain.so")


def need_root():
    if not is_root():
        raise Skip("BPF tests need root")


def test_attach_in_the_middle_of_loader_calls_guesses_no_depth():
    # The target takes the loader lock thousands of times a second and starts a parallel
    # region from main every 1,000 rounds: each attach lands inside some dlopen. A return
    # whose entry came before the probes must not leave main "inside dlopen" (a false
    # loader-lock hazard, every later dlclose held).
    need_root()
    with Fixture(["dlopen_spin", fixture_path("libplain.so")]) as fx:
        for _ in range(8):
            p = dlscope("watch", "--hot", "-p", fx.pid, "--duration", "0.7", timeout=60)
            assert p.returncode == 0 and "loader-lock-hazard" not in p.stdout, \
                p.stdout[-3000:] + p.stderr
            assert "paused until dlscope" not in p.stderr, p.stderr


# A target thread held for a collector sent SIGKILL or SIGSTOP goes on at once (the BPF side
# sees the signal sent), measured from the signal: the holds before it, as long as a
# sanitizer build starved by the suite takes to analyse a file, are not what the signal cost.
# The test allows for a busy machine, the bench measures.
STALL_MAX_MS = 200


def collector(kind, pid, trace_dir):
    """watch, record or ui of @pid, started; returns (its PID, a function that ends it and
    gives its stderr or screen)."""
    if kind == "ui":
        ui = Tui(["-p", pid])
        ui.wait_for(("[1 Processes]", str(pid)))

        def end_ui():
            text = ui.screen()
            ui.kill()
            return text
        return ui_pid(ui), end_ui
    argv = [dlscope_path(), kind, "-p", str(pid)] + \
        (["-o", os.path.join(trace_dir, "t.jsonl")] if kind == "record" else ["-q"])
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert p.stderr.readline().startswith("dlscope: watching"), kind

    def end():
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        return p.communicate(timeout=30)[1]
    return p.pid, end


def mark(path):
    """Notes the time for hold_victim (CLOCK_MONOTONIC ms, its MARKS file)."""
    with open(path, "a") as f:
        f.write(f"{time.monotonic() * 1e3:.3f}\n")


def victim_pays(kind, sig):
    """How long a dlopen and a dlsym of a target went on, at most, after its collector got
    @sig a second in (until its SIGCONT for a SIGSTOP), and the calls made. The target runs
    until the collector is done with (SIGUSR1), however long a loaded machine took to start it."""
    with tempfile.TemporaryDirectory() as d:
        marks = os.path.join(d, "marks")
        with Fixture(["hold_victim", HELD_EVERY_TIME, "120", marks]) as fx:
            return victim_pays_of(kind, sig, fx, d, marks)


def victim_pays_of(kind, sig, fx, d, marks):
    pid, end = collector(kind, fx.pid, d)
    time.sleep(1)
    t = time.monotonic()
    mark(marks)
    os.kill(pid, sig)
    if sig == signal.SIGKILL:
        # As a terminal's hangup does (tmux closing the ui's window: SIGHUP and SIGCONT to
        # the session): a SIGCONT to a collector killed but not yet gone had it attentive
        # again, and the next hold waited for its stale heartbeat (230-248 ms, every time on
        # the sanitizer build, whose exit takes 350 ms).
        os.kill(pid, signal.SIGCONT)
        wait_until(lambda: gone_or_zombie(pid), 10, f"{kind} gone")
        gone = time.monotonic() - t
        # Its held programs no longer keep it from dying (it took 3.7-4.1 s).
        assert gone < 2, f"{kind} took {gone:.1f} s to die"
    else:
        time.sleep(1.2)
        mark(marks)
        os.kill(pid, signal.SIGCONT)
    said = end()
    time.sleep(0.2)
    fx.proc.send_signal(signal.SIGUSR1)
    out, _ = fx.proc.communicate(timeout=30)
    n = re.search(r"longest dlopen [\d.]+ ms of (\d+)", out)
    m = re.search(r"after the mark: longest dlopen ([\d.]+) ms, longest dlsym ([\d.]+) ms", out)
    assert n and m, out
    return float(m.group(1)), int(n.group(1)), float(m.group(2)), said


@serial
def test_a_killed_or_stopped_collector_stalls_no_target_thread():
    need_root()
    for kind in ("watch", "record", "ui"):
        for sig in (signal.SIGKILL, signal.SIGSTOP):
            dlopen_ms, n, dlsym_ms, said = victim_pays(kind, sig)
            what = f"{kind} {signal.Signals(sig).name}: dlopen {dlopen_ms} ms, dlsym {dlsym_ms} ms"
            assert n > 100, what
            assert dlopen_ms < STALL_MAX_MS and dlsym_ms < STALL_MAX_MS, (what, said[-3000:])
            if kind != "ui" and sig == signal.SIGSTOP:
                # The holds the target saw, and those it was spared, are said.
                assert re.search(r"library loads? paused until dlscope's probes were in the "
                                 r"new libraries \([\d.]+ ms each on average, ([\d.]+) ms at "
                                 r"most, as the paused threads saw it\)", said), said
                assert re.search(r"\d+ let go and [1-9]\d* not held because dlscope was "
                                 r"stopped or killed, or silent for \d+ ms, the rest not "
                                 r"answered within 3 s\): their first calls may be missing; "
                                 r"[1-9]\d* as a signal had stopped or ended dlscope", said), said


def test_a_dlsym_that_returned_is_not_taken_for_one_in_progress():
    # Without --dlsym only dlsym's entry is probed: the worker's call, long returned, stays in
    # the table. The worker now blocks on a mutex main holds while main blocks inside dlopen:
    # not a thread waiting in dlsym for the loader lock, and no deadlock between the two.
    need_root()
    p = dlscope("watch", "--duration", "1.5", "--", fixture_path("stale_dlsym"),
                fixture_path("libstale_ctor.so"), check=1)
    assert re.search(r"blocked in a futex wait on 0x[0-9a-f]+ inside dlopen\(", p.stdout), \
        p.stdout
    assert "inside dlsym" not in p.stdout and "waits in dlsym" not in p.stdout, p.stdout


@serial  # 400 stops timed against a bound: the suite's other tests starve it on 2 CPUs
def test_stacks_of_a_thread_signalled_thousands_of_times_a_second():
    # A signal's delivery stop can come before the interrupt's: it is taken as the stop and
    # its signal goes with the release. Before, the thread was resumed and never stopped again
    # (3 s, no stack), and a release with signal 0 dropped a SIGALRM with its overruns.
    runs, hz = 400, 5000
    with Fixture(["signal_storm", str(hz), "3600"]) as fx:
        for i in range(runs):
            p = dlscope("stacks", "--json", fx.pid, check=0)
            proc = json.loads(p.stdout)["processes"][0]
            assert proc["stopped_ms"] < 500, (i, proc["stopped_ms"])
            threads = proc["threads"]
            assert len(threads) == 2 and all(t["frames"] and not t["error"] for t in threads), \
                (i, threads)
        fx.proc.send_signal(signal.SIGTERM)
        fx.proc.wait()
    # The count is the fixture's own, at its end: run it short, stacks on it all along.
    with Fixture(["signal_storm", str(hz), "3"]) as fx:
        t0 = time.monotonic()
        while fx.proc.poll() is None and time.monotonic() - t0 < 3:
            dlscope("stacks", fx.pid)
        out = fx.proc.stdout.read()
    m = re.search(r"handled (\d+) overruns (\d+) due (\d+)", out)
    assert m, out
    handled, overruns, due = map(int, m.groups())
    assert abs(handled + overruns - due) <= 1, out


# A time (each thread's hold under 250 ms), of a stop of 200 busy threads on the machine's
# CPUs: the sanitizer build, starved by them, took 50-61 s for its four stacks.
@plain
@serial
def test_stacks_says_how_long_each_thread_was_held():
    with Fixture(["stop_gaps", "200", "busy"]) as fx:
        time.sleep(0.3)
        for _ in range(3):
            proc = json.loads(dlscope("stacks", "--json", fx.pid, check=0).stdout)[
                "processes"][0]
            assert len(proc["threads"]) == 200, len(proc["threads"])
            assert 0 < proc["held_max_ms"] <= proc["stopped_ms"] + 0.01, proc["held_max_ms"]
            assert proc["held_max_ms"] < 250, proc["held_max_ms"]
        text = dlscope("stacks", "--stats", fx.pid, check=0).stdout
        assert re.search(r"stopped for [\d.]+ ms, each thread at most [\d.]+ ms \(200 threads",
                         text), text[-500:]


def longest_dlopen_beside_a_busy_loop(watcher):
    """hold_victim's longest dlopen, pinned with a busy loop to CPU 0, with @watcher (argv
    before "-p PID", or None) pinned there too."""
    busy = subprocess.Popen(["taskset", "-c", "0", "sh", "-c", "while :; do :; done"])
    w = None
    try:
        with Fixture(["taskset", "-c", "0", fixture_path("hold_victim"), HELD_EVERY_TIME,
                      "3"]) as fx:
            w = subprocess.Popen(["taskset", "-c", "0", *watcher, "-p", str(fx.pid)],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) \
                if watcher else None
            out = fx.proc.communicate(timeout=60)[0]
    finally:
        # The busy loop first: the watcher's own exit, at nice 19 beside it, is not what is
        # measured (the sanitizer build starved there took over 60 s to end).
        busy.kill()
        busy.wait()
        if w:
            w.send_signal(signal.SIGINT)
            w.wait(timeout=60)
    return float(re.search(r"longest dlopen ([\d.]+) ms", out).group(1))


@serial  # times the target on a CPU it shares with a busy loop
def test_a_starved_collector_stalls_no_target_call():
    # A collector at nice 19 on a busy CPU is preempted at will: what it does while the
    # target waits on it (its mmap lock: maps, memory, uprobes) runs at a real-time priority.
    # Each figure is one dlopen's worst moment: a pair is measured again once when it is over
    # (a stall the starved collector caused, 0.3-1.5 s before, is over in both; a preemption
    # of the machine, 62 ms once in a full suite, is not).
    need_root()
    pairs = []
    for _ in range(2):
        alone = longest_dlopen_beside_a_busy_loop(None)
        watched = longest_dlopen_beside_a_busy_loop(["nice", "-n", "19", dlscope_path(),
                                                     "watch", "-q"])
        pairs.append((alone, watched))
        if watched < alone + 50:
            break
    assert watched < alone + 50, pairs


def twin_rate(watch_args, calls=300000, runs=1):
    """dlsym calls a second of a loop nobody watches (the best of RUNS loops of CALLS), run
    while `watch WATCH_ARGS -p IDLE` watches another process (None: no watch); and the
    watch's stderr."""
    from test_watch_loss import _dlsym_loop
    idle = subprocess.Popen(["sleep", "60"])
    w = None
    try:
        if watch_args is not None:
            w = subprocess.Popen([dlscope_path(), "watch", "-q", *watch_args, "-p",
                                  str(idle.pid)], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            assert w.stderr.readline().startswith("dlscope: watching")
        rate = 0.0
        for _ in range(runs):
            out = subprocess.run([_dlsym_loop(), str(calls)], capture_output=True, text=True,
                                 check=True, timeout=120).stdout
            rate = max(rate, float(re.search(r"(\d+) calls/s", out).group(1)))
        err = ""
        if w:
            w.send_signal(signal.SIGINT)
            err = w.communicate(timeout=60)[1]
        return rate, err
    finally:
        if w and w.poll() is None:
            w.kill()
            w.wait()
        idle.kill()
        idle.wait()


@serial  # compares the speed of a loop with and without a watch beside it
def test_an_unwatched_twin_pays_nothing():
    # uprobes are per file: without the PID filter, a process nobody watches that maps the same
    # libc took a trap per dlsym (6 us here). With -p it takes none; with --follow the probes
    # must be everywhere, which the start says and the summary counts.
    # A trap costs 1 us or more, so a twin that took one per call would run at 1M calls/s
    # at most, 20x below its rate alone here; the best of three loops of 0.1 s each keeps a
    # busy machine's preemptions (a fresh root's suite once halved one 11 ms loop) out of it.
    need_root()
    alone, _ = twin_rate(None, 3000000, 3)
    beside, err = twin_rate([], 3000000, 3)
    assert beside > alone / 4, (alone, beside)
    assert "outside the watch" not in err, err
    everywhere, err = twin_rate(["--follow"])
    assert everywhere < beside / 5, (beside, everywhere)
    m = re.search(r"dlscope: (\d+) process(?:es)? outside the watch hit its probes (\d+) times", err)
    assert m and int(m.group(2)) >= 270000, err
    assert re.search(r"\d+ \(dlsym_loop\) \d+", err), err


def arrivals(stderr):
    """(held, let go because they had no probes to put in place) from watch's summary."""
    held = re.search(r"(\d+) library loads? paused until", stderr)
    free = re.search(r"(\d+) library loads? not paused: nothing to probe", stderr)
    return int(held.group(1)) if held else 0, int(free.group(1)) if free else 0


# Alone: in one ASan suite beside the others, its first watch held one of libx's dlopens more
# (4 held, 3 let go; alone under ASan, 2 of 2 runs gave 3 and 4). Not understood yet.
@serial
def test_a_dlopen_of_files_that_need_no_probes_is_not_held():
    # A file dlscope knows to need no probes in this watch (none for its roles, not glibc's
    # dlopen), or whose probes are in this process already, is let go by the kernel at once; a
    # file rewritten in place is another file to it, held anew; an OpenMP runtime gets probes
    # under --hot only, and is held there only.
    need_root()
    with tempfile.TemporaryDirectory() as d:
        lib = os.path.join(d, "libx.so")
        with open(fixture_path("libplain.so"), "rb") as src, open(lib, "wb") as dst:
            dst.write(src.read())
        env = {"DLSCOPE_CACHE_DIR": os.path.join(d, "cache"), "DLSCOPE_CACHE": "on"}

        def run(*opts):
            # libm.so.6 first: libx.so's dependency stays, so each dlopen brings libx alone.
            p = dlscope("watch", *opts, "--duration", "1.5", "--", fixture_path("dlopen_list"),
                        "/lib/x86_64-linux-gnu/libm.so.6", "--cycle", "5", lib, env=env,
                        check=0)
            assert p.stdout.count('dlopen("') == 6, p.stdout
            return arrivals(p.stderr), p.stderr

        # New to dlscope: held while it is analysed; then each comes back unheld.
        (held, free), said = run()
        assert (held, free) == (3, 4), said  # the start-up, libm, libx once; 4 let go
        # Known from the ELF cache: not held even the first time.
        (held, free), said = run()
        assert (held, free) == (2, 5), said
        # The same inode with an OpenMP runtime in it, under --hot: another file to the
        # kernel, held while its probes go in; in place then, so the 4 others go on.
        with open("/usr/lib/x86_64-linux-gnu/libgomp.so.1", "rb") as src, \
                open(lib, "r+b") as dst:
            dst.write(src.read())
            dst.truncate()
        (held, free), said = run("--hot")
        assert (held, free) == (3, 4), said
        # Without --hot nothing is put in it: known from the cache, never held.
        (held, free), said = run()
        assert (held, free) == (2, 5), said


def test_a_dlopen_or_dlclose_that_changes_no_object_is_not_read_for():
    # A dlopen of a library loaded already, and a dlclose that only drops a reference, leave
    # the link map as it was: the kernel says so with the record (no _dl_debug_state while it
    # ran), and the collector does not read the process again for it. Each read takes the
    # target's mmap lock and some 50 us of the collector's CPU beside it.
    need_root()
    lib = fixture_path("libplain.so")
    p = dlscope("watch", "--", bench_prog("dlopen_new_loop"), "300", lib, "held", check=0)
    assert p.stdout.count('dlopen("') == 301 and p.stdout.count("dlclose(0x") == 300, p.stdout
    # Loaded once, at the dlopen before the rounds; never unloaded.
    assert len(re.findall(r"^\[[ \d.]+\] \d+ \+ \S*libplain\.so ", p.stdout, re.M)) == 1, p.stdout
    assert not re.search(r"^\[[ \d.]+\] \d+ - \S*libplain\.so", p.stdout, re.M), p.stdout
    reads = int(re.search(r"processes read (\d+) times?", p.stderr).group(1))
    # Its exec and its first dlopen (and, at most, a read its exit makes of what is left).
    assert reads <= 4, p.stderr
    assert re.search(r" 0 lost", p.stderr), p.stderr
    # Each load and unload is still read for: 20 rounds of a library mapped anew each time.
    p = dlscope("watch", "--", bench_prog("dlopen_new_loop"), "20", lib, check=0)
    assert p.stdout.count('dlopen("') == 20, p.stdout
    assert int(re.search(r"processes read (\d+) times?", p.stderr).group(1)) >= 40, p.stderr
