# SPDX-License-Identifier: GPL-2.0
"""Per-flow ECN and loss analysis of a pcap (standard library only).

Reads classic pcap files (any snap length: the payload length comes from
the IP header, so `tcpdump -s 128` captures are enough), Ethernet, Linux
cooked (v1/v2) or raw IP link types, IPv4 and IPv6.  Runs inside the TCG
guest after every matrix run, where tshark takes minutes to start.

analyze(path, server_port) -> {client_port: flow}.  A flow has the keys
  "client", "server" (addresses), "start", "end" (capture timestamps),
  "ecn_negotiated" (SYN with ECE+CWR answered by a SYN-ACK with ECE only),
  "syn_ece", "synack_ece", "data_dir" ("c2s" or "s2c": the direction that
  carried more new payload), "rtt" (median RTT sample, s, or None),
  "stall_threshold", "stalls", "stall_time", "stall_causes" and
  "stall_list" (stalls.py: the cause of every stall) and, per direction
  "c2s" and "s2c", the counters of Dir.COUNTERS plus "ect_share".

parse(path, server_port) -> {client_port: Flow}: the same flows before the
summary, with every packet kept (Flow.pkts), so that two captures of one
connection can be judged together: summary(flow, peer);
analyze_captures({name: path}, server_port) does it for two captures
(guest/matrix.py: both sides of the proxy).

Definitions (per direction, sequence numbers relative to the SYN):
  data         segments with payload
  new_bytes    sequence space beyond the highest sequence seen before
  retrans      data segments starting below that highest sequence
  fast_retrans retransmissions of exactly the sequence the peer has
               acknowledged at least twice more (>= 2 duplicate ACKs
               outstanding, as tshark's analysis does)
  dupacks      pure ACKs (no payload, no SYN/FIN/RST) repeating the previous
               ACK number and window while the peer has unacknowledged data
  ce           packets with IP ECN = CE (11)
  ect          data segments with ECN != 00 (ECT(0), ECT(1) or CE)
  ece, cwr     TCP flags, SYN and SYN-ACK not counted
  ect_share    ect / data
Stalls, on the data direction: the times at which the receiver's cumulative
ACK advances are the deliveries; from the first data segment to the ACK of
the last byte, every gap between deliveries longer than
max(2 x RTT, 200 ms) is a stall (count, and total gap time).  RTT samples
follow Karn: no sample from a segment at or below a retransmitted sequence.
"""
import statistics

from . import stalls as stall_causes  # stalls() below is this module's own
from .pcapread import ACK, CWR, ECE, FIN, RST, SYN, read_segments, tcp_options

STALL_MIN = 0.2


class Dir:
    COUNTERS = ("packets", "data", "new_bytes", "retrans", "fast_retrans",
                "dupacks", "ce", "ect", "ece", "cwr")

    def __init__(self):
        for c in self.COUNTERS:
            setattr(self, c, 0)
        self.base = None      # ISN (SYN) or first sequence seen
        self.high = 0         # highest relative end sequence sent
        self.data_high = 0    # the same, payload only (no FIN)
        self.ack_base = None  # the peer's base, for relative ACK numbers
        self.last_ack = None
        self.last_win = None
        self.dup_count = 0    # duplicate ACKs for last_ack
        self.retrans_high = 0  # highest end of any retransmitted segment

    def out(self):
        d = {c: getattr(self, c) for c in self.COUNTERS}
        d["ect_share"] = round(self.ect / self.data, 4) if self.data else None
        return d


class Flow:
    def __init__(self, client, server):
        self.client, self.server = client, server
        self.d = {"c2s": Dir(), "s2c": Dir()}
        self.start = self.end = None
        self.syn_ece = self.syn_cwr = None
        self.synack_ece = self.synack_cwr = None
        # delivery tracking per data direction: ack advance times
        self.deliveries = {"c2s": [], "s2c": []}
        self.first_data = {"c2s": None, "s2c": None}
        self.pending = {"c2s": [], "s2c": []}  # (end, t) of new segments
        self.rtts = {"c2s": [], "s2c": []}
        self.first_seq = {"c2s": None, "s2c": None}  # of the first data segment
        self.syn_opts = {"c2s": {}, "s2c": {}}  # options of the SYN / SYN-ACK
        self.syns = []  # (time, direction, flags, seq) of every SYN and SYN-ACK
        # every packet: Pkt(t, dir, ecn, seq, end, ack, flags, win, hi, opts),
        # seq/end relative to dir's base, ack to the other direction's (None
        # without ACK flag), hi = dir's highest sequence before this packet
        self.pkts = []
        # set by _finish(): data direction, RTT, threshold, stall intervals
        self.dd = "c2s"
        self.rtt = None
        self.threshold = STALL_MIN
        self.intervals = []


class Pkt(tuple):
    """One packet of a Flow (a plain tuple with names, to stay small)."""
    __slots__ = ()
    t = property(lambda s: s[0])
    dir = property(lambda s: s[1])
    ecn = property(lambda s: s[2])
    seq = property(lambda s: s[3])
    end = property(lambda s: s[4])
    ack = property(lambda s: s[5])
    flags = property(lambda s: s[6])
    win = property(lambda s: s[7])
    hi = property(lambda s: s[8])
    opts = property(lambda s: s[9])


def _rel(seq, base):
    return (seq - base) & 0xFFFFFFFF


def analyze_packets(packets, server_port):
    """{client_port: flow summary} of (time, ecn, src, dst, sport, dport,
    seq, ack, flags, win, plen[, options]) tuples, one capture alone."""
    return {k: summary(f) for k, f in parse_packets(packets, server_port).items()}


def parse_packets(packets, server_port):
    """{client_port: Flow} (finished) of the tuples analyze_packets takes."""
    flows = {}
    for (t, ecn, src, dst, sport, dport, seq, ack, flags, win, plen, *opt) in packets:
        if dport == server_port:
            key, dname, oname = sport, "c2s", "s2c"
            client, server = src, dst
        elif sport == server_port:
            key, dname, oname = dport, "s2c", "c2s"
            client, server = dst, src
        else:
            continue
        fl = flows.get(key)
        if fl is None:
            fl = flows[key] = Flow(client, server)
            fl.start = t
        fl.end = t
        d, o = fl.d[dname], fl.d[oname]
        hi = d.high
        raw = opt[0] if opt else b""
        d.packets += 1
        if ecn == 3:
            d.ce += 1
        if flags & SYN:
            d.base = seq
            d.high = max(d.high, 1)
            fl.syns.append((t, dname, flags, seq))
            fl.syn_opts[dname] = tcp_options(raw)
            if flags & ACK:
                fl.synack_ece = bool(flags & ECE)
                fl.synack_cwr = bool(flags & CWR)
            else:
                fl.syn_ece = bool(flags & ECE)
                fl.syn_cwr = bool(flags & CWR)
        else:
            if flags & ECE:
                d.ece += 1
            if flags & CWR:
                d.cwr += 1
        if d.base is None:
            d.base = (seq - 1) & 0xFFFFFFFF  # joined mid-flow
        rseq = _rel(seq, d.base)
        end = rseq + plen
        if plen > 0:
            d.data += 1
            if ecn:
                d.ect += 1
            if fl.first_data[dname] is None:
                fl.first_data[dname] = t
                fl.first_seq[dname] = rseq
            if rseq < d.high:
                d.retrans += 1
                d.retrans_high = max(d.retrans_high, end)
                if (o.last_ack is not None and o.dup_count >= 2
                        and rseq == o.last_ack):
                    d.fast_retrans += 1
            if end > d.high:
                # sequence space beyond the highest seen (a hole lost before
                # the capture point counts here, its retransmission does not)
                d.new_bytes += end - d.high
                d.high = end
                d.data_high = end
                fl.pending[dname].append((end, t))
        if flags & FIN:
            d.high = max(d.high, end + 1)
        rack = None
        if flags & ACK and o.base is not None:
            rack = _rel(ack, o.base)
            pure = plen == 0 and not flags & (SYN | FIN | RST)
            if (pure and d.last_ack is not None and rack == d.last_ack
                    and win == d.last_win and o.high > rack):
                d.dupacks += 1
                d.dup_count += 1
            elif d.last_ack is None or rack > d.last_ack:
                # delivery of the peer's data: RTT samples, stall events
                pend = fl.pending[oname]
                sample = None
                while pend and pend[0][0] <= rack:
                    sample = pend.pop(0)
                if sample is not None and sample[0] > o.retrans_high:
                    fl.rtts[oname].append(t - sample[1])
                if fl.first_data[oname] is not None:
                    fl.deliveries[oname].append((t, rack))
                d.dup_count = 0
            if d.last_ack is None or rack >= d.last_ack:
                d.last_ack = rack
                d.last_win = win
        fl.pkts.append(Pkt((t, dname, ecn, rseq, end, rack, flags, win, hi, raw)))
    for f in flows.values():
        _finish(f)
    return flows


def stall_intervals(first_data, deliveries, final, threshold, first_ack=0):
    """Gaps longer than threshold between deliveries, from the first data
    segment until the delivery that acknowledges `final`.
    -> [(start, end, ACK number before, ACK number that ended it)];
    first_ack: the ACK number the first gap starts from."""
    if first_data is None:
        return []
    out, prev, prev_ack = [], first_data, first_ack
    for t, ack in deliveries:
        if t - prev > threshold:
            out.append((prev, t, prev_ack, ack))
        prev, prev_ack = t, ack
        if ack >= final:
            break
    return out


def stalls(first_data, deliveries, final, threshold):
    """stall_intervals() -> (count, total time)"""
    iv = stall_intervals(first_data, deliveries, final, threshold)
    return len(iv), round(sum(t1 - t0 for t0, t1, _a, _b in iv), 6)


def _finish(fl):
    """Data direction, RTT, stall threshold and stall intervals of fl."""
    dd = fl.dd = "c2s" if fl.d["c2s"].new_bytes > fl.d["s2c"].new_bytes else "s2c"
    fl.rtt = statistics.median(fl.rtts[dd]) if fl.rtts[dd] else None
    fl.threshold = max(2 * fl.rtt, STALL_MIN) if fl.rtt is not None else STALL_MIN
    fl.intervals = stall_intervals(fl.first_data[dd], fl.deliveries[dd],
                                   _data_end(fl, dd), fl.threshold, fl.first_seq[dd] or 0)


def summary(fl, peer=None):
    """The record of a Flow; peer: the same connection's Flow in another
    capture on the same clock (stalls.classify)."""
    out = {"client": fl.client, "server": fl.server,
           "start": fl.start, "end": fl.end,
           "syn_ece": fl.syn_ece, "syn_cwr": fl.syn_cwr,
           "synack_ece": fl.synack_ece, "synack_cwr": fl.synack_cwr,
           "ecn_negotiated": bool(fl.syn_ece and fl.syn_cwr and fl.synack_ece
                                  and not fl.synack_cwr)}
    for k in ("c2s", "s2c"):
        out[k] = fl.d[k].out()
    rtt, thr = fl.rtt, fl.threshold
    out.update(data_dir=fl.dd, rtt=round(rtt, 6) if rtt is not None else None,
               rtt_samples=len(fl.rtts[fl.dd]), stall_threshold=round(thr, 6),
               stalls=len(fl.intervals),
               stall_time=round(sum(t1 - t0 for t0, t1, _a, _b in fl.intervals), 6))
    st = stall_causes.classify(fl, peer)
    out["stall_causes"] = stall_causes.breakdown(st)
    out["stall_list"] = [stall_causes.compact(x) for x in st[:stall_causes.LIST_MAX]]
    return out


def _data_end(fl, dd):
    """Relative end of the payload in direction dd (excluding the FIN)."""
    return fl.d[dd].data_high


def parse(path, server_port):
    """{client_port: Flow} of a pcap (summary(flow, peer) for the record)."""
    return parse_packets(read_segments(path), server_port)


def analyze(path, server_port):
    return analyze_packets(read_segments(path), server_port)


def analyze_captures(paths, server_port, ports=None):
    """Captures of the same connections at two points on one clock (the
    matrix: both sides of the proxy): {name: path} -> {name: {"flows":
    {str(client_port): summary}, "totals": totals()}}, each flow judged
    with the other capture's (summary(flow, peer)); ports: keep only
    these client ports."""
    parsed = {n: parse(p, server_port) for n, p in paths.items()}
    out = {}
    for n, fls in parsed.items():
        others = [v for k, v in parsed.items() if k != n]
        flows = {str(k): summary(f, others[0].get(k) if others else None)
                 for k, f in fls.items() if ports is None or k in ports}
        out[n] = {"flows": flows, "totals": totals(flows)}
    return out


def totals(flows):
    """Sum over flows: data-direction counters (the sender's segments:
    data, new_bytes, retrans, fast_retrans, ce, ect, cwr) and ACK-direction
    counters (the receiver's: ece, dupacks), stalls, stall causes (of the
    flows that have them) and ECN negotiation."""
    data_keys = ("packets", "data", "new_bytes", "retrans", "fast_retrans",
                 "ce", "ect", "cwr")
    ack_keys = ("ece", "dupacks")
    tot = {k: 0 for k in data_keys + ack_keys}
    tot.update(stalls=0, stall_time=0.0, flows=len(flows), ecn_negotiated=0)
    for f in flows.values():
        dd = f["data_dir"]
        ad = "s2c" if dd == "c2s" else "c2s"
        for k in data_keys:
            tot[k] += f[dd][k]
        for k in ack_keys:
            tot[k] += f[ad][k]
        tot["stalls"] += f["stalls"]
        tot["stall_time"] += f["stall_time"]
        tot["ecn_negotiated"] += int(f["ecn_negotiated"])
    causes = [f["stall_causes"] for f in flows.values() if "stall_causes" in f]
    if causes:
        tot["stall_causes"] = stall_causes.add_breakdowns(causes)
    tot["stall_time"] = round(tot["stall_time"], 6)
    tot["ect_share"] = round(tot["ect"] / tot["data"], 4) if tot["data"] else None
    return tot


if __name__ == "__main__":
    import json
    import sys
    print(json.dumps(analyze(sys.argv[1], int(sys.argv[2])), indent=1))
