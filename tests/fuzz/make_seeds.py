#!/usr/bin/env python3
"""Seed corpora for the fuzzers, made fresh into OUT/{elf,linkmap,trace}.

elf: the fixtures' objects and a few of the system's small libraries (real layouts to mutate);
linkmap: loader link maps laid out as glibc does (r_debug_extended and link_map chains: one
namespace, two namespaces, a loop, a name without its NUL); trace: the committed traces.
"""
import os
import shutil
import struct
import sys

out, build = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
for d in ("elf", "linkmap", "trace"):
    os.makedirs(os.path.join(out, d), exist_ok=True)

fixtures = os.path.join(build, "fixtures")
picked = 0
for top in (fixtures, "/usr/lib/x86_64-linux-gnu"):
    for name in sorted(os.listdir(top)) if os.path.isdir(top) else []:
        path = os.path.join(top, name)
        if not os.path.isfile(path) or os.path.getsize(path) > 256 * 1024:
            continue
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                continue
        shutil.copy(path, os.path.join(out, "elf", f"{picked:03d}_{name}"))
        picked += 1
        if picked >= 40:
            break

BASE = 0x10000  # fuzz_linkmap.c's IMAGE_BASE


def image(namespaces, loop=False, unterminated=False):
    """r_debug_extended per namespace, then link_map entries and their names."""
    mem = bytearray(4096)
    rd_at = [0x0 + 48 * i for i in range(len(namespaces))]
    lm_at = 0x400
    names_at = 0xc00
    for ns, objs in enumerate(namespaces):
        first = lm_at
        prev = 0
        for i, name in enumerate(objs):
            at = lm_at
            nxt = lm_at + 40 if i + 1 < len(objs) else (first if loop else 0)
            name_b = name.encode() + (b"" if unterminated else b"\0")
            mem[names_at:names_at + len(name_b)] = name_b
            struct.pack_into("<QQQQQ", mem, at, 0x7f0000000000 + i * 0x100000,
                             BASE + names_at, 0x7f0000001000, BASE + nxt if nxt else 0,
                             BASE + prev if prev else 0)
            names_at += len(name_b) + 8
            prev = at
            lm_at += 40
        r_next = BASE + rd_at[ns + 1] if ns + 1 < len(namespaces) else 0
        struct.pack_into("<iiQQiiQQ", mem, rd_at[ns], 2, 0, BASE + first, 0x7f0000002000, 0,
                         0, 0x7f0000003000, r_next)
    return struct.pack("<Q", 0) + bytes(mem)


seeds = {
    "one_ns": image([["", "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"]]),
    "two_ns": image([["", "/lib/libc.so.6"], ["/lib/libplain.so", "/lib/libc.so.6"]]),
    "loop": image([["", "/lib/a.so", "/lib/b.so"]], loop=True),
    "unterminated": image([["", "/lib/" + "x" * 200]], unterminated=True),
}
for name, data in seeds.items():
    with open(os.path.join(out, "linkmap", name), "wb") as f:
        f.write(data)
for name in os.listdir(os.path.join(here, "corpus", "trace")):
    shutil.copy(os.path.join(here, "corpus", "trace", name), os.path.join(out, "trace", name))
print(f"seeds: {picked} ELF objects, {len(seeds)} link maps, "
      f"{len(os.listdir(os.path.join(out, 'trace')))} traces")
