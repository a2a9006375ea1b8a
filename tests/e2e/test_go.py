"""dlscope stacks on a Go program (Debian's golang-go) whose goroutines are stuck: two in an AB-BA
deadlock on sync.Mutex, one on a channel, main asleep. Its goroutines' frames, inlined calls
included, are checked against the program's own account: Go's traceback on SIGQUIT with
GOTRACEBACK=system, which prints every goroutine, the runtime's too."""
import json
import os
import re
import signal

from harness import Fixture, Skip, dlscope, fixture_path


def go_fixture():
    path = fixture_path("go/stuck")
    if not os.path.exists(path):
        raise Skip("Go fixture not built: go missing (Debian's golang-go, which make deps "
                   "installs)")
    return path


def go_traceback(text):
    """{goroutine id: (state, [(function, file, line)])} of Go's traceback, innermost first."""
    out, cur = {}, None
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        m = re.match(r"goroutine (\d+) \[([^\],]+)", ln)
        if m:
            cur = out.setdefault(int(m.group(1)), (m.group(2), []))[1]
            continue
        if cur is None or not ln or ln.startswith(("\t", "created by")) or "(" not in ln:
            if ln.startswith("created by") or not ln:
                cur = None
            continue
        place = re.match(r"\t(.*):(\d+)", lines[i + 1]) if i + 1 < len(lines) else None
        if place:
            cur.append((ln[:ln.rindex("(")], place.group(1), int(place.group(2))))
    return out


def test_goroutines_are_gos_own_traceback():
    with Fixture([go_fixture()], env={"GOTRACEBACK": "system"}) as fx:
        doc = json.loads(dlscope("stacks", "--json", fx.pid, check=0).stdout)["processes"][0]
        text = dlscope("stacks", fx.pid, check=0).stdout
        os.kill(fx.pid, signal.SIGQUIT)
        fx.proc.wait(timeout=20)
        truth = go_traceback(fx.proc.stderr.read())
    go = doc["go"]
    assert go and go["version"].startswith("go1.") and go["error"] is None, go
    ours = {g["id"]: g for g in go["goroutines"]}
    user = {i: g for i, g in ours.items() if not g["system"]}
    # main asleep, two on a sync.Mutex, one on a channel: each where Go says it is.
    assert len(user) == 4, [(g["id"], g["state"], g["start"]) for g in ours.values()]
    assert set(truth) >= set(ours), (sorted(truth), sorted(ours))
    for gid, g in ours.items():
        state, frames = truth[gid]
        assert g["state"] == state, (gid, g["state"], state)
        mine = [(f["function"], f["file"], f["line"]) for f in g["frames"]]
        assert mine == frames, (gid, mine, frames)
    by_fn = {f["function"]: g for g in user.values() for f in g["frames"]}
    assert "sync.(*Mutex).Lock" in by_fn and by_fn["sync.(*Mutex).Lock"]["frames"][0]["pc"]
    assert [f["inlined"] for f in by_fn["main.lockAThenB"]["frames"]
            if f["function"] == "sync.(*Mutex).Lock"] == [True]
    # The verdict names the blocked goroutines; the threads keep their native stacks.
    verdict = doc["verdicts"][-1]["text"]
    assert verdict.startswith("Go go1.") and "4 goroutines are blocked" in verdict, verdict
    assert any(f["function"].startswith("runtime.") for f in doc["threads"][0]["frames"])
    assert "\nGoroutines (go1." in text and "sync.(*Mutex).Lock (inlined)" in text, text


def test_a_stripped_go_program_says_why_it_has_no_goroutines():
    # Go's symbols but no DWARF (go build -ldflags=-w): said, not guessed.
    src = go_fixture()
    stripped = os.path.join(os.path.dirname(src), "stuck-nodwarf")
    if not os.path.exists(stripped):
        if os.system(f"objcopy --strip-debug {src} {stripped}") != 0:
            raise Skip("objcopy failed")
    with Fixture([stripped]) as fx:
        doc = json.loads(dlscope("stacks", "--json", fx.pid, check=0).stdout)["processes"][0]
    assert doc["go"]["goroutines"] == [] and "no DWARF describing runtime.g" in \
        doc["go"]["error"], doc["go"]
