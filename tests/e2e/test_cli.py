"""The one grammar of every command: the same bad input gets the same one-line message and the
same exit status in every command (2 usage, 3 cannot inspect), options go anywhere before "--",
"--opt=value" and "--opt value" both work, each short letter means one thing in every command,
"dlscope help CMD" is "dlscope CMD --help"."""
import json
import os
import re
import subprocess
import tempfile

from harness import Fixture, dlscope, fixture_path, wait_idle

COMMANDS = ["libs", "check", "lint", "stacks", "watch", "record", "agent", "ui", "report",
            "export", "merge", "capture"]
# The commands that name processes, with -p/--pid and PIDs as operands.
PID_COMMANDS = ["libs", "check", "stacks", "watch", "record", "ui", "report", "capture"]
# An option of each command that takes a value.
VALUE_OPT = {"libs": "--depth", "check": "--fail-on", "lint": "--only", "stacks": "--max-frames",
             "watch": "--duration", "record": "--output", "ui": "--replay", "report": "--output",
             "export": "--output", "merge": "--output", "capture": "--output",
             "agent": "--interval"}


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


def test_cli_futex_ms_is_whole_milliseconds_everywhere():
    """--futex-ms 0.5 used to pass watch's check and become 0 (no futex waits at all), while ui
    refused it: one parser now, and the same line for the same value in every command."""
    for cmd in ("watch", "record", "ui"):
        extra = ["-o", "/tmp/cli-unused.jsonl"] if cmd == "record" else []
        for bad in ("0.5", "0", "-3", "2ms", "1e9"):
            usage_error(cmd, dlscope(cmd, *extra, "--futex-ms", bad, "-p", "1"),
                        f"--futex-ms takes a whole number of milliseconds, not '{bad}'")


def test_cli_bad_pids_same_everywhere():
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    gone = pid_max + 1 if pid_max < 2**22 else 4194304
    for cmd in PID_COMMANDS:
        extra = ["-o", "/tmp/cli-unused.jsonl"] if cmd in ("record", "capture") else []
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


MAN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "dlscope.1.md")


def man_sections():
    """{"## NAME": text} of docs/dlscope.1.md."""
    text = open(MAN).read()
    parts = re.split(r"^(## .+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def man_options():
    """{command: {(letter or "", long)}} from the man page's OPTIONS, one ### per command."""
    opts = {}
    for sub in re.split(r"^### ", man_sections()["## OPTIONS"], flags=re.M)[1:]:
        name, body = sub.split("\n", 1)
        opts[name.strip()] = set(re.findall(r"^(?:\*\*-(\w)\*\*, )?\*\*--([\w-]+)\*\*", body,
                                            re.M))
    return opts


def test_cli_help_and_man_page_agree():
    """Every option of CMD --help is in the man page's OPTIONS for CMD, with the same letter,
    and the other way round (as bpftool's test does); SYNOPSIS fits 80 columns."""
    man = man_options()
    for cmd in COMMANDS:
        helped = set(help_options(cmd)[0])
        if cmd not in man:
            raise AssertionError(f"the man page's OPTIONS has no '### {cmd}'")
        if helped != man[cmd]:
            raise AssertionError(f"{cmd}: only in --help: {sorted(helped - man[cmd])}; only in "
                                 f"the man page: {sorted(man[cmd] - helped)}")
    if set(man) != set(COMMANDS):
        raise AssertionError(f"man page OPTIONS for unknown commands: {set(man) - set(COMMANDS)}")
    sections = man_sections()
    wide = [line for line in sections["## SYNOPSIS"].splitlines() if len(line) > 80]
    if wide:
        raise AssertionError(f"SYNOPSIS lines over 80 columns: {wide}")
    if "## EXAMPLES" not in sections or sections["## EXAMPLES"].count("dlscope ") < 3:
        raise AssertionError("the man page has no EXAMPLES")
    # Every command of the SYNOPSIS exists, and every command is in it.
    named = set(re.findall(r"^dlscope (\w+)", sections["## SYNOPSIS"], re.M)) - {"help"}
    if named != set(COMMANDS):
        raise AssertionError(f"SYNOPSIS names {sorted(named)}")


def test_cli_man_options_generated():
    """The man page's OPTIONS entries are those `dlscope help --man-options` prints from the
    option tables (make docs splices them in): the committed page cannot drift from the code."""
    text = open(MAN).read()
    m = re.search(r"^<!-- BEGIN OPTIONS[^\n]*-->\n\n(.*)^<!-- END OPTIONS -->$", text,
                  re.M | re.S)
    if not m:
        raise AssertionError("docs/dlscope.1.md has no BEGIN OPTIONS ... END OPTIONS markers")
    generated = dlscope("help", "--man-options").stdout
    if m.group(1) != generated:
        import difflib
        diff = "".join(difflib.unified_diff(m.group(1).splitlines(True),
                                            generated.splitlines(True), "committed", "generated"))
        raise AssertionError(f"docs/dlscope.1.md's OPTIONS differ from the code: run make docs\n"
                             f"{diff[:3000]}")
    # Every command has its entries, each option of its --help among them.
    for cmd in COMMANDS:
        if f"### {cmd}\n" not in generated:
            raise AssertionError(f"help --man-options has no '### {cmd}'")


def test_cli_bash_completion():
    """scripts/dlscope-completion.bash (installed by make install) offers each command's
    options as its --help lists them, and after an option what its value is: PIDs after
    -p/--pid/--job, files after -o, the detectors after --only, the levels after --fail-on,
    nothing after a number."""
    script = os.path.join(os.path.dirname(MAN), "..", "scripts", "dlscope-completion.bash")
    from harness import dlscope_path

    def complete(*words):
        words = [dlscope_path(), *words]
        line = " ".join(f"'{w}'" for w in words)
        out = subprocess.run(["bash", "-c", f"source '{script}'; COMP_WORDS=({line}); "
                              f"COMP_CWORD={len(words) - 1}; _dlscope; "
                              "printf '%s\\n' \"${COMPREPLY[@]}\""],
                             capture_output=True, text=True, check=True).stdout
        return set(out.split())

    for cmd in COMMANDS:
        want = {f"--{long}" for _, long in help_options(cmd)[0]}
        got = complete(cmd, "--")
        if got != want:
            raise AssertionError(f"{cmd}: completion {sorted(got)}, --help {sorted(want)}")
    assert complete("") >= set(COMMANDS), complete("")
    assert str(os.getpid()) in complete("libs", "-p", "")
    assert complete("check", "--fail-on", "") == {"info", "warning", "error"}
    # Detector ids after --only; nothing (no file, no PID) after an option's number.
    assert "dup-openmp" in complete("check", "--only", "") and \
        not any(w.isdigit() or os.path.exists(w) for w in complete("check", "--only", ""))
    assert complete("libs", "--depth", "") == set(), complete("libs", "--depth", "")
    assert complete("watch", "--duration", "") == set()
    assert complete("stacks", "--max-frames", "") == set()
    # --only: every detector of check --list, and nothing else (no file in the directory).
    detectors = {line.split()[0] for line in dlscope("check", "--list").stdout.splitlines()}
    only = complete("check", "--only", "")
    if only != detectors:
        raise AssertionError(f"check --only offers {sorted(only ^ detectors)} unlike --list")
    assert complete("lint", "--only", "") == detectors
    # PIDs after -p, --pid and --job; files (and no PID) after -o.
    for words in (("stacks", "-p"), ("stacks", "--pid"), ("watch", "--job"), ("ui", "-p")):
        got = complete(*words, "")
        if str(os.getpid()) not in got or any(not w.isdigit() for w in got):
            raise AssertionError(f"{' '.join(words)}: {sorted(got)[:10]}, not the PIDs")
    with tempfile.TemporaryDirectory() as d:
        open(os.path.join(d, "trace.jsonl"), "w").close()
        got = complete("record", "-o", f"{d}/tr")
        assert got == {f"{d}/trace.jsonl"}, got
        assert complete("check", "--only", f"{d}/tr") == set()
    # "--fail-on=<TAB>": bash makes "=" a word of its own.
    assert complete("check", "--fail-on", "=", "w") == {"warning"}
    # --roles[=KINDS]: the kinds, or a PID (what follows without them).
    roles = complete("libs", "--roles", "")
    assert {"all", "openmp", "blas"} <= roles and str(os.getpid()) in roles, roles
    # After "--" a command where the command takes one (check), never where it does not.
    assert "ls" in complete("check", "--", "l")
    assert "ls" not in complete("lint", "--", "l")


def test_cli_readme_quick_start_and_command_table():
    """The README opens with a quick start (three situations, one command each) and its command
    table has one short line per command; every command is in it."""
    readme = open(os.path.join(os.path.dirname(MAN), "..", "README.md")).read()
    sections = re.split(r"^## ", readme, flags=re.M)
    assert sections[1].startswith("Quick start"), "the README does not open with a quick start"
    quick = sections[1]
    for situation in ("My process hangs", "My CI job should fail on a collision",
                      "What is this process loading, live"):
        assert f"**{situation}" in quick, situation
    # As typed in a checkout: ./dlscope, with sudo or an environment variable before it.
    assert len(re.findall(r"^    \$ (\w+=\S+ )?(sudo )?\./dlscope ", quick, re.M)) == 3, quick
    table = next(s for s in sections if s.startswith("Commands"))
    rows = [line for line in table.splitlines() if line.startswith("| `dlscope")]
    named = {re.match(r"\| `dlscope (\w+)", r).group(1) for r in rows}
    assert named == set(COMMANDS), sorted(named)
    long = [r for r in rows if len(r) > 110]
    assert not long, long


def test_cli_json_shapes():
    """One shape per concept: check's object count is named as a count (libs --json has the
    objects themselves); lint's findings name their files; stacks --json fails as a document."""
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        check = json.loads(dlscope("check", "-j", sleeper.pid, check=0).stdout)["processes"][0]
        libs = json.loads(dlscope("libs", "-j", sleeper.pid, check=0).stdout)["processes"][0]
        assert "objects" not in check and check["object_count"] == len(libs["objects"]), check
    finally:
        sleeper.kill()
        sleeper.wait()
    from harness import BUILD
    doc = json.loads(dlscope("lint", "--json", os.path.join(BUILD, "fixtures"), check=1).stdout)
    by_id = {}
    for f in doc["findings"]:
        assert isinstance(f["paths"], list), f
        by_id.setdefault(f["id"], []).append(f["paths"])
    assert any(p and all(x.endswith("libcxx_ext_static.so") for x in p)
               for p in by_id["dup-cxx-runtime"]), by_id
    assert all(p for p in by_id["elf-defects"]), by_id
    # A failure is the same document, with no process and the error as on stderr.
    for cmd in ("stacks", "libs", "check"):
        p = dlscope(cmd, "--json", 2, check=3)
        err = json.loads(p.stdout)
        assert err["processes"] == [] and "dlscope" in err, err
        assert p.stderr == f"dlscope: {cmd}: {err['errors'][0]}\n", (p.stderr, err)
        assert "kernel thread" in err["errors"][0], err


def run_on_terminal(args, cols, env=None):
    """dlscope ARGS with its stdout on a pseudo-terminal COLS wide; the text written."""
    import fcntl
    import pty
    import struct
    import termios
    from harness import dlscope_path
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    full = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    full.update(env or {})
    proc = subprocess.Popen([dlscope_path(), *args], stdout=slave, stderr=subprocess.DEVNULL,
                            env=full)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    proc.wait()
    os.close(master)
    return out.decode().replace("\r\n", "\n")


def test_cli_terminal_width():
    """why/fix wrap at the terminal's width (TIOCGWINSZ), at $COLUMNS when set, and not at all
    when piped."""
    from harness import fixture_path
    args = ["check", "--", fixture_path("two_omp")]
    env = {"FIXTURE_EXIT": "0"}

    def paragraph_lines(text):
        lines = text.splitlines()
        i = next(k for k, line in enumerate(lines) if line.lstrip().startswith("why:"))
        j = next(k for k, line in enumerate(lines) if line.lstrip().startswith("fix:"))
        return lines[i:j]

    for cols in (60, 140):
        why = paragraph_lines(run_on_terminal(args, cols, env))
        assert len(why) > 1 and all(len(line) <= cols for line in why), (cols, why)
        if cols == 140:
            assert max(len(line) for line in why) > 100, why
    piped = dlscope(*args, env={**env, "COLUMNS": ""}, check=1).stdout
    assert len(paragraph_lines(piped)) == 1, paragraph_lines(piped)
    narrow = dlscope(*args, env={**env, "COLUMNS": "70"}, check=1).stdout
    assert all(len(line) <= 70 for line in paragraph_lines(narrow)), paragraph_lines(narrow)


def validate(name, doc):
    """Validate @doc against docs/schema/NAME.schema.json; the error, or None."""
    if not os.path.exists("/usr/bin/python3"):
        raise AssertionError("Debian's python3 (and python3-jsonschema) is needed")
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run(["/usr/bin/python3", "-W", "ignore", os.path.join(here, "validate_json.py"),
                        name], input=json.dumps(doc), capture_output=True, text=True)
    return p.stderr if p.returncode else None


def test_cli_json_documents_match_their_schemas():
    """libs, check (PIDs and -- CMD, a crash included), lint and a failed stacks --json, on
    real programs, validate against docs/schema/; a document of the old shape does not."""
    from harness import BUILD, fixture_path
    py = subprocess.Popen(["/usr/bin/python3", "-c",
                           "import numpy, sys; print('ready', flush=True); sys.stdin.read()"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        py.stdout.readline()
        docs = [("libs", json.loads(dlscope("libs", "-j", py.pid, check=0).stdout)),
                ("check", json.loads(dlscope("check", "-j", py.pid, check=0).stdout))]
    finally:
        py.kill()
        py.wait()
    docs.append(("check", json.loads(dlscope("check", "-j", "--", fixture_path("two_omp"),
                                             check=1, env={"FIXTURE_EXIT": "0"}).stdout)))
    docs.append(("check", json.loads(dlscope("check", "-j", "--", fixture_path("crash_cmd"),
                                             "lib", check=4).stdout)))
    docs.append(("lint", json.loads(dlscope("lint", "-j", os.path.join(BUILD, "fixtures"),
                                            check=1).stdout)))
    docs.append(("stacks", json.loads(dlscope("stacks", "-j", 2, check=3).stdout)))
    with Fixture(["hang_abba"]) as fx:
        wait_idle(fx.pid)
        live = json.loads(dlscope("stacks", "-j", fx.pid, check=1).stdout)
        # One shape for a process in libs, check and stacks: pid, comm, exe, cmdline.
        proc = live["processes"][0]
        assert (proc["pid"], proc["exe"]) == (fx.pid, fixture_path("hang_abba")), proc
        assert proc["cmdline"] == fixture_path("hang_abba"), proc
        docs.append(("stacks", live))
    for name, doc in docs:
        err = validate(name, doc)
        assert err is None, err
    # The schema can fail: check's old "objects" count, an address as an integer.
    old = json.loads(json.dumps(docs[1][1]))
    old["processes"][0]["objects"] = old["processes"][0].pop("object_count")
    assert validate("check", old), "an old-shape check document validated"
    bad = json.loads(json.dumps(docs[0][1]))
    bad["processes"][0]["objects"][0]["base"] = 4096
    assert validate("libs", bad), "an integer address validated"
    bad = json.loads(json.dumps(live))
    bad["processes"][0]["threads"][0]["frames"][0]["pc"] = 4096
    assert validate("stacks", bad), "an integer pc validated"
    crash = docs[3][1]["command"]["crash"]
    assert crash["pc"]["address"] == crash["stack"][0]["pc"], crash
    assert validate("stacks", {"dlscope": "0.1.0", "pid": 2, "error": "x"}), "old error shape"
