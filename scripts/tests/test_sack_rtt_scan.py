# SPDX-License-Identifier: GPL-2.0
"""analysis/sack_rtt_scan.py on a synthetic capture: a SACK block that
claims a segment sent 1 ms earlier gives a 1 ms sample; a TSecr raised to
a retransmission's TSval gives a 1 ms TSecr sample under Karn; an ACK that
advances during a recovery with a TSecr older than the retransmission
makes the episode stale; the iperf3 control connection is ignored."""
import pytest

from scapy.all import IP, TCP, Ether, wrpcap

from ecnproxy.analysis import sack_rtt_scan as scan_mod

C, S = "198.18.1.2", "198.18.4.2"


def seg(t, sport, dport, seq, ack, n, tsval, tsecr, sack=None, src=C, dst=S):
    opts = [("Timestamp", (tsval, tsecr))]
    if sack:
        opts = [("NOP", None), ("NOP", None), ("SAck", sack)] + opts
    p = Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, flags="A", seq=seq,
                                             ack=ack, options=opts) / (b"x" * n)
    p.time = t
    return p


def test_scan(tmp_path):
    D, M = 40000, 1000
    pk = [seg(0.5, 39999, 5201, 1, 1, 5, 400, 0)]            # control connection
    # data 1000..5000 at 1.000-1.003, TSval = ms
    for i in range(4):
        pk.append(seg(1.0 + i / 1000, D, 5201, 1000 + i * M, 1, M, 1000 + i, 0))
    # a claimed SACK of [4000, 5000), sent at 1.003, arriving at 1.004
    pk.append(seg(1.004, 5201, D, 1, 1000, 0, 9, 999, sack=(4000, 5000), src=S, dst=C))
    # an ordinary ACK of the first segment, 20 ms after it: path RTT 20 ms
    pk.append(seg(1.020, 5201, D, 1, 2000, 0, 9, 1000, src=S, dst=C))
    # a duplicate ACK SACKing [3000, 4000) (sent at 1.002: a 23 ms sample)
    pk.append(seg(1.025, 5201, D, 1, 2000, 0, 9, 1002, sack=(3000, 4000), src=S, dst=C))
    # N retransmits 2000 (TSval 1030): an episode, high = 5000
    pk.append(seg(1.030, D, 5201, 2000, 1, M, 1030, 9))
    # an ACK over the retransmitted segment alone, its TSecr raised to the
    # retransmission's TSval: Karn leaves the TSecr, a 0 ms sample taken as 1
    pk.append(seg(1.0304, 5201, D, 1, 3000, 0, 9, 1030, src=S, dst=C))
    # the original's ACK, TSecr 1001 < 1030, advances: stale; it acks
    # [3000, 4000), already SACKed: the TSecr sample, 1031 - 1001
    pk.append(seg(1.031, 5201, D, 1, 4000, 0, 9, 1001, src=S, dst=C))
    # only SACKed data newly acked: the TSecr sample, 1040 - 1003
    pk.append(seg(1.040, 5201, D, 1, 5000, 0, 9, 1003, src=S, dst=C))
    # a TSecr of 0 gives none
    pk.append(seg(1.041, D, 5201, 5000, 1, M, 1041, 9))
    pk.append(seg(1.045, 5201, D, 1, 6000, 0, 9, 0, src=S, dst=C))
    path = str(tmp_path / "c.pcap")
    wrpcap(path, pk)
    r = scan_mod.scan(path, 5201)
    assert r["episodes"] == 1 and r["stale_partial"] == 1
    assert r["sack_rtt"] == [pytest.approx(1.0, abs=0.01), pytest.approx(23.0, abs=0.01)]
    assert min(r["ts_rtt"]) >= 19.9           # 1.020 - 1.000
    assert r["ts_rtt_karn"] == [1, 30, 37]
    # the retransmission of 2000 at 1.030, 5 ms after the SACK dupack
    assert r["rexmit_delay"] == [pytest.approx(5.0, abs=0.01)]


def test_p50_p90():
    """The median of an even count is the mean of the middle two, the
    90th percentile the ceil(0.9 n)-th smallest (nearest rank)."""
    assert scan_mod.p50_p90([]) == (None, None)
    assert scan_mod.p50_p90([3.0]) == (3.0, 3.0)
    assert scan_mod.p50_p90([4.0, 1.0, 3.0, 2.0]) == (2.5, 4.0)
    xs = list(range(1, 11))
    assert scan_mod.p50_p90(xs) == (5.5, 9)
    assert scan_mod.p50_p90(list(range(1, 21)))[1] == 18
