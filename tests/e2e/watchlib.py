"""What the tests of dlscope watch and record share (test_watch*.py)."""

import os
import subprocess
import time

from harness import Skip, dlscope, dlscope_path, is_root


def watch(*args, env=None, status=None, timeout=60):
    if not is_root():
        raise Skip("BPF tests need root")
    return dlscope("watch", *args, env=env, check=status, timeout=timeout)


def gone_or_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before, or while, it was read
        return True


def watch_past_pause(watch_args, argv, wait_s, timeout=60):
    """`watch WATCH_ARGS -- ARGV` of a fixture that says "paused" and waits for a line on its
    stdin (dlopen_list --pause), let go @wait_s seconds after it paused; FIXTURE_EXIT=0, so it
    exits once it is ready. The CompletedProcess of watch, its stdout whole."""
    if not is_root():
        raise Skip("BPF tests need root")
    w = subprocess.Popen([dlscope_path(), "watch", *watch_args, "--", *argv],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=dict(os.environ, FIXTURE_EXIT="0"))
    seen = []
    try:
        for line in w.stdout:
            seen.append(line)
            if line.startswith("paused"):
                break
        time.sleep(wait_s)
        w.stdin.write("go\n")
        w.stdin.flush()
        out, err = w.communicate(timeout=timeout)
    finally:
        if w.poll() is None:
            w.kill()
            w.wait()
    return subprocess.CompletedProcess(w.args, w.returncode, "".join(seen) + out, err)
