"""dlscope libs against live fixture processes."""
import json
import os
import re
import subprocess
import tempfile
import time

from harness import (Fixture, Skip, dlscope, dlscope_json, error_lines, fixture_path, is_root,
                     mapped_objects)


def graph_of(pid):
    doc = dlscope_json("libs", pid)
    assert doc["processes"] and doc["processes"][0]["pid"] == pid, doc
    return doc["processes"][0]


def by_name(g, name, ns=None):
    hits = [o for o in g["objects"]
            if os.path.basename(o["path"]) == name and (ns is None or o["namespace"] == ns)]
    assert hits, f"{name} not reported: {[o['path'] for o in g['objects']]}"
    return hits


def role_impls(obj):
    return {(r["kind"], r["impl"]) for r in obj["roles"]}


def assert_covers_maps(g, pid):
    """Every ELF object /proc/PID/maps shows is reported, with a parent or a root origin."""
    reported = {}
    for o in g["objects"]:
        if o["in_maps"]:
            reported.setdefault(os.path.realpath(f"/proc/{pid}/root{o['path']}"), o)
    objs = {o["id"]: o for o in g["objects"]}
    for inode, path in mapped_objects(pid).items():
        real = os.path.realpath(path)
        assert real in reported, f"{path} is mapped but not reported"
        o = reported[real]
        assert o["origin"] in ("executable", "interpreter", "needed", "dlopen", "preload"), o
        if o["origin"] == "needed":
            assert o["parents"] and all(p in objs for p in o["parents"]), o


def test_two_openmp_runtimes():
    with Fixture(["two_omp"]) as fx:
        g = graph_of(fx.pid)
        exe = [o for o in g["objects"] if o["origin"] == "executable"]
        assert len(exe) == 1 and exe[0]["path"] == fixture_path("two_omp")
        gomp = by_name(g, "libgomp.so.1")[0]
        omp = by_name(g, "libomp.so.5")[0]
        assert ("openmp", "libgomp") in role_impls(gomp)
        assert ("openmp", "libomp") in role_impls(omp)
        assert gomp["origin"] == "needed" and exe[0]["id"] in gomp["parents"]
        assert omp["origin"] == "dlopen" and not omp["parents"]
        assert gomp["build_id"] and re.fullmatch(r"[0-9a-f]{40}", gomp["build_id"])
        assert gomp["soname"] == "libgomp.so.1"
        assert_covers_maps(g, fx.pid)
        text = dlscope("libs", fx.pid, check=0).stdout
        assert "[OpenMP runtime: GNU libgomp" in text and "[OpenMP runtime: LLVM libomp" in text
        assert "runtimes: OpenMP runtime x2" in text


def test_two_openblas_builds():
    with Fixture(["two_blas"]) as fx:
        g = graph_of(fx.pid)
        blas = [o for o in g["objects"] if ("blas", "openblas") in role_impls(o)]
        paths = sorted(o["path"] for o in blas)
        assert paths == ["/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
                         "/usr/lib/x86_64-linux-gnu/openblas64-pthread/libopenblas64.so.0"], paths
        for o in blas:
            assert o["origin"] == "dlopen"
            assert [r["version"] for r in o["roles"] if r["kind"] == "blas"] == ["0.3.21"]
        gfortran = by_name(g, "libgfortran.so.5")[0]
        assert {o["id"] for o in blas} <= set(gfortran["parents"]), gfortran
        assert_covers_maps(g, fx.pid)


def test_dlmopen_second_namespace():
    lib = fixture_path("libplain.so")
    with Fixture(["dlmopen_ns", lib]) as fx:
        g = graph_of(fx.pid)
        assert g["namespaces"] == 2
        plain = by_name(g, "libplain.so")
        assert len(plain) == 1 and plain[0]["namespace"] == 1
        assert plain[0]["origin"] == "dlopen"
        libc0 = by_name(g, "libc.so.6", ns=0)
        libc1 = by_name(g, "libc.so.6", ns=1)
        assert libc0 and libc1 and libc0[0]["base"] != libc1[0]["base"]
        libm = by_name(g, "libm.so.6", ns=1)[0]
        assert plain[0]["id"] in libm["parents"]
        assert_covers_maps(g, fx.pid)
        text = dlscope("libs", fx.pid, check=0).stdout
        assert "namespace 1 (dlmopen):" in text


def test_vendored_renamed_copy():
    vendored = fixture_path("vendored/libgomp-a34b3233.so.1")
    with Fixture(["dlopen_list", vendored]) as fx:
        g = graph_of(fx.pid)
        o = by_name(g, "libgomp-a34b3233.so.1")[0]
        assert ("openmp", "libgomp") in role_impls(o)
        assert o["soname"] == "libgomp-a34b3233.so.1"
        assert_covers_maps(g, fx.pid)


def test_libs_dot_is_a_graphviz_digraph_with_roles_coloured():
    with Fixture(["two_omp"]) as fx:
        out = dlscope("libs", "--dot", fx.pid, check=0).stdout
        assert out.startswith("digraph dlscope {") and out.rstrip().endswith("}")
        assert "libomp.so.5" in out and "fillcolor=\"#f4a261\"" in out
        assert re.search(r"p\d+_o0 -> p\d+_o\d+;", out)


def loadorder_lib(x):
    return fixture_path(f"loadorder/libloadorder_{x}.so")


def tree_parents(text):
    """{object id: the id of the line it is drawn under, None for a root} of a libs tree."""
    lines, _ = parse_tree(text)
    return {oid: parent for _, oid, parent, _ in lines}


def test_library_dlopened_before_the_one_that_needs_it_is_a_root():
    """dlopen(A), then dlopen(B), whose DT_NEEDED names A and C: A was in the link map before B
    arrived, so A came by its own dlopen, not by B's DT_NEEDED; only C came by B's."""
    with Fixture(["dlopen_list", loadorder_lib("a"), loadorder_lib("b")]) as fx:
        g = graph_of(fx.pid)
        a, b, c = (by_name(g, f"libloadorder_{x}.so")[0] for x in "abc")
        assert a["id"] < b["id"] < c["id"], (a, b, c)  # the link map's order
        assert b["id"] in a["parents"], a  # B's DT_NEEDED does name A
        assert a["origin"] == "dlopen" and a["loaded_by"] is None and a["depth"] == 0, a
        assert b["origin"] == "dlopen" and b["loaded_by"] is None and b["below"] == 1, b
        assert c["origin"] == "needed" and c["loaded_by"] == b["id"] and c["depth"] == 1, c
        text = dlscope("libs", fx.pid, check=0).stdout
        parent = tree_parents(text)
        assert parent[a["id"]] is None and parent[c["id"]] == b["id"], text
        line = next(l for l in text.splitlines() if f"#{a['id']} libloadorder_a.so" in l)
        assert line.startswith("#") and "(dlopen)" in line and "(also needed by 1 other)" in line
        # --dot: A is drawn as a dlopen (a box), and B's DT_NEEDED edge to it stays.
        dot = dlscope("libs", "--dot", fx.pid, check=0).stdout
        assert re.search(rf'p{fx.pid}_o{a["id"]} \[label="libloadorder_a.so".*shape=box', dot), dot
        assert f"p{fx.pid}_o{b['id']} -> p{fx.pid}_o{a['id']};" in dot, dot
        assert_covers_maps(g, fx.pid)
    # The other way round, B's DT_NEEDED did load A: A is under B, and dlopen(A) added nothing.
    with Fixture(["dlopen_list", loadorder_lib("b"), loadorder_lib("a")]) as fx:
        g = graph_of(fx.pid)
        a, b = by_name(g, "libloadorder_a.so")[0], by_name(g, "libloadorder_b.so")[0]
        assert b["id"] < a["id"] and a["origin"] == "needed" and a["loaded_by"] == b["id"], a
        assert tree_parents(dlscope("libs", fx.pid, check=0).stdout)[a["id"]] == b["id"]


def test_runtime_dlopened_before_a_library_needing_it_keeps_its_dlopen_in_every_view():
    """libgomp dlopen'ed, then libomp, then a library linked against libgomp: libgomp was not
    loaded by that library. The tree, --roles, --dot --roles and check's evidence all say so."""
    gomp_path = "/usr/lib/x86_64-linux-gnu/libgomp.so.1"
    with Fixture(["dlopen_list", gomp_path, "libomp.so.5", loadorder_lib("omp")]) as fx:
        g = graph_of(fx.pid)
        gomp = by_name(g, "libgomp.so.1")[0]
        user = by_name(g, "libloadorder_omp.so")[0]
        assert gomp["id"] < user["id"] and user["id"] in gomp["parents"], (gomp, user)
        assert gomp["origin"] == "dlopen" and gomp["loaded_by"] is None, gomp
        assert tree_parents(dlscope("libs", fx.pid, check=0).stdout)[gomp["id"]] is None
        roles = dlscope("libs", "--roles", fx.pid, check=0).stdout
        line = next(l for l in roles.splitlines() if l.startswith(f"#{gomp['id']} libgomp.so.1"))
        assert "libloadorder_omp.so" not in line, line
        dot = dlscope("libs", "--dot", "--roles", fx.pid, check=0).stdout
        assert f"p{fx.pid}_o{user['id']} -> p{fx.pid}_o{gomp['id']};" not in dot, dot
        p = dlscope("check", "--json", fx.pid, check=1)
        f = [f for f in json.loads(p.stdout)["processes"][0]["findings"]
             if f["id"] == "dup-openmp"]
        assert f, p.stdout
        ev = [e for e in f[0]["evidence"] if "libgomp.so.1: GNU libgomp" in e]
        assert ev and "loaded by dlopen" in ev[0] and "libloadorder_omp" not in ev[0], ev


def gdb_shared_libraries(pid):
    out = subprocess.run(["gdb", "-nx", "-batch", "-p", str(pid), "-ex", "info sharedlibrary"],
                         capture_output=True, text=True, timeout=120).stdout
    libs = set()
    for line in out.splitlines():
        m = re.match(r"^0x[0-9a-f]+\s+0x[0-9a-f]+\s+(?:Yes|No)(?: \(\*\))?\s+(/.*)$", line)
        if m:
            libs.add(os.path.realpath(m.group(1).strip()))
    return libs


def test_python_numpy_matches_gdb():
    code = ("import numpy, os, time, sys; print('ready', os.getpid(), flush=True); "
            "time.sleep(600)")
    with Fixture(["/usr/bin/python3", "-c", code]) as fx:
        g = graph_of(fx.pid)
        ours = {os.path.realpath(o["path"]) for o in g["objects"]
                if o["origin"] not in ("executable", "vdso", "mapped")}
        theirs = gdb_shared_libraries(fx.pid)
        assert theirs, "gdb listed no libraries"
        assert ours == theirs, f"only dlscope: {ours - theirs}\nonly gdb: {theirs - ours}"
        exts = [o for o in g["objects"] if ("python", "python-ext") in role_impls(o)]
        assert any("_multiarray_umath" in o["path"] for o in exts), exts
        interp = [o for o in g["objects"] if ("python", "python") in role_impls(o)]
        assert interp, "the interpreter's role is missing"
        assert any(("blas", "openblas") in role_impls(o) for o in g["objects"])


def test_libs_on_a_missing_pid_says_so_in_one_line():
    p = dlscope("libs", 999999999 % 4194304 or 4194303, check=3)
    assert re.search(r"no process with PID \d+", p.stderr), p.stderr
    assert p.stderr.count("\n") == 1


def test_libs_refuses_an_argument_that_is_not_a_pid():
    p = dlscope("libs", "12abc", check=2)
    assert "'12abc' is not a process ID" in p.stderr
    dlscope("libs", check=2)
    dlscope("libs", "--bogus", "1", check=2)


def test_libs_refuses_a_kernel_thread_by_name():
    p = dlscope("libs", 2, check=3)  # kthreadd
    assert "kernel thread" in p.stderr, p.stderr


def test_libs_refuses_a_zombie_by_name():
    child = subprocess.Popen(["true"])
    for _ in range(100):
        with open(f"/proc/{child.pid}/stat") as f:
            if f.read().split(") ")[1][0] == "Z":
                break
        time.sleep(0.01)
    try:
        p = dlscope("libs", child.pid, check=3)
        assert "zombie" in p.stderr, p.stderr
    finally:
        child.wait()


def test_a_static_executable_is_one_object_checked_and_unwound():
    # Go, Rust-musl and busybox tools: no loader, no link map. libs shows the one object, check
    # finds nothing (and check -- CMD of one exits 0), stacks unwinds it from its own CFI.
    with Fixture(["static_exe"]) as fx:
        g = graph_of(fx.pid)
        assert g["source"] == "static" and [o["path"] for o in g["objects"]] == \
            [fixture_path("static_exe")], g
        p = dlscope("libs", fx.pid, check=0)
        assert "statically linked" in p.stdout and p.stderr == "", (p.stdout, p.stderr)
        doc = dlscope_json("check", fx.pid, check=0)
        assert doc["processes"][0]["findings"] == [] and doc["errors"] == [], doc
        out = dlscope("stacks", fx.pid, check=0).stdout
        assert re.search(r" main\+0x[0-9a-f]+ from \S+/static_exe at \S+/static_exe.c:\d+", out), out
    p = dlscope("check", "--", "sh", "-c", f"{fixture_path('static_exe')}; true", check=0,
                env={"FIXTURE_EXIT": "0"})
    assert "static_exe" in p.stdout and p.stderr.count("dlscope:") == 0, (p.stdout, p.stderr)


def test_libs_as_another_user_is_denied_with_the_process_named():
    if not is_root():
        raise Skip("needs root to drop to another user")
    with Fixture(["two_omp"]) as fx:
        from harness import dlscope_path
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            dlscope_path(), "libs", str(fx.pid)],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 3, (p.returncode, p.stderr)
        assert "permission denied" in p.stderr and "two_omp" in p.stderr, p.stderr


def test_process_exiting_while_read():
    """A process killed at random points of the read: never a crash, always 0 or 3, one line."""
    import random
    import threading
    rng = random.Random(1)
    for _ in range(40):
        fx = Fixture(["two_omp"])
        threading.Timer(rng.uniform(0, 0.004), fx.kill).start()
        p = dlscope("libs", fx.pid)
        assert p.returncode in (0, 3), (p.returncode, p.stderr)
        if p.returncode == 3:
            assert p.stderr.count("\n") == 1, p.stderr
            assert re.search(r"exited|no process|zombie", p.stderr), p.stderr
        fx.kill()


def test_container_paths_through_proc_root():
    """A library that exists only in the target's mount namespace is still read and classified."""
    if not is_root():
        raise Skip("needs root for a private mount namespace")
    gomp = "/usr/lib/x86_64-linux-gnu/libgomp.so.1"
    script = (f"mount -t tmpfs none /mnt && cp {gomp} /mnt/libgomp-vendored.so.1 && "
              f"exec {fixture_path('dlopen_list')} /mnt/libgomp-vendored.so.1")
    with Fixture(["unshare", "--mount", "--propagation", "private", "sh", "-c", script]) as fx:
        assert not os.path.exists("/mnt/libgomp-vendored.so.1")
        g = graph_of(fx.pid)
        o = by_name(g, "libgomp-vendored.so.1")[0]
        assert o["path"] == "/mnt/libgomp-vendored.so.1" and o["error"] is None, o
        assert ("openmp", "libgomp") in role_impls(o)
        assert_covers_maps(g, fx.pid)


def test_chroot_style_target_is_named_from_its_own_root():
    """A target chrooted into a tree (bubblewrap, Apptainer, a build chroot): the kernel names
    its files from our root, the tree's path first; dlscope names them as the target does and
    opens them through its root, never with the tree's path twice."""
    if not is_root():
        raise Skip("needs root for chroot and a private mount namespace")
    with tempfile.TemporaryDirectory(prefix="dlscope-chroot-") as tree:
        script = 'mount --rbind / "$0" && exec chroot "$0" "$@"'
        with Fixture(["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
                      tree, fixture_path("two_omp")]) as fx:
            with open(f"/proc/{fx.pid}/maps") as f:
                assert f"{tree}{fixture_path('two_omp')}" in f.read(), "not chroot-style"
            g = graph_of(fx.pid)
            assert g["exe"] == fixture_path("two_omp"), g["exe"]
            paths = [o["path"] for o in g["objects"]]
            assert not [p for p in paths if tree in p], paths
            assert all(o["error"] is None for o in g["objects"]), g["objects"]
            assert ("openmp", "libomp") in role_impls(by_name(g, "libomp.so.5")[0])
            out = dlscope("stacks", fx.pid, check=0).stdout
            assert tree not in out and f"from {fixture_path('two_omp')}\n" in out, out


def test_library_replaced_on_disk_is_read_from_the_mapping():
    import shutil
    import tempfile
    d = tempfile.mkdtemp(prefix="dlscope-replaced-")
    lib = os.path.join(d, "libruntime.so.1")
    try:
        shutil.copy("/usr/lib/x86_64-linux-gnu/libgomp.so.1", lib)
        with Fixture(["dlopen_list", lib]) as fx:
            # An upgrade replaces the file: a new inode at the same path, with other content.
            shutil.copy(fixture_path("libplain.so"), lib + ".new")
            os.rename(lib + ".new", lib)
            o = by_name(graph_of(fx.pid), "libruntime.so.1")[0]
            assert o["deleted"] and o["error"] is None, o
            assert ("openmp", "libgomp") in role_impls(o), o
            text = dlscope("libs", fx.pid, check=0).stdout
            assert "(deleted on disk)" in text
    finally:
        shutil.rmtree(d)


def test_object_mapped_outside_the_loader():
    with Fixture(["dlopen_list", "--mmap", "/usr/lib/x86_64-linux-gnu/libomp.so.5"]) as fx:
        g = graph_of(fx.pid)
        o = by_name(g, "libomp.so.5")[0]
        assert o["origin"] == "mapped" and not o["in_link_map"] and o["in_maps"], o
        assert ("openmp", "libomp") in role_impls(o)
        text = dlscope("libs", fx.pid, check=0).stdout
        assert "mapped, in no link map:\n#" in text and "libomp.so.5  (mapped)" in text, text


# The views made for big graphs, on a real `import torch` (about 300 objects, 1,300 edges).
TORCH = ("import torch, os, time; print('ready', os.getpid(), flush=True); time.sleep(600)")
TREE_LINE = re.compile(r"^((?:[│ ]  )*)(├─ |└─ )?(?:#(\d+) |\+(\d+) objects? below)")


def torch_process():
    return Fixture(["/usr/bin/python3", "-c", TORCH], ready_timeout=180)


def parse_tree(text):
    """(depth, id, tree parent id, line) of each object line, and (depth, count, parent) markers."""
    objects, markers, stack = [], [], []
    for line in text.splitlines():
        m = TREE_LINE.match(line)
        if not m:
            continue
        depth = len(m.group(1)) // 3 + (1 if m.group(2) else 0)
        del stack[depth:]
        parent = stack[depth - 1] if depth else None
        if m.group(4):
            markers.append((depth, int(m.group(4)), parent))
            continue
        objects.append((depth, int(m.group(3)), parent, line))
        stack.append(int(m.group(3)))
    return objects, markers


def others(o):
    return len(o["parents"]) - (o["loaded_by"] is not None)


def test_torch_tree_each_object_once():
    with torch_process() as fx:
        g = graph_of(fx.pid)
        objs = {o["id"]: o for o in g["objects"] if not o["gone"]}
        text = dlscope("libs", fx.pid, check=0).stdout
        assert "(see above)" not in text
        lines, markers = parse_tree(text)
        shown = [oid for _, oid, _, _ in lines]
        dups = {i for i in shown if shown.count(i) > 1}
        assert not dups and not markers, (dups, markers)
        # Every object in full once (the mapped-only ones in their own list, also once).
        assert sorted(shown) == sorted(objs), set(objs) ^ set(shown)
        assert len(text.splitlines()) <= len(objs) + 4, (len(text.splitlines()), len(objs))
        for depth, oid, parent, line in lines:
            o = objs[oid]
            assert o["depth"] == (None if o["origin"] == "mapped" else depth), (o, line)
            if o["origin"] != "mapped":
                assert parent == o["loaded_by"], (parent, o, line)
            if parent is not None:
                assert parent in o["parents"], (parent, o)  # a real DT_NEEDED edge
            n = others(o)
            note = f"(also needed by {n} other{'s' if n != 1 else ''})"
            assert (note in line) == (n > 0), (note, line)
        libc = by_name(g, "libc.so.6")[0]
        assert others(libc) > 100, libc
        # The forest is the loader's walk: replayed breadth-first from each root, it gives
        # back the link-map order (the vDSO, which the kernel maps, aside).
        order = []
        for root in [o["id"] for o in g["objects"] if o["depth"] == 0]:
            queue = [root]
            while queue:
                x = queue.pop(0)
                order.append(x)
                queue += [c for c in objs[x]["children"] if objs[c]["loaded_by"] == x]
        order = [i for i in order if objs[i]["origin"] != "vdso"]
        assert order == sorted(order), order


def test_libs_depth_one_on_torch_shows_only_direct_needs():
    with torch_process() as fx:
        g = graph_of(fx.pid)
        objs = {o["id"]: o for o in g["objects"] if not o["gone"]}
        text = dlscope("libs", "--depth", "1", fx.pid, check=0).stdout
        lines, markers = parse_tree(text)
        assert lines and all(d <= 1 for d, _, _, _ in lines), text
        shown = {oid for _, oid, _, _ in lines}
        in_tree = {i for i, o in objs.items() if o["depth"] is not None}
        assert shown & in_tree == {i for i in in_tree if objs[i]["depth"] <= 1}
        for depth, oid, parent, line in lines:
            if depth == 1:
                assert oid in objs[parent]["children"], line  # a direct need of its root
        exe = [o for o in objs.values() if o["origin"] == "executable"][0]
        assert {o["id"] for o in objs.values() if o["loaded_by"] == exe["id"]} <= shown
        # Each cut says how many objects it hides; together with the shown, all are there.
        cut = {p: n for _, n, p in markers}
        assert cut == {i: o["below"] for i, o in objs.items()
                       if o["depth"] == 1 and o["below"]}, cut
        assert len(shown & in_tree) + sum(cut.values()) == len(in_tree)
        roots = dlscope("libs", "--depth", "0", fx.pid, check=0).stdout
        lines0, _ = parse_tree(roots)
        assert {oid for d, oid, _, _ in lines0 if d == 0} == \
            {i for i in in_tree if objs[i]["depth"] == 0} and all(d == 0 for d, *_ in lines0)
        for bad in ("-1", "x", ""):
            p = dlscope("libs", "--depth", bad, fx.pid, check=2)
            assert "--depth wants a number" in p.stderr and error_lines(p) == 1


ROLE_LINE = re.compile(r"^#(\d+) (\S+)(?: \[ns \d+\])?((?:  \[[^\]]*\])*) ((?: <- \S+)*) "
                       r"\(([\w ,]+)\)(?:  \(also needed by \d+ others?\))?  (/.*)$")


def parse_roles(text):
    out = {}
    for line in text.splitlines()[1:]:
        m = ROLE_LINE.match(line)
        assert m, f"not a role line: {line!r}"
        chain = m.group(4).split(" <- ")[1:]
        out[m.group(2)] = {"id": int(m.group(1)), "chain": chain, "root": m.group(5),
                           "path": m.group(6), "line": line}
    return out


def test_torch_roles_with_chains():
    with torch_process() as fx:
        g = graph_of(fx.pid)
        objs = {o["id"]: o for o in g["objects"]}
        names = {}
        for o in g["objects"]:
            names.setdefault(os.path.basename(o["path"]), []).append(o["id"])
        for o in g["objects"]:
            for r in o["roles"]:
                assert r["runtime"] == (r["kind"] not in ("libc", "loader", "python")), r
        text = dlscope("libs", "--roles", fx.pid, check=0).stdout
        listed = parse_roles(text)
        runtimes = {o["id"] for o in g["objects"]
                    if not o["gone"] and any(r["runtime"] for r in o["roles"])}
        assert {e["id"] for e in listed.values()} == runtimes, text
        assert "libc.so.6" not in listed and not any(".cpython-" in n for n in listed), text
        for name, e in listed.items():
            # Each step of the chain is a DT_NEEDED edge, and the forest's.
            ids = [e["id"]] + [names[n][0] for n in e["chain"]]
            assert all(len(names[n]) == 1 for n in e["chain"]), e
            for child, parent in zip(ids, ids[1:]):
                assert objs[child]["loaded_by"] == parent and parent in objs[child]["parents"]
            assert objs[ids[-1]]["loaded_by"] is None and objs[ids[-1]]["origin"] == e["root"]
        torch_c = "_C.cpython-311-x86_64-linux-gnu.so"
        stdcxx, blas, gomp = listed["libstdc++.so.6"], listed["libopenblas.so.0"], \
            listed["libgomp.so.1"]
        assert "[C++ runtime: GNU libstdc++" in stdcxx["line"]
        assert stdcxx["chain"][-1] == torch_c and stdcxx["root"] == "dlopen", stdcxx
        assert blas["chain"][0] == "libblas.so.3" and blas["chain"][-1] == torch_c, blas
        assert "libblas.so.3" in listed, "the BLAS front itself is listed"
        # torch/__init__.py dlopens libtorch_global_deps.so (RTLD_GLOBAL) before _C: that is
        # what brought libgomp in, and the link map agrees (libgomp sits between the two).
        deps = by_name(g, "libtorch_global_deps.so")[0]
        assert gomp["chain"] == ["libtorch_global_deps.so"] and gomp["root"] == "dlopen", gomp
        assert "/torch/" in deps["path"]
        assert deps["id"] < gomp["id"] < names[torch_c][0], (deps["id"], gomp["id"])
        every = parse_roles(dlscope("libs", "--roles=python,libc", fx.pid, check=0).stdout)
        assert torch_c in every and "libc.so.6" in every and "libgomp.so.1" not in every
        p = dlscope("libs", "--roles=gpus", fx.pid, check=2)
        assert "unknown role kind 'gpus'" in p.stderr and error_lines(p) == 1
        p = dlscope("libs", "--roles", "--json", fx.pid, check=2)
        assert "--json always has the whole graph" in p.stderr


DOT_EDGE = re.compile(r"p\d+_o(\d+) -> p\d+_o(\d+)( \[style=dashed\])?;")
DOT_NODE = re.compile(r"p\d+_o(\d+) \[label=\"([^\"\\]*)")


def reaches(objs, a, b):
    seen, todo = {a}, [a]
    while todo:
        for c in objs[todo.pop()]["children"]:
            if c == b:
                return True
            if c not in seen:
                seen.add(c)
                todo.append(c)
    return False


def test_torch_dot_roles_is_small():
    with torch_process() as fx:
        g = graph_of(fx.pid)
        objs = {o["id"]: o for o in g["objects"]}
        whole = dlscope("libs", "--dot", fx.pid, check=0).stdout
        small = dlscope("libs", "--dot", "--roles", fx.pid, check=0).stdout
        assert len(DOT_EDGE.findall(whole)) == sum(len(o["children"]) for o in objs.values())
        edges = DOT_EDGE.findall(small)
        nodes = {int(i): label for i, label in DOT_NODE.findall(small)}
        # The roles, their chains and a transitive reduction: 8 edges here; 60 leaves room
        # for more runtime kinds while staying a graph one can read.
        assert 0 < len(edges) < 60 and len(nodes) < 40, (len(edges), len(nodes))
        svg = subprocess.run(["dot", "-Tsvg"], input=small, capture_output=True, text=True,
                             timeout=60)
        assert svg.returncode == 0 and "<svg" in svg.stdout, svg.stderr
        runtimes = {o["id"] for o in objs.values()
                    if not o["gone"] and any(r["runtime"] for r in o["roles"])}
        chains = set()
        for i in runtimes:
            while i is not None:
                chains.add(i)
                i = objs[i]["loaded_by"]
        assert set(nodes) == chains, (set(nodes) ^ chains)
        for want in ("libgomp.so.1", "libopenblas.so.0", "libblas.so.3", "libstdc++.so.6"):
            assert any(label.startswith(want) for label in nodes.values()), want
        for a, b, dashed in edges:
            a, b = int(a), int(b)
            if dashed:
                assert reaches(objs, a, b) and objs[b]["loaded_by"] != a, (a, b)
            else:
                assert objs[b]["loaded_by"] == a, (a, b)
