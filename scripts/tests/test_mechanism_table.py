# SPDX-License-Identifier: GPL-2.0
"""tables.mechanism: per cell and configuration, the medians of runs.csv
(per MB where the column says so), one table per added delay."""
import json
import os

import pandas as pd

from ecnproxy.tables import mechanism


def runs_csv(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    base = {"direction": "upload", "cross": "on", "load": "1", "use": True,
            "total_bytes": 8000000, "transfer_s": 9.0, "utilisation": 0.9,
            "ss_cwr": 0, "snd_retrans_segs": 0, "queue_p50_bytes": 1000,
            "rcv_segs_per_seg": 0.5, "udp_rate_bps": 4e6, "proxy_congestion_events": 0}
    pd.DataFrame([dict(base, id="run%d" % i, **r) for i, r in enumerate(rows)]).to_csv(
        path, index=False)


def record(d, run_id, htb_bytes, passed):
    """RESULTS/runs/RUN_ID.json with what the table reads of a record."""
    os.makedirs(os.path.join(d, "runs"), exist_ok=True)
    rec = {"env": {"bottleneck_dev": "eth2"}, "params": {"total_bytes": 8000000},
           "qdisc": {"before": [{"kind": "htb", "dev": "eth2", "bytes": 1000}],
                     "after": [{"kind": "htb", "dev": "eth1", "bytes": 5},
                               {"kind": "htb", "dev": "eth2", "bytes": 1000 + htb_bytes}]},
           "proxy_stats": {"before": {"rexmit_passed": 10}, "after": {"rexmit_passed": 10 + passed}}}
    with open(os.path.join(d, "runs", run_id + ".json"), "w") as f:
        json.dump(rec, f)


def test_medians_per_cell_and_delay(tmp_path, capsys):
    d = str(tmp_path)
    runs_csv(os.path.join(d, "delay-0ms", "runs.csv"), [
        {"config": "srvecn+proxy", "completion_s": 10.0, "red_marked": 80},
        {"config": "srvecn+proxy", "completion_s": 12.0, "red_marked": 160},
        {"config": "srvecn+proxy", "completion_s": 99.0, "red_marked": 0, "use": False},
        {"config": "bothecn", "completion_s": 11.0, "red_marked": 40},
        {"config": "bothecn", "completion_s": 11.0, "red_marked": 40, "load": "series"}])
    runs_csv(os.path.join(d, "delay-20ms", "runs.csv"), [
        {"config": "noecn", "completion_s": 20.0, "red_marked": 0, "cross": "off"}])
    assert mechanism.main([d]) == 0
    out = capsys.readouterr().out
    # the unusable run is left out: median of 10 and 12, marks (80 + 160) / 2 / 8 MB
    assert "| load 1 | srvecn+proxy | 2 | 11.00 | 9.00 | 0.900 | 15.0 |" in out
    assert "| load 1 | bothecn | 1 | 11.00 | 9.00 | 0.900 | 5.0 |" in out
    # the series after the numeric loads, each delay its own table
    assert out.index("| load 1 | bothecn") < out.index("| series | bothecn")
    assert "Upload, cross traffic on, 0 ms added (medians):" in out
    assert "Upload, cross traffic off, 20 ms added (medians):" in out
    assert mechanism.main([d, "--cross", "off"]) == 0
    assert "cross traffic on" not in capsys.readouterr().out
    # without records: the two columns from them are "-"
    assert "| 5.0 | - | - |" not in out and out.count(" | - | - |") == 4


def test_record_columns(tmp_path, capsys):
    d = str(tmp_path)
    runs_csv(os.path.join(d, "runs.csv"), [
        {"config": "srvecn+proxy", "completion_s": 10.0, "red_marked": 0},
        {"config": "srvecn+proxy", "completion_s": 10.0, "red_marked": 0}])
    record(d, "run0", 8800000, 40)
    record(d, "run1", 8400000, 0)
    assert mechanism.main([d]) == 0
    out = capsys.readouterr().out
    # medians: link bytes per byte sent (1.10, 1.05), whole copies per MB (5, 0)
    assert out.rstrip().endswith("| 1.075 | 2.5 |")


def test_no_runs(tmp_path, capsys):
    assert mechanism.main([str(tmp_path)]) == 1
    assert "no runs.csv" in capsys.readouterr().err
    runs_csv(os.path.join(str(tmp_path), "runs.csv"),
             [{"config": "bothecn", "completion_s": 1.0, "red_marked": 0}])
    assert mechanism.main([str(tmp_path), "--direction", "download"]) == 1
    assert "no runs for that selection" in capsys.readouterr().err
