# SPDX-License-Identifier: GPL-2.0
"""tables.kernels: one matrix on two kernels, cell by cell: the ratio of
completion times B / A with its interval, medians A -> B, refused for two
different plans."""
import json
import os

import pandas as pd

from ecnproxy.tables import kernels


def result(d, kernel, times, seed=6, profile="quick"):
    """A results directory: runs.csv with one cell (upload, cross on, load
    1) per configuration in TIMES ({config: [completion_s...]}), meta.json
    and a record per run carrying the guest's kernel."""
    os.makedirs(os.path.join(d, "runs"), exist_ok=True)
    rows = []
    for cfg, ts in times.items():
        for i, t in enumerate(ts):
            rid = "upload_%s_r%02d" % (cfg, i)
            rows.append({"id": rid, "direction": "upload", "cross": "on", "load": "1",
                         "config": cfg, "use": True, "total_bytes": 2000000,
                         "completion_s": t, "transfer_s": t - 0.5,
                         "snd_retrans_segs": 10 * (i + 1), "snd_rtos": 0, "snd_syn_retrans": 0,
                         "red_marked": 100})
            with open(os.path.join(d, "runs", rid + ".json"), "w") as f:
                json.dump({"env": {"kernel": kernel}, "params": {}, "qdisc": {}}, f)
    pd.DataFrame(rows).to_csv(os.path.join(d, "runs.csv"), index=False)
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump({"profile": profile, "seed": seed,
                   "sessions": [{"git_commit": "ef67c7353eea"}]}, f)


def test_ratio_per_cell_and_over_cells(tmp_path, capsys):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    result(a, "6.1.0-57-amd64", {"noecn": [10, 10.2, 9.8, 10.1], "bothecn": [8, 8.1, 7.9, 8],
                                 "srvecn+proxy": [5, 5.1]})
    # noecn 20 % slower on B, bothecn the same
    result(b, "6.12.117+deb12-amd64", {"noecn": [12, 12.24, 11.76, 12.12],
                                       "bothecn": [8, 8.1, 7.9, 8], "srvecn+proxy": [5, 5.1]})
    assert kernels.main([a, b]) == 0
    out = capsys.readouterr().out
    assert "kernel 6.1.0-57-amd64, commit ef67c735" in out
    assert "kernel 6.12.117+deb12-amd64" in out
    row = [s for s in out.splitlines() if s.startswith("| load 1 | noecn |")][0]
    assert "| 4 / 4 | 10.05 | 12.06 | 1.20 [" in row
    assert "%)" not in row  # 4 runs against 4 reach 95 %; 2 against 2 cannot
    assert "| 25 -> 25 |" in row  # median of 10, 20, 30 and 40
    two = [s for s in out.splitlines() if s.startswith("| load 1 | srvecn+proxy |")][0]
    assert "| 2 / 2 |" in two and "(67 %)" in two
    row = [s for s in out.splitlines() if s.startswith("| load 1 | bothecn |")][0]
    assert "| 1.00 [" in row
    assert "- `noecn`: 1.200 over 1 cells (1.20-1.20)" in out


def test_other_plan_refused(tmp_path, capsys):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    result(a, "6.1", {"noecn": [1, 2]})
    result(b, "6.12", {"noecn": [1, 2]}, seed=7)
    assert kernels.main([a, b]) == 1
    assert "not the same plan: quick seed 6 against quick seed 7" in capsys.readouterr().err
