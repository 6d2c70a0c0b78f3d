# SPDX-License-Identifier: GPL-2.0
"""How long each congestion event takes, ECN sender against proxied
non-ECN sender, from a fairness run's kept captures (issue 40: at the
testbed's own RTT the proxied upload reduced less often per CE-marked
round trip than an ECN sender, results/fairness-rtt0-20261202/).

  scripts/ecnproxy event-cycle RESULTS [--json OUT]
  (RESULTS from `KEEP_PCAPS=1 make fairness PROFILE=fairness-rtt0-pcap`)

Per upload run of RESULTS/runs/*.json with its captures in
RESULTS/pcaps/ (or RESULTS/captures/), ID.client-eth0.pcap (A's sender),
ID.udp1-eth0.pcap (B's sender) and ID.server-eth0.pcap (both receivers),
each possibly .xz; per flow (A: port 5201, B: 5202):

  reduction   an ECN sender's CWR segment (it reduced on the ECE before
              it); a non-ECN sender's first retransmission of a
              loss-recovery episode (a segment below the highest sequence
              sent, after the cumulative ACK passed the previous
              episode's highest sequence)
  trigger     the first CE mark on new data at the receiver after the
              receiver saw the previous reduction's CWR (for a proxied
              sender the CWR the proxy sets)
  reaction    reduction minus trigger: the mark's way to the receiver's
              ACK, back to the sender, and what the sender (or the proxy)
              waits before it reduces
  cycle       time between two reductions
  unanswered  CE-marked round trips (CE marks on new data at the
              receiver, grouped greedily into windows of the run's RTT
              probe median) with no reduction of the sender within two
              round trips of the window's first mark
For a sender with loss recovery (the proxied one), from its own capture:
  held        the first ACK the sender received that repeats its
              cumulative ACK (the hold's first held ACK) before the
              reduction
  rack_wait   reduction minus held: what RACK waited before it marked the
              segment lost (its reordering window and timer)
  hold        from the reduction to the ACK that moved the cumulative ACK
              past the retransmitted segment (the release)
  ece_to_held held minus the first ECE the receiver sent after the
              trigger: the proxy's pending time plus one way to the sender
  pending ACKs  the pure ACKs the sender received from that first ECE up
              to the ACK the hold started on (the signal), by the full
              segments the sender had sent beyond each when it arrived
              (0, 1, 2 or more): with SACK the proxy starts the hold
              only on an ACK with ECNP_DUPACK_MIN_FLIGHT_SACK or more

Times are the guest's clock, one kernel for every namespace.  Medians and
90th percentiles (nearest rank) in ms.
"""
import glob
import json
import math
import os
import statistics
import sys

from . import pcapread

PORTS = {"A": 5201, "B": 5202}
SENDER_CAP = {"A": "client-eth0", "B": "udp1-eth0"}
RECEIVER_CAP = "server-eth0"


def seq_lt(a, b):
    return a != b and ((b - a) & 0xFFFFFFFF) < 0x80000000


def seq_le(a, b):
    return ((b - a) & 0xFFFFFFFF) < 0x80000000


def find_cap(d, rid, name):
    for sub in ("pcaps", "captures"):
        for ext in ("", ".xz"):
            p = os.path.join(d, sub, "%s.%s.pcap%s" % (rid, name, ext))
            if os.path.exists(p):
                return p
    return None


def data_conn(segs, port):
    """The client port with the most payload toward PORT."""
    pay = {}
    for s in segs:
        if s[5] == port:
            pay[s[4]] = pay.get(s[4], 0) + s[10]
    return max(pay, key=pay.get) if pay else None


def receiver_view(segs, port, cport):
    """(CE times on new data, CWR times, ECE-ACK times) at the receiver."""
    ce, cwr, ece = [], [], []
    hi = None
    for s in segs:
        t, ecn, flags, plen = s[0], s[1], s[8], s[10]
        if s[4] == cport and s[5] == port:
            end = (s[6] + plen) & 0xFFFFFFFF
            new = plen and (hi is None or seq_lt(hi, end))
            if new:
                hi = end
            if plen and ecn == 3 and new:
                ce.append(t)
            if flags & pcapread.CWR:
                cwr.append(t)
        elif s[4] == port and s[5] == cport and flags & pcapread.ECE and \
                not flags & pcapread.SYN:
            ece.append(t)
    return ce, cwr, ece


def sender_view(segs, port, cport, mss=1448):
    """(CWR times, episode starts [(t, seq)], ACKs [(t, ack, plen, sack,
    full segments the sender had sent beyond the ACK when it arrived)]) at
    the sender."""
    cwr, eps, acks = [], [], []
    hi = None
    ep_end = None
    una = None
    for s in segs:
        t, flags, plen = s[0], s[8], s[10]
        if s[4] == cport and s[5] == port:
            if flags & pcapread.SYN:
                continue
            end = (s[6] + plen) & 0xFFFFFFFF
            if flags & pcapread.CWR and plen:
                cwr.append(t)
            if plen and hi is not None and seq_le(end, hi):
                if ep_end is None or (una is not None and seq_le(ep_end, una)):
                    eps.append((t, s[6]))
                    ep_end = hi
            if plen and (hi is None or seq_lt(hi, end)):
                hi = end
        elif s[4] == port and s[5] == cport and flags & pcapread.ACK:
            opts = pcapread.tcp_options(s[11])
            fl = ((hi - s[7]) & 0xFFFFFFFF) // mss if hi is not None else 0
            acks.append((t, s[7], plen, bool(opts.get("sack")), fl))
            if una is None or seq_lt(una, s[7]):
                una = s[7]
    return cwr, eps, acks


def p50_p90(xs):
    if not xs:
        return None, None
    xs = sorted(xs)
    return statistics.median(xs), xs[math.ceil(0.9 * len(xs)) - 1]


def ce_rtts(times, rtt):
    starts, end = [], None
    for t in sorted(times):
        if end is None or t >= end:
            starts.append(t)
            end = t + rtt
    return starts


def flow_events(rcv, snd, proxied, rtt, t_from, t_to):
    """Per-flow figures (see the module's docstring)."""
    ce, rcwr, ece = rcv
    cwr, eps, acks = snd
    red = [t for t, _ in eps] if proxied else cwr
    red = sorted(red)
    out = {"reductions": 0, "reaction": [], "cycle": [], "rack_wait": [],
           "hold": [], "ece_to_held": [], "unanswered": 0, "ce_rtts": 0,
           "pending_flight": [0, 0, 0]}
    sel = [t for t in red if t_from <= t < t_to]
    out["reductions"] = len(sel)
    out["cycle"] = [b - a for a, b in zip(sel, sel[1:])]
    rcwr = sorted(rcwr)
    for t in sel:
        # the previous reduction's CWR at the receiver: the last CWR the
        # receiver saw before the first CE mark that can trigger this one
        prev = [x for x in red if x < t]
        p = prev[-1] if prev else None
        after_cwr = None
        if p is not None:
            nxt = [c for c in rcwr if c > p]
            after_cwr = nxt[0] if nxt else None
        trig = [c for c in ce if (after_cwr is None or c > after_cwr) and c <= t]
        if trig and (after_cwr is not None or p is None):
            out["reaction"].append(t - trig[0])
            if proxied:
                e = [x for x in ece if x >= trig[0]]
                held = sig = None
                last_ack = None
                for (ta, a, plen, _sack, _fl) in acks:
                    if ta > t:
                        break
                    if last_ack is not None and a == last_ack and not plen and ta >= trig[0]:
                        held = ta if held is None else held
                    elif last_ack is None or seq_lt(last_ack, a):
                        held = None
                        sig = ta
                    if last_ack is None or seq_lt(last_ack, a):
                        last_ack = a
                if held is not None:
                    out["rack_wait"].append(t - held)
                    if e and e[0] <= held:
                        out["ece_to_held"].append(held - e[0])
                        # E's ACKs between its first ECE and the one the
                        # hold started on: what the sender had in flight
                        for (ta, _a, plen, _sack, fl) in acks:
                            if e[0] <= ta < sig and not plen:
                                out["pending_flight"][min(fl, 2)] += 1
        if proxied:
            seq = [s for (te, s) in eps if te == t][0]
            for (ta, a, _p, _s, _f) in acks:
                if ta > t and seq_lt(seq, a):
                    out["hold"].append(ta - t)
                    break
    starts = [s for s in ce_rtts([c for c in ce if t_from <= c < t_to], rtt)]
    out["ce_rtts"] = len(starts)
    for s in starts:
        if not any(s < r <= s + 2 * rtt for r in red):
            out["unanswered"] += 1
    return out


def scan_run(d, rec):
    rid = rec["id"]
    paths = {k: find_cap(d, rid, SENDER_CAP[k]) for k in PORTS}
    rpath = find_cap(d, rid, RECEIVER_CAP)
    if rpath is None or None in paths.values():
        return None
    rsegs = list(pcapread.read_segments(rpath))
    rtt = (((rec.get("probes") or {}).get("rtt") or {}).get("p50_ms") or 5.0) / 1e3
    t0 = min(s[0] for s in rsegs)
    steady = rec.get("profile_steady_from_s", 10)
    dur = rec["params"].get("duration_s", 60)
    t_from, t_to = t0 + steady, t0 + dur
    pair = rec["params"].get("pair", "")
    rows = {}
    for k, port in PORTS.items():
        ssegs = list(pcapread.read_segments(paths[k]))
        cport = data_conn(ssegs, port)
        proxied = k == "A" and pair.startswith("proxy")
        rows[k] = flow_events(receiver_view(rsegs, port, cport),
                              sender_view(ssegs, port, cport),
                              proxied, rtt, t_from, t_to)
        rows[k]["proxied"] = proxied
    return {"id": rid, "pair": pair, "rtt_ms": rtt * 1e3,
            "seconds": t_to - t_from, "flows": rows}


def fmt(x, scale=1e3, f="%.2f"):
    return "-" if x is None else f % (x * scale)


def table(res):
    lines = ["| run | flow | proxied | reductions/s | reaction p50 | p90 | cycle p50 | p90 | "
             "CE-marked RTTs unanswered | rack_wait p50 | p90 | hold p50 | p90 | "
             "ece_to_held p50 | p90 | pending ACKs at 0 / 1 / 2+ in flight |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in res:
        for k, f in sorted(r["flows"].items()):
            cells = [r["id"], k, "yes" if f["proxied"] else "no",
                     "%.1f" % (f["reductions"] / r["seconds"])]
            for key in ("reaction", "cycle"):
                a, b = p50_p90(f[key])
                cells += [fmt(a), fmt(b)]
            cells.append("%d of %d" % (f["unanswered"], f["ce_rtts"]))
            for key in ("rack_wait", "hold", "ece_to_held"):
                a, b = p50_p90(f[key]) if f["proxied"] else (None, None)
                cells += [fmt(a), fmt(b)]
            cells.append(" / ".join(map(str, f["pending_flight"])) if f["proxied"] else "-")
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        sys.stderr.write(__doc__)
        return 2 if not argv else 0
    d = argv[0]
    out = None
    if len(argv) >= 3 and argv[1] == "--json":
        out = argv[2]
    res = []
    for f in sorted(glob.glob(os.path.join(d, "runs", "*.json"))):
        rec = json.load(open(f))
        if rec.get("params", {}).get("direction") != "upload":
            continue
        r = scan_run(d, rec)
        if r is not None:
            res.append(r)
    if not res:
        sys.stderr.write("event-cycle: no upload run with captures in %s\n" % d)
        return 1
    print("Event cycles (ms), `scripts/ecnproxy event-cycle %s` (definitions: "
          "py/ecnproxy/analysis/event_cycle.py); unanswered: no reduction within two "
          "round trips (the run's RTT probe median) of a CE-marked round trip.\n" % d)
    print(table(res))
    if out:
        with open(out, "w") as fh:
            json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
