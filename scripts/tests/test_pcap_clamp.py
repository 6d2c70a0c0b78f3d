# SPDX-License-Identifier: GPL-2.0
"""ecnproxy.vmtest.pcap_clamp: dupack-rwnd's clamp found by pairing E's
segments on both sides of the proxy (proxy_modes asserts with it)."""
from scapy.all import IP, TCP, Ether, wrpcap

from ecnproxy.vmtest import pcap_clamp
from test_pcapflow import C, CP, S, SP


def capture(path, acks, wscale=7, mss=1460, ts=True, fin=False):
    """N's SYN (MSS, timestamps), E's SYN-ACK (window scale, timestamps),
    one data segment of N's, then E's ACKs: (ack, window field) each, the
    same TSval on both sides (the proxy leaves it)."""
    o = [("Timestamp", (1, 0))] if ts else []
    pk = [Ether() / IP(src=C, dst=S) / TCP(sport=CP, dport=SP, flags="S", seq=100,
                                           options=[("MSS", mss)] + o),
          Ether() / IP(src=S, dst=C) / TCP(sport=SP, dport=CP, flags="SA", seq=500, ack=101,
                                           options=[("WScale", wscale)] + o),
          Ether() / IP(src=C, dst=S) / TCP(sport=CP, dport=SP, flags="A", seq=101, ack=501)
          / (b"x" * 4000)]     # GRO-merged: not the segment size
    if fin:     # N's FIN after its data: the sequence after it is 4102
        pk.append(Ether() / IP(src=C, dst=S) / TCP(sport=CP, dport=SP, flags="FA", seq=4101,
                                                   ack=501))
    for a, w in acks:
        pk.append(Ether() / IP(src=S, dst=C) / TCP(sport=SP, dport=CP, flags="A", seq=501,
                                                   ack=a, window=w))
    wrpcap(str(path), pk)


def test_clamped_acks_and_their_size(tmp_path):
    e, n = tmp_path / "e.pcap", tmp_path / "n.pcap"
    # E offers 500 units of 128 B; the clamp of 2 segments of 1448 B is
    # 23 units (2944 B), of 3 segments 34 (4352 B)
    # (a window lowered but to more than 9 segments is a held ACK's, not
    # a clamp; an ACK number E never sent pairs with nothing)
    capture(e, [(1000, 500), (2000, 500), (3000, 500), (3000, 500), (4000, 500), (4000, 500)])
    capture(n, [(1000, 500), (2000, 23), (3000, 34), (3000, 500), (4000, 400), (5000, 9)])
    r = pcap_clamp.compare(str(e), str(n), SP)
    assert (r["paired"], r["unpaired"], r["clamped"], r["lowered"], r["raised"]) == (5, 1, 2, 1, 0)
    assert r["wscale"] == 7 and r["smss"] == 1448
    assert r["clamp_segs"] == [2.03, 3.01]
    assert (r["min_segs"], r["max_segs"]) == (2.03, 3.01)


def test_a_raised_window_and_no_timestamps(tmp_path):
    e, n = tmp_path / "e.pcap", tmp_path / "n.pcap"
    capture(e, [(1000, 100)], wscale=0, ts=False)
    capture(n, [(1000, 200)], wscale=0, ts=False)
    r = pcap_clamp.compare(str(e), str(n), SP)
    assert (r["clamped"], r["raised"], r["smss"]) == (0, 1, 1460)
    assert r["min_segs"] is None and r["clamp_segs"] == []


def test_clamped_after_n_fin(tmp_path):
    e, n = tmp_path / "e.pcap", tmp_path / "n.pcap"
    # a clamped ACK of N's data before its FIN, and one of the FIN: only
    # the second counts
    capture(e, [(4101, 500), (4102, 500)], fin=True)
    capture(n, [(4101, 23), (4102, 23)], fin=True)
    r = pcap_clamp.compare(str(e), str(n), SP)
    assert (r["clamped"], r["clamped_after_fin"]) == (2, 1)
    capture(n, [(4101, 23), (4102, 500)], fin=True)
    assert pcap_clamp.compare(str(e), str(n), SP)["clamped_after_fin"] == 0
