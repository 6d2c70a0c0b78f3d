# SPDX-License-Identifier: GPL-2.0
"""ecnproxy.vmtest.impair_pcap's split and coalesce checks (the VM tests
impair_split.sh and impair_coalesce.sh), on the cases of their first run
(results/vmtest-split-coalesce-20261202): pieces and joined segments lost
after the proxy, retransmissions that look like another segment's piece
or pair, GSO packets the sender's capture saw whole."""
import json

import pytest
from scapy.all import IP, TCP, Ether, IPv6, wrpcap

from ecnproxy.vmtest import impair_pcap as ip

C, S, C6, S6, CP, SP = "198.18.0.2", "198.18.2.2", "fd00::2", "fd00:2::2", 40000, 5001


# Explicit MAC addresses: without them scapy resolves an IPv6 destination's
# address by neighbour solicitation and waits for its timeout.
ETH = {"src": "02:00:00:00:00:01", "dst": "02:00:00:00:00:02"}


def seg(seq, n, ts=None, ack=1, win=500, v6=False, flags="A", mss=None, rev=False):
    """One TCP packet (client -> server unless @rev), @n payload bytes,
    a timestamp option if @ts (12 bytes, header 32), an MSS option."""
    opts = []
    if ts is not None:
        opts += [("NOP", None), ("NOP", None), ("Timestamp", (ts, 0))]
    if mss:
        opts += [("MSS", mss)]
    src, dst = (C6, S6) if v6 else (C, S)
    sp, dp = CP, SP
    if rev:
        src, dst, sp, dp = dst, src, dp, sp
    net = IPv6(src=src, dst=dst) if v6 else IP(src=src, dst=dst)
    p = Ether(**ETH) / net / TCP(sport=sp, dport=dp, flags=flags, seq=seq % (1 << 32),
                            ack=ack, window=win, options=opts)
    return p / (b"x" * n) if n else p


def segs(tmp_path, name, pkts):
    path = str(tmp_path / name)
    wrpcap(path, pkts)
    return ip.data_segs(ip.packets(path, SP))


def test_split_lost_after_the_proxy(tmp_path):
    # 3 segments split at 100, options on the first piece; one second
    # piece lost at the bottleneck: the receiver alone would say "pieces
    # missing" (the first run's IPv4 and IPv6 "split at 100" failures)
    sent = segs(tmp_path, "c", [seg(1000 + i * 1448, 1448, ts=i) for i in range(3)])
    pieces = []
    for i in range(3):
        pieces += [seg(1000 + i * 1448, 100, ts=i), seg(1100 + i * 1448, 1348)]
    out = segs(tmp_path, "p", pieces)
    got = segs(tmp_path, "s", pieces[:3] + pieces[4:])
    res = ip.split_check("all", 100, "first", sent, out, got)
    assert res == {"sent": 3, "arrived": 6, "split": 3, "whole": 0, "bad": [], "lost": 1}
    assert ip.split_check("all", 100, "first", sent, got)["bad"] == [
        "seq 2448 len 1448: pieces missing",
        "seq 2448 len 100: no piece of a segment the client sent"]


def test_split_retransmission_like_a_piece(tmp_path):
    # halves; the receiver acked the first half, so the sender resent the
    # second half alone: (1724, 724) is a piece and a segment, split again
    sent = segs(tmp_path, "c", [seg(1000, 1448, ts=1), seg(1724, 724, ts=2)])
    out = segs(tmp_path, "p", [seg(1000, 724), seg(1724, 724, ts=1),
                               seg(1724, 362), seg(2086, 362, ts=2)])
    res = ip.split_check("all", 0, "second", sent, out)
    assert (res["split"], res["whole"], res["bad"]) == (2, 0, [])


def test_split_headers_and_strays(tmp_path):
    sent = segs(tmp_path, "c", [seg(1000, 1000, ts=1)])
    # both pieces with the options where "first" was asked
    out = segs(tmp_path, "p", [seg(1000, 500, ts=1), seg(1500, 500, ts=1)])
    res = ip.split_check("all", 0, "first", sent, out)
    assert res["bad"] == ["seq 1000: header lengths 32/32, want 32/20"]
    assert ip.split_check("all", 0, "both", sent, out)["split"] == 1
    # not split; a segment the client never sent
    out = segs(tmp_path, "p", [seg(1000, 1000, ts=1), seg(9000, 10)])
    res = ip.split_check("all", 0, "both", sent, out)
    assert res["whole"] == 1 and res["bad"] == [
        "seq 1000 len 1000 not split",
        "seq 9000 len 10: no piece of a segment the client sent"]


def test_split_nth_and_short(tmp_path):
    sent = segs(tmp_path, "c", [seg(1000 + i * 100, 100) for i in range(4)])
    out = segs(tmp_path, "p", [seg(1000, 100), seg(1100, 50), seg(1150, 50),
                               seg(1200, 100), seg(1300, 100)])
    res = ip.split_check("nth:2", 0, "both", sent, out)
    assert (res["split"], res["whole"], res["bad"]) == (1, 3, [])
    # a cut beyond every segment: all whole, none a problem
    out = segs(tmp_path, "p", [seg(1000 + i * 100, 100) for i in range(4)])
    assert ip.split_check("all", 60000, "both", sent, out)["whole"] == 4


def test_split_gso_packets_expanded(tmp_path):
    # TSO: the client's capture has 4-segment packets; the proxy segments
    # them (gso_size 1460 - 12) and halves each segment (the first run's
    # "split half with GSO senders" failures); IPv6 too
    for v6, mss in ((False, 1460), (True, 1440)):
        size = mss - 12
        c = [seg(999, 0, ts=0, flags="S", mss=mss, v6=v6),
             seg(4999, 0, ts=0, flags="SA", mss=mss, v6=v6, rev=True),
             seg(1000, 4 * size, ts=5, v6=v6), seg(1000 + 4 * size, 300, ts=6, v6=v6)]
        out = []
        for i in range(4):
            out += [seg(1000 + i * size, size // 2, ts=5, v6=v6),
                    seg(1000 + i * size + size // 2, size // 2, ts=5, v6=v6)]
        out += [seg(1000 + 4 * size, 150, ts=6, v6=v6), seg(1150 + 4 * size, 150, ts=6, v6=v6)]
        wrpcap(str(tmp_path / "c.pcap"), c)
        wrpcap(str(tmp_path / "p.pcap"), out)
        cpk = ip.packets(str(tmp_path / "c.pcap"), SP)
        assert ip.sender_mss(cpk) == size
        sent = ip.gso_expand(ip.data_segs(cpk), ip.sender_mss(cpk))
        assert [x["len"] for x in sent] == [size] * 4 + [300]
        res = ip.split_check("all", 0, "both", sent, segs(tmp_path, "p2", out))
        assert (res["sent"], res["split"], res["bad"]) == (5, 5, [])


def test_coalesce_retransmission_of_the_first(tmp_path):
    # segment a sent twice (new timestamp, new ack): the join used the
    # first transmission's header; the old check took the last one and
    # said "header not the first segment's" (the first run's first-v4)
    sent = segs(tmp_path, "c", [seg(1000, 488, ts=1, ack=10), seg(1488, 488, ts=2, ack=11),
                                seg(1000, 488, ts=9, ack=20)])
    out = segs(tmp_path, "p", [seg(1000, 976, ts=1, ack=10), seg(1000, 488, ts=9, ack=20)])
    res = ip.coalesce_check("first", sent, out)
    assert (res["joined"], res["differ"], res["bad"]) == (1, 1, [])
    assert res["max_len"] == 20 + 32 + 976
    # the second's header where the first's was asked for
    out = segs(tmp_path, "p", [seg(1000, 976, ts=2, ack=11)])
    assert ip.coalesce_check("first", sent, out)["bad"] == [
        "seq 1000: header not the first segment's"]
    assert ip.coalesce_check("second", sent, out)["joined"] == 1


def test_coalesce_lost_after_the_proxy(tmp_path):
    # 8 segments, 4 pairs joined by the proxy, one joined segment lost at
    # the bottleneck: coalesced (4) = joined at the proxy's egress; at the
    # receiver 3 (the first run's "coalesced = joined arrivals" failures)
    for v6 in (False, True):
        sent = segs(tmp_path, "c", [seg(1000 + i * 488, 488, ts=i, v6=v6) for i in range(8)])
        joined = [seg(1000 + i * 976, 976, ts=2 * i, v6=v6) for i in range(4)]
        res = ip.coalesce_check("first", sent, segs(tmp_path, "p", joined),
                                segs(tmp_path, "s", joined[:2] + joined[3:]))
        assert (res["joined"], res["arrived"], res["lost"], res["bad"]) == (4, 4, 1, [])
        assert res["max_len"] == (40 if v6 else 20) + 32 + 976
        assert ip.coalesce_check("first", sent, segs(tmp_path, "s", joined[:3]))["joined"] == 3


def test_coalesce_no_pair_and_strays(tmp_path):
    sent = segs(tmp_path, "c", [seg(1000, 488), seg(1488, 488)])
    out = segs(tmp_path, "p", [seg(1000, 900)])
    got = segs(tmp_path, "s", [seg(1000, 900), seg(5000, 10)])
    res = ip.coalesce_check("first", sent, out, got)
    assert res["bad"] == ["seq 1000 len 900 is no pair of client segments",
                          "seq 5000 len 10 arrived, not sent on by the proxy"]


def test_command_line(tmp_path, capsys):
    wrpcap(str(tmp_path / "c.pcap"), [seg(1000, 1000, ts=1)])
    wrpcap(str(tmp_path / "p.pcap"), [seg(1000, 500, ts=1), seg(1500, 500)])
    ip.main(["split", str(SP), "all", "0", "first", str(tmp_path / "c.pcap"),
             str(tmp_path / "p.pcap"), str(tmp_path / "p.pcap")])
    res = json.loads(capsys.readouterr().out)
    assert (res["split"], res["lost"], res["bad"]) == (1, 0, [])
    ip.main(["coalesce", str(SP), "first", str(tmp_path / "c.pcap"), str(tmp_path / "c.pcap")])
    assert json.loads(capsys.readouterr().out)["arrived"] == 1


def test_xfer_pause_delays_the_fin():
    # impair_coalesce.sh's lone held segment: the client's FIN must not
    # follow its data at once (the FIN releases the held segment, as it
    # did in the first run: 0.01 s transfers, coalesce_timeout_released
    # and held never moved)
    import socket
    import threading
    import time

    from ecnproxy.vmtest import xfer

    assert xfer.options(["client", "h", "1", "200", "--pause", "1.5"]) == (
        ["client", "h", "1", "200"], False, None, "4", 1.5)
    for bad in ("-1", "nan", "x"):
        with pytest.raises(ValueError):
            xfer.options(["client", "h", "1", "200", "--pause", bad])
    a, b = socket.socketpair()
    seen = {}

    def peer():
        data = b""
        while len(data) < 200:
            data += b.recv(4096)
        seen["data"] = time.monotonic()
        assert b.recv(4096) == b""     # the FIN
        seen["fin"] = time.monotonic()
        b.sendall(xfer.payload(7))
        b.close()

    t = threading.Thread(target=peer)
    t.start()
    res = xfer.exchange(a, True, 200, pause=0.3)
    t.join()
    assert res["received"] == 7 and "error" not in res
    assert seen["fin"] - seen["data"] >= 0.25
