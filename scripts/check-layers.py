#!/usr/bin/env python3
"""The layers of dlscope's C code, checked (`make check-layers`, run by `make test`).

A module is a .c file with its .h (user/proc/target.c + target.h). Two views of who depends on
whom, and both must agree with the layers (lowest first, as the Makefile lists them in LAYERS):
  - links: module A depends on B when A's object file (nm) leaves undefined a symbol that B's
    defines. This is what the program really calls, whatever the headers say;
  - includes: A includes B's header (a struct or an inline function reaches A without a call).
Fails, naming what and the symbols or header, when:
  - a module depends on one in a folder above its own (a layer reaching up);
  - modules call each other in a cycle (more than one file), in the linked objects;
  - a chore with one home is done outside it (HOMES: the machine's registers and instruction
    set outside user/arch/, a realloc (growing arrays) or a linear probe (hash tables) outside
    user/base/, a /proc/PID path built outside user/proc/), in code (comments do not count).
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# (what, the folder it lives in, the words that are it): one home per chore (issue 38).
HOMES = [("the machine's registers and instruction set", "user/arch",
          re.compile(r"\b(__x86_64__|__aarch64__|user_regs_struct|user_fpregs_struct|"
                     r"PTRACE_GETREGS|PTRACE_GETFPREGS|NT_X86_XSTATE)\b")),
         # user/base/array.h's ARRAY_GROW, ARRAY_RESERVE, ARRAY_PUSH: doubling, not +1 a call.
         ("growing arrays", "user/base", re.compile(r"\b(realloc)\s*\(")),
         # user/proc/procfs.h's readers and proc__path: a process's /proc entries named once.
         ("a process's /proc files", "user/proc", re.compile(r"(/proc/%)")),
         # user/base/idxmap.h: a linear probe's next slot, "(i + 1) & mask", is a private
         # open-addressing table (a ring buffer steps by "% cap").
         ("hash tables", "user/base", re.compile(r"(\(\s*\w+\s*\+\s*1\s*\)\s*&)"))]


def homes(files):
    """'file:line: what, outside its home' for each use of a chore outside its folder."""
    out = []
    for f in files:
        text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"),
                           open(os.path.join(ROOT, f), errors="replace").read())
        for what, home, words in HOMES:
            if f.startswith(home + "/"):
                continue
            for m in words.finditer(text):
                line = text.count("\n", 0, m.start()) + 1
                out.append(f"{f}:{line}: {m.group(1)}: {what}, outside {home}/")
    return out


def sources():
    for top in ("user", "ui"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def module(path):
    return os.path.splitext(path)[0]


def include_edges(files):
    """{module: {module: header}} from the #include lines."""
    header_dir = {}
    for f in files:
        if f.endswith(".h"):
            header_dir.setdefault(os.path.basename(f), os.path.dirname(f))
    deps = {}
    for f in files:
        with open(os.path.join(ROOT, f)) as src:
            for inc in INCLUDE.findall(src.read()):
                name = os.path.basename(inc)
                if name not in header_dir:
                    continue  # a generated header (the BPF skeleton) or one of bpf/
                dep = module(os.path.join(header_dir[name], name))
                if dep != module(f):
                    deps.setdefault(module(f), {}).setdefault(dep, inc)
    return deps


def link_edges(build, files):
    """{module: {module: [symbols]}} from nm of each module's object under @build."""
    objs = {}
    for f in files:
        if f.endswith(".c"):
            o = os.path.join(build, module(f) + ".o")
            if os.path.exists(o):
                objs[o] = module(f)
    if not objs:
        return None
    out = subprocess.run(["nm", "-A", "-P"] + sorted(objs), capture_output=True, text=True,
                         check=True).stdout
    defined, undefined = {}, {}
    for line in out.splitlines():
        where, _, rest = line.partition(": ")
        fields = rest.split()
        if len(fields) < 2 or where not in objs:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            undefined.setdefault(objs[where], set()).add(name)
        elif kind in "TDBRGSVWi":  # global definitions (upper case, and weak/indirect ones)
            defined.setdefault(name, objs[where])
    deps = {}
    for m, names in undefined.items():
        for name in names:
            dep = defined.get(name)
            if dep and dep != m:
                deps.setdefault(m, {}).setdefault(dep, []).append(name)
    return deps


def cycles(deps):
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]
    for root in sorted(deps):
        if root in index:
            continue
        work = [(root, iter(sorted(deps.get(root, ()))))]
        index[root] = low[root] = n[0]
        n[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n[0]
                    n[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(deps.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build", help="where the objects are (OUTPUT)")
    ap.add_argument("--root", help="the tree to check (default: this checkout; for its test)")
    ap.add_argument("--layers", required=True,
                    help="the folders, lowest first, space-separated (the Makefile's LAYERS)")
    args = ap.parse_args()
    global ROOT
    ROOT = os.path.abspath(args.root) if args.root else ROOT
    layers = args.layers.split()
    files = sorted(sources())
    errors = []
    for f in files:
        if os.path.dirname(f) not in layers:
            errors.append(f"{f}: folder {os.path.dirname(f)} is not in the Makefile's LAYERS")
    rank = lambda m: layers.index(os.path.dirname(m)) if os.path.dirname(m) in layers else -1
    for m, deps in sorted(include_edges(files).items()):
        for dep, inc in sorted(deps.items()):
            if rank(dep) > rank(m):
                errors.append(f"{m}: includes {inc} of {os.path.dirname(dep)}, "
                              f"a layer above {os.path.dirname(m)}")
    links = link_edges(os.path.join(ROOT, args.build), files)
    if links is None:
        errors.append(f"no object files under {args.build}: build first")
        links = {}
    for m, deps in sorted(links.items()):
        for dep, names in sorted(deps.items()):
            if rank(dep) > rank(m):
                errors.append(f"{m}: calls {', '.join(sorted(names)[:3])} of {dep}, "
                              f"a layer above {os.path.dirname(m)}")
    errors += homes(files)
    for comp in cycles(links):
        inside = [f"{a} -> {b} ({', '.join(sorted(links[a][b])[:2])})"
                  for a in comp for b in sorted(links.get(a, ())) if b in comp]
        errors.append(f"cycle of {len(comp)} modules: " + "; ".join(inside))
    for e in errors:
        print(f"check-layers: {e}", file=sys.stderr)
    n = len({module(f) for f in files})
    print(f"check-layers: {n} modules in {len(layers)} layers, "
          f"{sum(len(d) for d in links.values())} link edges, "
          f"{'no' if not errors else len(errors)} violation{'s' if len(errors) != 1 else ''}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
