"""What a fresh machine gets from the Makefile: every package a Makefile list names is one that
`make deps` installs, and what `make demo` builds links only what the demo installs (DEB_BUILD
and DEB_TEST, with their dependencies). .ci/run proves both on a fresh Debian 12 root
(scripts/fresh-root.sh); these catch a list or a fixture gone wrong on any machine."""
import os
import re
import shutil
import subprocess
import tempfile

import harness
from harness import Skip

ROOT = harness.ROOT


def make_db(target):
    """{name: [words]} of every DEB_* variable, as make expands it (make -p), and the words of
    the install-deps.sh line that `make -n TARGET` runs."""
    p = subprocess.run(["make", "-pn", "-C", ROOT, target], capture_output=True, text=True,
                       timeout=120, check=True)
    lists = {m.group(1): m.group(2).split()
             for m in re.finditer(r"^(DEB_\w+) :?= ?(.*)$", p.stdout, re.M)}
    installs = [ln.split()[1:] for ln in p.stdout.splitlines()
                if ln.startswith("scripts/install-deps.sh ")]
    assert installs, f"make -n {target} runs no scripts/install-deps.sh"
    return lists, installs[0]


def test_make_deps_installs_every_package_a_list_names():
    lists, deps = make_db("deps")
    assert {"DEB_BUILD", "DEB_TEST", "DEB_REALWORLD", "DEB_CORPUS2"} <= set(lists), sorted(lists)
    for name, words in lists.items():
        assert words, f"{name} is empty where make deps reads it"
        missing = sorted(set(words) - set(deps))
        assert not missing, f"make deps does not install {name}'s {missing}"


def test_make_demo_installs_the_build_and_test_base():
    lists, demo = make_db("demo")
    assert sorted(demo) == sorted(lists["DEB_BUILD"] + lists["DEB_TEST"]), demo
    # The demo builds its own fixtures, never the tests' whole set (HIP, Level Zero, ...).
    with open(os.path.join(ROOT, "Makefile")) as f:
        recipe = re.search(r"^demo:\n((?:\t.*\n)+)", f.read(), re.M).group(1)
    assert "demo-fixtures" in recipe and not re.search(r"\bfixtures\b(?<!-fixtures)", recipe), \
        recipe


def closure(pkgs):
    """The installed packages PKGS depend on, PKGS among them (Depends and Pre-Depends)."""
    p = subprocess.run(["apt-cache", "depends", "--recurse", "--installed", "--no-recommends",
                        "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces",
                        "--no-enhances", *pkgs], capture_output=True, text=True, timeout=120,
                       check=True)
    return {ln.split(":")[0] for ln in p.stdout.splitlines() if ln and not ln[0].isspace()}


def owner(path):
    """The Debian package that installed PATH (dpkg knows /lib and /usr/lib apart)."""
    for cand in dict.fromkeys((path, os.path.realpath(path),
                               re.sub(r"^/usr/lib/", "/lib/", path),
                               re.sub(r"^/lib/", "/usr/lib/", path))):
        p = subprocess.run(["dpkg", "-S", cand], capture_output=True, text=True)
        if p.returncode == 0:
            return p.stdout.split(":")[0]
    return None


def needed_paths(obj):
    """{DT_NEEDED name: the path the loader resolves it to} of one built object."""
    names = re.findall(r"\(NEEDED\)\s+Shared library: \[(.*)\]",
                       subprocess.run(["readelf", "-dW", obj], capture_output=True,
                                      text=True).stdout)
    out = {}
    if names:
        ldd = subprocess.run(["ldd", obj], capture_output=True, text=True).stdout
        for n in names:
            # "libx.so.1 => /path (0x...)"; the loader itself: "/lib64/ld-linux... (0x...)".
            m = re.search(rf"^\s*{re.escape(n)} => (/\S+)", ldd, re.M) or \
                re.search(rf"^\s*(/\S*/{re.escape(n)}) \(", ldd, re.M)
            out[n] = m.group(1) if m else None
    return out


def test_what_make_demo_builds_links_only_what_it_installs():
    if not shutil.which("dpkg") or not shutil.which("apt-cache"):
        raise Skip("needs dpkg and apt-cache (a Debian machine)")
    lists, _ = make_db("deps")
    allowed = closure(lists["DEB_BUILD"] + lists["DEB_TEST"])
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "tests", "fixtures"),
                        f"OUTPUT={out}", "demo"], check=True, capture_output=True, timeout=300)
        objs = [os.path.join(d, f) for d, _, fs in os.walk(out) for f in fs]
        assert len(objs) >= 5, objs
        bad = []
        for obj in objs:
            for name, path in needed_paths(obj).items():
                pkg = owner(path) if path else None
                if pkg not in allowed:
                    bad.append(f"{os.path.relpath(obj, out)} links {name} ({path}, package "
                               f"{pkg}): not in DEB_BUILD + DEB_TEST")
        assert not bad, "\n".join(bad)
