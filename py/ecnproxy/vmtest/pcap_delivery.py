# SPDX-License-Identifier: GPL-2.0
"""Delivery of one TCP connection's client->server data, seen in a pcap.

  python3 -m ecnproxy.vmtest.pcap_delivery PCAP SERVER_PORT [CLIENT_SIDE_PCAP]

Prints JSON for the direction toward SERVER_PORT (read with
analysis/pcapread.py, not tshark):
  data       segments with payload
  new        segments that carried at least one byte not seen before
  dup        segments whose bytes had all been seen before (a retransmission
             of data that had already arrived: what the receiver would D-SACK)
  dup_bytes  bytes in those
  max_gap    longest time (s) between two segments carrying new bytes, from
             the first data segment to the last
  first, last  times (s) of the first and last data segment
With CLIENT_SIDE_PCAP (the same connection captured next to the client;
the proxy rewrites no sequence numbers, so both captures number alike):
  lost       segments the proxy told the client were lost: ACK numbers of
             which the client received at least 3 more pure ACKs than the
             server sent (the injected duplicates and the held ACKs exist
             only on the client's side of the proxy)
  dup_lost   duplicates at the server that start at one of those, but for
  stub_lost  ... the one-byte copies among them (the proxy's trimmed
             retransmission of L, DUPACK.md step 3: E answers it at once)
  holes      other segments the client was told were lost, by the server's
             own duplicate ACKs (4 or more, seen on both sides: a real hole
             or reordering on the path)
  dup_holes  duplicates at the server that start at one of those (the
             client's own retransmissions)
Relative sequence numbers (one connection per capture, no wraparound).
"""
import json
import sys

from ..analysis import pcapread


def data_toward(pcap, port):
    """(time since the first packet, relative seq, length) of each data
    segment toward PORT."""
    t0 = base = None
    for (t, _ecn, _src, _dst, _sport, dport, seq, _ack, flags, _win,
         plen) in pcapread.read_packets(pcap):
        if t0 is None:
            t0 = t
        if dport != port:
            continue
        if flags & 0x02 or base is None:
            base = seq
        if plen > 0:
            yield t - t0, (seq - base) % (1 << 32), plen


def pure_acks(pcap, port):
    """{absolute ACK number: pure ACKs from PORT with it}."""
    count = {}
    for (_t, _ecn, _src, _dst, sport, _dport, _seq, ack, flags, _win,
         plen) in pcapread.read_packets(pcap):
        if sport == port and plen == 0 and flags & 0x10 and not flags & 0x07:
            count[ack] = count.get(ack, 0) + 1
    return count


def told_lost(client_pcap, server_pcap, port):
    """(ACK numbers the proxy claimed lost, other ACK numbers the client
    got 4 or more pure ACKs with), absolute."""
    cs = pure_acks(client_pcap, port)
    sv = pure_acks(server_pcap, port)
    proxy = {a for a, n in cs.items() if n - sv.get(a, 0) >= 3}
    holes = {a for a, n in cs.items() if n >= 4 and a not in proxy}
    return proxy, holes


def main(pcap, port, client_pcap=None):
    port = int(port)
    lost, holes, base = set(), set(), None
    if client_pcap:
        lost, holes = told_lost(client_pcap, pcap, port)
        for (_t, _e, _s, _d, _sp, dport, seq, _a, flags, _w,
             _p) in pcapread.read_packets(pcap):
            if dport == port and flags & 0x02:
                base = seq
                break
    lost_rel = {(a - base) % (1 << 32) for a in lost} if base is not None else set()
    holes_rel = {(a - base) % (1 << 32) for a in holes} if base is not None else set()
    # received intervals, merged: [start, end) sorted
    have = []
    res = dict(data=0, new=0, dup=0, dup_bytes=0, max_gap=0.0, first=None,
               last=None)
    last_new = None
    for t, seq, ln in data_toward(pcap, port):
        end = seq + ln
        res["data"] += 1
        if res["first"] is None:
            res["first"] = t
        res["last"] = t
        covered = sum(max(0, min(end, e) - max(seq, s)) for s, e in have)
        if covered >= ln:
            res["dup"] += 1
            res["dup_bytes"] += ln
            if seq in lost_rel and ln == 1:
                res["stub_lost"] = res.get("stub_lost", 0) + 1
            elif seq in lost_rel:
                res["dup_lost"] = res.get("dup_lost", 0) + 1
            elif seq in holes_rel:
                res["dup_holes"] = res.get("dup_holes", 0) + 1
            continue
        res["new"] += 1
        if last_new is not None:
            res["max_gap"] = max(res["max_gap"], t - last_new)
        last_new = t
        have.append((seq, end))
        have.sort()
        merged = [have[0]]
        for s, e in have[1:]:
            if s <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((s, e))
        have = merged
    if client_pcap:
        res["lost"] = len(lost)
        res.setdefault("dup_lost", 0)
        res.setdefault("stub_lost", 0)
        res["holes"] = len(holes)
        res.setdefault("dup_holes", 0)
    res["max_gap"] = round(res["max_gap"], 3)
    for k in ("first", "last"):
        if res[k] is not None:
            res[k] = round(res[k], 6)
    print(json.dumps(res))


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])
