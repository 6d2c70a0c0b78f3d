# SPDX-License-Identifier: GPL-2.0
"""scripts/matrix's choice of results directory (pick_dir): the newest
results/NAME-DATE[-N] of the same feedback mode is resumed while it is
incomplete; an older unfinished one is never resumed; order by name, not
by mtime (a fresh checkout gives every file the checkout's time)."""
import datetime
import json
import os

import pytest

from ecnproxy.host import matrix

PROF = {"name": "paper"}
TODAY = datetime.date.today().strftime("%Y%m%d")


def make(base, name, feedback, ids, done):
    d = base / name
    (d / "runs").mkdir(parents=True)
    (d / "plan.json").write_text(json.dumps(
        {"feedback": feedback, "runs": [{"id": i} for i in ids]}))
    for i in done:
        (d / "runs" / (i + ".json")).write_text("{}")
    return d


@pytest.fixture(autouse=True)
def no_matrix_out(monkeypatch):
    monkeypatch.delenv("MATRIX_OUT", raising=False)


def test_newest_incomplete_resumed(tmp_path):
    make(tmp_path, "paper-20201124", "dupack", ["a", "b"], ["a"])
    new = make(tmp_path, "paper-20201128", "dupack", ["a", "b"], ["a"])
    assert matrix.pick_dir(PROF, "dupack", str(tmp_path)) == str(new)


def test_older_unfinished_not_resumed(tmp_path):
    make(tmp_path, "paper-20201124", "dupack", ["a", "b"], ["a"])
    done = make(tmp_path, "paper-20201128", "dupack", ["a", "b"], ["a", "b"])
    # the complete one is newer by name though older by mtime
    os.utime(done, (0, 0))
    got = matrix.pick_dir(PROF, "dupack", str(tmp_path))
    assert got == str(tmp_path / ("paper-" + TODAY))


def test_suffix_order_and_feedback(tmp_path):
    make(tmp_path, "paper-20201128-2", "dupack", ["a"], [])
    n10 = make(tmp_path, "paper-20201128-10", "dupack", ["a"], [])
    drop = make(tmp_path, "paper-20201129", "drop", ["a"], [])
    assert matrix.pick_dir(PROF, "dupack", str(tmp_path)) == str(n10)
    assert matrix.pick_dir(PROF, "drop", str(tmp_path)) == str(drop)
    assert matrix.pick_dir(PROF, "", str(tmp_path)) == str(tmp_path / ("paper-" + TODAY))


def test_matrix_out_wins(tmp_path, monkeypatch):
    make(tmp_path, "paper-20201128", "dupack", ["a"], [])
    monkeypatch.setenv("MATRIX_OUT", str(tmp_path / "x"))
    assert matrix.pick_dir(PROF, "dupack", str(tmp_path)) == str(tmp_path / "x")


@pytest.mark.parametrize("status,resumed", [
    ("aborted", False), ("superseded", False), ("wip", True), (None, True)])
def test_aborted_not_resumed(tmp_path, status, resumed):
    """A run given up in its about.json (aborted, superseded) is not
    resumed: the next make matrix starts a new directory."""
    d = make(tmp_path, "paper-20201128", "dupack", ["a", "b"], ["a"])
    if status:
        (d / "about.json").write_text(json.dumps({"status": status}))
    got = matrix.pick_dir(PROF, "dupack", str(tmp_path))
    assert got == (str(d) if resumed else str(tmp_path / ("paper-" + TODAY)))
