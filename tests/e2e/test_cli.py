"""The one grammar of every command: the same bad input gets the same one-line message and the
same exit status in every command (2 usage, 3 cannot inspect), options go anywhere before "--",
"--opt=value" and "--opt value" both work, each short letter means one thing in every command,
"dlscope help CMD" is "dlscope CMD --help"."""
import json
import os
import re
import subprocess
import tempfile

from harness import dlscope

COMMANDS = ["libs", "check", "lint", "stacks", "watch", "record", "ui", "report", "export",
            "merge"]
# The commands that name processes, with -p/--pid and PIDs as operands.
PID_COMMANDS = ["libs", "check", "stacks", "watch", "record", "ui", "report"]
# An option of each command that takes a value.
VALUE_OPT = {"libs": "--depth", "check": "--fail-on", "lint": "--only", "stacks": "--max-frames",
             "watch": "--duration", "record": "--output", "ui": "--replay", "report": "--output",
             "export": "--output", "merge": "--output"}


def usage_error(cmd, proc, reason):
    """A usage error: exit 2, "dlscope: CMD: reason" and the hint, nothing else."""
    want = f"dlscope: {cmd}: {reason}\ntry 'dlscope {cmd} --help'\n"
    if proc.returncode != 2 or proc.stderr != want or proc.stdout:
        raise AssertionError(f"{cmd}: exit {proc.returncode}, wanted 2 and\n{want}"
                             f"got stderr:\n{proc.stderr}stdout:\n{proc.stdout[:300]}")


def test_cli_bad_options_same_everywhere():
    for cmd in COMMANDS:
        usage_error(cmd, dlscope(cmd, "--no-such-option"), "unknown option '--no-such-option'")
        usage_error(cmd, dlscope(cmd, "--no-such-option=3"), "unknown option '--no-such-option'")
        usage_error(cmd, dlscope(cmd, "-Z"), "unknown option '-Z'")
        usage_error(cmd, dlscope(cmd, VALUE_OPT[cmd]), f"option '{VALUE_OPT[cmd]}' needs a value")
        usage_error(cmd, dlscope(cmd, "--help=yes"), "option '--help' takes no value")


def test_cli_bad_pids_same_everywhere():
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    gone = pid_max + 1 if pid_max < 2**22 else 4194304
    for cmd in PID_COMMANDS:
        extra = ["-o", "/tmp/cli-unused.jsonl"] if cmd == "record" else []
        usage_error(cmd, dlscope(cmd, *extra, "-p", "abc"), "'abc' is not a process ID")
        usage_error(cmd, dlscope(cmd, *extra, "--pid=12x"), "'12x' is not a process ID")
        usage_error(cmd, dlscope(cmd, *extra, "-p", "1,x"), "'x' is not a process ID")
        usage_error(cmd, dlscope(cmd, *extra, "abc"), "'abc' is not a process ID")
        if cmd == "ui":
            continue  # ui reads its processes on a terminal only
        p = dlscope(cmd, *extra, str(gone), timeout=30)
        if p.returncode != 3 or not re.fullmatch(
                rf"dlscope: {cmd}: no process with PID {gone}\n", p.stderr):
            raise AssertionError(f"{cmd} {gone}: exit {p.returncode}\n{p.stderr}")


def test_cli_options_after_operands():
    sleeper = subprocess.Popen(["sleep", "60"])
    other = subprocess.Popen(["sleep", "60"])
    try:
        pid = str(sleeper.pid)
        for args in (["libs", pid, "--json"], ["libs", "--pid", pid, "-j"],
                     ["check", pid, "--json"], ["check", pid, "--json", "--only=dup-openmp"],
                     ["check", pid, "--fail-on", "warning", "-j"], ["stacks", pid, "-j"],
                     ["stacks", "-p", pid, "--json"]):
            doc = json.loads(dlscope(*args, check=0).stdout)
            if "dlscope" not in doc:
                raise AssertionError(f"{args}: {doc}")
        # A comma list, as perf takes.
        doc = json.loads(dlscope("libs", "-j", "-p", f"{pid},{other.pid}", check=0).stdout)
        if sorted(p["pid"] for p in doc["processes"]) != sorted([sleeper.pid, other.pid]):
            raise AssertionError(f"libs -p A,B: {[p['pid'] for p in doc['processes']]}")
        # lint's options after its paths, and "--" ends its options (a path may begin with -).
        doc = json.loads(dlscope("lint", "/usr/bin/sleep", "--json", check=0).stdout)
        if doc["objects_checked"] != 1:
            raise AssertionError(f"lint PATH --json: {doc}")
        with tempfile.TemporaryDirectory() as d:
            os.symlink("/usr/bin/sleep", os.path.join(d, "-odd"))
            doc = json.loads(dlscope("lint", "--json", "--",
                                     os.path.join(d, "-odd"), check=0).stdout)
            if doc["objects_checked"] != 1:
                raise AssertionError(f"lint -- PATH: {doc}")
            out = os.path.join(d, "r.md")
            dlscope("report", pid, "-o", out, check=0)
            if not open(out).read().startswith("#"):
                raise AssertionError("report PID -o FILE wrote no report")
        # "--" ends the options: the command's own options are its own.
        p = dlscope("check", "--json", "--", "/bin/true", "--json", check=0)
        json.loads(p.stdout)
        # libs --roles KINDS as a separate word, not taken for a PID.
        p = dlscope("libs", "--roles", "openmp", pid, check=0)
        if "no object with a role of kind openmp" not in p.stdout:
            raise AssertionError(f"libs --roles openmp PID:\n{p.stdout}{p.stderr}")
    finally:
        for s in (sleeper, other):
            s.kill()
            s.wait()


def help_options(cmd):
    """{letter or None: long name} from the option lines of CMD --help."""
    out = dlscope(cmd, "--help", check=0).stdout
    return re.findall(r"^  (?:-(\w), )?\s*--([\w-]+)", out, re.M), out


def test_cli_help():
    letters = {}
    texts = {}
    for cmd in COMMANDS:
        opts, text = help_options(cmd)
        if not opts:
            raise AssertionError(f"{cmd} --help lists no option")
        via_help = dlscope("help", cmd, check=0).stdout
        if via_help != text:
            raise AssertionError(f"'dlscope help {cmd}' is not 'dlscope {cmd} --help'")
        texts[cmd] = text
        for short, long in opts:
            if short:
                letters.setdefault(short, {}).setdefault(long, []).append(cmd)
    clashes = {k: v for k, v in letters.items() if len(v) > 1}
    if clashes:
        raise AssertionError(f"a short letter with several meanings: {clashes}")
    for short, long in (("p", "pid"), ("o", "output"), ("j", "json")):
        if list(letters[short]) != [long]:
            raise AssertionError(f"-{short} is not --{long} everywhere: {letters[short]}")
    # Every command that names processes takes -p/--pid.
    for cmd in PID_COMMANDS:
        if cmd not in letters["p"]["pid"]:
            raise AssertionError(f"{cmd} has no -p/--pid")
    if texts["watch"] == texts["record"]:
        raise AssertionError("watch --help and record --help are the same text")
