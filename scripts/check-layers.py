#!/usr/bin/env python3
"""The layers of dlscope's C code, checked (`make check-layers`, run by `make test`).

A module is a .c file with its .h (user/proc/target.c + target.h). A module depends on another
when it includes that one's header. Fails, naming what, when:
  - two modules depend on each other, directly or through others (a cycle);
  - a module includes a header of a folder above its own in LAYERS (a layer reaching up).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Lowest first: a folder may include its own headers and those of the folders before it.
LAYERS = ["user/base", "user/arch", "user/elf", "user/proc", "user/pkg", "user/python",
          "user/model", "user/analysis",
          "user/detect", "user/out", "user/collect", "ui", "user/cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    for top in ("user", "ui"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def main():
    files = sorted(sources())
    header_dir = {}
    for f in files:
        if f.endswith(".h"):
            header_dir.setdefault(os.path.basename(f), os.path.dirname(f))
    module = lambda f: os.path.splitext(f)[0]
    deps, errors = {}, []
    for f in files:
        m = module(f)
        folder = os.path.dirname(f)
        if folder not in LAYERS:
            errors.append(f"{f}: folder {folder} is not in scripts/check-layers.py's LAYERS")
            continue
        for inc in INCLUDE.findall(open(os.path.join(ROOT, f)).read()):
            name = os.path.basename(inc)
            if name not in header_dir:
                continue  # a generated header (the BPF skeleton) or one of bpf/
            dep = module(os.path.join(header_dir[name], name))
            if dep == m:
                continue
            deps.setdefault(m, set()).add(dep)
            other = os.path.dirname(dep)
            if other in LAYERS and LAYERS.index(other) > LAYERS.index(folder):
                errors.append(f"{f}: includes {inc} of {other}, a layer above {folder}")
    # Cycles between modules: depth-first search, each cycle said once.
    state, stack, seen = {}, [], set()

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(deps.get(m, ())):
            if state.get(d) == 1:
                cycle = stack[stack.index(d):] + [d]
                key = frozenset(cycle)
                if key not in seen:
                    seen.add(key)
                    errors.append("cycle: " + " -> ".join(cycle))
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(deps):
        if m not in state:
            visit(m)
    for e in errors:
        print(f"check-layers: {e}", file=sys.stderr)
    n = len({module(f) for f in files})
    print(f"check-layers: {n} modules in {len(LAYERS)} layers, "
          f"{'no' if not errors else len(errors)} violation{'s' if len(errors) != 1 else ''}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
