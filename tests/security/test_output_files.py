"""Root on a shared host: the files dlscope writes for the user (-o of report, record, export,
merge, ui; report's companion and graph) are never written through a link another user planted,
and a directory another user controls is named when dlscope writes in it.

Runs as root with a second, unprivileged user made by the test (security.other_user()).
"""
import json
import os
import subprocess
import tempfile

from harness import Fixture, dlscope, wait_idle
from security import as_user, other_user, root_only_file

SECRET = "root's file: must stay as it is\n"


def plant_links(d, names, target):
    """The other user makes each NAME in D a symbolic link to TARGET (root's file)."""
    for n in names:
        as_user(["ln", "-s", target, os.path.join(d, n)])


def user_dir():
    """A directory the other user owns, where root is asked to write."""
    other_user()
    d = tempfile.mkdtemp(prefix="dlscope-sec-")
    os.chmod(d, 0o755)
    os.chown(d, other_user().pw_uid, other_user().pw_gid)
    return d


def test_report_does_not_write_through_the_users_links():
    victim = root_only_file(SECRET)
    d = user_dir()
    plant_links(d, ["r.md", "r.extra.md", "dlscope-report.extra.md"], victim)
    with Fixture(["hang_abba"]) as fx:
        wait_idle(fx.pid)
        # -o DIR/r.md, and the companion DIR/r.extra.md that --limit makes necessary.
        p = dlscope("report", "--limit", "2500", "-o", os.path.join(d, "r.md"), fx.pid)
        assert p.returncode == 3, (p.returncode, p.stderr)
        assert "symbolic link of user" in p.stderr and p.stderr.count("\n") == 1, p.stderr
        # To standard output, run from the user's directory: the companion is made in it.
        p = subprocess.run([dlscope_bin(), "report", "--limit", "2500", str(fx.pid)], cwd=d,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 3, (p.returncode, p.stderr)
        assert "dlscope-report.extra.md is a symbolic link of user" in p.stderr, p.stderr
    assert open(victim).read() == SECRET


def test_record_export_and_merge_do_not_write_through_the_users_links():
    victim = root_only_file(SECRET)
    d = user_dir()
    plant_links(d, ["t.jsonl", "p.json"], victim)
    with Fixture(["two_omp"]) as fx:
        p = dlscope("record", "-o", os.path.join(d, "t.jsonl"), "--duration", "1", "-p",
                    fx.pid)
        assert p.returncode == 3 and "t.jsonl is a symbolic link of user" in p.stderr, p
    trace = os.path.join(tempfile.mkdtemp(), "t.jsonl")
    with Fixture(["two_omp"]) as fx:
        dlscope("record", "-o", trace, "--duration", "1", "-p", fx.pid, check=0)
    p = dlscope("export", "--perfetto", trace, "-o", os.path.join(d, "p.json"))
    assert p.returncode == 3 and "p.json is a symbolic link of user" in p.stderr, p
    other = os.path.join(os.path.dirname(trace), "node-b.jsonl")
    with open(trace) as src, open(other, "w") as dst:
        for i, line in enumerate(src):
            if i == 0:
                hdr = json.loads(line)
                hdr.update(host="node-b", boot_id="0b0b0b0b-1111-2222-3333-444455556666")
                line = json.dumps(hdr) + "\n"
            dst.write(line)
    p = dlscope("merge", "-o", os.path.join(d, "t.jsonl"), trace, other)
    assert p.returncode == 3 and "t.jsonl is a symbolic link of user" in p.stderr, p
    assert open(victim).read() == SECRET


def test_hard_link_to_roots_file_is_not_written():
    d = user_dir()
    # A hard link can only be made by the file's owner where protected_hardlinks is on; root
    # makes it here, as a user could where that protection is off.
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write(SECRET)
    link = os.path.join(d, "r.md")
    os.link(victim, link)
    os.chown(victim, 0, 0)
    with Fixture(["two_omp"]) as fx:
        wait_idle(fx.pid)
        p = dlscope("report", "-o", link, fx.pid)
    # Root owns the file: root may write its own file through its own link.
    assert p.returncode == 0, p.stderr
    os.unlink(link)
    with open(victim, "w") as f:
        f.write(SECRET)
    as_user(["cp", "/dev/null", os.path.join(d, "theirs")])
    os.link(os.path.join(d, "theirs"), link)
    with Fixture(["two_omp"]) as fx:
        wait_idle(fx.pid)
        p = dlscope("report", "-o", link, fx.pid)
    # The user's own file, linked twice: theirs to lose, but not written all the same.
    assert p.returncode == 3 and "is a hard link to a file of user" in p.stderr, p.stderr


def test_writing_in_a_directory_another_user_controls_is_said():
    d = user_dir()
    out = os.path.join(d, "r.md")
    with Fixture(["two_omp"]) as fx:
        wait_idle(fx.pid)
        p = dlscope("report", "-o", out, fx.pid)
    assert p.returncode == 0, p.stderr
    assert f"{out} is written in {d}, which user {other_user().pw_name} (uid " in p.stderr, \
        p.stderr
    assert os.stat(out).st_uid == 0


def test_user_named_devices_and_own_links_still_work():
    with Fixture(["two_omp"]) as fx:
        wait_idle(fx.pid)
        p = dlscope("report", "-o", "/dev/null", fx.pid)
        assert p.returncode == 0, p.stderr
        d = tempfile.mkdtemp()
        real = os.path.join(d, "real.md")
        os.symlink(real, os.path.join(d, "link.md"))
        p = dlscope("report", "-o", os.path.join(d, "link.md"), fx.pid)
        assert p.returncode == 0, p.stderr
        assert open(real).read().startswith("# dlscope report"), open(real).read()[:200]
        doc = json.loads(dlscope("check", "--json", fx.pid, check=1).stdout)
        assert doc["processes"][0]["findings"], doc


def dlscope_bin():
    import harness
    return harness.dlscope_path()
