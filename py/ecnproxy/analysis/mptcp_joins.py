# SPDX-License-Identifier: GPL-2.0
"""Coalesced segments against their DSS mappings (diag-mbtest-coalesce;
issue 44).  Standard library only.

impair's coalesce joins two consecutive segments of a subflow into one
with the first's or the second's TCP options, so the joined segment
carries one DSS mapping (RFC 8684 3.3.1) for the bytes of two.  Where the
sender's two segments were mapped to data sequence numbers that follow
each other, a receiver that read the bytes outside the mapping as its
continuation would still be right; where they were not (the scheduler
sent other data on the other subflow in between), it would deliver the
wrong bytes.  This module compares, per subflow of path 1, the segments
as the middlebox received them (the client's, capture p1c, with their own
mappings) with the segments it sent on (p1s):

  data_segments(path, port)   {subflow: [(ssn, length, mapping)]} of the
                              data segments toward port, ssn relative to
                              the subflow's ISN (1: the first data byte),
                              mapping (dsn, ssn, data-level length) or None
  joins(orig, seen)           counts over one subflow: joined segments
                              (spanning two or more of orig's, and not
                              one of orig's as it was sent), those
                              without a mapping, those with bytes after or
                              before their mapping, and how many of those
                              bytes the sender had mapped right after the
                              mapping's end (or right before its start)
                              ("contiguous") or elsewhere ("elsewhere")
  resent(orig)                the sender's mappings that map data it had
                              mapped before on the same subflow at other
                              subflow bytes (MPTCP-level retransmissions)
  prefix_intact(...)          whether the bytes the receiver got are the
                              first bytes of those sent (their SHA-256)
  main: scripts/ecnproxy mptcp-joins RESULTS [--json OUT]
"""
import argparse
import glob
import hashlib
import json
import os
import random
import struct
import sys

from . import pcapread

DSN_MOD = 1 << 32   # a 4-byte DSN is the low 32 bits of the 8-byte one


def dss_map(raw):
    """(dsn, ssn, data-level length) of the DSS mapping in a TCP option
    block, or None (no DSS option, no mapping, or one cut short)."""
    for kind, v in pcapread.iter_options(raw):
        if kind != 30 or len(v) < 2 or v[0] >> 4 != 2:
            continue
        fl = v[1]
        if not fl & 4:
            return None
        o = 2 + ((8 if fl & 2 else 4) if fl & 1 else 0)
        n = 8 if fl & 8 else 4
        if len(v) < o + n + 6:
            return None
        dsn = int.from_bytes(v[o:o + n], "big")
        ssn, dll = struct.unpack_from("!IH", v, o + n)
        # a DATA_FIN takes one octet of the data-level length, no payload
        if fl & 16 and dll:
            dll -= 1
        return dsn, ssn, dll
    return None


def data_segments(path, port):
    """{"SRC:SPORT>DST:PORT": [(ssn, length, mapping)]}: the data segments
    toward PORT of each connection, from its latest SYN on (a SYN with
    another ISN starts the list again); None for a connection whose SYN
    the capture does not have."""
    isn, out = {}, {}
    for p in pcapread.read_segments(path):
        _t, _e, src, dst, sport, dport, seq, _a, flags, _w, plen, raw = p
        if dport != port:
            continue
        key = "%s:%d>%s:%d" % (src, sport, dst, dport)
        if flags & pcapread.SYN:
            if isn.get(key) != seq:
                out[key] = []
            isn[key] = seq
        elif key in isn:
            if plen:
                out[key].append(((seq - isn[key]) % (1 << 32), plen, dss_map(raw)))
        elif plen:
            out[key] = None
    return out


def _true_dsn(maps, ssn):
    """The DSN the sender mapped subflow byte ssn to, or None."""
    for dsn, mssn, dll in maps:
        if mssn <= ssn < mssn + dll:
            return (dsn + ssn - mssn) % DSN_MOD
    return None


def resent(orig):
    """The sender's mappings on one subflow that start below the highest
    data sequence number it had mapped on this subflow before (it maps new
    data upward): data re-sent at the MPTCP level over the same subflow,
    each copy at new subflow bytes (a receiver that fell back to TCP takes
    each as new bytes).  -> (mappings, their data-level bytes)."""
    top, done, n, nbytes = None, set(), 0, 0
    for _s, _n, m in orig:
        if not m or not m[2] or m in done:
            continue
        done.add(m)
        dsn, _ms, dll = m
        mod = DSN_MOD if dsn < DSN_MOD else 1 << 64
        if top is not None and 0 < (top - dsn) % mod < mod // 2:
            n += 1
            nbytes += dll
        end = (dsn + dll) % mod
        if top is None or 0 < (end - top) % mod < mod // 2:
            top = end
    return n, nbytes


def prefix_intact(sent, received, sha):
    """Whether the RECEIVED bytes a receiver hashed to SHA are the first
    bytes of what the sender sent: the transfer's payload of SENT bytes is
    ecnproxy.vmtest.xfer.payload(), random.Random(SENT).randbytes(SENT)
    (the analysis imports nothing of the test layer); None when unknown."""
    if not isinstance(sent, int) or not isinstance(received, int) or not sha or \
            not 0 <= received <= sent:
        return None
    data = random.Random(sent).randbytes(sent)
    return hashlib.sha256(data[:received]).hexdigest() == sha


def joins(orig, seen):
    """Counts over one subflow (see the module's docstring)."""
    maps = sorted({m for _s, _n, m in orig if m and m[2]}, key=lambda m: m[1])
    starts = {s for s, _n, _m in orig}
    sent = {(s, n) for s, n, _m in orig}
    c = dict(joined=0, no_map=0, after=0, after_contiguous=0, after_elsewhere=0,
             after_unknown=0, before=0, before_contiguous=0, before_elsewhere=0,
             before_unknown=0, bytes_outside=0)
    for s, n, m in seen:
        # as the sender sent it (a retransmission with other bounds too)
        if (s, n) in sent or not any(s < t < s + n for t in starts):
            continue
        c["joined"] += 1
        if not m or not m[2]:
            c["no_map"] += 1
            continue
        dsn, ms, dll = m
        me = ms + dll
        for side, first, want, outside in (
                ("after", me, dsn + dll, s + n - me),
                ("before", s, dsn - (ms - s), ms - s)):
            if outside <= 0:
                continue
            c[side] += 1
            c["bytes_outside"] += outside
            t = _true_dsn(maps, first)
            c[side + ("_unknown" if t is None else "_contiguous" if t == want % DSN_MOD
                      else "_elsewhere")] += 1
    return c


def run_report(d, rec, port):
    """One run's record: its outcome and the joins of each subflow."""
    res = rec.get("result") or {}
    tr = rec.get("transfer") or {}
    srv, cli = tr.get("server") or {}, tr.get("client") or {}
    out = {"id": rec["id"], "config": rec["params"]["config"], "outcome": res.get("outcome"),
           "received": srv.get("received"),
           "prefix_intact": prefix_intact(cli.get("sent"), srv.get("received"),
                                          srv.get("received_sha256")),
           "byte_exact": res.get("byte_exact"), "path_bytes": res.get("path_bytes"),
           "subflows": {}}
    caps = []
    for side in "cs":
        # published (captures/, xz: scripts/ecnproxy keep-captures), else
        # as the guest kept them (pcaps/), either compressed or not
        name = "%s.p1%s.pcap" % (rec["id"], side)
        cands = [os.path.join(d, sub, name + x) for sub in ("captures", "pcaps")
                 for x in (".xz", "")]
        caps.append(next((f for f in cands if os.path.exists(f)), cands[-1]))
    if not all(os.path.exists(f) for f in caps):
        out["error"] = "no captures (KEEP_PCAPS=1)"
        return out
    orig, seen = (data_segments(f, port) for f in caps)
    for key in sorted(set(orig) | set(seen)):
        o, n = orig.get(key), seen.get(key)
        if o is None or n is None:
            # a SYN before the capture began, or a subflow on one side only
            out.setdefault("unmatched", []).append(key)
            continue
        out["subflows"][key] = dict(joins(o, n), **dict(zip(("resent", "resent_bytes"),
                                                             resent(o))))
    return out


def report(d, port=5402):
    recs = []
    for f in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
        with open(f) as fh:
            recs.append(json.load(fh))
    return [run_report(d, r, port) for r in recs]


def fmt(rows):
    lines = ["| run | outcome | bytes received | the sent bytes' prefix | joined | after its "
             "mapping (contiguous / elsewhere) | before it (contiguous / elsewhere) | no mapping "
             "| mappings of data re-sent on the subflow (bytes) | subflows not compared |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        intact = {True: "yes", False: "**no**", None: "?"}[r.get("prefix_intact")]
        if r.get("error"):
            lines.append("| %s | %s | %s | %s | %s | | | | | |" % (
                r["id"], r["outcome"], r["received"], intact, r["error"]))
            continue
        t = {k: sum(s.get(k, 0) for s in r["subflows"].values()) for k in (
            "joined", "after", "after_contiguous", "after_elsewhere", "before",
            "before_contiguous", "before_elsewhere", "no_map", "resent", "resent_bytes")}
        lines.append("| %s | %s | %s | %s | %d | %d (%d / %d) | %d (%d / %d) | %d | %d (%d) "
                     "| %d |" % (
                         r["id"], r["outcome"], r["received"], intact, t["joined"], t["after"],
                         t["after_contiguous"], t["after_elsewhere"], t["before"],
                         t["before_contiguous"], t["before_elsewhere"], t["no_map"],
                         t["resent"], t["resent_bytes"], len(r.get("unmatched", []))))
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="mptcp-joins", description=(
        "coalesced segments against their DSS mappings, in a diag-mbtest-coalesce "
        "directory made with KEEP_PCAPS=1"))
    ap.add_argument("results")
    ap.add_argument("--json", metavar="OUT", help="the rows as JSON too")
    a = ap.parse_args(argv)
    if not os.path.isdir(os.path.join(a.results, "runs")):
        ap.error("%s has no runs/" % a.results)
    rows = report(a.results)
    print(fmt(rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
