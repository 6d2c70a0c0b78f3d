# SPDX-License-Identifier: GPL-2.0
"""ecnproxy.vmtest.pcap_ecn's "n2e" verdict: the data a non-ECN client
sends through the proxy, judged against the client-side capture.

The case that failed CI once (proxy_synloss, feedback=drop): E's ECE
arrives while the client still has its last segment to send, the proxy
drops that segment (the congestion signal) and the client resends it.  On
the server side nothing higher has passed, so the Not-ECT retransmission
looks like new data there."""
from scapy.all import IP, TCP, Ether, wrpcap

from ecnproxy.vmtest import pcap_ecn
from test_pcapflow import C, CP, MSS, S, SP

ISN = 1000
NOT_ECT, ECT0 = 0, 2


def upload(path, segs):
    """Client SYN, server SYN-ACK with ECE, then the client's data SEGS,
    a list of (segment index, ECN codepoint), each ACKed."""
    pk = []

    def add(t, src, sport, dst, dport, flags, seq, tos=0, payload=0):
        p = Ether() / IP(src=src, dst=dst, tos=tos) / TCP(
            sport=sport, dport=dport, flags=flags, seq=seq, window=1000)
        if payload:
            p = p / (b"x" * payload)
        p.time = t
        pk.append(p)

    add(0.00, C, CP, S, SP, "S", ISN)
    add(0.01, S, SP, C, CP, "SAE", 5000)
    for i, (idx, ecn) in enumerate(segs):
        t = 0.02 + i * 0.01
        add(t, C, CP, S, SP, "A", ISN + 1 + idx * MSS, tos=ecn, payload=MSS)
        add(t + 0.005, S, SP, C, CP, "A", 5001)
    wrpcap(str(path), pk)


def n2e(tmp_path, client_side, server_side):
    cs, ss = tmp_path / "cs.pcap", tmp_path / "ss.pcap"
    upload(cs, client_side)
    upload(ss, server_side)
    return pcap_ecn.summarise(str(ss), SP, "server", str(cs))


def test_tail_segment_dropped_by_the_proxy(tmp_path):
    # the client sends 0..4 and resends 4; the proxy dropped the first 4
    res = n2e(tmp_path,
              [(i, NOT_ECT) for i in range(5)] + [(4, NOT_ECT)],
              [(i, ECT0) for i in range(4)] + [(4, NOT_ECT)])
    # the server side alone counts the retransmission as new data
    assert res["c2s"]["data"] == 5 and res["c2s"]["ect_data"] == 4
    assert res["n2e"] == dict(data=4, ect_data=4, n_rexmit=1)


def test_missing_ect_on_new_data_is_seen(tmp_path):
    # segment 2 was new at the client and left the proxy Not-ECT
    res = n2e(tmp_path, [(i, NOT_ECT) for i in range(5)],
              [(i, NOT_ECT if i == 2 else ECT0) for i in range(5)])
    assert res["n2e"] == dict(data=5, ect_data=4, n_rexmit=0)


def test_reordered_before_the_proxy(tmp_path):
    # 3 overtook 2 on the client side: the proxy saw 2 as old, sent it
    # Not-ECT, and the server side saw 2 before 3 (looks new there)
    res = n2e(tmp_path, [(0, 0), (1, 0), (3, 0), (2, 0), (4, 0)],
              [(0, ECT0), (1, ECT0), (2, NOT_ECT), (3, ECT0), (4, ECT0)])
    assert res["c2s"]["data"] == 5 and res["c2s"]["ect_data"] == 4
    assert res["n2e"] == dict(data=4, ect_data=4, n_rexmit=1)


def test_without_n_side_no_verdict(tmp_path):
    p = tmp_path / "ss.pcap"
    upload(p, [(0, ECT0)])
    assert "n2e" not in pcap_ecn.summarise(str(p), SP, "server")


def test_overlaps():
    r = [[10, 20], [30, 40]]
    assert pcap_ecn.overlaps(r, 15, 16)
    assert pcap_ecn.overlaps(r, 5, 11)
    assert pcap_ecn.overlaps(r, 19, 31)
    assert not pcap_ecn.overlaps(r, 20, 30)
    assert not pcap_ecn.overlaps(r, 0, 10)
    assert not pcap_ecn.overlaps(r, 40, 50)
    assert not pcap_ecn.overlaps([], 0, 10)
