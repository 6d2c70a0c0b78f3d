# SPDX-License-Identifier: GPL-2.0
"""tables.mechanism: per cell and configuration, the medians of runs.csv
(per MB where the column says so), one table per added delay."""
import os

import pandas as pd

from ecnproxy.tables import mechanism


def runs_csv(path, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    base = {"direction": "upload", "cross": "on", "load": "1", "use": True,
            "total_bytes": 8000000, "transfer_s": 9.0, "utilisation": 0.9,
            "ss_cwr": 0, "snd_retrans_segs": 0, "queue_p50_bytes": 1000,
            "rcv_segs_per_seg": 0.5, "udp_rate_bps": 4e6, "proxy_congestion_events": 0}
    pd.DataFrame([dict(base, **r) for r in rows]).to_csv(path, index=False)


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


def test_no_runs(tmp_path, capsys):
    assert mechanism.main([str(tmp_path)]) == 1
    assert "no runs.csv" in capsys.readouterr().err
    runs_csv(os.path.join(str(tmp_path), "runs.csv"),
             [{"config": "bothecn", "completion_s": 1.0, "red_marked": 0}])
    assert mechanism.main([str(tmp_path), "--direction", "download"]) == 1
    assert "no runs for that selection" in capsys.readouterr().err
