# SPDX-License-Identifier: GPL-2.0
"""The stall classifier (analysis/stalls.py) on synthetic pcaps:
one small capture per cause, built with scapy in tmp_path, plus a flow
without a stall, a flow with several, and the causes only two captures
(both sides of the proxy) show.

Every trace is an upload from 198.18.0.2:40000 to 198.18.2.2:5001 unless
it says otherwise, segments of MSS bytes numbered from 0, the receiver's
ACK 10 ms after the segment it answers (the RTT at the capture), RTOs of
300 ms (the threshold is max(2 RTT, 200 ms) = 200 ms)."""
import pytest
from scapy.all import IP, TCP, Ether, wrpcap

from ecnproxy.analysis import pcapflow, schema, stalls
from test_schema import record

C, S, CP, SP = "198.18.0.2", "198.18.2.2", 40000, 5001
MSS = 1000
RTT = 0.01
RTO = 0.3
NOT_ECT, ECT0 = 0, 2


class Conn:
    """One connection's packets at one capture point.  Sender = the client
    for an upload (up=True), the server for a download."""

    def __init__(self, up=True, ecn=False, ts=False, wscale=None):
        self.up, self.ecn, self.ts, self.wscale = up, ecn, ts, wscale
        self.snd_isn, self.rcv_isn = (1000, 5000) if up else (5000, 1000)
        self.pk = []
        self.tsval = {}  # segment index -> TSval of its latest copy

    def _add(self, t, from_sender, flags, seq, ack, tos=0, payload=0, opts=(), win=65535):
        src, sport, dst, dport = (C, CP, S, SP) if from_sender == self.up else (S, SP, C, CP)
        if self.ts and "S" not in flags:
            tsval = int(t * 1000) + 1
            opts = list(opts) + [("Timestamp", (tsval, self._tsecr))]
        p = Ether() / IP(src=src, dst=dst, tos=tos) / TCP(
            sport=sport, dport=dport, flags=flags, seq=seq, ack=ack, window=win,
            options=list(opts))
        if payload:
            p = p / (b"x" * payload)
        p.time = t
        self.pk.append(p)
        return p

    _tsecr = 0

    def handshake(self, syn_times=(0.0,), synack_times=None, ack_time=None):
        """SYNs (the first ECN-setup if ecn, the others plain, as Linux's
        RFC 3168 fallback sends them), SYN-ACKs, the client's ACK."""
        synack_times = synack_times or (syn_times[-1] + RTT,)
        ack_time = ack_time if ack_time is not None else synack_times[-1] + RTT
        ci, si = (self.snd_isn, self.rcv_isn) if self.up else (self.rcv_isn, self.snd_isn)
        opts = [("MSS", MSS)] + ([("WScale", self.wscale)] if self.wscale is not None else [])
        for k, t in enumerate(syn_times):
            flags = "SEC" if self.ecn and k == 0 else "S"
            self._add(t, self.up, flags, ci, 0, opts=opts)
        for t in synack_times:
            self._add(t, not self.up, "SAE" if self.ecn else "SA", si, ci + 1, opts=opts)
        self._add(ack_time, self.up, "A", ci + 1, si + 1)

    def seq(self, i):
        return self.snd_isn + 1 + i * MSS

    def seg(self, t, i, tos=None, plen=MSS, flags="A"):
        """The sender's segment i (ECT(0) if ecn, unless tos is given)."""
        if tos is None:
            tos = ECT0 if self.ecn else NOT_ECT
        if self.ts:
            self.tsval[i] = int(t * 1000) + 1
        return self._add(t, True, flags, self.seq(i), self.rcv_isn + 1, tos, plen)

    def ack(self, t, i, win=65535, sack=None, tsecr=None):
        """The receiver's ACK of segments 0..i-1; sack: [(first, end)
        segment indices]; tsecr: echo of segment tsecr's TSval (default
        i - 1)."""
        if self.ts:
            self._tsecr = self.tsval.get(i - 1 if tsecr is None else tsecr, 0)
        opts = []
        if sack:
            opts.append(("SAck", tuple(x for a, b in sack for x in (self.seq(a), self.seq(b)))))
        return self._add(t, False, "A", self.rcv_isn + 1, self.seq(i), win=win, opts=opts)

    def acked(self, t, first, last, gap=0.002):
        """Segments first..last-1, each ACKed RTT later; -> the time after."""
        for i in range(first, last):
            self.seg(t, i)
            self.ack(t + RTT, i + 1)
            t += gap
        return t + RTT

    def fin(self, t, n):
        """The sender's FIN after n segments, the receiver's FIN-ACK, the ACK."""
        self._add(t, True, "FA", self.seq(n), self.rcv_isn + 1)
        self._add(t + RTT, False, "FA", self.rcv_isn + 1, self.seq(n) + 1)
        self._add(t + 2 * RTT, True, "A", self.seq(n) + 1, self.rcv_isn + 2)

    def write(self, path):
        self.pk.sort(key=lambda p: float(p.time))
        wrpcap(str(path), self.pk)
        return str(path)


def flow_of(path):
    fls = pcapflow.parse(path, SP)
    assert list(fls) == [CP]
    return fls[CP]


def causes(conn, tmp_path, peer=None, name="a"):
    fl = flow_of(conn.write(tmp_path / (name + ".pcap")))
    pf = flow_of(peer.write(tmp_path / (name + "-peer.pcap"))) if peer else None
    st = stalls.classify(fl, pf)
    # the data stalls are exactly pcapflow's stalls
    data = [s for s in st if s["cause"] != "handshake_retrans"]
    assert [(s["start"], s["end"]) for s in data] == [(a, b) for a, b, _x, _y in fl.intervals]
    return st


def only(st):
    """The cause of the one stall in st."""
    assert len(st) == 1, st
    return st[0]["cause"]


# --- one capture ---------------------------------------------------------

def test_no_stall(tmp_path):
    c = Conn()
    c.handshake()
    c.fin(c.acked(0.05, 0, 20), 20)
    assert causes(c, tmp_path) == []


def test_data_unavailable(tmp_path):
    c = Conn()
    c.handshake()
    t = c.acked(0.05, 0, 10)
    t = c.acked(t + 0.5, 10, 20)     # the application wrote nothing for 0.5 s
    c.fin(t, 20)
    st = causes(c, tmp_path)
    assert only(st) == "data_unavailable"
    assert st[0]["evidence"]["idle"] == pytest.approx(0.5, abs=0.005)


def test_rto_tail(tmp_path):
    c = Conn()
    c.handshake()
    t = c.acked(0.05, 0, 19)
    c.seg(t, 19, plen=500)            # the last, short segment is lost
    c.seg(t + RTO, 19, plen=500)      # RTO
    c.ack(t + RTO + RTT, 20)
    st = causes(c, tmp_path)
    assert only(st) == "rto_tail"
    assert st[0]["evidence"]["inflight"] == 500


def two_in_flight(c, win=65535):
    """Segments 10 and 11 in flight (the receiver's window win), 10 lost:
    one duplicate ACK, then the RTO's copy of 10; the flow goes on."""
    c.handshake()
    t = c.acked(0.05, 0, 10)
    c.ack(t, 10, win=win)
    c.seg(t + 0.001, 10)              # lost
    c.seg(t + 0.002, 11)
    c.ack(t + 0.002 + RTT, 10, win=win, sack=[(11, 12)])
    c.seg(t + RTO, 10)
    c.ack(t + RTO + RTT, 12)
    c.fin(c.acked(t + RTO + 2 * RTT, 12, 20), 20)


def test_rto_small_inflight(tmp_path):
    c = Conn()
    two_in_flight(c)
    st = causes(c, tmp_path)
    assert only(st) == "rto_small_inflight"
    assert st[0]["evidence"]["inflight"] == 2 * MSS


def test_rto_continuous_loss(tmp_path):
    c = Conn()
    c.handshake()
    t = c.acked(0.05, 0, 10)
    for i in range(10, 18):           # a whole window lost: no ACK at all
        c.seg(t + 0.001 * i, i)
    t += RTO
    c.seg(t, 10)
    c.ack(t + RTT, 11)
    c.fin(c.acked(t + 2 * RTT, 11, 24), 24)
    st = causes(c, tmp_path)
    assert only(st) == "rto_continuous_loss"
    assert st[0]["evidence"]["inflight"] == 8 * MSS


def lost_fast_retransmission(c, t, tos_rexmit=None):
    """Segment 10 lost, 11..15 arrive (5 duplicate ACKs with SACK), the
    fast retransmission of 10 is lost too, the RTO's copy arrives."""
    c.seg(t, 10)
    for k, i in enumerate(range(11, 16)):
        c.seg(t + 0.001 * (k + 1), i)
        c.ack(t + 0.001 * (k + 1) + RTT, 10, sack=[(11, i + 1)])
    c.seg(t + 0.03, 10, tos=tos_rexmit)            # fast retransmission, lost
    c.seg(t + 0.03 + RTO, 10, tos=tos_rexmit)      # RTO
    c.ack(t + 0.03 + RTO + RTT, 16)
    return t + 0.03 + RTO + 2 * RTT


@pytest.mark.parametrize("ecn, tos_rexmit, cause", [
    (False, None, "rto_double"),
    # ECN flow: new data ECT(0), retransmissions Not-ECT (RFC 3168)
    (True, NOT_ECT, "notect_rexmit_drop"),
    # the same loss with an ECT retransmission is no Not-ECT drop
    (True, ECT0, "rto_double")])
def test_lost_retransmission(tmp_path, ecn, tos_rexmit, cause):
    c = Conn(ecn=ecn)
    c.handshake()
    t = lost_fast_retransmission(c, c.acked(0.05, 0, 10), tos_rexmit=tos_rexmit)
    c.fin(c.acked(t, 16, 24), 24)
    st = causes(c, tmp_path)
    assert only(st) == cause
    assert st[0]["evidence"]["lost_rexmits"] == 1
    if cause == "notect_rexmit_drop":
        assert st[0]["evidence"]["ecn_view"] == "this capture"


def test_rto_ack_delay(tmp_path):
    """Segments 10..13 arrive, the receiver's ACK is held up for 0.35 s;
    the sender's RTO resends 10; the delayed ACK comes 2 ms later (too
    soon to answer the retransmission, and it echoes the original's
    TSval), then a D-SACK for the duplicate."""
    c = Conn(ts=True)
    c.handshake()
    t = c.acked(0.05, 0, 10)
    for i in range(10, 14):
        c.seg(t + 0.001 * (i - 10), i)
    c.seg(t + RTO, 10)
    c.ack(t + RTO + 0.002, 14, tsecr=13)
    c.ack(t + RTO + RTT, 14, sack=[(10, 11)], tsecr=10)
    c.fin(c.acked(t + RTO + 2 * RTT, 14, 20), 20)
    st = causes(c, tmp_path)
    assert only(st) == "rto_ack_delay"
    assert set(st[0]["evidence"]["spurious"]) == {"dsack", "tsecr", "early"}


def test_packet_delay(tmp_path):
    """No retransmission: 10..13's ACK arrives 0.35 s late."""
    c = Conn()
    c.handshake()
    t = c.acked(0.05, 0, 10)
    for i in range(10, 14):
        c.seg(t + 0.001 * (i - 10), i)
    c.ack(t + 0.35, 14)
    c.fin(c.acked(t + 0.36, 14, 20), 20)
    assert only(causes(c, tmp_path)) == "packet_delay"


def test_zero_window(tmp_path):
    """The receiver closes its window (scale 2) and opens it 0.5 s later."""
    c = Conn(wscale=2)
    c.handshake()
    t = c.acked(0.05, 0, 9)
    c.seg(t, 9)
    c.ack(t + RTT, 10, win=0)
    c.ack(t + 0.5, 10, win=1000)      # window update: 4000 bytes
    c.fin(c.acked(t + 0.51, 10, 20), 20)
    st = causes(c, tmp_path)
    assert only(st) == "rwnd_limited"
    assert st[0]["evidence"]["window"] == 0


def test_small_window_is_rwnd_limited(tmp_path):
    """A retransmission with 2 segments in flight because the receiver's
    window is 2 MSS: TAPO's rwnd-limited small retransmission."""
    c = Conn(wscale=0)
    two_in_flight(c, win=2 * MSS)
    st = causes(c, tmp_path)
    assert only(st) == "rwnd_limited"
    assert st[0]["evidence"]["window"] == 2 * MSS


def test_handshake_retransmission(tmp_path):
    """The ECN-setup SYN is dropped; the retransmission, plain, gets
    through 1 s later (RFC 3168 6.1.1.1)."""
    c = Conn(ecn=True)
    c.handshake(syn_times=(0.0, 1.0))
    c.fin(c.acked(1.05, 0, 10), 10)
    st = causes(c, tmp_path)
    assert only(st) == "handshake_retrans"
    ev = st[0]["evidence"]
    assert ev["syns"] == 2 and ev["synacks"] == 1
    assert ev["syn_ecn_setup"] == [True, False]
    assert st[0]["end"] - st[0]["start"] == pytest.approx(1.0 + 2 * RTT)


def test_synack_retransmission(tmp_path):
    c = Conn()
    c.handshake(syn_times=(0.0,), synack_times=(0.01, 1.01))
    c.fin(c.acked(1.05, 0, 10), 10)
    st = causes(c, tmp_path)
    assert only(st) == "handshake_retrans"
    assert st[0]["evidence"]["synacks"] == 2


def test_download_direction(tmp_path):
    """The server sends: the same tail loss, classified on s2c."""
    c = Conn(up=False)
    c.handshake()
    t = c.acked(0.05, 0, 19)
    c.seg(t, 19, plen=300)
    c.seg(t + RTO, 19, plen=300)
    c.ack(t + RTO + RTT, 20)
    fl = flow_of(c.write(tmp_path / "dl.pcap"))
    assert fl.dd == "s2c"
    assert only(stalls.classify(fl)) == "rto_tail"


def test_several_stalls(tmp_path):
    """An idle sender, a continuous loss, then a tail loss: three stalls in
    time order, and the record's breakdown and totals."""
    c = Conn()
    c.handshake()
    t = c.acked(0.05, 0, 10)
    t = c.acked(t + 0.4, 10, 14)
    for i in range(14, 20):
        c.seg(t + 0.001 * (i - 14), i)
    t += RTO
    c.seg(t, 14)
    c.ack(t + RTT, 15)
    t = c.acked(t + 2 * RTT, 15, 29)
    c.seg(t, 29, plen=100)
    c.seg(t + 2 * RTO, 29, plen=100)
    c.ack(t + 2 * RTO + RTT, 30)
    path = c.write(tmp_path / "multi.pcap")
    st = causes(c, tmp_path)
    assert [s["cause"] for s in st] == ["data_unavailable", "rto_continuous_loss", "rto_tail"]
    rec = pcapflow.analyze(path, SP)[CP]
    assert rec["stalls"] == 3
    bd = rec["stall_causes"]
    assert list(bd) == ["rto_tail", "rto_continuous_loss", "data_unavailable"]  # CAUSES order
    assert bd["rto_tail"]["count"] == 1
    assert bd["rto_tail"]["time"] == pytest.approx(2 * RTO + RTT, abs=0.005)
    assert sum(v["time"] for v in bd.values()) == pytest.approx(rec["stall_time"], abs=1e-5)
    assert [s["cause"] for s in rec["stall_list"]] == [s["cause"] for s in st]
    tot = pcapflow.totals({CP: rec, CP + 1: rec})
    assert tot["stall_causes"]["rto_tail"] == {"count": 2, "time": round(2 * bd["rto_tail"]["time"], 6)}


def test_breakdown_helpers():
    st = [{"cause": "rto_tail", "start": 1.0, "end": 1.5},
          {"cause": "packet_delay", "start": 2.0, "end": 2.25},
          {"cause": "rto_tail", "start": 3.0, "end": 3.25}]
    bd = stalls.breakdown(st)
    assert bd == {"rto_tail": {"count": 2, "time": 0.75},
                  "packet_delay": {"count": 1, "time": 0.25}}
    assert stalls.add_breakdowns([bd, {"unknown": {"count": 1, "time": 1.0}}]) == {
        "rto_tail": {"count": 2, "time": 0.75}, "packet_delay": {"count": 1, "time": 0.25},
        "unknown": {"count": 1, "time": 1.0}}
    assert stalls.breakdown([]) == {}


# --- two captures: both sides of the proxy (upload: N = client, E = server)

def both(ecn_e=False):
    """(N side, E side) of one upload through the proxy; on the E side the
    proxy's ECT on N's new data when ecn_e."""
    n, e = Conn(), Conn(ecn=ecn_e)
    for x in (n, e):
        x.handshake()
    return n, e


def test_dupack_hold_of_acks(tmp_path):
    """E acknowledges 10..15 as they come; the proxy shows N duplicate ACKs
    of 10 (the simulated loss) and holds the ACK number 0.4 s."""
    n, e = both()
    t = 0.05
    for x in (n, e):
        t1 = x.acked(t, 0, 10)
        for i in range(10, 16):
            x.seg(t1 + 0.001 * (i - 10), i)
    for i in range(10, 16):
        e.ack(t1 + 0.001 * (i - 10) + RTT, i + 1)
        n.ack(t1 + 0.001 * (i - 10) + RTT + 0.0001, 10, sack=[(11, i + 1)] if i > 10 else None)
    n.ack(t1 + 0.4, 16)               # released
    for x in (n, e):
        x.fin(x.acked(t1 + 0.41, 16, 20), 20)
    st = causes(n, tmp_path, peer=e)
    assert only(st) == "dupack_hold"
    assert st[0]["evidence"]["held_acks"] == 6
    # without the E side it is just a late delivery
    assert only(causes(n, tmp_path, name="alone")) == "packet_delay"
    # the E side: everything acknowledged, and N, not told, sends nothing
    st = causes(e, tmp_path, peer=n, name="e")
    assert only(st) == "dupack_hold"
    assert st[0]["evidence"]["peer_behind"] == 6 * MSS
    assert only(causes(e, tmp_path, name="e-alone")) == "data_unavailable"


def suppressed_retransmission():
    """(N side, E side): L = 10 was lost behind the proxy; E reports the
    hole; the proxy drops N's first retransmission of L (it believes E
    has it), and only N's RTO copy reaches E."""
    n, e = both()
    t = 0.05
    for x in (n, e):
        t1 = x.acked(t, 0, 10)
        x.seg(t1, 10)
        for k, i in enumerate(range(11, 15)):
            x.seg(t1 + 0.001 * (k + 1), i)
            x.ack(t1 + 0.001 * (k + 1) + RTT, 10, sack=[(11, i + 1)])
    n.seg(t1 + 0.03, 10)              # suppressed: not on the E side
    for x in (n, e):
        x.seg(t1 + 0.03 + RTO, 10)
        x.ack(t1 + 0.03 + RTO + RTT, 15)
        x.fin(x.acked(t1 + 0.03 + RTO + 2 * RTT, 15, 20), 20)
    return n, e


def test_dupack_hold_suppressed_retransmission(tmp_path):
    n, e = suppressed_retransmission()
    st = causes(e, tmp_path, peer=n)
    assert only(st) == "dupack_hold"
    assert st[0]["evidence"]["seen_only"] == "peer"
    st = causes(n, tmp_path, peer=e, name="n")
    assert only(st) == "dupack_hold"
    assert st[0]["evidence"]["seen_only"] == "this capture"
    # the E side alone: a timeout after duplicate ACKs it cannot explain
    st = causes(e, tmp_path, name="e-alone")
    assert only(st) == "rto_other"
    assert st[0]["evidence"]["dupacks"] == 4


def test_notect_drop_across_the_proxy(tmp_path):
    """feedback=drop, as in results/quick-20261121-2: the proxy drops N's
    segment 10 (the congestion signal); N's fast retransmission leaves
    the proxy Not-ECT and RED drops it; so does the first RTO copy; the
    second gets through.  N's data is Not-ECT on the N side, so only the
    E side shows that the flow was ECT and its retransmissions not."""
    n, e = both(ecn_e=True)
    t = 0.05
    for x in (n, e):
        t1 = x.acked(t, 0, 10)
    n.seg(t1, 10)                     # dropped by the proxy
    for x in (n, e):
        for k, i in enumerate(range(11, 15)):
            x.seg(t1 + 0.001 * (k + 1), i)
            x.ack(t1 + 0.001 * (k + 1) + RTT, 10, sack=[(11, i + 1)])
        for dt in (0.03, 0.03 + RTO, 0.03 + 3 * RTO):
            x.seg(t1 + dt, 10, tos=NOT_ECT)
        x.ack(t1 + 0.03 + 3 * RTO + RTT, 15)
        x.fin(x.acked(t1 + 0.03 + 3 * RTO + 2 * RTT, 15, 20), 20)
    st = causes(n, tmp_path, peer=e)
    assert only(st) == "notect_rexmit_drop"
    assert st[0]["evidence"]["ecn_view"] == "peer"
    assert st[0]["evidence"]["lost_rexmits"] == 2
    assert only(causes(n, tmp_path, name="n-alone")) == "rto_double"
    st = causes(e, tmp_path, peer=n, name="e")
    assert only(st) == "notect_rexmit_drop"
    assert st[0]["evidence"]["ecn_view"] == "this capture"


def test_peer_with_other_numbering_is_ignored(tmp_path):
    n, e = both()
    e.snd_isn += 1 << 31              # not the same sequence space
    for x in (n, e):
        x.pk.clear()
        x.handshake()
        x.fin(x.acked(0.05, 0, 5) + 0.5, 5)
    fl = flow_of(n.write(tmp_path / "n.pcap"))
    pf = flow_of(e.write(tmp_path / "e.pcap"))
    ctx = stalls._Ctx(fl, pf)
    assert ctx.peer is None and "ignored" in ctx.peer_note


def test_analyze_captures_and_record(tmp_path):
    """What guest/matrix.py stores: both captures analysed together, the
    breakdown per flow and per capture, a valid record."""
    n, e = suppressed_retransmission()
    ana = pcapflow.analyze_captures({"client_side": n.write(tmp_path / "n.pcap"),
                                     "server_side": e.write(tmp_path / "e.pcap")},
                                    SP, {CP})
    rec = record()
    rec["params"]["direction"] = "upload"
    for side in ("client_side", "server_side"):
        cap = ana[side]
        fl = cap["flows"][str(CP)]
        assert list(fl["stall_causes"]) == ["dupack_hold"]
        assert fl["stall_causes"]["dupack_hold"]["count"] == fl["stalls"] == 1
        assert [x["cause"] for x in fl["stall_list"]] == ["dupack_hold"]
        assert cap["totals"]["stall_causes"] == fl["stall_causes"]
        rec["capture"][side] = cap
    rec["transfer"]["conns"][0]["port"] = CP
    assert schema.validate(rec) == []
    # one capture alone cannot see the proxy
    alone = pcapflow.analyze(str(tmp_path / "e.pcap"), SP)[CP]
    assert list(alone["stall_causes"]) == ["rto_other"]
