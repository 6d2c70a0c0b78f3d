# SPDX-License-Identifier: GPL-2.0
"""analysis/events.py: N's flight against the window it was offered."""
from ecnproxy.analysis import events


def seg(t, seq, ln):
    return {"t": t, "seq": seq, "len": ln, "fl": 16, "ack": 0, "win": 0}


def ack(t, a, win):
    return {"t": t, "ack": a, "win": win, "len": 0, "fl": 16}


def test_window_use_flight_and_limit():
    # two segments of 1000 bytes in flight for 1 s, offered exactly two
    # (edge at 2000): held back by the window the whole second; then the
    # ACK opens 10 segments and one more segment goes out
    data = [seg(0.0, 0, 1000), seg(0.0, 1000, 1000), seg(2.0, 2000, 1000)]
    acks = [ack(-0.1, 0, 2000 >> 2), ack(1.0, 2000, 10000 >> 2)]
    wu = events.window_use(data, acks, 2)
    assert wu["smss"] == 1000
    # flight 2 segments over [0, 1), 0 over [1, 2]
    assert wu["mean_flight_segs"] == 1.0
    assert wu["rwnd_limited_s"] == 1.0 and wu["rwnd_limited_share"] == 0.5


def test_window_use_room_for_a_segment_is_not_limited():
    data = [seg(0.0, 0, 1000), seg(1.0, 1000, 1000)]
    acks = [ack(-0.1, 0, 3000)]
    wu = events.window_use(data, acks, 0)
    assert wu["rwnd_limited_s"] == 0 and wu["mean_flight_segs"] == 1.0


def test_window_use_without_data():
    assert events.window_use([], [ack(0, 0, 100)], 0) is None


def test_syn_ack_wscale():
    from ecnproxy.analysis import pcapread
    opts = bytes([3, 3, 7, 0])          # window scale 7, then end of options
    assert pcapread.tcp_options(opts).get("wscale") == 7
    pk = (0.0, 0, "s", "d", 80, 5000, 0, 1, 0x12, 100, 0, opts)
    assert events.syn_ack_wscale([pk], 80, 5000) == 7
    assert events.syn_ack_wscale([pk], 80, 5001) == 0


def test_short_segments_leave_out_the_tail():
    data = [seg(0, 0, 1000), seg(0, 1000, 48), seg(0, 1048, 1000), seg(0, 2048, 10)]
    assert events.short_segments(data) == (1, 48)
    assert events.short_segments([]) == (0, 0)


def test_ack_delays():
    # two segments leave E's side of the proxy at 0 and 0.001, depart the
    # bottleneck at 0.002 and 0.004; E acks both at 0.010 (delayed)
    de = [seg(0.0, 0, 1000), seg(0.001, 1000, 1000)]
    db = [seg(0.002, 0, 1000), seg(0.004, 1000, 1000), seg(0.005, 0, 1000)]
    ae = [ack(0.003, 0, 100), ack(0.010, 2000, 100)]
    q, b = events.ack_delays(de, db, ae)
    assert [round(x, 6) for x in q] == [0.002, 0.003]
    assert [round(x, 6) for x in b] == [0.008, 0.006]


def test_ack_clock_counts_acks_per_segment_and_trimmed_bytes():
    data = [seg(0.0, 0, 1000), seg(0.1, 1000, 1000), seg(0.2, 999, 1), seg(0.3, 2000, 1000)]
    acks = [ack(0.05, 2000, 100), ack(0.25, 2000, 100)]
    assert events.ack_clock(data, acks) == (0.5, 1)
    assert events.ack_clock([], acks) == (None, 0)
