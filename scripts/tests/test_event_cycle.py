# SPDX-License-Identifier: GPL-2.0
"""analysis/event_cycle.py on synthetic segments: an ECN sender's CWR
reductions and a proxied sender's retransmission episodes, each timed from
the first CE mark at the receiver after the previous CWR reached it; a
CE-marked round trip with no reduction within two round trips counts as
unanswered; the proxied sender's held ACK, its waits (from the first held ACK and
from the first with a SACK block) and hold."""
from ecnproxy.analysis import event_cycle as ec
from ecnproxy.analysis import pcapread

C, S = "198.18.1.2", "198.18.4.2"
P, CP = 5201, 40000
ACK, CWR, ECE = pcapread.ACK, pcapread.CWR, pcapread.ECE


def data(t, seq, n, flags=ACK, ecn=2):
    return (t, ecn, C, S, CP, P, seq, 1, flags, 500, n, b"")


def ack(t, a, flags=ACK, sack=None):
    raw = b""
    if sack:
        raw = bytes([1, 1, 5, 10]) + sack[0].to_bytes(4, "big") + sack[1].to_bytes(4, "big")
    return (t, 0, S, C, P, CP, 1, a, flags, 500, 0, raw)


def test_ecn_sender():
    # receiver: CE at 1.000, CWR at 1.010, CE at 1.020 (new data each)
    rcv = ec.receiver_view([data(1.000, 1000, 100, ecn=3), data(1.010, 1100, 100, CWR | ACK),
                            data(1.020, 1200, 100, ecn=3), ack(1.021, 1300, ACK | ECE)], P, CP)
    assert rcv[0] == [1.000, 1.020] and rcv[1] == [1.010] and rcv[2] == [1.021]
    # sender: CWR segments at 1.002 and 1.023
    snd = ec.sender_view([data(1.002, 1300, 100, CWR | ACK), data(1.023, 1400, 100, CWR | ACK)],
                         P, CP)
    out = ec.flow_events(rcv, snd, False, 0.005, 0.0, 2.0)
    assert out["reductions"] == 2
    assert [round(x * 1e3, 3) for x in out["reaction"]] == [2.0, 3.0]
    assert [round(x * 1e3, 3) for x in out["cycle"]] == [21.0]
    assert out["ce_rtts"] == 2 and out["unanswered"] == 0


def test_unanswered():
    rcv = ([1.000, 1.100], [], [])
    out = ec.flow_events(rcv, ([1.002], [], []), False, 0.005, 0.0, 2.0)
    assert out["ce_rtts"] == 2 and out["unanswered"] == 1


def test_proxied_sender():
    # N sends 1000..1400; E's ACKs: 1100 (the signal), 1100 again (held,
    # SACK 1200-1300); N retransmits 1100 at 1.010; release (ack 1400) 1.016
    segs = [data(1.000 + i / 1000, 1000 + i * 100, 100) for i in range(4)]
    segs += [ack(1.0035, 1050), ack(1.004, 1100), ack(1.007, 1100, sack=(1200, 1300)),
             data(1.010, 1100, 100), ack(1.016, 1400)]
    snd = ec.sender_view(segs, P, CP, mss=100)
    assert snd[1] == [(1.010, 1100)]
    rcv = ([1.001], [], [1.0035])
    out = ec.flow_events(rcv, snd, True, 0.005, 0.0, 2.0)
    assert out["reductions"] == 1
    assert round(out["reaction"][0] * 1e3, 3) == 9.0
    assert round(out["held_wait"][0] * 1e3, 3) == 3.0
    assert round(out["sack_wait"][0] * 1e3, 3) == 3.0
    assert round(out["hold"][0] * 1e3, 3) == 6.0
    assert round(out["ece_to_held"][0] * 1e3, 3) == 3.5
    # E's first ECE (1.0035) reached N as an ACK of 1050, with 3 full
    # 100-byte segments beyond it; the hold started on the next (1100)
    assert out["pending_flight"] == [0, 0, 1]


def test_held_ack_without_sack():
    # the floor: E's ACK of the withheld segment 1100 reaches N as a
    # duplicate without SACK (1.0045), E's ACK of 1200 as one with SACK
    # (1.0057); N retransmits 0.1 ms after the latter
    segs = [data(1.000 + i / 1000, 1000 + i * 100, 100) for i in range(3)]
    segs += [ack(1.004, 1100), ack(1.0045, 1100), ack(1.0057, 1100, sack=(1200, 1300)),
             data(1.0058, 1100, 100), ack(1.010, 1300)]
    snd = ec.sender_view(segs, P, CP, mss=100)
    out = ec.flow_events(([1.001], [], [1.0035]), snd, True, 0.005, 0.0, 2.0)
    assert round(out["held_wait"][0] * 1e3, 3) == 1.3
    assert round(out["sack_wait"][0] * 1e3, 3) == 0.1
    # no SACK before the reduction: no sack_wait
    segs2 = segs[:5] + [data(1.0050, 1100, 100), ack(1.010, 1300)]
    out2 = ec.flow_events(([1.001], [], [1.0035]), ec.sender_view(segs2, P, CP, mss=100),
                          True, 0.005, 0.0, 2.0)
    assert out2["sack_wait"] == [] and round(out2["held_wait"][0] * 1e3, 3) == 0.5
