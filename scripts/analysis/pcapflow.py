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
(matrix_guest.py: both sides of the proxy).

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
import struct

FIN, SYN, RST, PSH, ACK, URG, ECE, CWR = 1, 2, 4, 8, 16, 32, 64, 128
STALL_MIN = 0.2

LINK_ETH, LINK_RAW, LINK_RAW2, LINK_SLL, LINK_SLL2 = 1, 101, 12, 113, 276


class PcapError(Exception):
    pass


def records(path):
    """Yield (time, linktype, frame bytes, fully captured) for every record
    of a classic pcap file (compressed with xz if its name ends in .xz)."""
    if path.endswith(".xz"):
        import lzma
        with lzma.open(path, "rb") as f:
            data = f.read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    if len(data) < 24:
        if not data:
            return
        raise PcapError("%s: truncated pcap header" % path)
    magic = data[:4]
    if magic == b"\xd4\xc3\xb2\xa1":
        endian, div = "<", 1e6
    elif magic == b"\xa1\xb2\xc3\xd4":
        endian, div = ">", 1e6
    elif magic == b"\x4d\x3c\xb2\xa1":
        endian, div = "<", 1e9
    elif magic == b"\xa1\xb2\x3c\x4d":
        endian, div = ">", 1e9
    else:
        raise PcapError("%s: not a classic pcap file (pcapng?)" % path)
    linktype = struct.unpack(endian + "I", data[20:24])[0] & 0x0FFFFFFF
    rec = struct.Struct(endian + "IIII")
    off = 24
    n = len(data)
    while off + 16 <= n:
        sec, frac, incl, orig = rec.unpack_from(data, off)
        off += 16
        pkt = data[off:off + incl]
        off += incl
        if len(pkt) < incl:
            break  # last record cut short (capture killed)
        yield sec + frac / div, linktype, pkt, incl == orig


def read_packets(path):
    """Yield (time, ecn, src, dst, sport, dport, seq, ack, flags, win, plen)
    for every TCP packet of a pcap."""
    for p in read_segments(path):
        yield p[:-1]


def read_segments(path):
    """read_packets() plus a last element: the TCP options as captured
    (bytes, cut short by the snap length; b"" without options)."""
    for t, linktype, pkt, _full in records(path):
        p = _parse(pkt, linktype)
        if p is not None:
            yield (t,) + p


def network(pkt, linktype):
    """(ethertype, offset of the IP header) of a frame, or None."""
    if linktype == LINK_ETH:
        if len(pkt) < 14:
            return None
        etype = (pkt[12] << 8) | pkt[13]
        o = 14
        while etype in (0x8100, 0x88A8) and len(pkt) >= o + 4:
            etype = (pkt[o + 2] << 8) | pkt[o + 3]
            o += 4
    elif linktype == LINK_SLL:
        if len(pkt) < 16:
            return None
        etype = (pkt[14] << 8) | pkt[15]
        o = 16
    elif linktype == LINK_SLL2:
        if len(pkt) < 20:
            return None
        etype = (pkt[0] << 8) | pkt[1]
        o = 20
    elif linktype in (LINK_RAW, LINK_RAW2):
        if not pkt:
            return None
        etype = 0x0800 if pkt[0] >> 4 == 4 else 0x86DD
        o = 0
    else:
        raise PcapError("unsupported link type %d" % linktype)
    return etype, o


def _parse(pkt, linktype):
    net = network(pkt, linktype)
    if net is None:
        return None
    etype, o = net
    if etype == 0x0800:
        if len(pkt) < o + 20 or pkt[o + 9] != 6:
            return None
        ihl = (pkt[o] & 0x0F) * 4
        ecn = pkt[o + 1] & 3
        tot = (pkt[o + 2] << 8) | pkt[o + 3]
        src, dst = pkt[o + 12:o + 16], pkt[o + 16:o + 20]
        t = o + ihl
        l4len = tot - ihl
    elif etype == 0x86DD:
        if len(pkt) < o + 40 or pkt[o + 6] != 6:
            return None
        ecn = (pkt[o + 1] >> 4) & 3
        l4len = (pkt[o + 4] << 8) | pkt[o + 5]
        src, dst = pkt[o + 8:o + 24], pkt[o + 24:o + 40]
        t = o + 40
    else:
        return None
    if len(pkt) < t + 20:
        return None
    sport, dport, seq, ack, offfl, flags, win = struct.unpack_from("!HHIIBBH", pkt, t)
    doff = (offfl >> 4) * 4
    plen = l4len - doff
    return (ecn, _addr(src), _addr(dst), sport, dport, seq, ack, flags, win, max(plen, 0),
            pkt[t + 20:t + doff] if doff > 20 else b"")


def tcp_options(raw):
    """{kind: value} of the TCP options in raw (as far as captured): "mss",
    "wscale" (ints, as on the wire: a shift above 14 is not clamped),
    "sack_ok" (True), "ts" ((TSval, TSecr)), "sack" ([(left, right), ...]
    absolute).  Parsing stops at EOL, at a length below 2 and at an option
    cut short."""
    out = {}
    i, n = 0, len(raw)
    while i < n:
        kind = raw[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= n:
            break
        ln = raw[i + 1]
        if ln < 2 or i + ln > n:
            break
        v = raw[i + 2:i + ln]
        if kind == 2 and ln == 4:
            out["mss"] = (v[0] << 8) | v[1]
        elif kind == 3 and ln == 3:
            out["wscale"] = v[0]
        elif kind == 4:
            out["sack_ok"] = True
        elif kind == 8 and ln == 10:
            out["ts"] = struct.unpack("!II", v)
        elif kind == 5 and (ln - 2) % 8 == 0:
            out.setdefault("sack", []).extend(
                struct.unpack_from("!II", v, j) for j in range(0, ln - 2, 8))
        i += ln
    return out


def _addr(b):
    if len(b) == 4:
        return "%d.%d.%d.%d" % tuple(b)
    return ":".join("%x" % ((b[i] << 8) | b[i + 1]) for i in range(0, 16, 2))


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
    st = _stalls().classify(fl, peer)
    out["stall_causes"] = _stalls().breakdown(st)
    out["stall_list"] = [_stalls().compact(x) for x in st[:_stalls().LIST_MAX]]
    return out


def _stalls():
    """stalls.py, imported when first needed (it imports this module)."""
    try:
        from . import stalls as mod
    except ImportError:  # imported as a top-level module (vm-testbed/lib)
        import stalls as mod
    return mod


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
        tot["stall_causes"] = _stalls().add_breakdowns(causes)
    tot["stall_time"] = round(tot["stall_time"], 6)
    tot["ect_share"] = round(tot["ect"] / tot["data"], 4) if tot["data"] else None
    return tot


if __name__ == "__main__":
    import json
    import sys
    print(json.dumps(analyze(sys.argv[1], int(sys.argv[2])), indent=1))
