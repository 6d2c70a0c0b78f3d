# SPDX-License-Identifier: GPL-2.0
"""analysis/ss_scan.py: the data connection (most bytes acked) of each
sample, its minrtt, reordering, reord_seen and retransmissions."""
from ecnproxy.analysis import ss_scan

TEXT = """t 100.0
ESTAB 0 0 198.18.1.2:40000 198.18.4.2:5201
\t cubic wscale:7,7 rto:204 rtt:25.1/2 minrtt:20.5 reordering:3 reord_seen:0 bytes_acked:5000 retrans:0/2
ESTAB 0 0 198.18.1.2:39999 198.18.4.2:5201
\t cubic minrtt:0.3 bytes_acked:50
t 111.0
ESTAB 0 0 198.18.1.2:40000 198.18.4.2:5201
\t cubic minrtt:1.2 reordering:7 reord_seen:4 bytes_acked:9000 retrans:1/9
"""


def test_parse(tmp_path, capsys):
    p = tmp_path / "c-ss.txt"
    p.write_text(TEXT)
    s = ss_scan.parse(str(p))
    assert [t for t, _ in s] == [100.0, 111.0]
    assert s[0][1]["minrtt"] == 20.5          # not the control connection's 0.3
    assert s[1][1]["reord_seen"] == 4 and s[1][1]["retrans"] == 9
    assert ss_scan.main([str(p)]) == 0
    row = capsys.readouterr().out.strip().split("\n")[-1]
    assert row == "| c-ss.txt | 2 | 1.20 | 1.20 | 1.20 | 7 | 4 | 9 |"
