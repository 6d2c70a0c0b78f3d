# SPDX-License-Identifier: GPL-2.0
"""Why a TCP flow stalled: the cause of every stall pcapflow.py finds.

classify(flow, peer=None) -> [stall], flow and peer being pcapflow.Flow
objects (pcapflow.parse()) of one connection, peer captured elsewhere on
the same clock (the matrix: the captures on both sides of the proxy node,
client side and server side).  A stall is a dict: "cause" (a key of
CAUSES), "start", "end" (capture timestamps) and "evidence" (a dict of the
numbers the decision used: sequence numbers relative to the data
sender's ISN, times in seconds).  breakdown(stalls) -> {cause: {"count",
"time"}}, the form the run records keep.

After Zhou et al., "Demystifying and Mitigating TCP Stalls at the Server
Side", ACM CoNEXT 2015 (doi:10.1145/2716281.2836094; journal version IEEE/
ACM ToN 27(1), 2019), tool TAPO.  The project's summary of the paper is in
../shared/docs/impairments-reference.md ("TCP stalls").  The paper's text
was not at hand; what is taken from TAPO comes from its published source
(rule_parser.c, the 15-type server-side rule list; tcp_state.c,
tcp_rtt.c; a client-side variant is github.com/dengqian/tapo_comp):
  - a TAPO stall is a silence between two consecutive packets of a flow
    longer than min(2 SRTT, RTO) (tcp_rtt.c rtt_thres), classified by
    the packet that ends it: from the client (an ACK) -> packet delay;
    a retransmission -> a timeout-retransmission type; new data after
    a silence -> resource constraint / data unavailable;
  - the rule order: data unavailable at the head of a flow; packet delay;
    zero window (rwnd < MSS); tail retransmission (the retransmitted
    segment within 3 MSS of snd_nxt and the last new segment was the end
    of the data: a FIN, or shorter than the MSS); small in-flight
    (outstanding <= 3 MSS, split by whether rwnd <= 3 MSS); double
    retransmission (the segment retransmitted twice or more); ACK delay
    (its one retransmission was spurious: D-SACK); continuous loss (every
    outstanding segment lost); other;
  - a retransmission is spurious when a D-SACK reports it.

Operational definitions here.  The stalls are pcapflow's, not TAPO's
silences: on the data direction, a gap longer than the flow's threshold
max(2 x RTT, 200 ms) (RTT: median sample at this capture) between two
deliveries (advances of the receiver's cumulative ACK), from the first
data segment to the ACK of the last byte; so the causes sum to pcapflow's
"stalls" and "stall_time", plus handshake stalls, which lie before the
first data segment.  A stall (t0, t1] waits for the byte a0, the ACK
number at t0.  The packet that ends it, as in TAPO, is the one that ends
the longest silence (no packet of the connection, either direction, at
this capture) in [t0, t1]: from the receiver, the stall ended by a
packet's late arrival; a data segment P (if it does not cover a0, the
last segment in (t0, t1] that does), by the sender's transmission.  The
history of a0 is every copy of its segment (seq <= a0 < end) before P
(before t1 if none), at this capture and, with a peer, at the peer (a
peer copy within SLACK of one here is the same packet); the first copy is
the original unless it already was a retransmission where it was seen
(its original lost before both captures); the others are retransmissions,
all lost (else a0 would have been acknowledged before t1).  MSS: the
receiver's SYN MSS option, or the largest data segment if smaller.
Receive window: scaled by the receiver's window-scale option (both SYNs
seen), not judged when the scale is unknown.  In-flight: the highest
sequence this capture saw sent before P, minus a0.  Causes, first match
wins: the three this testbed adds (handshake, dupack hold, and, among
the double retransmissions, the Not-ECT drop), then TAPO's, in its order
but for two changes: the receive window is judged before packet delay
(the receiver's window update ends a zero-window stall, which TAPO would
call packet delay unless a window probe ended it), and a lost earlier
retransmission (double) before tail and small in-flight (the second,
backed-off RTO sets such a stall's length, whatever made the first one
necessary; TAPO checks tail and small in-flight first).

  handshake_retrans  a SYN or SYN-ACK was retransmitted and the handshake
                     (first SYN to the client's first ACK after a
                     SYN-ACK) took longer than the threshold.  Evidence
                     shows which SYNs were ECN-setup (RFC 3168 6.1.1.1
                     fallback: the retransmitted SYN is plain).
  dupack_hold        (needs the peer) the proxy's dupack feedback held the
                     stall (kmod/ecn_proxy/DUPACK.md): the two sides of
                     the proxy disagree on the receiver's cumulative ACK
                     (the peer saw it pass a0 more than SLACK before
                     this capture did, during the stall: E's ACKs
                     advancing on the E side, the held ACK number on the
                     N side, "Hold"; or, at t0 + SLACK, the peer had not
                     yet seen a0 acknowledged: the E side of the same
                     hold, where N, not told, sends nothing), or a
                     retransmission of a0 crossed one capture and not
                     the other (the proxy dropped N's retransmission of
                     L, "Suppress", and E needed that copy).
  rwnd_limited       zero or small receive window: the receiver's window
                     at t0 or during the stall before P was below 1 MSS;
                     or P is a retransmission with in-flight < 4 MSS and
                     a window of at most 3 MSS (TAPO's rwnd-limited small
                     retransmission).
  unknown            no copy of a0's segment at this capture (capture
                     loss).
  packet_delay       the stall ended with a packet from the receiver: the
                     data or its ACK was delayed (whether or not a copy
                     of a0 was resent in the stall: TAPO's rule).
  data_unavailable   P is the first transmission of its bytes: the sender
                     sent nothing new until the silence ended (sender-
                     or application-limited).
  notect_rexmit_drop P is a retransmission and an earlier retransmission
                     of a0 was lost; the flow's new data is ECT at a
                     capture (this one or the peer: the proxy sets ECT
                     on N's data only after the N side) where every lost
                     retransmission seen was Not-ECT (RFC 3168 6.1.5).
                     An AQM that marks ECT drops Not-ECT: RED does above
                     min_th, and always above max_th, where a frozen
                     average keeps it (the 15-29 s `feedback=drop`
                     uploads).  A capture cannot tell this from a queue
                     overflow; the run's RED counters can.
  rto_double         P is a retransmission and an earlier retransmission
                     of a0 was lost (double retransmission).
  rto_ack_delay      P is a spurious retransmission: a D-SACK covers it,
                     or the ACK at t1 echoes a TSval older than P's, or
                     came less than half the minimum RTT after P (too
                     soon to answer P): the original arrived and its ACK
                     was delayed or lost.
  rto_tail           P is a retransmission, in-flight <= 3 MSS, and the
                     sender had nothing more to send: it had sent the
                     flow's last byte, or its last new segment was
                     shorter than the MSS or carried FIN.
  rto_small_inflight P is a retransmission and in-flight < 4 MSS: too few
                     segments above a0 for three duplicate ACKs.
  rto_continuous_loss P is a retransmission, in-flight >= 4 MSS and no
                     packet from the receiver reached this capture in
                     (t0, P): the whole window (or all its ACKs) lost.
  rto_other          any other retransmission.  Evidence "dupacks": with
                     3 or more, the fast retransmission was lost before
                     this capture (downloads: both matrix captures are
                     downstream of the bottleneck) or the sender did not
                     act on them (e.g. SACK blocks a middlebox made
                     stale).

Limits: one capture point sees losses only on one side of it; P's
in-flight is what this capture saw; the peer must share the clock
(SLACK) and the sequence numbers (the proxy rewrites none; the peer is
ignored if the two ISNs differ by more than 2^30).
"""
import bisect

from .pcapread import ACK, CWR, ECE, FIN, SYN, tcp_options

CAUSES = {
    "handshake_retrans": "SYN or SYN-ACK retransmitted",
    "dupack_hold": "proxy dupack feedback: ACK held or retransmission suppressed",
    "rwnd_limited": "zero or small receive window",
    "notect_rexmit_drop": "Not-ECT retransmission dropped (ECN flow, AQM drops Not-ECT)",
    "rto_double": "timeout retransmission: double retransmission",
    "rto_ack_delay": "timeout retransmission: ACK delay or loss (spurious)",
    "rto_tail": "timeout retransmission: tail",
    "rto_small_inflight": "timeout retransmission: small in-flight (< 4 MSS)",
    "rto_continuous_loss": "timeout retransmission: continuous loss (whole window)",
    "rto_other": "timeout retransmission: other",
    "packet_delay": "packet delay (no retransmission)",
    "data_unavailable": "data unavailable (sender-limited)",
    "unknown": "awaited segment not in the capture",
}
SLACK = 0.02   # s: one packet seen on both captures of one node
LIST_MAX = 50  # stalls kept per flow in a record (the breakdown counts all)
M32 = 1 << 32


class _Seg:
    """A data segment (seq, end in the reference numbering)."""
    __slots__ = ("t", "seq", "end", "ecn", "rexmit", "flags", "opts", "hi")

    def __init__(self, p, off):
        self.t, self.ecn, self.flags, self.opts = p.t, p.ecn, p.flags, p.opts
        self.seq, self.end, self.hi = p.seq + off, p.end + off, p.hi + off
        self.rexmit = p.seq < p.hi


class _View:
    """One capture's view of a flow's data direction dd: data segments and
    the receiver's packets (all carry an ACK); what it returns is in the
    numbering of the reference capture (off added)."""

    def __init__(self, fl, dd, off=0):
        self.base = fl.d[dd].base
        self.off = off
        self.data = [p for p in fl.pkts if p.dir == dd and p.end > p.seq]
        self.data_t = [p.t for p in self.data]
        self.by_seq = sorted(range(len(self.data)), key=lambda i: self.data[i].seq)
        self.seqs = [self.data[i].seq for i in self.by_seq]
        self.maxlen = max((p.end - p.seq for p in self.data), default=0)
        self.segs = {}
        self.acks = [p for p in fl.pkts if p.dir != dd and p.ack is not None]
        self.ack_t = [p.t for p in self.acks]
        self.ack_max, m = [], None  # cumulative ACK so far (reference numbering)
        for p in self.acks:
            m = p.ack + off if m is None else max(m, p.ack + off)
            self.ack_max.append(m)
        self.pkts = fl.pkts
        self.all_t = [p.t for p in fl.pkts]
        self._ect = None

    def seg(self, i):
        """The data segment data[i] (one object per segment)."""
        s = self.segs.get(i)
        if s is None:
            s = self.segs[i] = _Seg(self.data[i], self.off)
        return s

    @property
    def ect_share(self):
        """Share of the first transmissions that are ECT."""
        if self._ect is None:
            new = [p.ecn for p in self.data if p.seq >= p.hi]
            self._ect = sum(1 for e in new if e) / len(new) if new else 0.0
        return self._ect

    def copies(self, a, before):
        """Data segments covering byte a sent before time `before`, in
        time order."""
        a -= self.off
        lo = bisect.bisect_right(self.seqs, a - self.maxlen)
        hi = bisect.bisect_right(self.seqs, a)
        idx = sorted(i for i in self.by_seq[lo:hi]
                     if self.data[i].end > a and self.data_t[i] < before)
        return [self.seg(i) for i in idx]

    def acks_in(self, t0, t1):
        """Receiver packets with t0 < t < t1."""
        return self.acks[bisect.bisect_right(self.ack_t, t0):bisect.bisect_left(self.ack_t, t1)]

    def ender(self, t0, t1):
        """The packet that ends the longest silence (time without any packet
        of the connection, either direction) in [t0, t1], or None."""
        i = bisect.bisect_right(self.all_t, t0)
        j = bisect.bisect_right(self.all_t, t1)
        best, prev, out = -1.0, t0, None
        for k in range(i, j):
            if self.all_t[k] - prev > best:
                best, out = self.all_t[k] - prev, self.pkts[k]
            prev = self.all_t[k]
        return out

    def seg_of(self, p):
        """The data segment of packet p (one of this capture's)."""
        k = bisect.bisect_left(self.data_t, p.t)
        while k + 1 < len(self.data) and self.data[k] is not p:
            k += 1
        return self.seg(k)

    def cum_ack(self, t):
        """The highest ACK number the receiver had sent by time t, or None."""
        i = bisect.bisect_right(self.ack_t, t)
        return self.ack_max[i - 1] if i else None

    def ack_at(self, t):
        """The receiver's last packet at or before t, or None."""
        i = bisect.bisect_right(self.ack_t, t)
        return self.acks[i - 1] if i else None


class _Ctx:
    def __init__(self, fl, peer):
        dd = fl.dd
        ad = "s2c" if dd == "c2s" else "c2s"
        self.fl, self.dd = fl, dd
        self.me = _View(fl, dd)
        self.peer = None
        self.peer_note = None
        if peer is not None:
            pb, mb = peer.d[dd].base, fl.d[dd].base
            off = None if pb is None or mb is None else (pb - mb + (1 << 31)) % M32 - (1 << 31)
            if off is None or abs(off) > (1 << 30) or peer.client != fl.client:
                self.peer_note = "peer ignored: other connection or sequence numbering"
            else:
                self.peer = _View(peer, dd, off)
        rs, ss = fl.syn_opts[ad], fl.syn_opts[dd]
        self.shift = None  # receiver's window scale, None if unknown
        syn_dirs = {d for _t, d, _f, _s in fl.syns}
        if syn_dirs == {"c2s", "s2c"}:
            self.shift = min(rs["wscale"], 14) if "wscale" in rs and "wscale" in ss else 0
        cand = [x for x in (rs.get("mss"), self.me.maxlen) if x]
        self.mss = min(cand) if cand else 1460
        self.min_rtt = min(fl.rtts[dd]) if fl.rtts[dd] else None
        self.data_end = fl.d[dd].data_high

    def win(self, p):
        """Receiver's window (bytes) of packet p, None if the scale is unknown."""
        if self.shift is None:
            return None
        return p.win if p.flags & SYN else p.win << self.shift

    def rel(self, absseq):
        """An absolute sequence number (SACK block) in the reference numbering."""
        return (absseq - self.me.base) % M32


def classify(flow, peer=None):
    """The stalls of flow (pcapflow.Flow) with their causes, in time order:
    a handshake stall first, then pcapflow's stall intervals.  peer: the
    same connection at another capture point on the same clock."""
    out = []
    hs = _handshake(flow)
    if hs:
        out.append(hs)
    if not flow.intervals:
        return out
    ctx = _Ctx(flow, peer)
    for t0, t1, a0, _a1 in flow.intervals:
        cause, ev = _one(ctx, t0, t1, a0)
        ev = dict({"ack": a0, "mss": ctx.mss}, **ev)
        if ctx.peer_note:
            ev["note"] = ctx.peer_note
        out.append({"cause": cause, "start": t0, "end": t1, "evidence": ev})
    return out


def _handshake(fl):
    syn = [(t, f) for t, d, f, _s in fl.syns if not f & ACK]
    synack = [(t, f) for t, d, f, _s in fl.syns if f & ACK]
    if len(syn) < 2 and len(synack) < 2:
        return None
    start = (syn or synack)[0][0]
    end = None
    if synack:
        first_sa = synack[0][0]
        for p in fl.pkts:
            if (p.t > first_sa and p.dir == "c2s" and p.ack is not None
                    and not p.flags & SYN):
                end = p.t
                break
        if end is None:
            end = synack[-1][0]
    else:
        end = syn[-1][0]
    if end - start <= fl.threshold:
        return None
    ece_cwr = ECE | CWR
    return {"cause": "handshake_retrans", "start": start, "end": end, "evidence": {
        "syns": len(syn), "synacks": len(synack),
        "syn_ecn_setup": [f & ece_cwr == ece_cwr for _t, f in syn],
        "synack_ece": [bool(f & ECE) for _t, f in synack]}}


def _near(t, times):
    i = bisect.bisect_left(times, t - SLACK)
    return i < len(times) and times[i] <= t + SLACK


def _history(ctx, a0, before):
    """Copies of a0's segment sent before `before` at this capture and the
    peer, in time order: [(seg, ecn here, ecn at the peer, is a
    retransmission)] (an ECN None: not seen there), and the copies only
    one capture saw though both were capturing: [(seg, "here"|"peer")]."""
    mine = ctx.me.copies(a0, before)
    hist, only = [], []
    if ctx.peer is None:
        hist = [(s, s.ecn, None) for s in mine]
    else:
        theirs = ctx.peer.copies(a0, before - SLACK)
        mt = [s.t for s in mine]
        for s in mine:
            twin = [x for x in theirs if abs(x.t - s.t) <= SLACK]
            hist.append((s, s.ecn, twin[0].ecn if twin else None))
            if not twin and _within(ctx.peer, s.t):
                only.append((s, "here"))
        for x in theirs:
            if not _near(x.t, mt):
                hist.append((x, None, x.ecn))
                if _within(ctx.me, x.t):
                    only.append((x, "peer"))
        hist.sort(key=lambda h: h[0].t)
    return [h + (i > 0 or h[0].rexmit,) for i, h in enumerate(hist)], only


def _within(view, t):
    """t lies inside the time span of view's data segments (the capture
    was running and could have seen a packet at t)."""
    return bool(view.data_t) and view.data_t[0] - SLACK <= t <= view.data_t[-1] + SLACK


def _one(ctx, t0, t1, a0):
    """(cause, evidence) of the data stall (t0, t1] waiting for byte a0."""
    me, peer, mss = ctx.me, ctx.peer, ctx.mss
    if peer is not None:
        for p in peer.acks_in(t0, t1 - SLACK):
            if p.ack + peer.off > a0:
                held = [q for q in me.acks_in(p.t, t1) if q.ack == a0]
                return "dupack_hold", {"peer_ack_at": round(p.t - t0, 6),
                                       "peer_ack": p.ack + peer.off,
                                       "held_acks": len(held)}
        pa = peer.cum_ack(t0 + SLACK)
        if pa is not None and pa < a0:
            return "dupack_hold", {"peer_ack": pa, "peer_behind": a0 - pa}
    E = me.ender(t0, t1)
    in_stall = [c for c in me.copies(a0, t1 + 1e-9) if c.t > t0]
    P = None
    if E is not None and E.dir == ctx.dd and E.end > E.seq:
        P = me.seg_of(E)
        if not P.seq <= a0 < P.end and in_stall:
            P = in_stall[-1]
    hist, only = _history(ctx, a0, P.t if P is not None else t1 + 1e-9)
    dropped = [(c, w) for c, w in only if any(h[0] is c and h[3] for h in hist)]
    if dropped:
        c, w = dropped[-1]
        return "dupack_hold", {"rexmit_at": round(c.t - t0, 6),
                               "seen_only": "this capture" if w == "here" else "peer"}
    ref = P.t if P is not None else t1
    last = me.ack_at(t0)
    wins = [ctx.win(q) for q in ([last] if last else []) + me.acks_in(t0, ref)]
    wins = [w for w in wins if w is not None]
    if wins and min(wins) < mss:
        return "rwnd_limited", {"window": min(wins)}
    if not hist and not in_stall:
        return "unknown", {}
    if P is None:
        ev = {"silence_end": round(E.t - t0, 6) if E is not None else None}
        if hist:
            ev.update(last_copy_at=round(hist[-1][0].t - t0, 6),
                      acked_after=round(t1 - hist[-1][0].t, 6))
        return "packet_delay", ev
    is_rexmit = P.rexmit or (P.seq <= a0 < P.end and bool(hist))
    if not is_rexmit:
        return "data_unavailable", {"idle": round(P.t - t0, 6)}
    ev = {"rexmit_at": round(P.t - t0, 6), "inflight": P.hi - a0}
    lost = [h for h in hist if h[3]]
    if lost:
        ev["lost_rexmits"] = len(lost)
        for view, k, name in ((me, 1, "this capture"), (peer, 2, "peer")):
            if view is None or view.ect_share < 0.5:
                continue
            seen = [h[k] for h in lost if h[k] is not None]
            if seen and not any(seen):
                ev.update(ecn_view=name, ect_share=round(view.ect_share, 4))
                return "notect_rexmit_drop", ev
        return "rto_double", ev
    why = _spurious(ctx, P, t1)
    if why:
        ev["spurious"] = why
        return "rto_ack_delay", ev
    inflight = P.hi - a0
    if inflight <= 3 * mss and _sender_done(ctx, P):
        return "rto_tail", ev
    if inflight < 4 * mss:
        if wins and min(wins) <= 3 * mss:
            ev["window"] = min(wins)
            return "rwnd_limited", ev
        return "rto_small_inflight", ev
    rcv = me.acks_in(t0, P.t)
    if not rcv:
        return "rto_continuous_loss", ev
    ev["dupacks"] = sum(1 for q in rcv if q.ack == a0 and q.end == q.seq)
    return "rto_other", ev


def _spurious(ctx, P, t1):
    """Why retransmission P was spurious ([] if not): "dsack", "tsecr",
    "early"."""
    me = ctx.me
    why = []
    for q in me.acks_in(P.t - 1e-9, t1 + max(ctx.fl.threshold, 0.2)):
        o = tcp_options(q.opts) if q.opts else {}
        blocks = o.get("sack") or []
        if blocks:
            l, r = ctx.rel(blocks[0][0]), ctx.rel(blocks[0][1])
            dsack = r <= q.ack or (len(blocks) > 1 and ctx.rel(blocks[1][0]) <= l
                                   and r <= ctx.rel(blocks[1][1]))
            if dsack and l < P.end and P.seq < r:
                why.append("dsack")
                break
    end_ack = me.ack_at(t1)
    po = tcp_options(P.opts) if P.opts else {}
    ao = tcp_options(end_ack.opts) if end_ack is not None and end_ack.opts else {}
    if "ts" in po and "ts" in ao and 0 < (po["ts"][0] - ao["ts"][1]) % M32 < (1 << 31):
        why.append("tsecr")
    if ctx.min_rtt and t1 - P.t < 0.5 * ctx.min_rtt:
        why.append("early")
    return why


def _sender_done(ctx, P):
    """The sender had nothing more to send when it retransmitted P: it had
    sent the flow's last byte, or its last new segment before P was
    shorter than the MSS or carried FIN."""
    if P.hi >= ctx.data_end:
        return True
    for k in range(bisect.bisect_left(ctx.me.data_t, P.t) - 1, -1, -1):
        p = ctx.me.data[k]
        if p.seq >= p.hi:
            return p.end - p.seq < ctx.mss or bool(p.flags & FIN)
    return False


def breakdown(stalls):
    """{cause: {"count": n, "time": seconds}} of a list of stalls, causes
    in CAUSES order, only those that occur."""
    out = {}
    for c in CAUSES:
        xs = [s["end"] - s["start"] for s in stalls if s["cause"] == c]
        if xs:
            out[c] = {"count": len(xs), "time": round(sum(xs), 6)}
    return out


def add_breakdowns(bds):
    """The sum of several breakdown() results."""
    out = {}
    for bd in bds:
        for c, v in bd.items():
            o = out.setdefault(c, {"count": 0, "time": 0.0})
            o["count"] += v["count"]
            o["time"] += v["time"]
    return {c: {"count": out[c]["count"], "time": round(out[c]["time"], 6)}
            for c in CAUSES if c in out}


def compact(stall):
    """A stall as the run record keeps it (times rounded)."""
    return {"cause": stall["cause"], "start": round(stall["start"], 6),
            "end": round(stall["end"], 6), "evidence": stall["evidence"]}
