#!/usr/bin/env python3
"""Seed corpora for the fuzzers, made fresh into OUT/{elf,linkmap,trace,core,procmaps}.

elf: the fixtures' objects and a few of the system's small libraries (real layouts to mutate);
linkmap: loader link maps laid out as glibc does (r_debug_extended and link_map chains: one
namespace, two namespaces, a loop, a name without its NUL); trace: the committed traces;
core: small x86-64 core files laid out as the kernel writes them (threads, signal, files, auxv,
a stack segment); procmaps: this process's /proc/PID/maps and some odd lines.
"""
import os
import shutil
import struct
import sys

out, build = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
for d in ("elf", "linkmap", "trace", "core", "procmaps"):
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


def note(ntype, desc, name=b"CORE"):
    pad = lambda b: b + bytes(-len(b) % 4)
    return struct.pack("<III", len(name) + 1, len(desc), ntype) + pad(name + b"\0") + pad(desc)


def core(threads, signo=11, addr=0x10, files=(), stack_words=()):
    """An ELF core: a PT_NOTE (PRSTATUS per thread, PRPSINFO, SIGINFO, AUXV, FILE) and one
    PT_LOAD holding a stack at 0x7ffd0000."""
    stack_at = 0x7ffd0000
    notes = b""
    for i, tid in enumerate(threads):
        regs = [0] * 27
        regs[16] = 0x401000 + i  # rip
        regs[19] = stack_at + 0x100  # rsp
        regs[4] = stack_at + 0x200  # rbp
        prstatus = struct.pack("<iiih", signo, 1, 0, signo) + bytes(18) + \
            struct.pack("<iiii", tid, 1, tid, tid) + bytes(64) + \
            struct.pack("<27Q", *regs) + struct.pack("<i", 1) + bytes(4)
        notes += note(1, prstatus)  # NT_PRSTATUS
        if i == 0:
            psinfo = bytes(24) + struct.pack("<iiii", threads[0], 1, threads[0], 1) + \
                b"fuzzed".ljust(16, b"\0") + b"fuzzed --core".ljust(80, b"\0")
            notes += note(3, psinfo)  # NT_PRPSINFO
            notes += note(0x53494749, struct.pack("<iiiiQ", signo, 0, 1, 0, addr) +
                          bytes(104))  # NT_SIGINFO
            notes += note(6, struct.pack("<6Q", 3, 0x400040, 9, 0x401000, 0, 0))  # NT_AUXV
            if files:
                desc = struct.pack("<QQ", len(files), 4096)
                for start, end, pgoff, _ in files:
                    desc += struct.pack("<QQQ", start, end, pgoff)
                desc += b"".join(f[3].encode() + b"\0" for f in files)
                notes += note(0x46494c45, desc)  # NT_FILE
    stack = struct.pack(f"<{len(stack_words)}Q", *stack_words).ljust(0x1000, b"\0")
    phoff, phnum = 64, 2
    note_off = phoff + phnum * 56
    load_off = (note_off + len(notes) + 4095) & ~4095
    ehdr = b"\x7fELF\x02\x01\x01" + bytes(9) + struct.pack(
        "<HHIQQQIHHHHHH", 4, 62, 1, 0, phoff, 0, 0, 64, 56, phnum, 0, 0, 0)
    phdrs = struct.pack("<IIQQQQQQ", 4, 0, note_off, 0, 0, len(notes), 0, 4) + \
        struct.pack("<IIQQQQQQ", 1, 6, load_off, stack_at, 0, len(stack), len(stack), 4096)
    body = ehdr + phdrs + notes
    return body + bytes(load_off - len(body)) + stack


exe = os.path.join(fixtures, "crash_cmd")
cores = {
    "one_thread": core([100]),
    "three_threads": core([100, 101, 102], signo=6, addr=0),
    "files": core([100], files=[(0x400000, 0x402000, 0, exe),
                                (0x7f0000000000, 0x7f0000010000, 0, "/lib/x86_64-linux-gnu/"
                                 "libc.so.6")]),
    "frames": core([100], stack_words=[0x401005, 0x7ffd0300, 0x401010, 0]),
}
for name, data in cores.items():
    with open(os.path.join(out, "core", name), "wb") as f:
        f.write(data)

# procmaps: real maps (this process's, with its Python and libraries) and lines made odd.
with open("/proc/self/maps") as f, open(os.path.join(out, "procmaps", "self"), "w") as g:
    g.write(f.read())
with open(os.path.join(out, "procmaps", "odd"), "w") as g:
    g.write("7f0000000000-7f0000001000 rw-p 00001000 fe:00 42    /tmp/a b.so (deleted)\n"
            "7f0000001000-7f0000002000 rw-p 00000000 00:00 0 \n"
            "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]\n"
            "7f0000003000-7f0000004000 r--s 00000000 103:0a 9       /dev/shm/x (deleted)\n"
            "1000-2000 rw-p 0 00:00\n12-\n3000-4000 r--p 00000000 00:1f 77 /no/newline")
print(f"seeds: {len(cores)} cores, {picked} ELF objects, {len(seeds)} link maps, "
      f"{len(os.listdir(os.path.join(out, 'trace')))} traces, 2 maps")
