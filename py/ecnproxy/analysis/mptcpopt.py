# SPDX-License-Identifier: GPL-2.0
"""What a capture shows of TCP's options and Multipath TCP's, per
connection (standard library only; the guest runs it on each capture of
an exp-mbtest-mptcp run, the report reads its summaries).

  mptcp_options(raw)   [(subtype name, {fields})] of the MPTCP options
                       (kind 30) in a TCP option block
  option_names(raw)    the names of every option in a block, in order
  summarize(path, server_port)
                       {connection: summary}, a connection named
                       "CLIENT:PORT>SERVER:PORT" after the SYN's sender
                       (the client) or, without a SYN, the end whose port
                       is not server_port

A connection's summary: "syn" and "synack": the option names of its first
SYN and SYN-ACK (None if the capture has none), "join": its SYN carried
MP_JOIN (a subflow joining a connection) rather than MP_CAPABLE; then per
direction ("c2s", "s2c"): segments, data segments and payload bytes,
RSTs, data segments with a timestamp, ACKs with SACK blocks, and the
MPTCP options seen: mp_capable (segments after the SYNs that still carry
MP_CAPABLE: the third ACK and, in v1, the first data), dss_map (data
segments with a DSS mapping), data_no_dss (data segments without any MPTCP
option: their mapping was lost or the connection fell back), dss_ack (a
DSS option with a DATA_ACK), infinite (a mapping of data-level length 0:
the infinite mapping of a fallback, RFC 8684 3.7), data_fin, add_addr,
rm_addr, mp_prio, mp_fail, fastclose, tcprst (MP_TCPRST, with its reasons)
and no_mptcp (segments without any MPTCP option).
"""
import struct

from . import pcapread

SUBTYPES = {0: "mp_capable", 1: "mp_join", 2: "dss", 3: "add_addr", 4: "rm_addr",
            5: "mp_prio", 6: "mp_fail", 7: "fastclose", 8: "tcprst"}
KINDS = {2: "mss", 3: "wscale", 4: "sackok", 5: "sack", 8: "ts", 19: "md5", 29: "ao",
         30: "mptcp", 34: "fastopen", 254: "exp"}
COUNTS = ("segs", "data", "bytes", "rst", "data_ts", "ack_sack", "mp_capable", "dss_map",
          "data_no_dss", "dss_ack", "infinite", "data_fin", "add_addr", "rm_addr", "mp_prio",
          "mp_fail", "fastclose", "tcprst", "no_mptcp")


def option_names(raw):
    """The options of a block by name (kind 30 by MPTCP subtype, e.g.
    "mptcp:dss"; an unknown kind as its number), NOPs left out."""
    out = []
    for kind, v in pcapread.iter_options(raw):
        if kind == 30 and v:
            out.append("mptcp:" + SUBTYPES.get(v[0] >> 4, str(v[0] >> 4)))
        else:
            out.append(KINDS.get(kind, str(kind)))
    return out


def _dss(v):
    """The fields of a DSS option's value (after kind and length)."""
    if len(v) < 2:
        return {}
    fl = v[1]
    d = {"data_ack": bool(fl & 1), "map": bool(fl & 4), "data_fin": bool(fl & 16)}
    o = 2
    if fl & 1:
        o += 8 if fl & 2 else 4
    if fl & 4:
        dsn = 8 if fl & 8 else 4
        if len(v) >= o + dsn + 6:
            d["dll"] = struct.unpack_from("!H", v, o + dsn + 4)[0]
            d["csum"] = len(v) >= o + dsn + 8
    return d


def mptcp_options(raw):
    """[(subtype name, fields)] of the MPTCP options in a TCP option block:
    dss: data_ack, map, data_fin, dll (data-level length, if whole), csum
    (a checksum present); tcprst: reason (RFC 8684 3.6); mp_capable:
    version; others: {}."""
    out = []
    for kind, v in pcapread.iter_options(raw):
        if kind != 30 or not v:
            continue
        st = SUBTYPES.get(v[0] >> 4, str(v[0] >> 4))
        f = {}
        if st == "dss":
            f = _dss(v)
        elif st == "tcprst" and len(v) >= 2:
            f = {"reason": v[1]}
        elif st == "mp_capable":
            f = {"version": v[0] & 15}
        out.append((st, f))
    return out


def _blank():
    return {k: 0 for k in COUNTS}


def summarize(path, server_port):
    """{connection: summary} of a capture (see the module's docstring)."""
    conns = {}
    for p in pcapread.read_segments(path):
        _t, _ecn, src, dst, sport, dport, _seq, _ack, flags, _win, plen, raw = p
        syn, ack = flags & pcapread.SYN, flags & pcapread.ACK
        if syn and not ack:
            key, d = (src, sport, dst, dport), "c2s"
        elif syn:
            key, d = (dst, dport, src, sport), "s2c"
        elif dport == server_port:
            key, d = (src, sport, dst, dport), "c2s"
        else:
            key, d = (dst, dport, src, sport), "s2c"
        name = "%s:%d>%s:%d" % key
        c = conns.get(name)
        if c is None:
            c = conns[name] = {"syn": None, "synack": None, "join": None,
                               "c2s": _blank(), "s2c": _blank(), "tcprst_reasons": []}
        opts = mptcp_options(raw)
        names = option_names(raw)
        if syn:
            which = "synack" if ack else "syn"
            if c[which] is None:
                c[which] = names
                if which == "syn":
                    c["join"] = any(st == "mp_join" for st, _f in opts)
        s = c[d]
        s["segs"] += 1
        if plen:
            s["data"] += 1
            s["bytes"] += plen
            if "ts" in names:
                s["data_ts"] += 1
        if flags & pcapread.RST:
            s["rst"] += 1
        if "sack" in names:
            s["ack_sack"] += 1
        if not opts:
            s["no_mptcp"] += 1
        has_map = False
        for st, f in opts:
            if st == "mp_capable":
                s["mp_capable"] += not syn
            elif st == "dss":
                has_map = has_map or f.get("map", False)
                s["dss_ack"] += f.get("data_ack", False)
                s["data_fin"] += f.get("data_fin", False)
                if f.get("map") and f.get("dll") == 0:
                    s["infinite"] += 1
            elif st == "tcprst":
                s["tcprst"] += 1
                c["tcprst_reasons"].append(f.get("reason"))
            elif st in s:
                s[st] += 1
        if plen:
            s["dss_map"] += has_map
            s["data_no_dss"] += not opts
    return conns
