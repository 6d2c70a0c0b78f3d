# SPDX-License-Identifier: GPL-2.0
"""scripts/publish-vmtest-run and publish-vmtest: the copy's command.txt,
summary.md and about.json (with results/README.md from
scripts/results-index)."""
import json
import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.dirname(HERE)


@pytest.fixture
def tree(tmp_path, copy_python):
    """tree(SCRIPT...): a throwaway tree with those scripts, the Python
    commands (results-index, variant-table) and a results/ directory."""
    def make(*scripts):
        top = tmp_path / "top"
        (top / "scripts").mkdir(parents=True)
        (top / "results").mkdir()
        for f in scripts + ("git-state",):
            shutil.copy(os.path.join(SCRIPTS, f), top / "scripts" / f)
        copy_python(top)
        # a git tree, so that command.txt names a commit
        for cmd in (["init", "-q"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit",
                                     "-q", "--allow-empty", "-m", "t"]):
            subprocess.run(["git", "-C", str(top)] + cmd, check=True, capture_output=True)
        return top
    return make


def published(top):
    """The one directory the script made under results/."""
    dirs = [d for d in (top / "results").iterdir() if d.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def fake_run(tmp_path):
    run = tmp_path / "run"
    (run / "tests" / "x").mkdir(parents=True)
    (run / "tests" / "x" / "log").write_text("TEST: y [ OK ]\n")
    (run / "results.tap").write_text("ok - x: y\n")
    (run / "durations.txt").write_text("x 12 0\n")
    (run / "dmesg.txt").write_text("[  867.88] impair: something late\n")
    (run / "console.log").write_text(
        "Probing EDD\n[    0.000000] Linux version 6.1.0-56-amd64 (debian-kernel@x) #1\n")
    return run


def test_kernel_from_the_console_when_dmesg_wrapped(tmp_path, tree):
    """A long run wraps the guest's ring buffer: dmesg.txt no longer holds
    the boot banner, the console log does.  command.txt still names the
    kernel, and so does about.json."""
    top = tree("publish-vmtest-run")
    run = fake_run(tmp_path)
    p = subprocess.run([str(top / "scripts" / "publish-vmtest-run"), str(run), "t"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    dst = published(top)
    assert "kernel: Linux version 6.1.0-56-amd64\n" in (dst / "command.txt").read_text()
    assert "| x | 1 | 0 | 12 | 0 |" in (dst / "summary.md").read_text()
    about = json.loads((dst / "about.json").read_text())
    assert about["kind"] == "vmtest" and about["status"] == "current"
    assert about["kernel"] == "6.1.0-56-amd64"
    head = subprocess.run(["git", "-C", str(top), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert (about["commit"], about["commit_source"]) == (head, "command.txt")
    assert about["summary"] == "t: x, 1 of 1 checks passed"
    assert about["date"] == "%s-%s-%s" % (dst.name[-8:-4], dst.name[-4:-2], dst.name[-2:])
    # the index lists it, and is what results-index --check expects
    assert "[`%s/`](%s/summary.md)" % (dst.name, dst.name) in (top / "results" / "README.md").read_text()
    p = subprocess.run([str(top / "scripts" / "results-index"), "--check"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr


def test_publish_one_test(tmp_path, tree):
    """publish-vmtest: one test's files, its TAP lines, the kernel from the
    run's console, about.json."""
    top = tree("publish-vmtest")
    run = fake_run(tmp_path)
    (run / "tests" / "x" / "cap.pcap").write_bytes(b"\0" * 10)
    (run / "results.tap").write_text("ok - x: y\nnot ok - x: z\nok - w: v\n")
    p = subprocess.run([str(top / "scripts" / "publish-vmtest"), str(run), "x", "x-alone"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    dst = published(top)
    assert dst.name.startswith("x-alone-")
    assert not (dst / "cap.pcap").exists() and (dst / "log").exists()
    assert (dst / "results.tap").read_text() == "ok - x: y\nnot ok - x: z\n"
    assert "kernel: Linux version 6.1.0-56-amd64\n" in (dst / "command.txt").read_text()
    about = json.loads((dst / "about.json").read_text())
    assert about["summary"] == "x alone (publish-vmtest): 1 of 2 checks passed"
    assert about["kernel"] == "6.1.0-56-amd64"
    assert (top / "results" / "README.md").exists()


@pytest.mark.parametrize("script", ["publish-vmtest", "publish-vmtest-run"])
def test_the_runs_own_commit(tmp_path, tree, script):
    """A run published later, from another commit: command.txt and
    about.json name the commit scripts/run-tests recorded (git.txt)."""
    top = tree(script)
    run = fake_run(tmp_path)
    sha = "9d11751023cc769bc747469e5b022c395cc317b5"
    (run / "git.txt").write_text(sha + "\n")
    args = [str(run), "x"] if script == "publish-vmtest" else [str(run), "t"]
    p = subprocess.run([str(top / "scripts" / script)] + args,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    dst = published(top)
    assert "git: %s\n" % sha in (dst / "command.txt").read_text()
    assert json.loads((dst / "about.json").read_text())["commit"] == sha
