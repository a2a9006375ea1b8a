"""The package that owns each object (pip's RECORD, conda-meta, dpkg), in libs, check and watch,
on fixtures that load a library copied into a wheel-like tree made here, beside a Debian one."""
import json
import os
import re
import shutil
import subprocess
import tempfile

from harness import Fixture, Skip, dlscope, dlscope_json, fixture_path, is_root, wait_idle

LIBOMP = "/usr/lib/x86_64-linux-gnu/libomp.so.5"
VENDORED = "libgomp-a34b3233.so.1"


def make_wheel(top, name, version, files):
    """A site-packages under TOP with NAME-VERSION.dist-info whose RECORD lists FILES
    ({path in the site: file to copy}); returns the site directory."""
    site = os.path.join(top, "lib", "python3.11", "site-packages")
    info = os.path.join(site, f"{name}-{version}.dist-info")
    os.makedirs(info)
    record = []
    for rel, src in files.items():
        os.makedirs(os.path.join(site, os.path.dirname(rel)), exist_ok=True)
        shutil.copy(src, os.path.join(site, rel))
        record.append(f"{rel},sha256=unchecked,{os.path.getsize(src)}")
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\nSummary text\n")
    with open(os.path.join(info, "INSTALLER"), "w") as f:
        f.write("pip\n")
    with open(os.path.join(info, "RECORD"), "w") as f:
        f.write("\n".join(record + [f"{name}-{version}.dist-info/RECORD,,"]) + "\n")
    return site


def dpkg_owner(path):
    """dpkg -S for the real file behind PATH, then PATH itself (its /usr-merge alias too)."""
    real = os.path.realpath(path)
    for p in (real, path):
        for q in (p, p[4:] if p.startswith("/usr/") else "/usr" + p):
            r = subprocess.run(["dpkg", "-S", q], capture_output=True, text=True)
            for line in r.stdout.splitlines():
                pkgs, _, listed = line.partition(": ")
                if listed == q and "," not in pkgs and not pkgs.startswith("diversion"):
                    return pkgs.split(":")[0]
    return None


def vendoring_process(top):
    """dlopen_list with torchlike 2.1.0's vendored libgomp copy, then Debian's libomp."""
    site = make_wheel(top, "torchlike", "2.1.0",
                      {f"torchlike/lib/{VENDORED}": fixture_path(f"vendored/{VENDORED}")})
    return Fixture(["dlopen_list", os.path.join(site, "torchlike", "lib", VENDORED), LIBOMP])


def by_name(g, name):
    hits = [o for o in g["objects"] if os.path.basename(o["path"]) == name]
    assert len(hits) == 1, [o["path"] for o in g["objects"]]
    return hits[0]


def test_libs_names_the_wheel_that_vendors_a_library_and_the_debian_package_beside_it():
    with tempfile.TemporaryDirectory() as top, vendoring_process(top) as fx:
        g = dlscope_json("libs", fx.pid)["processes"][0]
        gomp, omp = by_name(g, VENDORED), by_name(g, "libomp.so.5")
        assert gomp["package"] == {"manager": "pip", "name": "torchlike",
                                   "version": "2.1.0"}, gomp
        # libomp.so.5 is a link to llvm-14's file: the real file's package, as dpkg -S says.
        assert omp["package"]["manager"] == "deb", omp
        assert omp["package"]["name"] == dpkg_owner(LIBOMP), omp
        ver = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", omp["package"]["name"]],
                             capture_output=True, text=True).stdout
        assert omp["package"]["version"] == ver, (omp, ver)
        # Every other object: dpkg's answer, none for the fixture itself (in no package).
        for o in g["objects"]:
            if o["origin"] == "vdso" or o is gomp:
                continue
            assert (o["package"] or {}).get("name") == dpkg_owner(o["path"]), o
            assert o["package"] or o["origin"] == "executable", o
        text = dlscope("libs", fx.pid, check=0).stdout
        assert re.search(rf"{VENDORED} .*  package torchlike 2\.1\.0 \(pip\)", text), text
        roles = dlscope("libs", "--roles", fx.pid, check=0).stdout
        assert "package torchlike 2.1.0 (pip)" in roles, roles
        runtimes = dlscope("libs", "--runtimes", "--json", fx.pid, check=0).stdout
        rts = json.loads(runtimes)["processes"][0]["runtimes"]
        assert {r["package"]["name"] for r in rts} == {"torchlike", omp["package"]["name"]}


def test_libs_names_a_conda_package_by_its_conda_meta_record():
    """A conda-like prefix made here: conda-meta/NAME.json lists lib/libomp.so, which the
    process loads through a link in the prefix (as conda's libomp.so.5 -> libomp.so)."""
    with tempfile.TemporaryDirectory() as prefix:
        os.makedirs(os.path.join(prefix, "conda-meta"))
        os.makedirs(os.path.join(prefix, "lib"))
        shutil.copy(os.path.realpath(LIBOMP), os.path.join(prefix, "lib", "libomp.so"))
        os.symlink("libomp.so", os.path.join(prefix, "lib", "libomp.so.5"))
        with open(os.path.join(prefix, "conda-meta", "llvm-openmp-14.0.6-h0.json"), "w") as f:
            json.dump({"name": "llvm-openmp", "version": "14.0.6", "build": "h0",
                       "files": ["lib/libomp.so", "lib/libomp.so.5"]}, f)
        with open(os.path.join(prefix, "conda-meta", "history"), "w") as f:
            f.write("==> 2024-01-01 00:00:00 <==\n")
        with Fixture(["dlopen_list", os.path.join(prefix, "lib", "libomp.so.5")]) as fx:
            o = by_name(dlscope_json("libs", fx.pid)["processes"][0], "libomp.so.5")
            assert o["package"] == {"manager": "conda", "name": "llvm-openmp",
                                    "version": "14.0.6"}, o


def test_libs_no_packages_leaves_the_owner_out():
    with tempfile.TemporaryDirectory() as top, vendoring_process(top) as fx:
        g = dlscope_json("libs", "--no-packages", fx.pid)["processes"][0]
        assert all(o["package"] is None for o in g["objects"]), g["objects"]
        assert " package " not in dlscope("libs", "-P", fx.pid, check=0).stdout


def test_check_names_the_packages_of_two_openmp_runtimes_and_the_wheel_to_rebuild():
    with tempfile.TemporaryDirectory() as top, vendoring_process(top) as fx:
        wait_idle(fx.pid)
        p = dlscope("check", "--json", fx.pid, check=1)
        findings = json.loads(p.stdout)["processes"][0]["findings"]
        f = [f for f in findings if f["id"] == "dup-openmp"][0]
        ev = "\n".join(f["evidence"])
        deb = dpkg_owner(LIBOMP)
        assert f"{VENDORED}: GNU libgomp" in ev and "; torchlike 2.1.0 (pip) vendors it" in ev, ev
        assert re.search(rf"libomp.so.5: LLVM libomp.*; from {re.escape(deb)} \S+ \(deb\)", ev), ev
        assert f["remedy"].endswith(
            f"Rebuild or reinstall: torchlike 2.1.0 (pip), which vendors {VENDORED}."), f
        pk = {os.path.basename(x["path"]): x for x in f["data"]["packages"]}
        assert pk[VENDORED]["package"]["name"] == "torchlike", pk
        assert pk["libomp.so.5"]["package"]["name"] == deb, pk
        text = dlscope("check", fx.pid, check=1).stdout
        assert "package torchlike 2.1.0 (pip)" in text and f"package {deb} " in text, text


def test_check_without_a_vendoring_wheel_says_where_each_copy_comes_from():
    """A shared libstdc++ from Debian beside a fixture's static copy, which no package owns."""
    lib = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
    with Fixture(["dlopen_list", "--global", lib, fixture_path("libcxx_ext_static.so")]) as fx:
        p = dlscope("check", "--json", fx.pid, check=1)
        findings = json.loads(p.stdout)["processes"][0]["findings"]
        f = [f for f in findings if f["id"] == "dup-cxx-runtime"][0]
        deb = dpkg_owner(lib)
        assert re.search(rf"The copies: libstdc\+\+\.so\.6 from {re.escape(deb)} \S+ \(deb\); "
                         r"libcxx_ext_static\.so from no known package: rebuild or reinstall "
                         r"the package whose copy should go\.$", f["remedy"]), f["remedy"]
        ev = [e for e in f["evidence"] if "libstdc++.so.6:" in e]
        assert ev and ev[0].endswith(f"; from {deb} " + ev[0].rsplit(" ", 2)[-2] + " (deb)"), ev


def test_libs_reads_packages_through_the_root_of_a_private_mount_namespace():
    """The wheel exists only in the target's mount namespace: its RECORD is read there."""
    if not is_root():
        raise Skip("needs root for a private mount namespace")
    src = fixture_path(f"vendored/{VENDORED}")
    site = "/mnt/venv/lib/python3.11/site-packages"
    script = (f"mount -t tmpfs none /mnt && mkdir -p {site}/inner/lib "
              f"{site}/inner-0.5.dist-info && cp {src} {site}/inner/lib/ && "
              f"printf 'Name: inner\\nVersion: 0.5\\n' > {site}/inner-0.5.dist-info/METADATA && "
              f"printf 'inner/lib/{VENDORED},,\\n' > {site}/inner-0.5.dist-info/RECORD && "
              f"exec {fixture_path('dlopen_list')} {site}/inner/lib/{VENDORED}")
    with Fixture(["unshare", "--mount", "--propagation", "private", "sh", "-c", script]) as fx:
        assert not os.path.exists(site)
        o = by_name(dlscope_json("libs", fx.pid)["processes"][0], VENDORED)
        assert o["package"] == {"manager": "pip", "name": "inner", "version": "0.5"}, o


def test_watch_names_the_package_of_each_arriving_object():
    if not is_root():
        raise Skip("BPF tests need root")
    with tempfile.TemporaryDirectory() as top:
        site = make_wheel(top, "torchlike", "2.1.0",
                          {f"torchlike/lib/{VENDORED}": fixture_path(f"vendored/{VENDORED}")})
        lib = os.path.join(site, "torchlike", "lib", VENDORED)
        trace = os.path.join(top, "t.jsonl")
        dlscope("record", "-o", trace, "--duration", "1.5", "--", fixture_path("dlopen_list"),
                lib, LIBOMP, check=1, timeout=60)
        recs = [json.loads(l) for l in open(trace)]
        loaded = {os.path.basename(r["path"]): r for r in recs if r["type"] == "loaded"}
        assert loaded[VENDORED]["package"] == {"manager": "pip", "name": "torchlike",
                                               "version": "2.1.0"}, loaded[VENDORED]
        assert loaded["libomp.so.5"]["package"]["name"] == dpkg_owner(LIBOMP), loaded
        finding = [r for r in recs if r["type"] == "finding" and r["id"] == "dup-openmp"][0]
        assert "torchlike 2.1.0 (pip)" in finding["remedy"], finding
        out = dlscope("watch", "--duration", "1.5", "--", fixture_path("dlopen_list"), lib,
                      LIBOMP, check=1, timeout=60).stdout
        assert re.search(rf"\+ {re.escape(lib)} \[OpenMP runtime: GNU libgomp[^\n]*\(dlopen\)  "
                         r"package torchlike 2\.1\.0 \(pip\)", out), out


def test_dpkg_answers_are_kept_between_runs_until_dpkg_changes_something():
    """A second libs asks none of dpkg's lists (its answers are in the cache); dpkg rewriting its
    status (as every install, removal or upgrade does) makes the lists read again."""
    if not is_root():
        raise Skip("needs root for a private mount namespace")
    lib = fixture_path("libplain.so")
    script = ("mount -t tmpfs none /var/lib/dpkg && mkdir /var/lib/dpkg/info && "
              f"printf '/.\\n{os.path.dirname(lib)}\\n{lib}\\n' > /var/lib/dpkg/info/fake.list && "
              "printf 'Package: fake\\nStatus: install ok installed\\nVersion: 1.0-1\\n\\n' "
              "> /var/lib/dpkg/status && "
              f"exec {fixture_path('dlopen_list')} {lib}")
    with tempfile.TemporaryDirectory() as home, \
            Fixture(["unshare", "--mount", "--propagation", "private", "sh", "-c", script]) as fx:
        env = {"XDG_CACHE_HOME": home}
        admin = f"/proc/{fx.pid}/root/var/lib/dpkg"

        def owner():
            o = by_name(dlscope_json("libs", fx.pid, env=env)["processes"][0], "libplain.so")
            return o["package"]

        assert owner() == {"manager": "deb", "name": "fake", "version": "1.0-1"}
        cached = [f for f in os.listdir(os.path.join(home, "dlscope")) if f.startswith("dpkg-")]
        assert len(cached) == 1, os.listdir(os.path.join(home, "dlscope"))
        # The list emptied in place (dpkg never does: it renames a new list in): the answer
        # comes from the cache, so the list was not read.
        with open(f"{admin}/info/fake.list", "r+") as f:
            f.truncate(0)
        assert owner() == {"manager": "deb", "name": "fake", "version": "1.0-1"}
        # dpkg rewrote its status: every answer is asked again, and the list now says nothing.
        with open(f"{admin}/status", "a") as f:
            f.write("Package: other\nStatus: install ok installed\nVersion: 2\n\n")
        assert owner() is None
