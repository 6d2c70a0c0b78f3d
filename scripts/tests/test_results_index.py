# SPDX-License-Identifier: GPL-2.0
"""scripts/results-index: the index of results/ (results/README.md) from
each directory's about.json.  The real tree must pass --check; a synthetic
one shows what fails it: a directory without about.json, a stale index, a
malformed about.json."""
import json
import os
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "results-index")
RESULTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "results")


def run(*args):
    return subprocess.run([SCRIPT] + list(args), capture_output=True, text=True, timeout=120)


def about(**kw):
    a = {"kind": "vmtest", "date": "2026-01-01", "commit": "0" * 40, "kernel": "6.1.0-56-amd64",
         "status": "current", "summary": "x, 1 of 1 checks passed"}
    a.update(kw)
    return a


@pytest.fixture
def tree(tmp_path):
    """results/ with two VM test runs (the first superseded by the second)
    and a matrix directory that has no about.json yet, indexed."""
    r = tmp_path / "results"
    for name, a in (("vmtest-x-20260101", about(status="superseded",
                                                 superseded_by="vmtest-x-20260102")),
                    ("vmtest-x-20260102", about(date="2026-01-02"))):
        (r / name).mkdir(parents=True)
        (r / name / "results.tap").write_text("ok - x: y\n")
        (r / name / "summary.md").write_text("# x\n")
        (r / name / "about.json").write_text(json.dumps(a))
    m = r / "paper-20260103"
    (m / "runs").mkdir(parents=True)
    (m / "plan.json").write_text(json.dumps({
        "profile": {"name": "paper"}, "feedback": "dupack",
        "runs": [{"id": "a"}, {"id": "b"}]}))
    (m / "meta.json").write_text(json.dumps({"sessions": [
        {"start": "2026-01-03T00:00:00+00:00", "git_commit": "1" * 40, "git_dirty": ""}]}))
    (m / "runs" / "a.json").write_text(json.dumps({"versions": {"kernel": "6.1.0-56-amd64"}}))
    (r / "ci-durations.tsv").write_text("stop\tseconds\n")
    p = run("--results", str(r))
    assert p.returncode == 0, p.stderr
    return r


def check(r):
    p = run("--results", str(r), "--check")
    return p.returncode, p.stderr


def test_the_real_tree_is_indexed():
    """Every results/ directory has a valid about.json (or is a matrix
    directory, indexed from its records), and results/README.md is what
    scripts/results-index writes: run it after adding a directory."""
    rc, err = check(RESULTS)
    assert rc == 0, err


def test_synthetic_tree_passes(tree):
    assert check(tree) == (0, "")
    idx = (tree / "README.md").read_text()
    assert ("| [`vmtest-x-20260101/`](vmtest-x-20260101/summary.md) | 2026-01-01 | `0000000` | "
            "6.1.0-56-amd64 | superseded by [`vmtest-x-20260102/`](vmtest-x-20260102/) | "
            "x, 1 of 1 checks passed |") in idx
    # the matrix directory without about.json: from plan.json, meta.json and
    # its first run's record, as wip
    assert ("| [`paper-20260103/`](paper-20260103/) | 2026-01-03 | `1111111` | 6.1.0-56-amd64 | "
            "wip (no about.json) | profile paper, FEEDBACK=dupack, 1 of 2 runs (no report yet) |") in idx
    assert "| [vmtest](#vm-test-runs-publish-vmtest-publish-vmtest-run) | 1 | 1 | 0 | 0 | 2 |" in idx
    assert "[`ci-durations.tsv`](ci-durations.tsv)" in idx
    assert "- raw files over 1 MB: none" in idx


def test_missing_about_json_fails(tree):
    os.remove(tree / "vmtest-x-20260102" / "about.json")
    rc, err = check(tree)
    assert rc == 1
    assert "vmtest-x-20260102: no about.json" in err
    # writing the index does not fix that: it warns, and --check still fails
    p = run("--results", str(tree))
    assert p.returncode == 0 and "warning: vmtest-x-20260102: no about.json" in p.stderr
    assert check(tree)[0] == 1


def test_stale_index_fails(tree):
    idx = tree / "README.md"
    idx.write_text(idx.read_text() + "edited by hand\n")
    rc, err = check(tree)
    assert rc == 1 and "README.md is not what scripts/results-index writes" in err
    # a new directory with a valid about.json, the index not rewritten
    run("--results", str(tree))
    assert check(tree) == (0, "")
    (tree / "vmtest-y-20260104").mkdir()
    (tree / "vmtest-y-20260104" / "about.json").write_text(json.dumps(about(date="2026-01-04")))
    rc, err = check(tree)
    assert rc == 1 and "README.md is not what" in err
    run("--results", str(tree))
    assert check(tree) == (0, "")
    # an about.json changed (a status decided), the index not rewritten
    p = tree / "vmtest-x-20260102" / "about.json"
    p.write_text(json.dumps(about(date="2026-01-02", status="aborted")))
    assert check(tree)[0] == 1


def test_ignored_files_are_not_indexed_and_fail_the_check(tree):
    """Captures that results/.gitignore keeps out of git (pcaps/, *.pcap)
    would be counted on this machine and missing from a clean checkout:
    the index leaves them out, and --check names them."""
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    (tree / ".gitignore").write_text("pcaps/\n*.pcap\n")
    d = tree / "vmtest-x-20260102"
    (d / "captures").mkdir()
    (d / "captures" / "a.pcap.xz").write_bytes(b"x")
    run("--results", str(tree))
    assert check(tree) == (0, "")
    idx = (tree / "README.md").read_text()
    assert "1 files, in `vmtest-x-20260102/` (1)" in idx
    (d / "pcaps").mkdir()
    (d / "pcaps" / "b.p1c.pcap.xz").write_bytes(b"x")
    (tree / "c.pcap").write_bytes(b"x")
    rc, err = check(tree)
    assert rc == 1
    assert ("vmtest-x-20260102: 1 file(s) that git ignores (results/.gitignore) and would "
            "never be committed, e.g. vmtest-x-20260102/pcaps/b.p1c.pcap.xz") in err
    assert "c.pcap: 1 file(s) that git ignores" in err
    # the index itself is unchanged by them: same text as without them
    assert "README.md is not what" not in err
    run("--results", str(tree))
    assert (tree / "README.md").read_text() == idx


@pytest.mark.parametrize("edit, message", [
    (lambda a: a.pop("kernel"), "field 'kernel' missing"),
    (lambda a: a.pop("summary"), "field 'summary' missing"),
    (lambda a: a.update(status="old"), "status 'old' is not one of"),
    (lambda a: a.update(kind="vmtests"), "kind 'vmtests' is not one of"),
    (lambda a: a.update(date="29.11.2026"), "date '29.11.2026' is not YYYY-MM-DD"),
    (lambda a: a.update(summary="two\nlines"), "summary is more than one line"),
    (lambda a: a.update(status="superseded"), "status superseded without superseded_by"),
    (lambda a: a.update(status="superseded", superseded_by="vmtest-gone-20260101"),
     "superseded_by 'vmtest-gone-20260101' is not a directory of results/"),
    (lambda a: a.update(superseded_by="vmtest-x-20260101"), "superseded_by with status 'current'"),
    (lambda a: a.update(status="superseded", superseded_by="vmtest-x-20260101"),
     "superseded_by chain loops"),
])
def test_malformed_about_json_fails(tree, edit, message):
    p = tree / "vmtest-x-20260102" / "about.json"
    a = json.loads(p.read_text())
    edit(a)
    p.write_text(json.dumps(a))
    run("--results", str(tree))  # the index itself up to date: only the about.json is wrong
    rc, err = check(tree)
    assert rc == 1 and "vmtest-x-20260102: " + message in err, err


def test_invalid_json_fails(tree):
    (tree / "vmtest-x-20260102" / "about.json").write_text("{\"kind\": ")
    rc, err = check(tree)
    assert rc == 1 and "vmtest-x-20260102: about.json is not valid JSON" in err


def test_about_from_records(tree):
    """--about (the publishing scripts): commit and kernel from command.txt,
    the date from the name, status current; the index rewritten.  Again on
    the same directory it keeps status and summary."""
    d = tree / "vmtest-z-20260105"
    d.mkdir()
    (d / "command.txt").write_text("git: %s (kmod or vm-testbed modified)\n"
                                   "kernel: Linux version 6.1.0-57-amd64\n" % ("2" * 40))
    p = run("--results", str(tree), "--about", str(d), "--kind", "vmtest", "--summary", "z  ran\n")
    assert p.returncode == 0, p.stderr
    a = json.loads((d / "about.json").read_text())
    assert a == {"kind": "vmtest", "date": "2026-01-05", "commit": "2" * 40,
                 "commit_source": "command.txt", "dirty": True, "kernel": "6.1.0-57-amd64",
                 "status": "current", "summary": "z ran"}
    assert check(tree) == (0, "")
    assert "`2222222` (modified) | 6.1.0-57-amd64 | current | z ran |" in (tree / "README.md").read_text()
    a["status"], a["summary"] = "aborted", "stopped"
    (d / "about.json").write_text(json.dumps(a))
    run("--results", str(tree), "--about", str(d), "--kind", "vmtest", "--summary", "again")
    a = json.loads((d / "about.json").read_text())
    assert (a["status"], a["summary"]) == ("aborted", "stopped")
    assert run("--results", str(tree), "--about", str(tree.parent), "--kind", "vmtest",
               "--summary", "x").returncode != 0


def test_matrix_summary_never_pools_disagreeing_cells(tree):
    """A finished matrix directory without about.json is summarised from
    its headline.json: with "cells" (the report since issue 40) a pooled
    figure only where the cells agree, else "cells disagree" and their
    range; the older format as before."""
    m = tree / "paper-20260103"
    for i in "ab":
        (m / "runs" / (i + ".json")).write_text(json.dumps({"versions": {"kernel": "6.1.0-56-amd64"}}))

    def cell(r):
        return {"ratio": [r, r - 0.01, r + 0.01, 0.95]}
    head = {"profile": "paper", "runs": 2, "flagged": 0, "headline": {}, "cells": {
        "download cross-on srvecn+proxy/bothecn": {
            "cells": {"1": cell(1.01), "3": cell(1.12)},
            "pooled": {"ratio": None, "cells_agree": False, "cell_min": 1.01, "cell_max": 1.12}},
        "download cross-on srvecn+proxy/noecn": {
            "cells": {"1": cell(0.80), "3": cell(0.81)},
            "pooled": {"ratio": [0.805, 0.79, 0.82, 0.95], "cells_agree": True,
                       "cell_min": 0.80, "cell_max": 0.81}}}}
    (m / "headline.json").write_text(json.dumps(head))
    assert run("--results", str(tree)).returncode == 0
    idx = (tree / "README.md").read_text()
    assert ("2 of 2 runs: download: srvecn+proxy/bothecn cells disagree (1.01-1.12); "
            "download: srvecn+proxy/noecn 0.81 [0.79, 0.82] (cells 0.80-0.81) |") in idx
    head = {"profile": "paper", "runs": 2, "flagged": 0,
            "headline": {"download cross-on srvecn+proxy/bothecn": [1.08, 1.0, 1.18, 0.95]}}
    (m / "headline.json").write_text(json.dumps(head))
    run("--results", str(tree))
    assert "2 of 2 runs: download: srvecn+proxy/bothecn 1.08 [1.00, 1.18] |" in (
        tree / "README.md").read_text()


def test_about_on_an_existing_directory(tree):
    """--about on a directory that has an about.json keeps its status and
    summary and says so; with --status both are replaced (a work in
    progress published complete), and superseded_by goes with a status
    that is not superseded."""
    d = tree / "vmtest-x-20260102"
    wip = about(date="2026-01-02", status="wip", summary="half of it")
    (d / "about.json").write_text(json.dumps(wip))
    p = run("--results", str(tree), "--about", str(d), "--kind", "vmtest",
            "--summary", "all of it, 2 of 2 checks passed")
    assert p.returncode == 0, p.stderr
    assert "kept its about.json's status (wip) and summary; --status replaces both" in p.stderr
    a = json.loads((d / "about.json").read_text())
    assert (a["status"], a["summary"]) == ("wip", "half of it")
    p = run("--results", str(tree), "--about", str(d), "--kind", "vmtest",
            "--summary", "all of it", "--status", "current")
    assert p.returncode == 0, p.stderr
    a = json.loads((d / "about.json").read_text())
    assert (a["status"], a["summary"]) == ("current", "all of it")
    assert check(tree) == (0, "")
