# SPDX-License-Identifier: GPL-2.0
"""Capture analysis for the impairment VM tests (standard library only, so
that it stays fast under TCG: no tshark, no scapy).  Reads classic pcap
files (tcpdump -w, Ethernet), IPv4 and IPv6, and prints JSON.

  python3 -m ecnproxy.vmtest.impair_pcap summary PORT NAME=PCAP...
      for each capture, per direction of the TCP connection(s) whose server
      port is PORT ("a2b": toward PORT, sent by the initiator; "b2a": the
      other way): packets, the SYN / SYN-ACK options, header lengths,
      payload sizes, window values, ECN codepoints, ECE, bad checksums
      (TCP and IPv4 header, checked on fully captured packets), SACK
      blocks, and the connection set-up time (first SYN to first SYN-ACK)
  python3 -m ecnproxy.vmtest.impair_pcap seqmap PORT PCAP_A PCAP_B
      the same connection captured on A's side and on B's side: the seq
      offset of each direction (B-side value minus A-side value, mod 2^32)
      from the SYN / SYN-ACK, whether every seq / ack of every packet is
      consistent with one constant offset per direction, how the SACK
      blocks arriving at A relate to those B sent (shifted by A's offset,
      or unchanged), and how many of them lie inside A's sequence space
  python3 -m ecnproxy.vmtest.impair_pcap split PORT MODE CUT OPTS C P [S]
      the split action: the initiator's data segments as sent (capture C,
      a GSO packet taken as the segments of its MSS) against what the
      proxy sent on (P, its egress); see split_check()
  python3 -m ecnproxy.vmtest.impair_pcap coalesce PORT OPTS C P [S]
      the coalesce action, likewise; see coalesce_check()
      With S (the receiver's capture), also what was lost after the proxy
      and what arrived that the proxy did not send (a problem).

Split and coalesce are judged on the proxy's egress, not on the
receiver's capture: the bottleneck after the proxy drops packets (RED at
100 Mbit/s), and a piece or a joined segment lost there is no fault of
the module, while the module's counters count what it sent.
"""
import json
import struct
import sys
from collections import Counter

from ..analysis import pcapread

M32 = 1 << 32


def csum16(data, acc=0):
    if len(data) % 2:
        data += b"\0"
    acc += sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while acc >> 16:
        acc = (acc & 0xffff) + (acc >> 16)
    return acc


def parse_opts(opts):
    o = pcapread.tcp_options(opts)
    return {"mss": o.get("mss"), "wscale": o.get("wscale"), "sackok": "sack_ok" in o,
            "ts": "ts" in o, "sack": o.get("sack", [])}


def packets(pcap, port):
    res = []
    try:
        recs = list(pcapread.records(pcap))
    except pcapread.PcapError as e:
        raise SystemExit(str(e))
    for t, linktype, pkt, full in recs:
        net = pcapread.network(pkt, linktype)
        if net is None:
            continue
        etype, o = net
        ip = pkt[o:]
        if etype == 0x0800 and len(ip) >= 20:
            ihl = (ip[0] & 15) * 4
            if ip[9] != 6:
                continue
            tot = struct.unpack("!H", ip[2:4])[0]
            ecn = ip[1] & 3
            ip_bad = len(ip) >= ihl and csum16(ip[:ihl]) != 0xffff
            tcp = ip[ihl:]
            tcplen = tot - ihl
            pseudo = ip[12:20] + struct.pack("!BBH", 0, 6, tcplen)
        elif etype == 0x86dd and len(ip) >= 40:
            if ip[6] != 6:      # no extension headers in our traffic
                continue
            ecn = (struct.unpack("!H", ip[0:2])[0] >> 4) & 3
            tcplen = struct.unpack("!H", ip[4:6])[0]
            ip_bad = False
            tcp = ip[40:]
            pseudo = ip[8:40] + struct.pack("!IxxxB", tcplen, 6)
        else:
            continue
        if len(tcp) < 20:
            continue
        sport, dport, seq, ack, offfl, win = struct.unpack("!HHIIHH", tcp[:16])
        if port not in (sport, dport):
            continue
        hl = (offfl >> 12) * 4
        flags = offfl & 0x1ff
        o = parse_opts(tcp[20:hl])
        tcp_bad = full and csum16(pseudo + tcp[:tcplen]) != 0xffff
        iplen = (ihl if etype == 0x0800 else 40) + tcplen
        res.append({
            "t": t, "dir": "a2b" if dport == port else "b2a",
            "syn": bool(flags & 0x02), "ack": bool(flags & 0x10),
            "ece": bool(flags & 0x40), "cwr": bool(flags & 0x80),
            "seq": seq, "ackno": ack, "hdr_len": hl, "len": tcplen - hl,
            "win": win, "mss": o["mss"], "wscale": o["wscale"],
            "sackok": o["sackok"], "ts": o["ts"], "sack": o["sack"],
            "ecn": ecn, "csum_bad": bool(tcp_bad or ip_bad), "full": full,
            "ip_len": iplen,
            # what coalesce keeps of one segment's header: ack, data
            # offset, window, urgent pointer, options (not the seq, the
            # flags, the checksum)
            "hdr": bytes(tcp[8:13] + tcp[14:16] + tcp[18:hl]),
        })
    return res


def summary_one(pcap, port):
    pk = packets(pcap, port)
    out = {}
    for d in ("a2b", "b2a"):
        p = [x for x in pk if x["dir"] == d]
        data = [x for x in p if x["len"]]
        out[d] = {
            "packets": len(p),
            "syns": [{k: x[k] for k in ("ack", "ece", "cwr", "hdr_len", "mss",
                                         "wscale", "sackok", "ts", "ecn")}
                     for x in p if x["syn"]],
            "data_packets": len(data),
            "max_len": max([x["len"] for x in data], default=0),
            "hdr_lens": sorted({x["hdr_len"] for x in p}),
            "data_hdr_lens": sorted({x["hdr_len"] for x in data}),
            "data_with_ts": sum(1 for x in data if x["ts"]),
            "with_ts": sum(1 for x in p if x["ts"]),
            "windows": sorted({x["win"] for x in p if not x["syn"]}),
            "ecn": {str(c): sum(1 for x in p if x["ecn"] == c) for c in range(4)},
            "ect_any": sum(1 for x in p if x["ecn"]),
            "ece": sum(1 for x in p if x["ece"]),
            "csum_bad": sum(1 for x in p if x["csum_bad"]),
            "csum_checked": sum(1 for x in p if x["full"]),
            "sack_packets": sum(1 for x in p if x["sack"]),
            "sack_blocks": sum(len(x["sack"]) for x in p),
        }
    syn = [x["t"] for x in pk if x["syn"] and not x["ack"]]
    synack = [x["t"] for x in pk if x["syn"] and x["ack"]]
    out["setup_s"] = round(synack[0] - syn[0], 3) if syn and synack else None
    return out


def seqmap(pcap_a, pcap_b, port):
    pa, pb = packets(pcap_a, port), packets(pcap_b, port)

    def syn_seq(pk, synack):
        for x in pk:
            if x["syn"] and x["ack"] == synack:
                return x["seq"]
        raise SystemExit("no SYN%s in capture" % ("-ACK" if synack else ""))

    off_a = (syn_seq(pb, False) - syn_seq(pa, False)) % M32   # A's seq space
    off_b = (syn_seq(pb, True) - syn_seq(pa, True)) % M32     # B's seq space
    res = {"off_a": off_a, "off_b": off_b}
    # A -> B: seq seen at B minus off_a is a seq A sent; ack minus off_b an ack A sent
    a_sent = {(x["seq"], x["len"]) for x in pa if x["dir"] == "a2b"}
    a_acks = {x["ackno"] for x in pa if x["dir"] == "a2b" and x["ack"]}
    b_got = [x for x in pb if x["dir"] == "a2b"]
    res["a2b_seq_ok"] = bool(b_got) and all(
        ((x["seq"] - off_a) % M32, x["len"]) in a_sent for x in b_got)
    res["a2b_ack_ok"] = all((x["ackno"] - off_b) % M32 in a_acks
                            for x in b_got if x["ack"])
    # B -> A: seq seen at A plus off_b is a seq B sent; ack plus off_a an ack B sent
    b_sent = {(x["seq"], x["len"]) for x in pb if x["dir"] == "b2a"}
    b_acks = {x["ackno"] for x in pb if x["dir"] == "b2a" and x["ack"]}
    a_got = [x for x in pa if x["dir"] == "b2a"]
    res["b2a_seq_ok"] = bool(a_got) and all(
        ((x["seq"] + off_b) % M32, x["len"]) in b_sent for x in a_got)
    res["b2a_ack_ok"] = all((x["ackno"] + off_a) % M32 in b_acks
                            for x in a_got if x["ack"])
    b_sacks = sorted(e for x in pb if x["dir"] == "b2a" for e in x["sack"])
    a_sacks = sorted(e for x in pa if x["dir"] == "b2a" for e in x["sack"])
    res["sack_blocks_sent"] = len(b_sacks)
    res["sack_blocks_received"] = len(a_sacks)
    res["sack_shifted"] = bool(a_sacks) and sorted(
        ((le + off_a) % M32, (re + off_a) % M32) for le, re in a_sacks) == b_sacks
    res["sack_unchanged"] = bool(a_sacks) and a_sacks == b_sacks
    isn = syn_seq(pa, False)
    top = max(((x["seq"] - isn) % M32 + x["len"] for x in pa if x["dir"] == "a2b"),
              default=0)

    def inside(v):
        return 0 < (v - isn) % M32 <= top + 1

    res["sack_in_a_space"] = sum(1 for le, re in a_sacks if inside(le) and inside(re))
    # checksums of what each side received (a sender's own packets may
    # carry an offloaded, not yet computed checksum)
    res["csum_bad"] = sum(1 for x in a_got + b_got if x["csum_bad"])
    res["csum_checked"] = sum(1 for x in a_got + b_got if x["full"])
    return res


def data_segs(pk, d="a2b"):
    """The data segments of direction @d of packets()."""
    return [x for x in pk if x["dir"] == d and x["len"]]


def sender_mss(pk):
    """The initiator's segment size (its GSO packets' gso_size): the smaller
    SYN MSS less the options of its data segments; None if unknown."""
    mss = [x["mss"] for x in pk if x["syn"] and x["mss"]]
    data = data_segs(pk)
    if not mss or not data:
        return None
    return min(mss) - (data[0]["hdr_len"] - 20)


def gso_expand(sent, mss):
    """@sent with every segment longer than @mss (a GSO packet, seen whole
    by the sender's own capture) replaced by its segments of @mss bytes,
    as the proxy segments it."""
    out = []
    for x in sent:
        if not mss or x["len"] <= mss:
            out.append(x)
            continue
        for off in range(0, x["len"], mss):
            y = dict(x)
            y["seq"] = (x["seq"] + off) % M32
            y["len"] = min(mss, x["len"] - off)
            out.append(y)
    return out


def _downstream(res, out, got):
    """What the proxy sent on (@out) against what the receiver got (@got):
    "lost" after the proxy, and arrivals the proxy did not send (bad)."""
    left = Counter((x["seq"], x["len"]) for x in out)
    for x in got:
        k = (x["seq"], x["len"])
        if left[k] > 0:
            left[k] -= 1
        else:
            res["bad"].append("seq %d len %d arrived, not sent on by the proxy" % k)
    res["lost"] = sum(left.values())


def _split_one(x, first, opts, left):
    """The pieces of @x, cut after @first bytes, taken out of @left (the
    proxy's segments by (seq, len)) if both are there: None if not, else
    a problem with their headers ("" if none)."""
    ka = (x["seq"], first)
    kb = ((x["seq"] + first) % M32, x["len"] - first)
    if not left.get(ka) or not left.get(kb):
        return None
    hl = x["hdr_len"]
    want = {"first": (hl, 20), "second": (20, hl), "both": (hl, hl)}[opts]
    want = [(h, h > 20 and x["ts"]) for h in want]
    got = []
    for k, w in ((ka, want[0]), (kb, want[1])):
        xs = left[k]
        j = next((j for j, y in enumerate(xs) if (y["hdr_len"], y["ts"]) == w), 0)
        got.append(xs.pop(j))
    if [(y["hdr_len"], y["ts"]) for y in got] == want:
        return ""
    return "seq %d: header lengths %d/%d, want %d/%d" % (
        x["seq"], got[0]["hdr_len"], got[1]["hdr_len"], want[0][0], want[1][0])


def split_check(mode, cut, opts, sent, out, got=None):
    """The split action on the initiator's data segments @sent (as sent,
    GSO packets expanded) against @out, the data segments the proxy sent
    on, each used once (retransmissions are split again).  @mode "all"
    expects every segment longer than the cut split, "nth:K" only the
    Kth; @cut 0 is "half"; @opts "first", "second" or "both" says which
    piece has the options.  A segment's pieces are looked for before the
    segment itself: a retransmission may have the seq and length of an
    earlier segment's second piece.  Returns {"sent", "arrived"
    (len(out)), "split" (both pieces there, their headers as @opts says),
    "whole", "bad" (the first few problems, segments the client did not
    send among them)}, and with @got (the receiver's data segments)
    "lost" (_downstream())."""
    left = {}
    for x in out:
        left.setdefault((x["seq"], x["len"]), []).append(x)
    res = {"sent": len(sent), "arrived": len(out), "split": 0, "whole": 0,
           "bad": []}
    for i, x in enumerate(sent):
        want = mode == "all" or mode == "nth:%d" % (i + 1)
        first = cut if cut else x["len"] // 2
        cuttable = want and 0 < first < x["len"]
        bad = _split_one(x, first, opts, left) if cuttable else None
        if bad is not None:
            if bad:
                res["bad"].append(bad)
            else:
                res["split"] += 1
            continue
        if left.get((x["seq"], x["len"])):
            left[(x["seq"], x["len"])].pop()
            res["whole"] += 1
            if cuttable:
                res["bad"].append("seq %d len %d not split" % (x["seq"], x["len"]))
            continue
        res["bad"].append("seq %d len %d: %s" % (
            x["seq"], x["len"], "pieces missing" if cuttable else "missing"))
    for k, xs in sorted(left.items()):
        res["bad"] += ["seq %d len %d: no piece of a segment the client sent" % k] * len(xs)
    if got is not None:
        _downstream(res, out, got)
    res["bad"] = res["bad"][:5]
    return res


def coalesce_check(opts, sent, out, got=None):
    """The coalesce action on the initiator's data segments @sent against
    @out, those the proxy sent on: each is one the client sent, or two
    consecutive ones joined with the header (packets()' "hdr": ack,
    window, options) of the first or of the second as @opts says; of a
    segment sent more than once, any transmission.  Returns {"sent",
    "arrived", "joined", "differ" (joined pairs whose two headers differ,
    so that @opts is observed), "max_len" (IP length), "bad"}, and with
    @got "lost" (_downstream())."""
    by_seq = {}
    for x in sent:
        by_seq.setdefault(x["seq"], []).append(x)
    known = {(x["seq"], x["len"]) for x in sent}
    n = 0 if opts == "first" else 1
    res = {"sent": len(sent), "arrived": len(out), "joined": 0, "differ": 0,
           "max_len": max([x["ip_len"] for x in out], default=0), "bad": []}
    for g in out:
        seq, ln = g["seq"], g["len"]
        if (seq, ln) in known:
            continue
        pairs = [(a, b) for a in by_seq.get(seq, [])
                 for b in by_seq.get((seq + a["len"]) % M32, [])
                 if a["len"] + b["len"] == ln]
        match = [p for p in pairs if p[n]["hdr"] == g["hdr"]]
        if not match:
            res["bad"].append("seq %d len %d is no pair of client segments" % (seq, ln)
                              if not pairs else
                              "seq %d: header not the %s segment's" % (seq, opts))
            continue
        res["joined"] += 1
        res["differ"] += match[0][0]["hdr"] != match[0][1]["hdr"]
    if got is not None:
        _downstream(res, out, got)
    res["bad"] = res["bad"][:5]
    return res


def _action(argv):
    """split / coalesce from the command line: the result."""
    port = int(argv[1])
    if argv[0] == "split":
        mode, cut, opts, files = argv[2], int(argv[3]), argv[4], argv[5:]
    else:
        opts, files = argv[2], argv[3:]
    cpk = packets(files[0], port)
    sent = data_segs(cpk)
    out = data_segs(packets(files[1], port))
    got = data_segs(packets(files[2], port)) if len(files) > 2 else None
    if argv[0] == "split":
        return split_check(mode, cut, opts, gso_expand(sent, sender_mss(cpk)),
                           out, got)
    return coalesce_check(opts, sent, out, got)


def main(argv):
    if len(argv) >= 3 and argv[0] == "summary":
        port = int(argv[1])
        print(json.dumps({n: summary_one(p, port)
                          for n, p in (a.split("=", 1) for a in argv[2:])}))
    elif len(argv) == 4 and argv[0] == "seqmap":
        print(json.dumps(seqmap(argv[2], argv[3], int(argv[1]))))
    elif (argv[:1] == ["split"] and len(argv) in (7, 8)) or \
            (argv[:1] == ["coalesce"] and len(argv) in (5, 6)):
        print(json.dumps(_action(argv)))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
