"""scripts/check-layers.py on small trees made here: it must fail on what it exists to catch (a
call up a layer, a cycle of calls that no #include shows) and pass a tree that has neither."""
import os
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-layers.py")


def check(files, layers="user/low user/high"):
    """Writes @files ({path: C source}) under a new tree, compiles each .c into build/, runs the
    script with @layers (lowest first); returns (exit status, output)."""
    with tempfile.TemporaryDirectory() as d:
        for path, text in files.items():
            full = os.path.join(d, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
            if path.endswith(".c"):
                obj = os.path.join(d, "build", path[:-2] + ".o")
                os.makedirs(os.path.dirname(obj), exist_ok=True)
                subprocess.run(["cc", "-c", "-o", obj, full], check=True)
        p = subprocess.run(["python3", SCRIPT, "--root", d, "--build", "build",
                            "--layers", layers], capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr


def test_check_layers_passes_a_clean_tree():
    rc, out = check({"user/low/a.c": "int a(void) { return 1; }\n",
                     "user/high/b.c": "int a(void);\nint b(void) { return a(); }\n"})
    assert rc == 0 and "no violations" in out and "1 link edges" in out, out


def test_check_layers_fails_on_a_call_up_a_layer_without_an_include():
    rc, out = check({"user/low/a.c": "int b(void);\nint a(void) { return b(); }\n",
                     "user/high/b.c": "int b(void) { return 2; }\n"})
    assert rc == 1 and "user/low/a: calls b of user/high/b, a layer above user/low" in out, out


def test_check_layers_fails_on_a_cycle_the_includes_do_not_show():
    rc, out = check({"user/low/a.c": "int c(void);\nint a(void) { return c(); }\n",
                     "user/low/c.c": "int a(void);\nint c(void) { return a(); }\n"})
    assert rc == 1 and "cycle of 2 modules: user/low/a -> user/low/c (c); " \
        "user/low/c -> user/low/a (a)" in out, out


def test_check_layers_keeps_the_machine_in_user_arch():
    """The registers and instruction set have one home (issue 38): a use elsewhere fails, one in
    user/arch/ or in a comment does not."""
    rc, out = check({"user/low/a.c": "/* user_regs_struct in a comment is fine */\n"
                                     "#if defined(__x86_64__)\nint a(void) { return 1; }\n#endif\n"})
    assert rc == 1 and "user/low/a.c:2: __x86_64__: the machine's registers and instruction " \
        "set, outside user/arch/" in out and "user_regs_struct" not in out, out


def test_check_layers_keeps_growing_arrays_in_user_base():
    """A realloc has one home, user/base/ (array.h, issue 38): one elsewhere fails, one in
    user/base/ or in a comment does not."""
    grow = "#include <stdlib.h>\nvoid *g(void *p, unsigned long n) { return realloc(p, n); }\n"
    rc, out = check({"user/low/a.c": "/* realloc(p, n + 1) in a comment is fine */\n" + grow})
    assert rc == 1 and "user/low/a.c:3: realloc: growing arrays, outside user/base/" in out \
        and "a.c:1:" not in out, out
    rc, out = check({"user/base/array.c": grow, "user/low/a.c": "int a(void) { return 1; }\n"},
                    layers="user/base user/low")
    assert rc == 0 and "no violations" in out, out


def test_check_layers_keeps_proc_paths_in_user_proc():
    """A process's /proc files are named in user/proc/ only (procfs.h, issue 38): a path built
    elsewhere fails, one in user/proc/ or in a comment does not."""
    build = ("#include <stdio.h>\n"
             "void p(char *b, int pid) { sprintf(b, \"/proc/%d/status\", pid); }\n")
    rc, out = check({"user/low/a.c": "/* \"/proc/%d/maps\" in a comment is fine */\n" + build})
    assert rc == 1 and "user/low/a.c:3: /proc/%: a process's /proc files, outside user/proc/" \
        in out and "a.c:1:" not in out, out
    rc, out = check({"user/proc/p.c": build, "user/low/a.c": "int a(void) { return 1; }\n"},
                    layers="user/proc user/low")
    assert rc == 0 and "no violations" in out, out
