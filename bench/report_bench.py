#!/usr/bin/env python3
"""dlscope report on a process with 500+ loaded objects (bench/gen_libs.sh): the whole command
(check, stacks and the Markdown), its size, beside the check and stacks it runs."""
import os
import subprocess
import sys
import tempfile

from timing import timed

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
dlscope = os.path.join(root, "dlscope")
libdir = os.path.join(build, "bench", "libs")
subprocess.run([os.path.join(root, "bench", "gen_libs.sh"), libdir, "500"], check=True)



proc = subprocess.Popen([os.path.join(build, "fixtures", "dlopen_list"),
                         "@" + os.path.join(libdir, "list.txt")],
                        stdout=subprocess.PIPE, text=True)
try:
    assert proc.stdout.readline().startswith("ready")
    pid = str(proc.pid)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.md")
        subprocess.run([dlscope, "report", "-o", out, pid], check=True)
        size = os.path.getsize(out)
    report = timed([dlscope, "report", pid], 7)
    check = timed([dlscope, "check", "--json", pid], 7)
    stacks = timed([dlscope, "stacks", "--json", pid], 7)
    print(f"== report on a process with 500+ objects ({size:,} characters)")
    print(f"dlscope report: median {report * 1e3:.0f} ms; check --json {check * 1e3:.0f} ms, "
          f"stacks --json {stacks * 1e3:.0f} ms (report runs both)")
finally:
    proc.kill()
    proc.wait()
