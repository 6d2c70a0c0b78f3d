# SPDX-License-Identifier: GPL-2.0
"""Time a packet spends crossing a node: two captures on one clock, one on
the interface a packet enters by and one on the interface it leaves by
(the impairment experiments: the proxy node's eth0 and eth1), matched
packet by packet.

transit(pkts_a, pkts_b) -> {"a2b": summary, "b2a": summary}, where pkts_x
are pcapread.read_packets() tuples (t, ecn, src, dst, sport, dport, seq,
ack, flags, win, plen) and a packet goes a -> b when it was seen first at
a.  A packet's key is (src, dst, sport, dport, seq, ack, flags, plen): a
node that rewrites none of these (no NAT, no sequence randomiser) keeps
it; a key seen more than once at either capture (a retransmission with
the same ACK, a repeated duplicate ACK) is left out, as its copies cannot
be told apart.  summary: {"n" (packets matched), "unmatched" (packets
seen only at a, for "a2b", or only at b, for "b2a": dropped or made by
the node, or outside the other capture's span), "p50_us", "p95_us",
"mean_us"} (None without packets).
"""
from . import stats


def _index(pkts):
    seen = {}
    dup = set()
    for p in pkts:
        t, _ecn, src, dst, sport, dport, seq, ack, flags, _win, plen = p
        k = (src, dst, sport, dport, seq, ack, flags, plen)
        if k in seen:
            dup.add(k)
        else:
            seen[k] = t
    for k in dup:
        del seen[k]
    return seen, dup


def summary(deltas, unmatched):
    if not deltas:
        return {"n": 0, "unmatched": unmatched, "p50_us": None, "p95_us": None,
                "mean_us": None}
    us = [d * 1e6 for d in deltas]
    return {"n": len(us), "unmatched": unmatched,
            "p50_us": round(stats.median(us), 1),
            "p95_us": round(stats.os_quantile(us, 0.95)[0], 1),
            "mean_us": round(sum(us) / len(us), 1)}


def transit(pkts_a, pkts_b):
    ia, da = _index(pkts_a)
    ib, db = _index(pkts_b)
    res = {"a2b": [], "b2a": []}
    for k, ta in ia.items():
        tb = ib.get(k)
        if tb is not None:
            if ta <= tb:
                res["a2b"].append(tb - ta)
            else:
                res["b2a"].append(ta - tb)
    # seen at one capture only: dropped or made by the node, or outside
    # the other capture's span
    only_a = sum(1 for k in ia if k not in ib and k not in db)
    only_b = sum(1 for k in ib if k not in ia and k not in da)
    return {"a2b": summary(res["a2b"], only_a), "b2a": summary(res["b2a"], only_b)}
