# SPDX-License-Identifier: GPL-2.0
"""tables.strata: a cell of parallel flows split by how many flows kept
ECN; directories pooled cell by cell, a top-level directory's runs with
the delay their records name."""
import json
import os

import pandas as pd

from ecnproxy.tables import strata


def result(d, runs, delay_block=None, profile="paper"):
    """A matrix directory: RUNS is [(config, ECN flows, completion_s,
    udp_rate_bps)], all upload, cross on, load 3 (3 flows); in
    delay-<DELAY_BLOCK>ms/ when given, else at the top with records
    saying delay_ms 0."""
    os.makedirs(os.path.join(d, "runs"), exist_ok=True)
    rows = []
    for i, (cfg, k, t, udp) in enumerate(runs):
        rid = "upload_cross_p3_%s_r%02d" % (cfg, i)
        rows.append({"id": rid, "direction": "upload", "cross": "on", "load": "3",
                     "flows": 3, "series": 0, "total_bytes": 24000000, "config": cfg,
                     "use": True, "feedback": "dupack", "completion_s": t,
                     "ss_ecn_negotiated": k, "udp_rate_bps": udp})
        with open(os.path.join(d, "runs", rid + ".json"), "w") as f:
            json.dump({"env": {"kernel": "6.1"}, "params": {"delay_ms": 0}, "qdisc": {}}, f)
    sub = os.path.join(d, "delay-%dms" % delay_block) if delay_block is not None else d
    os.makedirs(sub, exist_ok=True)
    pd.DataFrame(rows).to_csv(os.path.join(sub, "runs.csv"), index=False)
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump({"profile": profile, "seed": 1, "sessions": [{"git_commit": "7e1b17e0aa"}]}, f)


def test_groups_and_pooling(tmp_path, capsys):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    # all three flows with ECN: the proxied runs 17 % slower; one flow:
    # equal.  The mixture alone would hide both.
    result(a, [("srvecn+proxy", 3, 25.8, 2e6), ("bothecn", 3, 22.0, 0.75e6),
               ("bothecn", 3, 22.1, 0.75e6), ("srvecn+proxy", 1, 35.5, 3.5e6),
               ("bothecn", 1, 35.6, 3.5e6)])
    result(b, [("srvecn+proxy", 3, 25.6, 1.9e6), ("srvecn+proxy", 3, 26.6, 1.9e6),
               ("srvecn+proxy", 1, 35.4, 3.4e6), ("bothecn", 1, 35.7, 3.5e6),
               ("noecn", 0, 36.0, 3.5e6)], delay_block=0, profile="parity-d0")
    assert strata.main([a, b]) == 0
    out = capsys.readouterr().out
    assert out.count("Upload, cross traffic on, load 3, 0 ms added, feedback dupack:") == 1
    three = [s for s in out.splitlines() if s.startswith("| 3 of 3 |")][0]
    assert "| 3 | 25.80 | 1.90 | 2 | 22.05 | 0.75 | 1.17 [" in three
    assert "(80 %)" in three  # 3 runs against 2 cannot reach 95 %
    one = [s for s in out.splitlines() if s.startswith("| 1 of 3 |")][0]
    assert "| 2 | 35.45 |" in one and "| 0.99 [" in one
    assert "noecn" not in out.split("\n\n", 1)[1]  # neither NUM nor DEN


def test_single_flows_only_refused(tmp_path, capsys):
    a = str(tmp_path / "a")
    result(a, [("srvecn+proxy", 1, 10.0, 3e6)])
    df = pd.read_csv(os.path.join(a, "runs.csv"))
    df["flows"] = 1
    df.to_csv(os.path.join(a, "runs.csv"), index=False)
    assert strata.main([a]) == 1
    assert "no cell of several flows" in capsys.readouterr().err
