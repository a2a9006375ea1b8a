"""What the tests of dlscope watch and record share (test_watch*.py)."""

from harness import Skip, dlscope, is_root


def watch(*args, env=None, status=None, timeout=60):
    if not is_root():
        raise Skip("BPF tests need root")
    return dlscope("watch", *args, env=env, check=status, timeout=timeout)


def gone_or_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True
