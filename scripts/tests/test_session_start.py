# SPDX-License-Identifier: GPL-2.0
"""tables.session_start: a run's position in its guest session and its
completion time over its cell's median; records without a session id are
left out, and a slow first run stands out in the first row."""
import json
import os

import pytest

from ecnproxy.tables import session_start


def record(d, rid, session, start, comp, util=0.9):
    os.makedirs(os.path.join(d, "runs"), exist_ok=True)
    rec = {"id": rid, "completion_s": comp, "transfer": {"start": start},
           "fidelity": {"bottleneck_utilisation": util}}
    if session:
        rec["origin"] = {"session_id": session}
    with open(os.path.join(d, "runs", rid + ".json"), "w") as f:
        json.dump(rec, f)


def test_first_run_of_each_session(tmp_path, capsys):
    d = str(tmp_path / "m")
    # two sessions; cell a's first run in session s2 is slow (2x)
    for i, (sess, start, comp) in enumerate([("s1", 1, 10), ("s1", 2, 10), ("s1", 3, 10),
                                              ("s2", 1, 20), ("s2", 2, 10), ("s2", 3, 10)]):
        record(d, "upload_a_r%02d" % i, sess, start, comp, util=0.5 if comp == 20 else 0.9)
    record(d, "upload_b_r01", None, 5, 99)          # no session: left out
    record(d, "upload_c_r01", "s1", 4, 5)           # a cell of one run: left out
    assert session_start.main([d, "--first", "2"]) == 0
    out = capsys.readouterr().out
    assert "Guest sessions: 2, in 1 directories" in out
    assert "| 1 | 2 | 1.500 | 2.00 | 1 |" in out      # ratios 1.0 and 2.0
    assert "| 2 | 2 | 1.000 | 1.00 | 0 |" in out
    assert "| 3 and later | 2 | 1.000 | 1.00 | 0 |" in out
    assert "`upload_a_r03`: position 1, 2.00 (20.00 s), utilisation 0.50" in out
    assert "upload_b_r01" not in out and "upload_c_r01" not in out


def test_position_by_start_time_not_name(tmp_path, capsys):
    d = str(tmp_path / "m")
    # the slow run has the last name but the earliest start in its session
    record(d, "upload_a_r09", "s1", 1, 30)
    for i in range(1, 5):
        record(d, "upload_a_r%02d" % i, "s1", 1 + i, 10)
    record(d, "upload_b_r01", "s1", 9, 10)
    with open(os.path.join(d, "runs", "upload_b_r02.json"), "w") as f:
        json.dump({"id": "upload_b_r02", "origin": "s1", "transfer": None,
                   "completion_s": True}, f)         # malformed: left out
    assert session_start.main([d, "--first", "1", "--above", "2.5"]) == 0
    out = capsys.readouterr().out
    assert "| 1 | 1 | 3.000 | 3.00 | 1 |" in out
    assert "`upload_a_r09`: position 1, 3.00 (30.00 s)" in out
    assert "above 2.50" in out and "upload_b" not in out


def test_bad_arguments(tmp_path):
    with pytest.raises(SystemExit):
        session_start.main([str(tmp_path)])           # no runs/
    os.makedirs(str(tmp_path / "runs"))
    with pytest.raises(SystemExit):
        session_start.main([str(tmp_path), "--first", "0"])
